"""Metric records -> plotly figure data (pure: no widgets, no I/O).

Every function takes :class:`~hyperpod_rl.metrics.schema.MetricRecord` lists (or hardware
samples) and returns plain dicts and lists that a ``plotly.graph_objects.Figure`` or
``FigureWidget`` accepts as trace properties, so the notebook panels, static reports and tests
share one definition of every chart.

Every chart reads without a manual: every drawn trace has a legend entry, each subplot has its
own legend beside it (plotly's ``legend``, ``legend2``, ...), every axis carries its unit, the
figures size themselves to the output's width (``autosize``, no fixed width) and the bottleneck
verdict names the phase with the legend's own word (:data:`PHASES`).

Metric names are SkyRL 0.3.0's (``skyrl/train/trainer.py`` trackers): ``reward/avg_raw_reward``,
``reward/min_raw_reward``, ``reward/max_raw_reward``, ``reward/std_raw_reward``,
``policy/policy_loss``, ``policy/policy_kl``, ``policy/policy_entropy``,
``policy/response_length``, ``trainer/tokens_per_second``, ``timing/generate``,
``timing/policy_train``, ``timing/weight_sync`` (``timing/sync_weights`` in some SkyRL
versions) and ``timing/step``; timings are seconds.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from hyperpod_rl.metrics.schema import MetricRecord

__all__ = [
    "HARDWARE_AXES",
    "HARDWARE_PANELS",
    "PHASES",
    "TRAINING_AXES",
    "TRAINING_PANELS",
    "bottleneck_verdict",
    "hardware_layout",
    "hardware_panels",
    "hardware_traces",
    "merge_records",
    "series",
    "step_breakdown",
    "training_layout",
    "training_traces",
]

REWARD = "reward/avg_raw_reward"
REWARD_MIN = "reward/min_raw_reward"
REWARD_MAX = "reward/max_raw_reward"
REWARD_STD = "reward/std_raw_reward"
GENERATE = "timing/generate"
TRAIN = "timing/policy_train"
SYNC_NAMES = ("timing/weight_sync", "timing/sync_weights")
STEP = "timing/step"

#: Step-time phases of the stacked breakdown, in stacking order.
PHASES: tuple[str, ...] = ("generate", "train", "weight sync", "other")

#: Subplot titles of the training figure, one row each (top to bottom).
TRAINING_PANELS: tuple[str, ...] = (
    "reward",
    "policy loss / KL / entropy",
    "response length (tokens)",
    "tokens/s",
    "step time (s)",
)

#: y-axis titles (with units) of the training figure, one per row of :data:`TRAINING_PANELS`;
#: short enough to fit beside their row (the subplot titles and legends name the traces).
TRAINING_AXES: tuple[str, ...] = (
    "reward",
    "nats",
    "tokens",
    "tokens/s",
    "seconds",
)

#: Subplot titles of the hardware figure, one row each (top to bottom).
HARDWARE_PANELS: tuple[str, ...] = (
    "CPU (%)",
    "memory (GiB)",
    "GPU (%)",
    "GPU memory (GiB)",
)

#: y-axis titles (with units) of the hardware figure, one per row of :data:`HARDWARE_PANELS`.
HARDWARE_AXES: tuple[str, ...] = ("% of node", "GiB", "% (mean of GPUs)", "GiB")

_VERTICAL_SPACING = 0.05

_POLICY = (
    ("policy/policy_loss", "policy loss"),
    ("policy/policy_kl", "KL"),
    ("policy/policy_entropy", "entropy"),
)


def merge_records(old: Sequence[MetricRecord], new: Iterable[MetricRecord]) -> list[MetricRecord]:
    """Union of two record lists, one record per step (the newer one wins), sorted by step.

    The same step can arrive twice (from ``metrics.jsonl`` and from the job log, or again after a
    resume rewrote the file); the newest copy replaces the older one.
    """
    by_step = {r.step: r for r in old}
    for rec in new:
        by_step[rec.step] = rec
    return [by_step[s] for s in sorted(by_step)]


def series(records: Sequence[MetricRecord], name: str) -> tuple[list[int], list[float]]:
    """Steps and values of one metric, skipping records that lack it or hold NaN/inf.

    Returns:
        ``(steps, values)``, two lists of equal length.
    """
    steps: list[int] = []
    values: list[float] = []
    for rec in records:
        value = rec.values.get(name)
        if value is None or not math.isfinite(value):
            continue
        steps.append(rec.step)
        values.append(float(value))
    return steps, values


def step_breakdown(record: MetricRecord) -> dict[str, float]:
    """Split one step's wall time into :data:`PHASES` (seconds).

    ``other`` is ``timing/step`` minus the named phases, floored at 0 (phases can overlap with
    async rollouts). Without ``timing/step`` the step time is the sum of the phases. Weight sync
    is 0 when the backend does not report it (the reference backend trains and generates with
    one copy of the weights).

    Returns:
        Phase name -> seconds, keys in :data:`PHASES` order.
    """
    vals = record.values
    generate = max(vals.get(GENERATE, 0.0), 0.0)
    train = max(vals.get(TRAIN, 0.0), 0.0)
    sync = max(next((vals[n] for n in SYNC_NAMES if n in vals), 0.0), 0.0)
    named = generate + train + sync
    step = vals.get(STEP, named)
    return {
        "generate": generate,
        "train": train,
        "weight sync": sync,
        "other": max(step - named, 0.0),
    }


def bottleneck_verdict(records: Sequence[MetricRecord], *, last_n: int = 10) -> str:
    """One line naming the phase that takes most of the step time over the last ``last_n`` steps.

    The phase is named with the word its bar carries in the step-time legend (:data:`PHASES`).
    Example: ``"generate takes 71% of step time (last 10 steps)"``.

    Returns:
        The verdict, or ``"no step timings yet"`` before the first record with timings.
    """
    recent = [r for r in records if any(k.startswith("timing/") for k in r.values)][-last_n:]
    if not recent:
        return "no step timings yet"
    totals = dict.fromkeys(PHASES, 0.0)
    for rec in recent:
        for phase, secs in step_breakdown(rec).items():
            totals[phase] += secs
    total = sum(totals.values())
    if total <= 0:
        return "no step timings yet"
    phase = max(totals, key=lambda p: totals[p])
    n = len(recent)
    return f"{phase} takes {100 * totals[phase] / total:.0f}% of step time (last {n} step{'s' if n != 1 else ''})"


def _band(
    records: Sequence[MetricRecord],
) -> tuple[list[int], list[float], list[float]] | None:
    """(steps, low, high) of the reward band: min-max when logged, else mean +- std."""
    steps, lows, highs = [], [], []
    for rec in records:
        v = rec.values
        if REWARD_MIN in v and REWARD_MAX in v:
            lo, hi = v[REWARD_MIN], v[REWARD_MAX]
        elif REWARD in v and REWARD_STD in v:
            lo, hi = v[REWARD] - v[REWARD_STD], v[REWARD] + v[REWARD_STD]
        else:
            continue
        if math.isfinite(lo) and math.isfinite(hi):
            steps.append(rec.step)
            lows.append(float(lo))
            highs.append(float(hi))
    return (steps, lows, highs) if steps else None


def training_traces(records: Sequence[MetricRecord]) -> list[dict[str, Any]]:
    """The traces of the training figure; the list has the same length and order for any input.

    A fixed trace list lets a ``FigureWidget`` be updated in place (``fig.data[i].x = ...``
    inside ``batch_update()``) instead of re-adding traces. Trace ``row`` keys index
    :data:`TRAINING_PANELS` from 1.

    Traces: reward band low, reward band high (filled to the low trace), mean reward; policy
    loss, KL, entropy; response length; tokens/s; one stacked bar per :data:`PHASES` entry.

    Returns:
        Trace dicts with ``type``, ``name``, ``x``, ``y``, ``row`` and styling keys.
    """
    band = _band(records) or ([], [], [])
    rsteps, rvals = series(records, REWARD)
    traces: list[dict[str, Any]] = [
        {
            "type": "scatter",
            "name": "reward band low",
            "x": band[0],
            "y": band[1],
            "mode": "lines",
            "line": {"width": 0},
            "showlegend": False,  # the invisible lower edge of the band; its legend entry is the band's
            "legendgroup": "reward band",
            "hoverinfo": "skip",
            "row": 1,
        },
        {
            "type": "scatter",
            "name": "reward min-max",
            "legendgroup": "reward band",
            "x": band[0],
            "y": band[2],
            "mode": "lines",
            "line": {"width": 0},
            "fill": "tonexty",
            "fillcolor": "rgba(31,119,180,0.2)",
            "row": 1,
        },
        {
            "type": "scatter",
            "name": "mean reward",
            "x": rsteps,
            "y": rvals,
            "mode": "lines+markers",
            "line": {"color": "#1f77b4"},
            "row": 1,
        },
    ]
    for key, label in _POLICY:
        x, y = series(records, key)
        traces.append(
            {
                "type": "scatter",
                "name": label,
                "x": x,
                "y": y,
                "mode": "lines",
                "row": 2,
            }
        )
    x, y = series(records, "policy/response_length")
    traces.append(
        {
            "type": "scatter",
            "name": "response length",
            "x": x,
            "y": y,
            "mode": "lines",
            "row": 3,
        }
    )
    x, y = series(records, "trainer/tokens_per_second")
    traces.append(
        {
            "type": "scatter",
            "name": "tokens/s",
            "x": x,
            "y": y,
            "mode": "lines",
            "row": 4,
        }
    )
    timed = [r for r in records if any(k.startswith("timing/") for k in r.values)]
    parts = [step_breakdown(r) for r in timed]
    for phase in PHASES:
        traces.append(
            {
                "type": "bar",
                "name": phase,
                "x": [r.step for r in timed],
                "y": [p[phase] for p in parts],
                "row": 5,
            }
        )
    for trace in traces:
        trace["legend"] = _legend_ref(trace["row"])
    return traces


def _legend_ref(row: int) -> str:
    return "legend" if row == 1 else f"legend{row}"


def _row_layout(axes: tuple[str, ...], x_title: str) -> dict[str, Any]:
    """Axis titles and one legend per row, placed right of its subplot (``make_subplots`` domains)."""
    n = len(axes)
    height = (1 - (n - 1) * _VERTICAL_SPACING) / n
    out: dict[str, Any] = {}
    for i, title in enumerate(axes, start=1):
        out["yaxis" if i == 1 else f"yaxis{i}"] = {"title": {"text": title}}
        top = 1 - (i - 1) * (height + _VERTICAL_SPACING)
        out[_legend_ref(i)] = {"x": 1.02, "xanchor": "left", "y": top, "yanchor": "top", "font": {"size": 11}}
    out["xaxis" if n == 1 else f"xaxis{n}"] = {"title": {"text": x_title}}
    return out


def training_layout() -> dict[str, Any]:
    """Layout keys of the training figure.

    Stacked step-time bars, a shared step axis titled ``training step``, a unit on every y axis
    (:data:`TRAINING_AXES`), one legend beside each subplot, ``autosize`` with no fixed width so
    the figure fills its output; height 900 pixels.
    """
    return {
        "barmode": "stack",
        "autosize": True,
        "height": 900,
        "margin": {"l": 60, "r": 10, "t": 40, "b": 40},
        **_row_layout(TRAINING_AXES, "training step"),
    }


def hardware_layout(rows: int = len(HARDWARE_PANELS)) -> dict[str, Any]:
    """Layout keys of the hardware figure with its first ``rows`` panels of :data:`HARDWARE_PANELS`
    (see :func:`hardware_panels`): units on every axis, the time axis (UTC) under the last row, a
    legend per row shown even when it holds one trace (plotly hides a lone trace's legend); 640
    pixels high with the GPU rows, 400 without."""
    return {
        "autosize": True,
        "height": 640 if rows > 2 else 400,
        "margin": {"l": 60, "r": 10, "t": 40, "b": 40},
        "showlegend": True,
        **_row_layout(HARDWARE_AXES[:rows], "time (UTC)"),
    }


def hardware_panels(traces: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
    """The panels the hardware figure draws for ``traces`` (from :func:`hardware_traces`): CPU and
    memory always, the two GPU rows only when some node reports a GPU, so a CPU-only cluster (a
    laptop, CI, a CPU worker group) gets no blank GPU subplots and its time axis under the memory row."""
    gpus = any(t["row"] > 2 for t in traces)
    return HARDWARE_PANELS if gpus else HARDWARE_PANELS[:2]


def hardware_traces(
    history: Mapping[str, Sequence[tuple[float, Mapping[str, float]]]],
) -> list[dict[str, Any]]:
    """Traces of the hardware figure: one line per node and :data:`HARDWARE_PANELS` entry.

    Args:
        history: node name -> ``[(unix time s, sample), ...]``; a sample holds any of
            ``cpu_percent``, ``mem_used_bytes``, ``gpu_percent``, ``gram_used_bytes`` (see
            :mod:`hyperpod_rl.metrics.hardware`). Nodes without GPUs get no GPU traces.

    Returns:
        Trace dicts with ``x`` in Unix seconds and ``row`` indexing :data:`HARDWARE_PANELS`.
    """
    gib = 1024**3
    keys = (
        ("cpu_percent", 1.0, 1),
        ("mem_used_bytes", 1 / gib, 2),
        ("gpu_percent", 1.0, 3),
        ("gram_used_bytes", 1 / gib, 4),
    )
    traces = []
    for node in sorted(history):
        points = history[node]
        for key, scale, row in keys:
            xs = [t for t, s in points if key in s]
            if not xs:
                continue
            ys = [s[key] * scale for _, s in points if key in s]
            traces.append(
                {
                    "type": "scatter",
                    "name": f"{node} {HARDWARE_PANELS[row - 1].split(' (')[0]}",
                    "x": xs,
                    "y": ys,
                    "mode": "lines",
                    "row": row,
                    "legend": _legend_ref(row),
                }
            )
    return traces
