"""Paired comparison of two evaluations on the same mazes, and the promotion decision.

Mazes are paired by layout hash and resampled together (paired percentile bootstrap), so the
difference interval reflects the pairing. The candidate is promoted when the primary metric's
difference interval excludes 0 on the better side and no guard metric is significantly worse.
"""

from __future__ import annotations

import html
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hyperpod_rl.errors import ConfigError
from hyperpod_rl.eval.report import bar_figure
from hyperpod_rl.eval.result import EvalResult
from hyperpod_rl.eval.stats import (
    DEFAULT_RESAMPLES,
    Interval,
    metric_values,
    nanmean_rows,
)

__all__ = ["Comparison", "MetricDelta", "compare"]


@dataclass(frozen=True)
class MetricDelta:
    """One metric of a comparison: both models' intervals and the paired difference.

    Attributes:
        metric: metric name.
        base, candidate: the two models' means with intervals.
        diff: ``candidate - base`` with its paired bootstrap interval.
        higher_is_better: direction of improvement.
        verdict: ``better`` / ``worse`` when the difference interval excludes 0, else ``same``.
    """

    metric: str
    base: Interval
    candidate: Interval
    diff: Interval
    higher_is_better: bool

    @property
    def verdict(self) -> str:
        if math.isnan(self.diff.value) or not self.diff.excludes_zero():
            return "same"
        return "better" if (self.diff.low > 0) == self.higher_is_better else "worse"


@dataclass
class Comparison:
    """Base vs candidate on the same mazes, with a promotion decision that follows the intervals.

    Attributes:
        base_label, candidate_label: the two results' labels.
        num_mazes: mazes compared (paired by layout hash).
        level: confidence level of every interval.
        deltas: one :class:`MetricDelta` per metric.
        primary: the metric that must improve.
        promote: ``True`` iff the primary metric's difference interval lies entirely on the
            better side of 0 and no guard metric (the task's guards; maze: :data:`~hyperpod_rl.eval.stats.GUARDS`) is significantly worse.
        reason: one sentence explaining ``promote``.
    """

    base_label: str
    candidate_label: str
    num_mazes: int
    level: float
    deltas: dict[str, MetricDelta]
    primary: str
    promote: bool
    reason: str

    def table_rows(self) -> list[dict[str, str]]:
        """Rows for a report table: ``metric``, ``base``, ``candidate``, ``delta``, ``verdict`` (formatted)."""
        return [
            {
                "metric": d.metric,
                "base": d.base.fmt(),
                "candidate": d.candidate.fmt(),
                "delta": d.diff.fmt(signed=True),
                "verdict": d.verdict,
            }
            for d in self.deltas.values()
        ]

    def to_json(self) -> dict[str, Any]:
        return {
            "base_label": self.base_label,
            "candidate_label": self.candidate_label,
            "num_mazes": self.num_mazes,
            "level": self.level,
            "primary": self.primary,
            "promote": self.promote,
            "reason": self.reason,
            "deltas": {k: {**asdict(d), "verdict": d.verdict} for k, d in self.deltas.items()},
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Comparison:
        """Rebuild from :meth:`to_json` output."""
        deltas = {
            k: MetricDelta(
                metric=d["metric"],
                base=Interval(**d["base"]),
                candidate=Interval(**d["candidate"]),
                diff=Interval(**d["diff"]),
                higher_is_better=d["higher_is_better"],
            )
            for k, d in data["deltas"].items()
        }
        keep = ("base_label", "candidate_label", "num_mazes", "level", "primary", "promote", "reason")
        return cls(deltas=deltas, **{k: data[k] for k in keep})

    def save(self, path: str | Path) -> Path:
        """Write the JSON form atomically (canonical JSON), and nothing else."""
        from hyperpod_rl.runs.files import write_json_atomic

        return write_json_atomic(Path(path), self.to_json())

    def _repr_html_(self) -> str:
        return comparison_html(self)


def compare(
    base: EvalResult,
    candidate: EvalResult,
    *,
    primary: str | None = None,
    level: float = 0.95,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> Comparison:
    """Compare two evaluations of the same mazes and decide whether to promote the candidate.

    Mazes are paired by layout hash and resampled together (paired bootstrap), so the
    difference interval is narrower than the two separate intervals suggest.

    Args:
        base: the reference result (usually the base model).
        candidate: the result to promote (usually the adapter).
        primary: metric that must improve significantly (one of the task's reported metrics);
            default: the task's :attr:`~hyperpod_rl.tasks.Task.primary_metric` (maze: ``solve_rate``).
            Metrics, directions and guards come from the results' task
            (:func:`hyperpod_rl.tasks.metric_spec`; maze: :data:`~hyperpod_rl.eval.stats.REPORTED`, :data:`~hyperpod_rl.eval.stats.GUARDS`).
        level: confidence level.
        n_resamples: bootstrap resamples.
        seed: bootstrap seed.

    Returns:
        :class:`Comparison`.

    Raises:
        ConfigError: unknown ``primary``; the results belong to different tasks, share no item, or
            were not evaluated on the same set of items.
    """
    from hyperpod_rl.tasks import get_task, item_names, metric_spec

    if base.task != candidate.task:
        raise ConfigError(f"compare needs two results of one task: {base.label} is {base.task!r}, {candidate.label} is {candidate.task!r}")
    spec = metric_spec(get_task(base.task))
    primary = primary or spec.primary
    if primary not in spec.reported:
        raise ConfigError(f"primary={primary!r} is not a reported metric: use one of {spec.reported}")
    b_by = {m["layout_hash"]: m for m in base.per_maze}
    c_by = {m["layout_hash"]: m for m in candidate.per_maze}
    if set(b_by) != set(c_by) or not b_by:
        raise ConfigError(
            f"compare needs both results on the same mazes: {base.label} has {len(b_by)}, {candidate.label} {len(c_by)}, {len(set(b_by) & set(c_by))} shared; evaluate both on the same rows"
        )
    keys = sorted(b_by)
    b_rows, c_rows = [b_by[k] for k in keys], [c_by[k] for k in keys]
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(keys), size=(n_resamples, len(keys)))
    q = [(1 - level) / 2, (1 + level) / 2]
    deltas = {}
    for metric in spec.reported:
        bv, cv = metric_values(b_rows, metric, spec.episode_key), metric_values(c_rows, metric, spec.episode_key)
        # each model's own interval is the one its evaluation recorded (EvalResult.reported_interval),
        # so this table and `runs list` show the same figure; only the paired difference is computed here
        b_iv, c_iv = (
            (r.reported_interval(metric) if level == 0.95 else r.interval(metric, n_resamples=n_resamples, level=level, seed=seed))
            for r in (base, candidate)
        )
        if b_iv.n and c_iv.n:
            d = nanmean_rows(cv[idx]) - nanmean_rows(bv[idx])
            lo, hi = np.nanquantile(d, q) if np.any(~np.isnan(d)) else (math.nan, math.nan)
            diff = Interval(c_iv.value - b_iv.value, float(lo), float(hi), len(keys))
        else:
            diff = Interval(math.nan, math.nan, math.nan, 0)
        deltas[metric] = MetricDelta(metric, b_iv, c_iv, diff, spec.higher_is_better[metric])
    main = deltas[primary]
    worse = [g for g in spec.guards if g != primary and deltas[g].verdict == "worse"]
    pct = f"{level:.0%}"
    if main.verdict != "better":
        promote, reason = (
            False,
            f"do not promote: the {pct} interval of the {primary} difference, {main.diff.fmt(signed=True)}, does not exclude 0 on the better side",
        )
    elif worse:
        promote, reason = (
            False,
            f"do not promote: {primary} improved ({main.diff.fmt(signed=True)}) but {', '.join(worse)} got significantly worse",
        )
    else:
        promote, reason = (
            True,
            f"promote: {primary} improved by {main.diff.fmt(signed=True)} ({pct} paired bootstrap over {len(keys)} {item_names(get_task(base.task))[1]}) and no guard metric got worse",
        )
    return Comparison(
        base_label=base.label,
        candidate_label=candidate.label,
        num_mazes=len(keys),
        level=level,
        deltas=deltas,
        primary=primary,
        promote=promote,
        reason=reason,
    )


def comparison_html(comparison: Comparison) -> str:
    """Both models' headline rates with intervals, the paired-difference table and the decision."""
    series = {
        lab: {m: getattr(d, which) for m, d in comparison.deltas.items() if m != "steps_over_optimal"}
        for lab, which in ((comparison.base_label, "base"), (comparison.candidate_label, "candidate"))
    }
    fig = bar_figure(
        series, f"{comparison.candidate_label} vs {comparison.base_label} · {comparison.num_mazes} mazes · promote: {comparison.promote}"
    )
    rows = "".join(
        f"<tr><td>{r['metric']}</td><td>{r['base']}</td><td>{r['candidate']}</td><td>{r['delta']}</td><td>{r['verdict']}</td></tr>"
        for r in comparison.table_rows()
    )
    return f"{fig}<table><thead><tr><th>metric</th><th>{html.escape(comparison.base_label)}</th><th>{html.escape(comparison.candidate_label)}</th><th>Δ (paired)</th><th>verdict</th></tr></thead><tbody>{rows}</tbody></table><p>{html.escape(comparison.reason)}</p>"
