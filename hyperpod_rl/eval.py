"""Evaluate a base model, with or without an adapter, on held-out and out-of-distribution mazes.

One greedy episode per maze (:func:`hyperpod_rl.train.benchmark.greedy_benchmark`). Metrics are
the maze env's own (:meth:`hyperpod_rl.maze.MazeEnv.aggregate_metrics`), averaged over mazes:

* ``solve_rate``: share of mazes solved within the turn limit;
* ``optimal_move_rate``: share of a maze's turns whose move lies on a shortest path (BFS);
* ``invalid_move_rate``: share of a maze's turns whose answer broke the format;
* ``steps_over_optimal``: turns used minus the shortest path, over *solved* mazes only.

Uncertainty: every figure comes with a percentile-bootstrap 95% confidence interval over mazes
(Efron & Tibshirani 1993, ch. 13; NumPy, 2000 resamples by default), overall and broken down by
difficulty stratum and by grid size. :func:`compare` pairs two evaluations maze by maze (same
layout hashes), bootstraps the difference and decides promotion from the intervals.

Opt-in extra passes: ``text_twin=True`` plays the same mazes as text-grid twins
(``observation="text"``), separating perception from planning; :func:`ood_rows` builds the
out-of-distribution split (larger grids, longer paths) for ``evaluate(..., split="ood")``.
"""

from __future__ import annotations

import html
import json
import math
import os
import warnings
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hyperpod_rl.errors import CheckpointError, ConfigError
from hyperpod_rl.maze import DatasetSpec, Maze, RenderStyle, build_dataset, build_prompt
from hyperpod_rl.model.loading import load_base_model
from hyperpod_rl.train.benchmark import greedy_benchmark
from hyperpod_rl.train.policy import MazePolicy

__all__ = [
    "Comparison",
    "EvalResult",
    "Interval",
    "MetricDelta",
    "bootstrap_interval",
    "compare",
    "evaluate",
    "load_policy",
    "ood_rows",
    "text_twin_rows",
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


def _values(per_maze: list[dict[str, Any]], metric: str) -> np.ndarray:
    key = PER_MAZE_KEY.get(metric, metric)
    return np.array([float(m[key]) if m.get(key) is not None else np.nan for m in per_maze], dtype=float)


def _nanmean_rows(x: np.ndarray) -> np.ndarray:
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
    means = _nanmean_rows(values[idx])
    lo, hi = np.nanquantile(means, [(1 - level) / 2, (1 + level) / 2])
    return Interval(float(np.nanmean(values)), float(lo), float(hi), n_valid)


def _breakdown(per_maze: list[dict[str, Any]], group_key: str, *, n_resamples: int, seed: int) -> dict[str, dict[str, Interval]]:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for m in per_maze:
        if group_key == "size":
            label = "x".join(str(s) for s in m.get("size") or [])
        else:
            label = str(m.get(group_key))
        groups[label].append(m)
    return {
        label: {metric: bootstrap_interval(_values(rows, metric), n_resamples=n_resamples, seed=seed) for metric in REPORTED}
        for label, rows in sorted(groups.items())
    }


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

    def interval(self, metric: str, *, n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> Interval:
        """Bootstrap interval of one metric over this result's mazes."""
        return bootstrap_interval(_values(self.per_maze, metric), n_resamples=n_resamples, seed=seed)

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
        """Read a saved result."""
        return cls.from_json(json.loads(Path(path).read_text()))

    def save(self, path: str | Path) -> Path:
        """Write the JSON form atomically.

        When ``path`` is ``<run dir>/eval/<name>.json`` and the run has a ``manifest.json``, the
        result's figures and intervals are also recorded there under ``eval.<name>`` and in the
        run ledger (best effort); the trainer collects files saved before the run started.
        """
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_name(f"{p.name}.tmp-{os.getpid()}")
        tmp.write_text(json.dumps(self.to_json(), indent=1))
        os.replace(tmp, p)
        if p.parent.name == "eval" and (p.parent.parent / "manifest.json").is_file():
            _record_in_run(p.parent.parent, p.stem, self, p)
        return p

    def summary(self) -> dict[str, Any]:
        """Figures and intervals without the per-maze records (what the manifest keeps)."""
        out = {
            "label": self.label,
            "split": self.split,
            "observation": self.observation,
            "num_mazes": self.num_mazes,
            "metrics": self.metrics,
            "ci": self.ci,
        }
        if self.text_twin is not None:
            out["text_twin"] = self.text_twin.summary()
        return out

    def _repr_html_(self) -> str:
        title = f"{html.escape(self.label)} · {self.split} · {self.num_mazes} mazes ({self.observation})"
        results = [self] + ([self.text_twin] if self.text_twin is not None else [])
        fig = _bar_figure({f"{r.label} ({r.observation})": {m: _interval_from(r, m) for m in REPORTED[:3]} for r in results}, title)
        return fig + _breakdown_table(self)


def _interval_from(result: EvalResult, metric: str) -> Interval:
    if metric in result.ci and metric in result.metrics:
        lo, hi = result.ci[metric]
        return Interval(result.metrics[metric], lo, hi, result.num_mazes)
    return result.interval(metric)


def _bar_figure(series: dict[str, dict[str, Interval]], title: str) -> str:
    import plotly.graph_objects as go

    fig = go.Figure()
    for name, metrics in series.items():
        names = list(metrics)
        vals = [metrics[m].value for m in names]
        fig.add_bar(
            name=name,
            x=names,
            y=vals,
            error_y={
                "type": "data",
                "symmetric": False,
                "array": [metrics[m].high - metrics[m].value for m in names],
                "arrayminus": [metrics[m].value - metrics[m].low for m in names],
            },
        )
    fig.update_layout(title=title, barmode="group", yaxis_title="rate (95% bootstrap CI)", height=360, margin={"t": 50, "b": 40})
    return fig.to_html(full_html=False, include_plotlyjs="cdn")


def _breakdown_table(result: EvalResult) -> str:
    rows = []
    for group_key, groups in result.breakdown.items():
        for label, metrics in groups.items():
            cells = "".join(f"<td>{Interval(**metrics[m]).fmt() if m in metrics else ''}</td>" for m in REPORTED)
            n = max((metrics[m]["n"] for m in ("solve_rate",) if m in metrics), default=0)
            rows.append(f"<tr><td>{html.escape(group_key)}</td><td>{html.escape(label)}</td><td>{n}</td>{cells}</tr>")
    head = "".join(f"<th>{m}</th>" for m in REPORTED)
    return f"<table><thead><tr><th>by</th><th>group</th><th>mazes</th>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _record_in_run(run_dir: Path, name: str, result: EvalResult, path: Path) -> None:
    from hyperpod_rl.ledger import record_manifest
    from hyperpod_rl.train.manifest import update_manifest

    entry = {**result.summary(), "path": str(path.relative_to(run_dir))}

    def change(current: dict[str, Any] | None) -> dict[str, Any]:
        out = dict(current or {})
        out.setdefault("eval", {})[name] = entry
        return out

    manifest = update_manifest(run_dir, change)
    if os.environ.get("HYPERPOD_RL_LEDGER", "").lower() != "off" and "run_id" in manifest:
        record_manifest(manifest, run_dir)


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


def text_twin_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same mazes with text-grid observations (``observation="text"``, no images).

    Each twin keeps the layout hash, size, stratum, turn limit and prompt style of its row; only
    the prompt and the per-turn observations become text (:func:`hyperpod_rl.maze.build_prompt`).
    """
    out = []
    for row in rows:
        maze = Maze.from_json(row["maze"])
        style = RenderStyle.model_validate_json(row["render_style"]) if row.get("render_style") else None
        prompt = build_prompt(
            maze,
            mode=row.get("mode", "step"),
            max_turns=int(row["max_turns"]),
            style=style,
            observation="text",
            prompt_style=row.get("prompt_style", "full"),
        )
        out.append({**row, "prompt": prompt, "observation": "text", "image_tokens": 0})
    return out


def ood_rows(
    spec: dict[str, Any] | DatasetSpec, count: int, *, in_distribution: list[dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """Build the out-of-distribution split of a dataset spec: ``ood_sizes`` grids, longer paths.

    Args:
        spec: the dataset's :class:`~hyperpod_rl.maze.DatasetSpec` (or its JSON dict, e.g.
            ``DatasetPaths.spec`` from the quickstart).
        count: ood mazes.
        in_distribution: train/held-out rows; the ood paths are made longer than all of them
            (unless the spec sets ``ood_min_path_length``).

    Raises:
        ConfigError: ``count`` < 1.
    """
    if count < 1:
        raise ConfigError(f"ood count must be >= 1, got {count}")
    base = spec.model_dump() if isinstance(spec, DatasetSpec) else dict(spec)
    base["counts"] = {"ood": count}
    if base.get("ood_min_path_length") is None and in_distribution:
        base["ood_min_path_length"] = max(int(r["shortest_path_length"]) for r in in_distribution) + 1
    return build_dataset(DatasetSpec.model_validate(base))["ood"]


def _finish(result: EvalResult, *, n_resamples: int, seed: int) -> EvalResult:
    for metric in REPORTED:
        iv = bootstrap_interval(_values(result.per_maze, metric), n_resamples=n_resamples, seed=seed)
        if iv.n:
            result.ci[metric] = [iv.low, iv.high]
    result.breakdown = {
        key: {
            label: {m: asdict(iv) for m, iv in metrics.items() if iv.n}
            for label, metrics in _breakdown(result.per_maze, key, n_resamples=n_resamples, seed=seed).items()
        }
        for key in ("stratum", "size")
    }
    return result


def evaluate(
    model_path: str | Path,
    rows: list[dict[str, Any]],
    *,
    adapter_path: str | Path | None = None,
    label: str | None = None,
    max_turns: int | None = None,
    policy: MazePolicy | None = None,
    split: str | None = None,
    text_twin: bool = False,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> EvalResult:
    """Play one greedy episode per maze; aggregate the env's metrics with bootstrap intervals.

    Cost: one model pass per maze turn (two with ``text_twin``); the bootstrap (NumPy, on the
    per-maze numbers) takes milliseconds for 200 mazes.

    Args:
        model_path: base model directory.
        rows: held-out (or ood) dataset rows.
        adapter_path: PEFT adapter directory, or ``None`` for the base model.
        label: name in reports (default ``"adapter"`` / ``"base"``).
        max_turns: override the rows' turn limit.
        policy: an already loaded policy (skips loading).
        split: recorded split name (default: the rows' ``split`` column, else ``heldout``).
        text_twin: also play the same mazes as text grids (an extra pass), in ``.text_twin``.
        n_resamples: bootstrap resamples.
        seed: bootstrap seed (evaluation itself is greedy, hence deterministic).

    Returns:
        :class:`EvalResult`.

    Raises:
        ConfigError: no rows.
    """
    if not rows:
        raise ConfigError("evaluate got no rows: pass the held-out rows (read_rows(data.heldout))")
    pol = policy or load_policy(model_path, adapter_path)
    name = label or ("adapter" if adapter_path else "base")
    split_name = split or str(rows[0].get("split") or "heldout")

    def run(these: list[dict[str, Any]], observation: str) -> EvalResult:
        metrics, per_maze = greedy_benchmark(pol, these, max_turns=max_turns)
        res = EvalResult(
            label=name,
            model_path=str(model_path),
            adapter_path=str(adapter_path) if adapter_path else None,
            num_mazes=len(these),
            metrics=metrics,
            per_maze=per_maze,
            split=split_name,
            observation=observation,
        )
        return _finish(res, n_resamples=n_resamples, seed=seed)

    result = run(rows, str(rows[0].get("observation") or "image"))
    if text_twin:
        result.text_twin = run(text_twin_rows(rows), "text")
    return result


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
            better side of 0 and no guard metric (:data:`GUARDS`) is significantly worse.
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

    def save(self, path: str | Path) -> Path:
        """Write the JSON form atomically."""
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_name(f"{p.name}.tmp-{os.getpid()}")
        tmp.write_text(json.dumps(self.to_json(), indent=1))
        os.replace(tmp, p)
        return p

    def _repr_html_(self) -> str:
        series = {
            lab: {m: getattr(d, which) for m, d in self.deltas.items() if m != "steps_over_optimal"}
            for lab, which in ((self.base_label, "base"), (self.candidate_label, "candidate"))
        }
        fig = _bar_figure(series, f"{self.candidate_label} vs {self.base_label} · {self.num_mazes} mazes · promote: {self.promote}")
        rows = "".join(
            f"<tr><td>{r['metric']}</td><td>{r['base']}</td><td>{r['candidate']}</td><td>{r['delta']}</td><td>{r['verdict']}</td></tr>"
            for r in self.table_rows()
        )
        return f"{fig}<table><thead><tr><th>metric</th><th>{html.escape(self.base_label)}</th><th>{html.escape(self.candidate_label)}</th><th>Δ (paired)</th><th>verdict</th></tr></thead><tbody>{rows}</tbody></table><p>{html.escape(self.reason)}</p>"


def compare(
    base: EvalResult,
    candidate: EvalResult,
    *,
    primary: str = "solve_rate",
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
        primary: metric that must improve significantly (one of :data:`REPORTED`).
        level: confidence level.
        n_resamples: bootstrap resamples.
        seed: bootstrap seed.

    Returns:
        :class:`Comparison`.

    Raises:
        ConfigError: unknown ``primary``; the results share no maze or were not evaluated on
            the same set of mazes.
    """
    if primary not in REPORTED:
        raise ConfigError(f"primary={primary!r} is not a reported metric: use one of {REPORTED}")
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
    for metric in REPORTED:
        bv, cv = _values(b_rows, metric), _values(c_rows, metric)
        b_iv = bootstrap_interval(bv, n_resamples=n_resamples, level=level, seed=seed)
        c_iv = bootstrap_interval(cv, n_resamples=n_resamples, level=level, seed=seed)
        if b_iv.n and c_iv.n:
            d = _nanmean_rows(cv[idx]) - _nanmean_rows(bv[idx])
            lo, hi = np.nanquantile(d, q) if np.any(~np.isnan(d)) else (math.nan, math.nan)
            diff = Interval(c_iv.value - b_iv.value, float(lo), float(hi), len(keys))
        else:
            diff = Interval(math.nan, math.nan, math.nan, 0)
        deltas[metric] = MetricDelta(metric, b_iv, c_iv, diff, HIGHER_IS_BETTER[metric])
    main = deltas[primary]
    worse = [g for g in GUARDS if g != primary and deltas[g].verdict == "worse"]
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
            f"promote: {primary} improved by {main.diff.fmt(signed=True)} ({pct} paired bootstrap over {len(keys)} mazes) and no guard metric got worse",
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
