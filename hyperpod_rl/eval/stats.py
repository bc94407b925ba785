"""Bootstrap statistics over mazes: the reported metrics, intervals and per-group breakdowns.

Percentile bootstrap (Efron & Tibshirani 1993, ch. 13) over mazes with NumPy.
"""

from __future__ import annotations

import math
import warnings
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "DEFAULT_RESAMPLES",
    "GUARDS",
    "HIGHER_IS_BETTER",
    "PER_MAZE_KEY",
    "REPORTED",
    "Interval",
    "bootstrap_interval",
    "breakdown",
    "metric_values",
    "nanmean_rows",
]

REPORTED = ("solve_rate", "optimal_move_rate", "invalid_move_rate", "steps_over_optimal")
#: Per-maze key of each reported metric (``steps_over_optimal`` is absent for unsolved mazes).
PER_MAZE_KEY = {
    "solve_rate": "solved",
    "optimal_move_rate": "optimal_move_rate",
    "invalid_move_rate": "invalid_move_rate",
    "steps_over_optimal": "steps_over_optimal",
}
HIGHER_IS_BETTER = {"solve_rate": True, "optimal_move_rate": True, "invalid_move_rate": False, "steps_over_optimal": False}
#: Metrics that block promotion when the adapter is significantly worse on them.
GUARDS = ("optimal_move_rate", "invalid_move_rate")
DEFAULT_RESAMPLES = 2000


@dataclass(frozen=True)
class Interval:
    """A mean with its bootstrap confidence interval.

    Attributes:
        value: the mean over mazes (NaN when no maze has the metric).
        low, high: interval bounds (same unit as ``value``).
        n: mazes that carry the metric.
    """

    value: float
    low: float
    high: float
    n: int

    def excludes_zero(self) -> bool:
        return self.low > 0 or self.high < 0

    def fmt(self, signed: bool = False) -> str:
        if math.isnan(self.value):
            return "n/a"
        f = "{:+.3f}" if signed else "{:.3f}"
        return f"{f.format(self.value)} [{f.format(self.low)}, {f.format(self.high)}]"


def metric_values(per_maze: list[dict[str, Any]], metric: str, keys: Mapping[str, str] | None = None) -> np.ndarray:
    """Per-item values of ``metric`` (NaN where absent); ``keys`` maps metrics to per-item keys
    (default :data:`PER_MAZE_KEY`; a task's :attr:`MetricSpec.episode_key`)."""
    key = (PER_MAZE_KEY if keys is None else keys).get(metric, metric)
    return np.array([float(m[key]) if m.get(key) is not None else np.nan for m in per_maze], dtype=float)


def nanmean_rows(x: np.ndarray) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a resample without any solved maze
        return np.nanmean(x, axis=-1)


def bootstrap_interval(values: np.ndarray, *, n_resamples: int = DEFAULT_RESAMPLES, level: float = 0.95, seed: int = 0) -> Interval:
    """Percentile-bootstrap interval of the mean of ``values`` (shape ``(n,)``; NaN = not applicable).

    Resamples mazes with replacement, NaN entries included, so a ratio metric such as
    ``steps_over_optimal`` is re-estimated over the solved mazes of each resample.
    """
    n_valid = int(np.sum(~np.isnan(values)))
    if n_valid == 0:
        return Interval(math.nan, math.nan, math.nan, 0)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(values), size=(n_resamples, len(values)))
    means = nanmean_rows(values[idx])
    lo, hi = np.nanquantile(means, [(1 - level) / 2, (1 + level) / 2])
    return Interval(float(np.nanmean(values)), float(lo), float(hi), n_valid)


def breakdown(
    per_maze: list[dict[str, Any]],
    group_key: str,
    *,
    n_resamples: int,
    seed: int,
    metrics: Sequence[str] = REPORTED,
    keys: Mapping[str, str] | None = None,
) -> dict[str, dict[str, Interval]]:
    """Bootstrap intervals of ``metrics`` per group (``group_key``: ``"stratum"``, ``"size"`` or any per-item key)."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for m in per_maze:
        if group_key == "size":
            label = "x".join(str(s) for s in m.get("size") or [])
        else:
            label = str(m.get(group_key))
        groups[label].append(m)
    return {
        label: {metric: bootstrap_interval(metric_values(rows, metric, keys), n_resamples=n_resamples, seed=seed) for metric in metrics}
        for label, rows in sorted(groups.items())
    }
