"""Upload a directory to S3 with checksums, and find the SageMaker default bucket without creating it.

- Each file goes up with ``put_object(..., ChecksumSHA256=<base64 sha256>)``: S3 recomputes the
  checksum and refuses the object when it differs, so a corrupted upload cannot land. The SHA-256
  is then read back with ``head_object(ChecksumMode="ENABLED")`` and compared.
- The SageMaker default bucket is ``sagemaker-<region>-<account>`` (what the SageMaker SDK's
  ``Session.default_bucket()`` uses; that call *creates* the bucket when missing). Here the name is
  used only when the caller allows it, and a missing bucket is an error that says how to create
  it: nothing creates a bucket or a role behind the user's back.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hyperpod_rl.aws._clients import aws_client, error_code
from hyperpod_rl.errors import ConfigError, HyperpodRLError

__all__ = ["UploadedFile", "default_bucket", "parse_s3_uri", "upload_directory"]

_CHUNK = 1024 * 1024


@dataclass(frozen=True)
class UploadedFile:
    """One uploaded file: its key, size in bytes and SHA-256 (hex)."""

    key: str
    bytes: int
    sha256: str


def parse_s3_uri(uri: str) -> tuple[str, str]:
    """``s3://bucket/some/prefix/`` -> ``("bucket", "some/prefix")``.

    Raises:
        ConfigError: not an ``s3://bucket[/prefix]`` URI.
    """
    if not uri.startswith("s3://") or not uri[5:].split("/", 1)[0]:
        raise ConfigError(f"bad S3 URI {uri!r}: expected s3://<bucket>/<prefix>")
    bucket, _, prefix = uri[5:].partition("/")
    return bucket, prefix.strip("/")


def default_bucket(*, session: Any = None, region: str | None = None, sts: Any = None, s3: Any = None) -> str:
    """The existing SageMaker default bucket ``sagemaker-<region>-<account>``.

    Raises:
        ConfigError: it does not exist (this function never creates it) or cannot be read.
    """
    from botocore.exceptions import BotoCoreError, ClientError

    sts = sts or aws_client("sts", session=session, region=region)
    s3 = s3 or aws_client("s3", session=session, region=region)
    try:
        account = sts.get_caller_identity()["Account"]
    except (ClientError, BotoCoreError) as exc:
        raise ConfigError(f"cannot tell the AWS account for the default bucket ({type(exc).__name__}); pass s3_uri=") from None
    name = f"sagemaker-{s3.meta.region_name}-{account}"
    try:
        s3.head_bucket(Bucket=name, ExpectedBucketOwner=str(account))  # a bucket of that name in another account is refused
    except ClientError as exc:
        code = error_code(exc)
        if code in ("404", "NoSuchBucket", "NotFound"):
            raise ConfigError(
                f"the SageMaker default bucket {name} does not exist and hyperpod-rl does not create buckets: "
                f"create it (aws s3 mb s3://{name}) or pass s3_uri='s3://<your bucket>/<prefix>'"
            ) from None
        raise ConfigError(
            f"cannot use bucket {name}: {code}; the role needs s3:ListBucket and s3:PutObject on it, or pass s3_uri="
        ) from None
    return name


def _sha256(path: Path) -> bytes:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.digest()


def upload_directory(
    local_dir: str | Path, s3_uri: str, *, s3: Any = None, session: Any = None, region: str | None = None
) -> list[UploadedFile]:
    """Upload every file under ``local_dir`` to ``s3_uri`` (keys keep their relative paths), with SHA-256 checksums.

    Args:
        local_dir: the directory (e.g. a run's ``adapter/``).
        s3_uri: destination prefix, ``s3://bucket/prefix``.
        s3: a boto3 S3 client (default: one from ``session`` / ``region``).

    Returns:
        One :class:`UploadedFile` per file, sorted by key.

    Raises:
        ConfigError: a bad URI or an empty directory.
        HyperpodRLError: S3 refused an upload (``BadDigest`` when the bytes changed in flight), or
            the checksum S3 reports differs from the local one.
    """
    from botocore.exceptions import BotoCoreError, ClientError

    bucket, prefix = parse_s3_uri(s3_uri)
    root = Path(local_dir)
    files = sorted(p for p in root.rglob("*") if p.is_file())
    if not files:
        raise ConfigError(f"nothing to upload: {root} has no files")
    s3 = s3 or aws_client("s3", session=session, region=region)
    out: list[UploadedFile] = []
    for path in files:
        key = "/".join(p for p in (prefix, path.relative_to(root).as_posix()) if p)
        digest = _sha256(path)
        b64 = base64.b64encode(digest).decode()
        try:
            with path.open("rb") as fh:
                s3.put_object(Bucket=bucket, Key=key, Body=fh, ChecksumAlgorithm="SHA256", ChecksumSHA256=b64)
            stored = s3.head_object(Bucket=bucket, Key=key, ChecksumMode="ENABLED").get("ChecksumSHA256")
        except (ClientError, BotoCoreError) as exc:
            raise HyperpodRLError(f"uploading {path.name} to s3://{bucket}/{key} failed: {error_code(exc) or type(exc).__name__}") from None
        if stored != b64:
            raise HyperpodRLError(f"s3://{bucket}/{key}: S3 reports SHA-256 {stored}, the file has {b64}; upload again")
        out.append(UploadedFile(key=key, bytes=path.stat().st_size, sha256=digest.hex()))
    return out
