"""Evaluation metrics shared by every task: averages and the per-stratum breakdown."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["MetricSpec", "mean_metrics", "metric_spec", "stratum_breakdown", "turn_columns"]

#: Per-turn columns of a task without ``turn_columns``: the answer's format violation code.
DEFAULT_TURN_COLUMNS = ("violation",)


@dataclass(frozen=True)
class MetricSpec:
    """How evaluation reports a task's metrics.

    Attributes:
        primary: the metric compared for promotion (higher is better).
        reported: reported metrics, in report order (the primary first).
        episode_key: reported metric -> per-episode metric key it averages.
        higher_is_better: reported metric -> direction.
        guards: metrics that block promotion when significantly worse.
    """

    primary: str
    reported: tuple[str, ...]
    episode_key: dict[str, str]
    higher_is_better: dict[str, bool]
    guards: tuple[str, ...]


def metric_spec(task: Any) -> MetricSpec:
    """The :class:`MetricSpec` of a task (defaults for the optional members).

    Defaults when a task lacks them: ``reported_metrics`` ``{primary_metric: primary_metric}``,
    nothing lower-is-better, no guards.
    """
    primary = str(task.primary_metric)
    keys = dict(getattr(task, "reported_metrics", None) or {primary: primary})
    keys.setdefault(primary, primary)
    order = (primary, *(k for k in keys if k != primary))
    lower = set(getattr(task, "lower_is_better", ()) or ())
    guards = tuple(g for g in (getattr(task, "guard_metrics", ()) or ()) if g in keys and g != primary)
    return MetricSpec(primary, order, keys, {m: m not in lower for m in order}, guards)


def turn_columns(task: Any) -> tuple[str, ...]:
    """The step-metadata keys a task shows per turn when a served model plays one of its items
    (its optional ``turn_columns`` member; default ``("violation",)``)."""
    return tuple(getattr(task, "turn_columns", None) or DEFAULT_TURN_COLUMNS)


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
