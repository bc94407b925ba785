"""Evaluation metrics shared by every task: averages and the per-stratum breakdown."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "MetricSpec",
    "episode_means",
    "item_names",
    "mean_metrics",
    "metric_spec",
    "never_valid",
    "no_valid_answer_note",
    "stratum_breakdown",
    "turn_columns",
]

#: Per-turn columns of a task without ``turn_columns``: the answer's format violation code.
DEFAULT_TURN_COLUMNS = ("violation",)
#: What one row of a task is called, singular and plural, when the task does not say (:func:`item_names`).
DEFAULT_ITEM_NAMES = ("item", "items")


@dataclass(frozen=True)
class MetricSpec:
    """How evaluation reports a task's metrics.

    Attributes:
        primary: the metric compared for promotion (higher is better).
        reported: reported metrics, in report order (the primary first).
        episode_key: reported metric -> per-episode metric key it averages.
        higher_is_better: reported metric -> direction.
        guards: metrics that block promotion when significantly worse.
        invalid: the reported metric that is the share of answers breaking the answer format
            (``None`` when the task reports none).
    """

    primary: str
    reported: tuple[str, ...]
    episode_key: dict[str, str]
    higher_is_better: dict[str, bool]
    guards: tuple[str, ...]
    invalid: str | None = None


def metric_spec(task: Any) -> MetricSpec:
    """The :class:`MetricSpec` of a task (defaults for the optional members).

    Defaults when a task lacks them: ``reported_metrics`` ``{primary_metric: primary_metric}``,
    nothing lower-is-better, no guards, ``invalid_metric`` ``"invalid"`` when reported.
    """
    primary = str(task.primary_metric)
    keys = dict(getattr(task, "reported_metrics", None) or {primary: primary})
    keys.setdefault(primary, primary)
    order = (primary, *(k for k in keys if k != primary))
    lower = set(getattr(task, "lower_is_better", ()) or ())
    guards = tuple(g for g in (getattr(task, "guard_metrics", ()) or ()) if g in keys and g != primary)
    invalid = getattr(task, "invalid_metric", None) or "invalid"
    return MetricSpec(primary, order, keys, {m: m not in lower for m in order}, guards, invalid if invalid in keys else None)


def never_valid(task: Any, aggregates: Sequence[Mapping[str, Any]], *, prefix: str = "") -> bool:
    """True when every aggregate shows an invalid-answer share of 1: no answer was well-formed.

    Args:
        task: the task (its :class:`MetricSpec` ``invalid`` names the share).
        aggregates: aggregated metrics, e.g. an evaluation's ``metrics`` or each training step's values.
        prefix: put before the metric names, e.g. ``"environment/"`` for training-step values.

    Returns:
        False when no aggregate holds the share (nothing to judge) or any is below 1.
    """
    spec = metric_spec(task)
    if spec.invalid is None:
        return False
    names = (prefix + spec.invalid, prefix + spec.episode_key[spec.invalid])
    shares = [next((float(a[n]) for n in names if isinstance(a.get(n), (int, float))), None) for a in aggregates]
    return bool(shares) and all(s is not None and s >= 1.0 for s in shares)


def no_valid_answer_note(task: Any, where: str, *, floor: float | None = None) -> str:
    """The message for :func:`never_valid`: what happened and what to do.

    Args:
        task: the task.
        where: what was looked at, e.g. ``"12 training steps"``.
        floor: the reward every rollout got (the invalid floor), if known.
    """
    at = f" ({floor:+.3f})" if floor is not None else ""
    free = "free-form " if not getattr(task, "answer_words", ()) else ""
    return (
        f"no rollout produced a valid {free}{task.name} answer in {where}: every answer broke the answer format, so the reward "
        f"stayed at the invalid floor{at} and GRPO had nothing to learn from. This is expected for the untrained tiny model"
        f"{' on a free-form task (it cannot write the action syntax)' if free else ''}; for a learning demo use the maze task "
        "(hyperpod-rl quickstart, constrained to its four moves) or a real base model (--model-path <Qwen3-VL checkpoint>)."
    )


def turn_columns(task: Any) -> tuple[str, ...]:
    """The step-metadata keys a task shows per turn when a served model plays one of its items
    (its optional ``turn_columns`` member; default ``("violation",)``)."""
    return tuple(getattr(task, "turn_columns", None) or DEFAULT_TURN_COLUMNS)


def item_names(task: Any) -> tuple[str, str]:
    """What one row (prompt) of a task is called, singular and plural, e.g. ``("maze", "mazes")``:
    the words the quickstart and comparisons use (its optional ``item_names`` member; default
    :data:`DEFAULT_ITEM_NAMES`)."""
    names = getattr(task, "item_names", None)
    return (str(names[0]), str(names[1])) if names and len(names) == 2 else DEFAULT_ITEM_NAMES


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


def episode_means(metrics: Sequence[Mapping[str, Any]], keys: Mapping[str, str], *, when_present: Sequence[str] = ()) -> dict[str, float]:
    """Named means of episode metrics: a task's ``aggregate_metrics``.

    Each mean skips the episodes without the key or with a None or NaN value, and is 0.0 when no
    episode has one.

    Args:
        metrics: per-episode metrics (the env's ``get_metrics()``).
        keys: reported name -> the per-episode key it averages, in report order.
        when_present: keys reported (under their own name, after ``keys``) only when some episode
            has them, e.g. ``steps_over_optimal`` (solved episodes only).

    Returns:
        ``{name: mean}``; ``{}`` for no episodes.
    """
    if not metrics:
        return {}

    def mean(key: str) -> float:
        values = [float(m[key]) for m in metrics if m.get(key) is not None and not math.isnan(float(m[key]))]
        return sum(values) / len(values) if values else 0.0

    out = {name: mean(key) for name, key in keys.items()}
    out.update({key: mean(key) for key in when_present if any(key in m for m in metrics)})
    return out


def multi_turn_means(metrics: Sequence[Mapping[str, Any]], rates: Sequence[str]) -> dict[str, float]:
    """The aggregates of multi-turn episodes (:class:`hyperpod_rl.tasks.env.MultiTurnTaskEnv`'s metrics).

    Args:
        metrics: per-episode metrics with ``solved`` (0/1), ``turns`` and, for solved episodes,
            ``steps_over_optimal``.
        rates: the task's per-episode rates, each reported under its own name, e.g. ``optimal_move_rate``.

    Returns:
        ``solve_rate``, each of ``rates``, ``mean_turns``, and ``steps_over_optimal`` (over the
        solved episodes; absent when none was solved), by :func:`episode_means`; ``{}`` for no episodes.
    """
    keys = {"solve_rate": "solved", **{rate: rate for rate in rates}, "mean_turns": "turns"}
    return episode_means(metrics, keys, when_present=("steps_over_optimal",))
