"""Evaluate a base model, with or without an adapter, on held-out mazes (greedy decoding).

Metrics are the maze env's own (:meth:`hyperpod_rl.maze.MazeEnv.aggregate_metrics`), averaged
over mazes: ``solve_rate``, ``optimal_move_rate`` (share of a maze's turns whose move is on a
shortest path, from BFS), ``invalid_move_rate`` (share of turns whose answer broke the format),
``steps_over_optimal`` (solved mazes only).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hyperpod_rl.errors import CheckpointError
from hyperpod_rl.maze import MazeEnv
from hyperpod_rl.model.loading import load_base_model
from hyperpod_rl.train.policy import MazePolicy
from hyperpod_rl.train.rollout import play_episodes

__all__ = ["EvalResult", "evaluate", "load_policy"]

REPORTED = ("solve_rate", "optimal_move_rate", "invalid_move_rate", "steps_over_optimal")


@dataclass
class EvalResult:
    """Evaluation of one model on a set of mazes.

    Attributes:
        label: e.g. ``"base"`` or ``"adapter"``.
        model_path: the base model directory.
        adapter_path: the adapter directory, or ``None`` for the base model.
        num_mazes: mazes evaluated (one greedy episode each).
        metrics: ``solve_rate``, ``optimal_move_rate``, ``invalid_move_rate``,
            ``blocked_move_rate``, ``mean_turns``, ``steps_over_optimal`` (rates in [0, 1]).
        per_maze: one dict per maze: layout hash, grid size, metrics, the moves answered.
    """

    label: str
    model_path: str
    adapter_path: str | None
    num_mazes: int
    metrics: dict[str, float]
    per_maze: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def save(self, path: str | Path) -> Path:
        """Write the JSON form atomically."""
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.to_json(), indent=1))
        os.replace(tmp, p)
        return p


def load_policy(model_path: str | Path, adapter_path: str | Path | None = None, *, action_constraint: str | None = None) -> MazePolicy:
    """Load the base model (plus an adapter) as a :class:`MazePolicy`.

    The action format defaults to the one recorded in the adapter's ``provenance.json``.

    Raises:
        CheckpointError: the adapter directory lacks ``adapter_config.json`` or the weights.
        ConfigError: the model directory is not a Qwen3-VL checkpoint.
    """
    model, processor, _ = load_base_model(model_path)
    constraint = action_constraint or "directions"
    if adapter_path is not None:
        from peft import PeftModel

        adir = Path(adapter_path)
        for name in ("adapter_config.json", "adapter_model.safetensors"):
            if not (adir / name).is_file():
                raise CheckpointError(f"adapter directory {adir} has no {name}: pass the run's adapter/ directory")
        prov = adir / "provenance.json"
        if action_constraint is None and prov.is_file():
            constraint = json.loads(prov.read_text()).get("action_constraint", constraint)
        model = PeftModel.from_pretrained(model, str(adir))
        model.eval()
    return MazePolicy(model, processor, action_constraint=constraint)  # type: ignore[arg-type]


def evaluate(
    model_path: str | Path,
    rows: list[dict[str, Any]],
    *,
    adapter_path: str | Path | None = None,
    label: str | None = None,
    max_turns: int | None = None,
    policy: MazePolicy | None = None,
) -> EvalResult:
    """Play one greedy episode per maze and aggregate the env's metrics.

    Args:
        model_path: base model directory.
        rows: held-out dataset rows.
        adapter_path: PEFT adapter directory, or ``None`` for the base model.
        label: name in reports (default ``"adapter"`` / ``"base"``).
        max_turns: override the rows' turn limit.
        policy: an already loaded policy (skips loading).

    Returns:
        :class:`EvalResult`.
    """
    pol = policy or load_policy(model_path, adapter_path)
    episodes = play_episodes(pol, rows, group_size=1, greedy=True, max_turns=max_turns)
    metrics = MazeEnv.aggregate_metrics([ep.metrics for ep in episodes])
    per_maze = [
        {
            "layout_hash": rows[ep.row_index]["layout_hash"],
            "size": [rows[ep.row_index]["rows"], rows[ep.row_index]["cols"]],
            "stratum": rows[ep.row_index].get("stratum"),
            "moves": [t.action.text for t in ep.turns],
            **ep.metrics,
        }
        for ep in episodes
    ]
    return EvalResult(
        label=label or ("adapter" if adapter_path else "base"),
        model_path=str(model_path),
        adapter_path=str(adapter_path) if adapter_path else None,
        num_mazes=len(rows),
        metrics={k: float(v) for k, v in metrics.items()},
        per_maze=per_maze,
    )
