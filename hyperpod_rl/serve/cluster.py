"""Cluster serving configs: vLLM's OpenAI server as a detached Ray job, or Ray Serve LLM.

Both serve the base model on GPU workers with LoRA enabled (``enable_lora``, ``max_lora_rank``
at least the largest adapter rank, ``max_loras``), adapters read from shared storage. Nothing
here runs vLLM: the configs are generated and validated, and the adapters are preflighted
against a vLLM server profile, so a bad adapter or flag fails here and not on the GPU node.

Sources of the facts checked here:

- vLLM flags: ``vllm/engine/arg_utils.py`` (``EngineArgs``) and
  ``vllm/entrypoints/openai/cli_args.py`` (``FrontendArgs``: ``--lora-modules`` takes
  ``name=path`` or JSON ``{"name", "path", "base_model_name"}``); ``vllm/config/lora.py``:
  ``max_lora_rank`` is one of 1, 8, 16, 32, 64, 128, 256, 320, 512 (default 16),
  ``max_loras >= 1``, ``max_cpu_loras >= max_loras``. ``--generation-config`` defaults to
  ``auto`` (the model's ``generation_config.json`` sets request defaults); ``vllm`` turns that off.
- Ray Serve LLM (Ray 2.56): ``LLMConfig(model_loading_config, engine_kwargs, lora_config,
  deployment_config, accelerator_type)``; ``lora_config.dynamic_lora_loading_path`` must be an
  ``s3://``, ``gs://``, ``abfss://`` or ``azure://`` URI (``LoraConfig`` validator); requests
  name ``model="<model_id>:<adapter>"``; the app is built by ``ray.serve.llm:build_openai_app``.
"""

from __future__ import annotations

import hashlib
import json
import shlex
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator

from hyperpod_rl.base import Model, Seed, format_validation_error, listed, load_user_data
from hyperpod_rl.config.validate import VLLM_LORA_RANKS
from hyperpod_rl.errors import ConfigError, ServeError
from hyperpod_rl.model.recovery import adapter_recovery
from hyperpod_rl.serve.local import MAX_IMAGE_PIXELS
from hyperpod_rl.serve.preflight import (
    BaseModelRef,
    PreflightReport,
    adapter_name_problem,
    preflight,
    vllm_lora_rank_for,
    vllm_server,
)

__all__ = [
    "VLLM_ENGINE_KWARGS",
    "VLLM_FLAGS",
    "VLLM_LORA_RANKS",
    "ClusterServeSpec",
    "check_vllm_args",
    "preflight_cluster",
    "ray_serve_llm_app",
    "ray_serve_llm_config",
    "submit_vllm_job",
    "validate_llm_config",
    "vllm_job",
    "vllm_serve_args",
]

#: The ``vllm serve`` flags this package generates, with their value kind: ``flag`` (no value),
#: ``int``, ``float``, ``str``, ``json`` (a JSON object), ``lora`` (``--lora-modules`` items),
#: or a tuple of allowed values. Names as in vLLM's ``EngineArgs`` / ``FrontendArgs``.
VLLM_FLAGS: dict[str, Any] = {
    "--revision": "str",
    "--served-model-name": "str",
    "--dtype": ("auto", "half", "float16", "bfloat16", "float", "float32"),
    "--seed": "int",
    "--max-model-len": "int",
    "--max-num-seqs": "int",
    "--tensor-parallel-size": "int",
    "--gpu-memory-utilization": "float",
    "--enable-lora": "flag",
    "--max-loras": "int",
    "--max-lora-rank": tuple(str(r) for r in VLLM_LORA_RANKS),
    "--max-cpu-loras": "int",
    "--lora-modules": "lora",
    "--limit-mm-per-prompt": "json",
    "--mm-processor-kwargs": "json",
    "--generation-config": "generation_config",
    "--override-generation-config": "json",
    "--chat-template": "str",
    "--trust-remote-code": "flag",
    "--enforce-eager": "flag",
    "--host": "str",
    "--port": "int",
}

#: Smallest value of the numeric flags (vLLM: ``LoRAConfig.max_loras`` ``ge=1``,
#: ``CacheConfig.gpu_memory_utilization`` ``gt=0, le=1``, ``ParallelConfig.tensor_parallel_size``
#: and ``SchedulerConfig.max_num_seqs`` positive).
_VLLM_MIN: dict[str, float] = {
    "--max-loras": 1,
    "--max-cpu-loras": 1,
    "--tensor-parallel-size": 1,
    "--max-num-seqs": 1,
    "--max-model-len": 1,
    "--port": 1,
}

#: ``EngineArgs`` field names accepted in Ray Serve LLM ``engine_kwargs`` (the engine flags above).
VLLM_ENGINE_KWARGS = frozenset(
    f[2:].replace("-", "_") for f in VLLM_FLAGS if f not in ("--lora-modules", "--chat-template", "--host", "--port", "--served-model-name")
)

_REMOTE = ("s3://", "gs://", "abfss://", "azure://")


class ClusterServeSpec(Model):
    """What to serve on a GPU cluster.

    Attributes:
        base_model: Hugging Face id (e.g. ``Qwen/Qwen3-VL-8B-Instruct``) or a directory on
            shared storage.
        base_model_id: the id the adapters' provenance must name (default: ``base_model``).
        base_model_revision: the revision the adapters were trained on (vLLM ``--revision``
            for a Hub id).
        base_model_local: a local copy of the base model directory for the tokenizer and
            generation-config checks (optional).
        served_model_name: the name clients use for the base model (vLLM
            ``--served-model-name``, Ray Serve LLM ``model_id``).
        adapters: adapter name -> adapter directory on shared storage (e.g. FSx), readable by
            every GPU worker at the same path.
        max_lora_rank: vLLM ``max_lora_rank``; default: the smallest allowed value >= the
            largest adapter rank.
        max_loras: adapters in one batch (vLLM ``max_loras``); default: the number of adapters.
        tensor_parallel_size: GPUs per replica.
        max_model_len: context length in tokens.
        gpu_memory_utilization: share of GPU memory vLLM may use (0-1].
        images_per_prompt: vLLM ``--limit-mm-per-prompt`` image count (more in one request is a 400).
        max_image_pixels: most pixels of one image: the Qwen-VL processor's ``max_pixels``
            (``--mm-processor-kwargs``: larger images are resized down, bounding vision tokens),
            and ``VLLM_MAX_IMAGE_PIXELS`` (vLLM 0.25 and later refuse an image whose header declares
            more before decoding it, ``multimodal/media/image.py``). **The pinned vLLM 0.23.0 has no
            such check** (its ``ImageMediaIO.load_bytes`` decodes with PIL, and its Nemotron
            processors set ``PIL.Image.MAX_IMAGE_PIXELS = None`` when imported), so on it a
            decompression bomb is decoded before it is resized: put the local route or another
            front that checks headers before it when the endpoint is reachable by untrusted clients.
            Default: the local route's :data:`~hyperpod_rl.serve.local.MAX_IMAGE_PIXELS`.
        dtype: model dtype.
        seed: engine seed.
        host: bind address of the vLLM server.
        port: its port.
    """

    error_what = "cluster serving spec"

    base_model: str = Field(..., min_length=1)
    base_model_id: str | None = None
    base_model_revision: str = Field(..., min_length=1)
    base_model_local: Path | None = None
    served_model_name: str = Field("qwen3-vl", pattern=r"^[A-Za-z0-9._/-]+$")
    adapters: dict[str, str] = Field(..., min_length=1)
    max_lora_rank: int | None = None
    max_loras: int | None = Field(None, ge=1)
    tensor_parallel_size: int = Field(1, ge=1)
    max_model_len: int = Field(8192, ge=256)
    gpu_memory_utilization: float = Field(0.9, gt=0, le=1)
    images_per_prompt: int = Field(1, ge=1)
    max_image_pixels: int = Field(MAX_IMAGE_PIXELS, ge=28 * 28)
    dtype: Literal["auto", "bfloat16", "float16"] = "bfloat16"
    seed: Seed = 0
    host: str = "0.0.0.0"
    port: int = Field(8000, ge=1, le=65535)

    @field_validator("adapters")
    @classmethod
    def _names(cls, value: dict[str, str]) -> dict[str, str]:
        for name in value:
            if problem := adapter_name_problem(name):
                raise ValueError(f"{problem} (vLLM --lora-modules name=path)")
        return value

    @field_validator("max_lora_rank")
    @classmethod
    def _rank(cls, value: int | None) -> int | None:
        if value is not None and value not in VLLM_LORA_RANKS:
            up = vllm_lora_rank_for(value)
            hint = f"use {up}, the next one up" if up is not None else f"{VLLM_LORA_RANKS[-1]} is the largest"
            raise ValueError(f"max_lora_rank={value} is not one of vLLM's {VLLM_LORA_RANKS}: {hint}")
        return value

    @property
    def model_id(self) -> str:
        return self.base_model_id or self.base_model


def _build(spec: ClusterServeSpec | dict[str, Any]) -> ClusterServeSpec:
    if isinstance(spec, ClusterServeSpec):
        return spec
    return ClusterServeSpec.build(spec)


def _adapter_rank(path: str | Path) -> int:
    """Largest LoRA rank of an adapter (``r`` and ``rank_pattern`` of adapter_config.json)."""
    cfg_file = Path(path) / "adapter_config.json"
    if not cfg_file.is_file():
        raise ServeError(f"adapter {path} has no adapter_config.json: pass the run's adapter/ directory on shared storage")
    fix = adapter_recovery(path)
    cfg = load_user_data(cfg_file, "adapter_config.json", syntax="json", error=ServeError, repair=fix)
    if not isinstance(cfg, dict):
        raise ServeError(f"adapter_config.json {str(cfg_file)!r} is not a JSON object: {fix}")
    return max([int(cfg.get("r", 8))] + [int(v) for v in (cfg.get("rank_pattern") or {}).values()])


def _lora_limits(spec: ClusterServeSpec) -> tuple[int, int]:
    """(max_lora_rank, max_loras) for the spec: explicit values, else derived from the adapters.

    Raises:
        ConfigError: an adapter's rank exceeds the explicit or the largest allowed max rank.
    """
    top = max(_adapter_rank(p) for p in spec.adapters.values())
    if spec.max_lora_rank is not None:
        rank = spec.max_lora_rank
        up = vllm_lora_rank_for(top)
        if top > rank:
            raise ConfigError(
                f"max_lora_rank={rank} is below the largest adapter rank {top}: "
                + (f"set max_lora_rank={up} (vLLM --max-lora-rank {up}) or leave it unset" if up else "train with a smaller lora.rank")
            )
    else:
        fitting = vllm_lora_rank_for(top)
        if fitting is None:
            raise ConfigError(
                f"adapter rank {top} exceeds vLLM's largest max_lora_rank {VLLM_LORA_RANKS[-1]}: train with a smaller lora.rank"
            )
        rank = fitting
    return rank, spec.max_loras or len(spec.adapters)


def preflight_cluster(spec: ClusterServeSpec | dict[str, Any]) -> list[PreflightReport]:
    """Preflight every adapter of the spec against a vLLM server with the spec's limits.

    Returns:
        One report per adapter (warnings only).

    Raises:
        ServeError: any adapter fails; the message lists every finding.
        ConfigError: the spec is invalid.
    """
    spec = _build(spec)
    rank = spec.max_lora_rank or _lora_limits(spec)[0]
    base = BaseModelRef(model_id=spec.model_id, revision=spec.base_model_revision, path=spec.base_model_local)
    reports = [preflight(path, base, vllm_server(max_lora_rank=rank, generation_config="vllm")) for path in spec.adapters.values()]
    failed = [r for r in reports if not r.ok]
    if failed:
        raise ServeError("refusing to serve on vLLM:\n" + "\n".join(r.summary() for r in failed))
    return reports


def vllm_serve_args(spec: ClusterServeSpec | dict[str, Any]) -> list[str]:
    """The ``vllm serve`` command line (argv) for the spec, checked by :func:`check_vllm_args`.

    Example:
        >>> vllm_serve_args({"base_model": "Qwen/Qwen3-VL-8B-Instruct", "base_model_revision": "abc",
        ...                  "adapters": {"maze": "/fsx/runs/r1/adapter"}})[:3]  # doctest: +SKIP
        ['vllm', 'serve', 'Qwen/Qwen3-VL-8B-Instruct']

    Raises:
        ConfigError: invalid spec, or an adapter rank above ``max_lora_rank``.
        ServeError: an adapter directory has no ``adapter_config.json``.
    """
    spec = _build(spec)
    rank, max_loras = _lora_limits(spec)
    args = ["vllm", "serve", spec.base_model, "--served-model-name", spec.served_model_name]
    if not Path(spec.base_model).is_absolute():
        args += ["--revision", spec.base_model_revision]
    args += [
        "--enable-lora",
        "--max-lora-rank",
        str(rank),
        "--max-loras",
        str(max_loras),
        "--max-cpu-loras",
        str(max(max_loras, len(spec.adapters))),
    ]
    for name, path in spec.adapters.items():
        args += [
            "--lora-modules",
            json.dumps({"name": name, "path": str(path), "base_model_name": spec.served_model_name}, separators=(",", ":")),
        ]
    args += [
        "--limit-mm-per-prompt",
        json.dumps({"image": spec.images_per_prompt}),
        "--mm-processor-kwargs",
        json.dumps({"max_pixels": spec.max_image_pixels}),
        "--generation-config",
        "vllm",
        "--max-model-len",
        str(spec.max_model_len),
        "--tensor-parallel-size",
        str(spec.tensor_parallel_size),
        "--gpu-memory-utilization",
        str(spec.gpu_memory_utilization),
        "--dtype",
        spec.dtype,
        "--seed",
        str(spec.seed),
        "--host",
        spec.host,
        "--port",
        str(spec.port),
    ]
    check_vllm_args(args)
    return args


def check_vllm_args(args: list[str]) -> None:
    """Check a ``vllm serve MODEL ...`` argv against vLLM's documented flags (:data:`VLLM_FLAGS`).

    Raises:
        ConfigError: not ``vllm serve MODEL``, an unknown flag, a missing or ill-typed value,
            a ``--lora-modules`` item that is neither ``name=path`` nor JSON with name and path,
            ``--max-cpu-loras`` below ``--max-loras``, ``--max-loras``/``--max-lora-rank``
            without ``--enable-lora``, a ``--max-lora-rank`` outside vLLM's accepted set, a
            numeric value below vLLM's minimum, or a ``--generation-config`` that is neither
            ``auto``, ``vllm`` nor a folder path.
    """
    if len(args) < 3 or args[:2] != ["vllm", "serve"] or args[2].startswith("-"):
        raise ConfigError(f"the command must start with 'vllm serve MODEL', got {shlex.join(args[:3])!r}")
    values: dict[str, list[str]] = {}
    i = 3
    while i < len(args):
        flag = args[i]
        kind = VLLM_FLAGS.get(flag)
        if kind is None:
            raise ConfigError(f"{flag!r} is not a vLLM serve flag this package knows: use one of {listed(sorted(VLLM_FLAGS))}")
        if kind == "flag":
            values.setdefault(flag, []).append("")
            i += 1
            continue
        if i + 1 >= len(args) or args[i + 1].startswith("--"):
            raise ConfigError(f"{flag} needs a value")
        value = args[i + 1]
        if isinstance(kind, tuple) and value not in kind:
            raise ConfigError(f"{flag} {value}: must be one of {listed(kind)} (vLLM)")
        if kind in ("int", "float"):
            try:
                number = int(value) if kind == "int" else float(value)
            except ValueError:
                raise ConfigError(f"{flag} {value!r}: must be an {kind}") from None
            if number < _VLLM_MIN.get(flag, float("-inf")):
                raise ConfigError(f"{flag} {value}: must be >= {_VLLM_MIN[flag]:g} (vLLM)")
            if flag == "--gpu-memory-utilization" and not 0 < number <= 1:
                raise ConfigError(f"{flag} {value}: must be in (0, 1] (vLLM CacheConfig)")
        if kind == "generation_config" and value not in ("auto", "vllm") and not value.startswith("/"):
            raise ConfigError(f"{flag} {value!r}: must be 'auto', 'vllm' or an absolute folder path (vLLM ModelConfig.generation_config)")
        if kind == "json":
            try:
                parsed = json.loads(value)
            except ValueError:
                parsed = None
            if not isinstance(parsed, dict):
                raise ConfigError(f"{flag} {value!r}: must be a JSON object")
        if kind == "lora":
            _check_lora_module(value)
        values.setdefault(flag, []).append(value)
        i += 2
    lora_flags = [f for f in ("--max-loras", "--max-lora-rank", "--lora-modules", "--max-cpu-loras") if f in values]
    if lora_flags and "--enable-lora" not in values:
        raise ConfigError(f"{', '.join(lora_flags)} need --enable-lora")
    if "--max-cpu-loras" in values and int(values["--max-cpu-loras"][-1]) < int(values.get("--max-loras", ["1"])[-1]):
        raise ConfigError("--max-cpu-loras must be >= --max-loras (vLLM LoRAConfig)")


def _check_lora_module(value: str) -> None:
    if "=" in value and "," not in value:  # vLLM's 'name=path' form
        name, _, path = value.partition("=")
        if not name or not path:
            raise ConfigError(f"--lora-modules {value!r}: use name=path")
        return
    try:
        item = json.loads(value)
    except ValueError:
        raise ConfigError(f"--lora-modules {value!r}: neither name=path nor JSON") from None
    if not isinstance(item, dict) or not {"name", "path"} <= set(item) or set(item) - {"name", "path", "base_model_name"}:
        raise ConfigError(f"--lora-modules {value!r}: JSON must have 'name' and 'path' (and optionally 'base_model_name') only")


def vllm_job(spec: ClusterServeSpec | dict[str, Any], *, check_adapters: bool = True) -> dict[str, Any]:
    """Keyword arguments of ``JobSubmissionClient.submit_job`` running ``vllm serve`` as a
    detached Ray job on a GPU worker.

    The entrypoint runs with ``tensor_parallel_size`` GPUs (``entrypoint_num_gpus``), so Ray
    places it on a GPU node; the submission id is stable for the same spec
    (``hprl-serve-vllm-<served name>-<hash>``), so a resubmission is refused rather than doubled.

    Args:
        spec: the serving spec.
        check_adapters: preflight every adapter first (:func:`preflight_cluster`).

    Returns:
        ``entrypoint``, ``submission_id``, ``entrypoint_num_gpus``, ``entrypoint_num_cpus``,
        ``runtime_env`` and ``metadata``.

    Raises:
        ServeError: an adapter fails preflight.
        ConfigError: the spec or the generated command is invalid.
    """
    spec = _build(spec)
    if check_adapters:
        preflight_cluster(spec)
    args = vllm_serve_args(spec)
    digest = hashlib.sha256(json.dumps(args).encode()).hexdigest()[:8]
    safe = "".join(c if c.isalnum() or c in "-_" else "-" for c in spec.served_model_name)
    return {
        "entrypoint": shlex.join(args),
        "submission_id": f"hprl-serve-vllm-{safe}-{digest}",
        "entrypoint_num_gpus": spec.tensor_parallel_size,
        "entrypoint_num_cpus": 4,
        # adapters are fixed at start-up; runtime loading (/v1/load_lora_adapter) stays off
        # decompression bombs are refused from the image header by vLLM >= 0.25 (VLLM_MAX_IMAGE_PIXELS); not by 0.23.0
        "runtime_env": {"env_vars": {"VLLM_ALLOW_RUNTIME_LORA_UPDATING": "False", "VLLM_MAX_IMAGE_PIXELS": str(spec.max_image_pixels)}},
        "metadata": {"hyperpod_rl_serve": "vllm", "served_model_name": spec.served_model_name, "adapters": ",".join(spec.adapters)},
    }


def submit_vllm_job(client: Any, spec: ClusterServeSpec | dict[str, Any]) -> str:
    """Preflight the adapters and submit ``vllm serve`` as a detached Ray job.

    Args:
        client: authenticated ``JobSubmissionClient`` of the GPU cluster
            (:mod:`hyperpod_rl.cluster` gives one for HyperPod).
        spec: the serving spec.

    Returns:
        The submission id; the server listens on ``spec.port`` of the GPU node Ray picks.

    Raises:
        ServeError: an adapter fails preflight (nothing is submitted).
        ConfigError: the spec or the generated command is invalid.
    """
    return client.submit_job(**vllm_job(spec))


def ray_serve_llm_config(
    spec: ClusterServeSpec | dict[str, Any], *, lora_uri: str, accelerator_type: str | None = "H200", max_replicas: int = 1
) -> dict[str, Any]:
    """A Ray Serve LLM ``LLMConfig`` (as a dict) for the spec, validated by :func:`validate_llm_config`.

    Ray Serve LLM loads adapters on demand from ``<lora_uri>/<adapter name>/`` and routes
    ``model="<served_model_name>:<adapter name>"`` to them.

    Args:
        spec: the serving spec; its ``adapters`` must also sit under ``lora_uri`` by name.
        lora_uri: ``s3://``/``gs://``/``abfss://``/``azure://`` prefix holding one directory
            per adapter (on HyperPod: the S3 bucket linked to the FSx file system).
        accelerator_type: Ray accelerator type of the GPU nodes (``None``: any GPU).
        max_replicas: autoscaling upper bound (``min_replicas`` is 1).

    Raises:
        ConfigError: ``lora_uri`` is a local path, or the config fails ``LLMConfig``.
    """
    spec = _build(spec)
    if not lora_uri.startswith(_REMOTE):
        raise ConfigError(
            f"lora_uri={lora_uri!r}: Ray Serve LLM loads adapters only from {', '.join(_REMOTE)} URIs "
            "(LoraConfig.dynamic_lora_loading_path); use the S3 bucket linked to the FSx file system, or serve with the vLLM job (vllm_job), which reads adapters from shared storage"
        )
    rank, max_loras = _lora_limits(spec)
    engine: dict[str, Any] = {
        "enable_lora": True,
        "max_lora_rank": rank,
        "max_loras": max_loras,
        "max_cpu_loras": max(max_loras, len(spec.adapters)),
        "limit_mm_per_prompt": {"image": spec.images_per_prompt},
        "mm_processor_kwargs": {"max_pixels": spec.max_image_pixels},
        "generation_config": "vllm",
        "max_model_len": spec.max_model_len,
        "tensor_parallel_size": spec.tensor_parallel_size,
        "gpu_memory_utilization": spec.gpu_memory_utilization,
        "dtype": spec.dtype,
        "seed": spec.seed,
    }
    if not Path(spec.base_model).is_absolute():
        engine["revision"] = spec.base_model_revision
    config: dict[str, Any] = {
        "model_loading_config": {"model_id": spec.served_model_name, "model_source": spec.base_model},
        "engine_kwargs": engine,
        "lora_config": {
            "dynamic_lora_loading_path": lora_uri.rstrip("/"),
            "max_num_adapters_per_replica": max(max_loras, len(spec.adapters)),
        },
        "deployment_config": {"autoscaling_config": {"min_replicas": 1, "max_replicas": max_replicas}},
        "runtime_env": {"env_vars": {"VLLM_MAX_IMAGE_PIXELS": str(spec.max_image_pixels)}},
    }
    if accelerator_type:
        config["accelerator_type"] = accelerator_type
    validate_llm_config(config)
    return config


def ray_serve_llm_app(
    spec: ClusterServeSpec | dict[str, Any],
    *,
    lora_uri: str,
    accelerator_type: str | None = "H200",
    max_replicas: int = 1,
    app_name: str = "hyperpod-rl-llm",
) -> dict[str, Any]:
    """A Serve config file (``serve deploy`` / RayService ``serveConfigV2``) with one LLM app.

    Validated against ``ray.serve.schema.ServeDeploySchema``; its ``llm_configs`` entry against
    ``LLMConfig``.

    Raises:
        ConfigError: as :func:`ray_serve_llm_config`, or the Serve schema refuses the file.
    """
    from ray.serve.schema import ServeDeploySchema

    config = ray_serve_llm_config(spec, lora_uri=lora_uri, accelerator_type=accelerator_type, max_replicas=max_replicas)
    app = {
        "applications": [
            {"name": app_name, "route_prefix": "/", "import_path": "ray.serve.llm:build_openai_app", "args": {"llm_configs": [config]}}
        ]
    }
    try:
        ServeDeploySchema.model_validate(app)
    except ValidationError as err:
        raise ConfigError(format_validation_error(err, what="Ray Serve config (ServeDeploySchema)")) from None
    return app


def _llm_config_class() -> type:
    """Ray Serve LLM's ``LLMConfig``: the public class, or, when vLLM is not installed (the
    public module refuses to import then), the class it subclasses without changes."""
    try:
        from ray.serve.llm import LLMConfig
    except ImportError:
        from ray.llm._internal.serve.core.configs.llm_config import LLMConfig
    return LLMConfig


def validate_llm_config(config: dict[str, Any]) -> Any:
    """Validate an ``LLMConfig`` dict with Ray's own class, plus the vLLM engine kwargs.

    Returns:
        The ``LLMConfig`` instance.

    Raises:
        ConfigError: ``LLMConfig`` refuses it (the first error is named), an ``engine_kwargs``
            key is not a vLLM engine argument this package knows, or LoRA limits are missing.
    """
    cls = _llm_config_class()
    try:
        parsed = cls.model_validate(config)
    except ValidationError as err:
        raise ConfigError(format_validation_error(err, what="LLMConfig", prefix="LLMConfig.")) from None
    engine = config.get("engine_kwargs") or {}
    unknown = sorted(set(engine) - VLLM_ENGINE_KWARGS)
    if unknown:
        raise ConfigError(f"engine_kwargs {listed(unknown)} are not vLLM engine arguments: use {listed(sorted(VLLM_ENGINE_KWARGS))}")
    if config.get("lora_config") is not None:
        if not engine.get("enable_lora"):
            raise ConfigError("lora_config needs engine_kwargs.enable_lora=True")
        if engine.get("max_lora_rank", 16) not in VLLM_LORA_RANKS:
            up = vllm_lora_rank_for(int(engine["max_lora_rank"]))
            raise ConfigError(
                f"engine_kwargs.max_lora_rank={engine.get('max_lora_rank')} is not one of vLLM's {VLLM_LORA_RANKS}"
                + (f": use {up}, the next one up" if up is not None else "")
            )
    return parsed
