"""Evaluation metrics shared by every task: averages and the per-stratum breakdown."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["mean_metrics", "stratum_breakdown"]


def mean_metrics(metrics: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Mean of every numeric key over the episodes that have it (NaN values skipped).

    Returns:
        ``{key: mean}`` in first-seen key order; ``{}`` for no episodes. Booleans count as 0/1.
    """
    sums: dict[str, list[float]] = {}
    for m in metrics:
        for k, v in m.items():
            if isinstance(v, (int, float)) and not (isinstance(v, float) and math.isnan(v)):
                sums.setdefault(k, []).append(float(v))
    return {k: sum(v) / len(v) for k, v in sums.items()}


def stratum_breakdown(
    strata: Sequence[str],
    metrics: Sequence[Mapping[str, Any]],
    aggregate: Callable[[Sequence[Mapping[str, Any]]], Mapping[str, float]] = mean_metrics,
) -> dict[str, dict[str, float]]:
    """Aggregate episode metrics per difficulty stratum.

    Args:
        strata: the stratum label of each episode's row (same length as ``metrics``).
        metrics: per-episode metrics (the env's ``get_metrics()``).
        aggregate: the task's :meth:`~hyperpod_rl.tasks.protocol.Task.aggregate_metrics`.

    Returns:
        ``{stratum: {metric: value, "episodes": n}}``, strata sorted by name.

    Raises:
        ValueError: the two sequences differ in length.
    """
    if len(strata) != len(metrics):
        raise ValueError(f"stratum_breakdown got {len(strata)} strata for {len(metrics)} episodes")
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for s, m in zip(strata, metrics, strict=True):
        groups.setdefault(str(s), []).append(m)
    return {s: {**aggregate(groups[s]), "episodes": float(len(groups[s]))} for s in sorted(groups)}
