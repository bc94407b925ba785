"""The local quickstart: the whole loop at small scale, each step a public function.

1. :func:`start_local_cluster` — embedded Ray cluster with token auth (reused if running).
2. :func:`prepare_dataset` — visual maze parquet splits (train / held-out, disjoint layouts).
3. :func:`prepare_base_model` — the tiny random-init Qwen3-VL (or a local checkpoint).
4. :func:`hyperpod_rl.eval.evaluate` — the base model on the held-out mazes.
5. :func:`make_run_config` + :func:`hyperpod_rl.jobs.submit_run` — detached Ray Job running the
   reference GRPO backend; :func:`hyperpod_rl.jobs.follow_run` streams its metrics.
6. :func:`hyperpod_rl.eval.evaluate` — the adapter on the same held-out mazes.
7. :func:`hyperpod_rl.serve.local.deploy_local` — Ray Serve, then one request.

The CLI (``hyperpod-rl quickstart``) and the notebooks call these same functions.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from hyperpod_rl.cluster.local import start_local_cluster
from hyperpod_rl.config.run import RunConfig
from hyperpod_rl.errors import ConfigError
from hyperpod_rl.maze import DatasetSpec, build_dataset, write_parquet
from hyperpod_rl.model.loading import revision_of, save_tiny_base_model

__all__ = [
    "DatasetPaths",
    "QuickstartOptions",
    "check_serve_port",
    "default_run_id",
    "make_run_config",
    "prepare_base_model",
    "prepare_dataset",
    "start_local_cluster",
]


class QuickstartOptions(BaseModel):
    """Options of ``hyperpod-rl quickstart`` (defaults: the 10-minute CPU run)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    run_id: str | None = Field(None, description="run id; default quickstart-<UTC timestamp>")
    model_path: str | None = Field(None, description="local Qwen3-VL checkpoint directory; default: the embedded tiny model")
    seed: int = 0
    min_size: int = Field(3, ge=2, description="smallest maze side, cells")
    max_size: int = Field(5, ge=2, description="largest maze side, cells")
    train_mazes: int = Field(2000, gt=0)
    heldout_mazes: int = Field(200, gt=0)
    max_turns: int = Field(6, gt=0, description="turn limit per episode")
    group_size: int = Field(8, description="GRPO group size (episodes per maze)")
    mazes_per_step: int = Field(8, gt=0)
    steps: int = Field(200, gt=0)
    lr: float = Field(5e-4, gt=0)
    advantage: Literal["outcome", "process"] = Field(
        "process", description="GRPO advantage: per-episode outcome, or per-turn process supervision"
    )
    gamma: float = Field(0.5, ge=0, le=1, description="discount over turns for advantage='process'")
    lora_rank: int = Field(16, gt=0)
    serve: bool = True
    serve_port: int = Field(8000, gt=0, lt=65536)

    @field_validator("group_size")
    @classmethod
    def _group(cls, v: int) -> int:
        if v < 2:
            raise ValueError(f"group_size must be >= 2 (GRPO compares samples within a group), got {v}")
        return v

    @classmethod
    def build(cls, **values: Any) -> QuickstartOptions:
        """Validate, raising :class:`ConfigError` with one line per bad option."""
        try:
            opts = cls.model_validate(values)
        except ValidationError as err:
            lines = [
                f"--{'-'.join(str(p) for p in e['loc']).replace('_', '-')}: {e['msg'].removeprefix('Value error, ')}" for e in err.errors()
            ]
            raise ConfigError("invalid quickstart options:\n  " + "\n  ".join(lines)) from None
        if opts.min_size > opts.max_size:
            raise ConfigError(f"--min-size ({opts.min_size}) is larger than --max-size ({opts.max_size})")
        if opts.model_path is not None and not Path(opts.model_path).expanduser().is_dir():
            raise ConfigError(
                f"--model-path {opts.model_path!r} is not a directory: pass a local Qwen3-VL checkpoint directory, or omit it for the embedded tiny model"
            )
        return opts


@dataclass(frozen=True)
class DatasetPaths:
    """Parquet files of one generated dataset and their sha256 hashes."""

    train: Path
    heldout: Path
    hashes: dict[str, str]
    spec: dict[str, Any]


def _spec(opts: QuickstartOptions) -> DatasetSpec:
    sizes = tuple((n, n) for n in range(opts.min_size, opts.max_size + 1))
    # The embedded tiny model gets terse prompts; a real checkpoint gets the full instructions.
    style = "terse" if opts.model_path is None else "full"
    return DatasetSpec(
        seed=opts.seed,
        sizes=sizes,
        counts={"train": opts.train_mazes, "heldout": opts.heldout_mazes},
        max_turns=opts.max_turns,
        prompt_style=style,
    )


def prepare_dataset(opts: QuickstartOptions, storage: Path) -> DatasetPaths:
    """Generate (or reuse) the maze dataset under ``storage/datasets/<spec hash>/``.

    Train and held-out layouts are disjoint (checked by layout hash by the maze dataset builder).
    """
    spec = _spec(opts)
    spec_json = spec.model_dump_json()
    key = hashlib.sha256(spec_json.encode()).hexdigest()[:12]
    root = storage / "datasets" / key
    meta = root / "dataset.json"
    if meta.exists():
        info = json.loads(meta.read_text())
        return DatasetPaths(train=root / "train.parquet", heldout=root / "heldout.parquet", hashes=info["hashes"], spec=info["spec"])
    splits = build_dataset(spec)
    root.mkdir(parents=True, exist_ok=True)
    hashes = {name: write_parquet(splits[name], root / f"{name}.parquet") for name in ("train", "heldout")}
    meta.write_text(json.dumps({"hashes": hashes, "spec": json.loads(spec_json)}))
    return DatasetPaths(train=root / "train.parquet", heldout=root / "heldout.parquet", hashes=hashes, spec=json.loads(spec_json))


def _tokenizer_corpus(rows: list[dict[str, Any]]) -> tuple[str, ...]:
    """Texts the env shows the model (prompts and turn feedback), to train the tiny BPE on."""
    import skyrl_gym

    from hyperpod_rl.maze import ENV_CLASS, register_env

    register_env()
    texts: list[str] = []
    for row in rows[:20]:
        for msg in row["prompt"]:
            content = msg["content"]
            texts.extend([content] if isinstance(content, str) else [p["text"] for p in content if p.get("type") == "text"])
        env = skyrl_gym.make(ENV_CLASS, env_config={}, extras=dict(row))
        env.init(list(row["prompt"]))
        for answer in ("<answer>up</answer>", "<answer>down</answer>", "<answer>left</answer>", "<answer>right</answer>", "no"):
            out = env.step(answer)
            texts.extend(p["text"] for m in out["observations"] for p in m["content"] if p.get("type") == "text")
            if out["done"]:
                break
    return tuple(sorted(set(texts)))


def prepare_base_model(opts: QuickstartOptions, storage: Path, rows: list[dict[str, Any]]) -> tuple[Path, str]:
    """The base model directory and its revision (content hash).

    With ``model_path`` unset, builds the tiny random-init Qwen3-VL in code (tokenizer trained on
    the env's own texts) and saves it under ``storage/models/``; the same seed gives the same
    revision.
    """
    if opts.model_path:
        path = Path(opts.model_path).expanduser().resolve()
        return path, revision_of(path)
    return save_tiny_base_model(storage / "models", seed=opts.seed, corpus=_tokenizer_corpus(rows))


def make_run_config(opts: QuickstartOptions, *, run_id: str, model_path: Path, revision: str, data: DatasetPaths) -> RunConfig:
    """The :class:`RunConfig` of the quickstart run (reference backend)."""
    return RunConfig.build(
        {
            "run_id": run_id,
            "backend": "reference",
            "model": {"path": str(model_path), "revision": revision},
            "lora": {"rank": opts.lora_rank, "alpha": 2.0 * opts.lora_rank},
            "grpo": {"group_size": opts.group_size, "lr": opts.lr, "advantage": opts.advantage, "gamma": opts.gamma},
            "rollout": {"max_turns": opts.max_turns},
            "data": {"train_path": str(data.train), "heldout_path": str(data.heldout), "mazes_per_step": opts.mazes_per_step},
            "trainer": {"steps": opts.steps, "seed": opts.seed, "eval_mazes": opts.heldout_mazes},
            "checkpoint": {"interval": max(opts.steps // 4, 1)},
        }
    )


def check_serve_port(port: int) -> None:
    """Refuse a serve port that another program holds (a Ray Serve proxy of ours may hold it).

    Raises:
        ConfigError: the port is taken by something that is not a Ray Serve HTTP proxy.
    """
    import requests

    from hyperpod_rl.cluster.local import find_free_port

    if find_free_port(port) == port:
        return
    try:
        resp = requests.get(f"http://127.0.0.1:{port}/-/healthz", timeout=2)
        if resp.status_code == 200 and "success" in resp.text:
            return  # Ray Serve's proxy: redeploying replaces the app
    except requests.RequestException:
        pass
    raise ConfigError(f"--serve-port {port} is in use by another program: pass a free port, e.g. --serve-port {find_free_port()}")


def default_run_id() -> str:
    """``quickstart-YYYYMMDD-HHMMSS`` (UTC)."""
    return "quickstart-" + time.strftime("%Y%m%d-%H%M%S", time.gmtime())
