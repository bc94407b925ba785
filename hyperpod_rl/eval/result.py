"""``EvalResult``: one model's evaluation on a set of mazes, and its JSON and HTML forms.

Saving a result writes only its own file. To record it in a run (its ``eval/`` directory and the
provenance record), call :func:`hyperpod_rl.runs.record_eval` with :meth:`EvalResult.to_json`.
"""

from __future__ import annotations

import html
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hyperpod_rl.eval.report import bar_figure
from hyperpod_rl.eval.stats import DEFAULT_RESAMPLES, Interval, bootstrap_interval, metric_values

__all__ = ["EvalResult"]


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
        per_maze: one dict per maze: layout hash, grid size, stratum, metrics, the moves answered.
        split: ``heldout`` or ``ood``.
        observation: ``image``, or ``text`` for text-grid twins.
        ci: ``{metric: [low, high]}``, 95% bootstrap intervals of :data:`REPORTED` metrics.
        breakdown: ``{"stratum" | "size": {group: {metric: {"value", "low", "high", "n"}}}}``.
        text_twin: the same mazes as text grids, when evaluated (``text_twin=True``).
        task: the registered task the rows belong to (results saved before tasks load as ``"maze"``).
    """

    label: str
    model_path: str
    adapter_path: str | None
    num_mazes: int
    metrics: dict[str, float]
    per_maze: list[dict[str, Any]] = field(default_factory=list)
    split: str = "heldout"
    observation: str = "image"
    ci: dict[str, list[float]] = field(default_factory=dict)
    breakdown: dict[str, dict[str, dict[str, dict[str, float]]]] = field(default_factory=dict)
    text_twin: EvalResult | None = None
    task: str = "maze"

    def interval(self, metric: str, *, n_resamples: int = DEFAULT_RESAMPLES, level: float = 0.95, seed: int = 0) -> Interval:
        """Bootstrap interval of one metric over this result's items, in their order (what
        :func:`hyperpod_rl.eval.evaluate` stores in :attr:`ci`)."""
        from hyperpod_rl.tasks import get_task, metric_spec

        keys = metric_spec(get_task(self.task)).episode_key
        return bootstrap_interval(metric_values(self.per_maze, metric, keys), n_resamples=n_resamples, level=level, seed=seed)

    def reported_interval(self, metric: str) -> Interval:
        """One metric's mean over the items with its 95% interval as recorded in :attr:`ci`, the
        one interval every view shows (the quickstart's table, :func:`~hyperpod_rl.eval.compare`,
        ``hyperpod-rl runs list|show``); computed as :meth:`interval` for a result saved without it."""
        if metric not in self.ci:
            return self.interval(metric)
        from hyperpod_rl.tasks import get_task, metric_spec

        values = metric_values(self.per_maze, metric, metric_spec(get_task(self.task)).episode_key)
        n = int(np.sum(~np.isnan(values)))
        if n == 0:
            return self.interval(metric)
        low, high = self.ci[metric]
        return Interval(float(np.nanmean(values)), float(low), float(high), n)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> EvalResult:
        """Rebuild from :meth:`to_json` output (older files without intervals load too)."""
        data = dict(data)
        twin = data.pop("text_twin", None)
        known = {f for f in cls.__dataclass_fields__}
        out = cls(**{k: v for k, v in data.items() if k in known})
        out.text_twin = cls.from_json(twin) if twin else None
        return out

    @classmethod
    def load(cls, path: str | Path) -> EvalResult:
        """Read a saved result.

        Raises:
            CheckpointError: the file is missing, not UTF-8 or not a JSON object (the message names it).
        """
        from hyperpod_rl.base import load_user_data
        from hyperpod_rl.errors import CheckpointError

        data = load_user_data(path, "evaluation result", syntax="json", error=CheckpointError, max_bytes=None, repair="evaluate again")
        if not isinstance(data, dict):
            raise CheckpointError(f"evaluation result {str(path)!r} is not a JSON object: evaluate again")
        return cls.from_json(data)

    def save(self, path: str | Path) -> Path:
        """Write the JSON form atomically (canonical JSON: sorted keys), and nothing else."""
        from hyperpod_rl.runs.files import write_json_atomic

        return write_json_atomic(Path(path), self.to_json())

    def summary(self) -> dict[str, Any]:
        """Figures and intervals without the per-maze records (what the manifest keeps)."""
        out = {
            "label": self.label,
            "split": self.split,
            "observation": self.observation,
            "num_mazes": self.num_mazes,
            "task": self.task,
            "metrics": self.metrics,
            "ci": self.ci,
        }
        if self.text_twin is not None:
            out["text_twin"] = self.text_twin.summary()
        return out

    def _repr_html_(self) -> str:
        return result_html(self)


def result_html(result: EvalResult) -> str:
    """A bar chart of the headline rates with intervals, and the breakdown table."""
    title = f"{html.escape(result.label)} · {result.split} · {result.num_mazes} mazes ({result.observation})"
    results = [result] + ([result.text_twin] if result.text_twin is not None else [])
    fig = bar_figure({f"{r.label} ({r.observation})": {m: r.reported_interval(m) for m in _reported(r)[:3]} for r in results}, title)
    return fig + _breakdown_table(result)


def _reported(result: EvalResult) -> tuple[str, ...]:
    from hyperpod_rl.tasks import get_task, metric_spec

    return metric_spec(get_task(result.task)).reported


def _breakdown_table(result: EvalResult) -> str:
    reported = _reported(result)
    rows = []
    for group_key, groups in result.breakdown.items():
        for label, metrics in groups.items():
            cells = "".join(f"<td>{Interval(**metrics[m]).fmt() if m in metrics else ''}</td>" for m in reported)
            n = max((metrics[m]["n"] for m in reported[:1] if m in metrics), default=0)
            rows.append(f"<tr><td>{html.escape(group_key)}</td><td>{html.escape(label)}</td><td>{n}</td>{cells}</tr>")
    head = "".join(f"<th>{m}</th>" for m in reported)
    return f"<table><thead><tr><th>by</th><th>group</th><th>mazes</th>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
