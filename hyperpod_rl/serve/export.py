"""Export a run's adapter to S3 for Ray Serve LLM, which loads LoRA adapters from ``s3://`` URIs.

``export_adapter(run, s3_uri=None)`` uploads ``<run dir>/adapter/`` with SHA-256 checksums
(:func:`hyperpod_rl.aws.s3.upload_directory`) and records where it went in the adapter's
``provenance.json`` (``exports``: URI, time, per-file SHA-256). Without ``s3_uri`` the SageMaker
default bucket ``sagemaker-<region>-<account>`` is used only when ``allow_default_bucket=True``,
and only if it exists: no bucket or role is ever created.

Ray Serve LLM's ``lora_config.dynamic_lora_loading_path`` names a prefix whose sub-folders are
adapters; :attr:`AdapterExport.lora_root` is that prefix and the adapter's name is the last part
of :attr:`AdapterExport.uri`.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hyperpod_rl.base import load_user_data
from hyperpod_rl.errors import CheckpointError, ConfigError
from hyperpod_rl.model.recovery import adapter_recovery
from hyperpod_rl.runs.files import write_text_atomic

__all__ = ["AdapterExport", "export_adapter"]

_DEFAULT_PREFIX = "hyperpod-rl/adapters"


@dataclass(frozen=True)
class AdapterExport:
    """Where an adapter was exported.

    Attributes:
        uri: ``s3://bucket/prefix/<adapter>`` holding the adapter's files.
        lora_root: the parent prefix (Ray Serve LLM's ``dynamic_lora_loading_path``).
        files: ``{relative name: sha256 hex}``.
        bytes: total size uploaded.
    """

    uri: str
    lora_root: str
    files: dict[str, str]
    bytes: int


def _record_export(adapter_dir: Path, entry: dict[str, Any]) -> None:
    """Append ``entry`` to ``exports`` in the adapter's ``provenance.json`` (atomic replace).

    The one place that writes the export record; when the run-directory module exists, this moves there.
    """
    path = adapter_dir / "provenance.json"
    fix = adapter_recovery(adapter_dir)
    record = load_user_data(path, "adapter provenance", syntax="json", error=CheckpointError, repair=fix)
    if not isinstance(record, dict):
        raise CheckpointError(f"adapter provenance {str(path)!r} is not a JSON object: {fix}")
    record["exports"] = [*record.get("exports", []), entry]
    write_text_atomic(path, json.dumps(record, indent=1, sort_keys=True))  # no temporary left on a full disk


def export_adapter(
    run: str | os.PathLike[str],
    s3_uri: str | None = None,
    *,
    allow_default_bucket: bool = False,
    session: Any = None,
    region: str | None = None,
    s3: Any = None,
    sts: Any = None,
) -> AdapterExport:
    """Upload a run's adapter to S3 with checksums and record the URI in its provenance.

    Example:
        >>> export_adapter("maze-run", "s3://my-bucket/adapters/maze-run")  # doctest: +SKIP
        AdapterExport(uri='s3://my-bucket/adapters/maze-run', lora_root='s3://my-bucket/adapters', ...)

    Args:
        run: a run id (``<storage root>/runs/<run id>``) or a run directory.
        s3_uri: destination ``s3://bucket/prefix/<adapter name>``.
        allow_default_bucket: without ``s3_uri``, use ``s3://sagemaker-<region>-<account>/hyperpod-rl/adapters/<run id>``
            (the bucket must exist).
        session: a ``boto3.Session`` (default: one from the environment).
        region: AWS region (default: the session's).
        s3: an S3 client (default: the session's).
        sts: an STS client (default: the session's), for the default bucket's account.

    Returns:
        The :class:`AdapterExport`: the adapter's S3 URI and the files with their SHA-256.

    Raises:
        ConfigError: no adapter in the run, no destination allowed, a missing default bucket.
        HyperpodRLError: an upload failed or its checksum did not match.
    """
    from hyperpod_rl.aws.s3 import default_bucket, upload_directory
    from hyperpod_rl.paths import run_dir

    path = Path(run)
    rdir = path if path.is_dir() else run_dir(str(run))
    adapter = rdir / "adapter"
    if not (adapter / "adapter_model.safetensors").is_file() or not (adapter / "provenance.json").is_file():
        raise ConfigError(f"no finished adapter in {adapter} (adapter_model.safetensors and provenance.json): train the run first")
    if s3_uri is None:
        if not allow_default_bucket:
            raise ConfigError(
                "no s3_uri: pass s3_uri='s3://<bucket>/<prefix>/<adapter>', or allow_default_bucket=True to use the "
                "existing SageMaker default bucket sagemaker-<region>-<account>"
            )
        bucket = default_bucket(session=session, region=region, sts=sts, s3=s3)
        s3_uri = f"s3://{bucket}/{_DEFAULT_PREFIX}/{rdir.name}"
    uri = s3_uri.rstrip("/")
    from hyperpod_rl.aws.s3 import parse_s3_uri

    if not parse_s3_uri(uri)[1]:
        raise ConfigError(
            f"s3_uri {s3_uri!r} names no prefix: use s3://<bucket>/<prefix>/<adapter name>, e.g. s3://{uri[5:]}/adapters/{rdir.name}"
        )
    uploaded = upload_directory(adapter, uri, s3=s3, session=session, region=region)
    prefix_len = len(parse_s3_uri(uri)[1]) + 1
    files = {u.key[prefix_len:]: u.sha256 for u in uploaded}
    total = sum(u.bytes for u in uploaded)
    _record_export(adapter, {"uri": uri, "time_s": round(time.time(), 3), "files": files, "bytes": total})
    return AdapterExport(uri=uri, lora_root=uri.rsplit("/", 1)[0], files=files, bytes=total)
