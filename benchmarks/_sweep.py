"""What the learning sweeps share (``lr_sweep``, ``sft_sweep``): a worker's own copy of one seed's
data and base model, the run config of one cell, and rounded intervals for the result file."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def iv(d: Any) -> dict[str, float]:
    """An :class:`~hyperpod_rl.eval.stats.Interval` as ``{value, low, high}`` rounded to 4 places."""
    return {"value": round(d.value, 4), "low": round(d.low, 4), "high": round(d.high, 4)}


@dataclass
class Seeded:
    """One worker's copy of a seed's quickstart data and tiny base model, and the base model's
    validation result (``validation``: the validation rows)."""

    opts: Any
    storage: Path
    data: Any
    model_dir: Path
    revision: str
    validation: list[dict[str, Any]]
    base: Any


def seeded(opts: Any, home: str, where: str, threads: int) -> Seeded:
    """Build ``opts``' dataset and base model under ``home/where`` (a worker process's own directory:
    the same seed gives the same bytes in every cell) with ``threads`` torch threads, nothing in the
    user's data dir or ledger, and evaluate the base model on validation (``opts.validation_rows`` > 0)."""
    import torch

    torch.set_num_threads(threads)
    os.environ["HYPERPOD_RL_HOME"] = home
    os.environ["HYPERPOD_RL_LEDGER"] = "off"
    from hyperpod_rl.eval import evaluate
    from hyperpod_rl.quickstart import prepare_base_model, prepare_dataset
    from hyperpod_rl.tasks.maze import read_rows

    storage = Path(home) / where
    data = prepare_dataset(opts, storage)
    model_dir, revision = prepare_base_model(opts, storage, read_rows(data.train))
    assert data.validation is not None  # validation_rows > 0
    validation = read_rows(data.validation)
    return Seeded(opts, storage, data, model_dir, revision, validation, evaluate(model_dir, validation, label="base"))


def cell_config(s: Seeded, opts: Any, *, run_id: str, steps: int, settings: Mapping[str, Any] | None = None, **kw: Any) -> Any:
    """The quickstart's run config for one cell (``opts``: the seed's options with the cell's
    changes; ``settings``: run-config fields by dotted path, e.g. ``{"grpo.entropy_coef": 0.0}``,
    set on top), without the trainer's own base benchmark (the sweep scores the base on
    validation) and without a checkpoint before the end.

    Raises:
        ConfigError: a setting names no run-config field, goes through a field that is not a
            section, or has a value the field refuses.
    """
    from hyperpod_rl.config.presets import with_overrides
    from hyperpod_rl.config.run import RunConfig
    from hyperpod_rl.quickstart import make_run_config

    raw = make_run_config(opts, run_id=run_id, model_path=s.model_dir, revision=s.revision, data=s.data, **kw).model_dump(mode="json")
    raw["trainer"]["eval_rows"] = 1
    raw["checkpoint"]["interval"] = steps
    return RunConfig.build(with_overrides(raw, dict(settings or {})))


def parse_settings(spec: str) -> dict[str, Any]:
    """``"grpo.lr=1e-4,rollout.temperature=0.7,grpo.advantage=outcome"`` as a dict; each value read
    as JSON where it parses (numbers, booleans), else kept as text."""
    out: dict[str, Any] = {}
    for item in filter(None, (x.strip() for x in spec.split(","))):
        key, sep, text = item.partition("=")
        if not sep or not key:
            raise ValueError(f"setting {item!r} is not KEY=VALUE (e.g. grpo.lr=1e-4)")
        try:
            out[key] = json.loads(text)
        except json.JSONDecodeError:
            out[key] = text
    return out
