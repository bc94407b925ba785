"""The figures README.md and docs/ quote, rendered from the committed result files.

Every passage of a document that quotes a measured (or predicted) figure sits between markers::

    <!-- fig:NAME -->...<!-- /fig:NAME -->

and :data:`PASSAGES` says which document holds it and which function renders it from
``benchmarks/results/``. ``python -m benchmarks.figures`` rewrites every passage from the
results (the benchmark scripts call :func:`update` for theirs); ``--check`` exits 1 when a
document no longer says what its result file says; ``tests/test_docs_figures.py`` runs that check.

Outside those passages no document may type a figure by hand: :func:`unrendered` finds every number
with a unit of measure or a ratio (:data:`FIGURE`: ``12.3 s``, ``43 GiB``, ``47 %``, ``1.87×``) in
README.md and docs/ that is not rendered, and accepts only two other markers::

    <!-- quoted: SOURCE -->...<!-- /quoted -->          a figure from elsewhere: a URL, a file of
                                                        this repository (checked to exist) or a
                                                        named outside source (a datasheet)
    <!-- measured: benchmarks/results/A.json -->...<!-- /measured -->
                                                        typed by hand from committed results; each
                                                        figure must occur in those files

A new figure that a result will change gets its own passage: a function here and an entry in
:data:`PASSAGES`.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from benchmarks._record import REPO, code_commit, load_result, results_dir
from benchmarks.gpu import decode_fit

__all__ = ["FIGURE", "MEASURED", "PASSAGES", "QUOTED", "Passage", "check", "documents", "render", "unrendered", "update"]


@dataclass(frozen=True)
class Passage:
    """A marked passage: the document it lives in, the result files it reads, how it is rendered."""

    doc: str
    results: tuple[str, ...]
    render: Callable[[], str]
    block: bool = False  # a block (table, list) on its own lines between the markers, else inline text


def _provenance(res: dict[str, Any], *, load: bool = True) -> str:
    """``on <date> at commit <sha>, <cpu> (<n> cores)[, a shared machine: load average a at start, b at end]``."""
    m = res["machine"]
    text = f"on {res['date'][:10]} at commit `{(code_commit(res) or 'unknown')[:10]}`"
    if m.get("cpu_model"):
        text += f", {m['cpu_model']} ({m['cpu_cores']} cores"
        if m.get("cpu_cores_usable") and m["cpu_cores_usable"] != m["cpu_cores"]:
            text += f", pinned to {m['cpu_cores_usable']}"
        text += ")"
    if load and res.get("load_avg_start"):
        text += f", a shared machine: load average {res['load_avg_start'][0]:.1f} at start, {res['load_avg_end'][0]:.1f} at end"
    return text


def _cmd(res: dict[str, Any]) -> str:
    """The command that produced a result, as ``python -m benchmarks.NAME ARGS``."""
    module = res["script"].removesuffix(".py").replace("/", ".")
    return " ".join(["python -m", module, *res["command"][2:]])


def _ci(iv: dict[str, float], signed: bool = False) -> str:
    f = "{:+.3f}" if signed else "{:.3f}"
    return f"{f.format(iv['value'])} [{f.format(iv['low'])}, {f.format(iv['high'])}]"


# ---------------------------------------------------------------- quickstart (README, reference trainer)
def _quickstart_args(res: dict[str, Any]) -> list[str]:
    """The quickstart options the run changed (the ports, picked free by the benchmark, left out)."""
    args = list(res["params"]["quickstart_args"])
    for port in ("--serve-port", "--dashboard-port"):
        if port in args:
            i = args.index(port)
            del args[i : i + 2]
    return args


def _training_s(phases: dict[str, float]) -> str:
    """The quickstart's training time, each stage's job named: ``412 s (SFT warm start 98 s, GRPO 314 s)``."""
    if "sft" not in phases:  # a result from before the SFT stage: GRPO alone
        return f"{phases['train']:.0f} s (the GRPO job)"
    return f"{phases['sft'] + phases['train']:.0f} s (SFT warm start {phases['sft']:.0f} s, GRPO {phases['train']:.0f} s)"


def quickstart_time() -> str:
    res = load_result("quickstart")
    r = res["results"]
    args = _quickstart_args(res)
    return (
        f"measured{' with `' + ' '.join(args) + '`' if args else ''}: {r['wall_s_total']:.0f} s, of which training {_training_s(r['wall_s_phases'])}, not counting the install, "
        f"{_provenance(res)}; `benchmarks/results/quickstart.json`"
    )


def quickstart_eval() -> str:
    res = load_result("quickstart")
    r = res["results"]
    f = r["figures"]
    om, sr = f["optimal_move_rate"], f["solve_rate"]
    args = _quickstart_args(res)
    how = f"with `{' '.join(args)}` (the defaults otherwise)" if args else "with the defaults"
    seed = f", seed {r['seeds'][0]['seed']}" if r.get("seeds") else ""
    head = (
        f"Measured {how}{seed} on {r['heldout_mazes']} held-out mazes (`python -m benchmarks.quickstart{' ' + ' '.join(args) if args else ''}`, "
        f"{_provenance(res, load=False)}; value [95% bootstrap interval]"
    )
    if "sft" not in sr:  # a result from before the SFT stage: base and adapter only
        return (
            f"{head}; Δ is adapter minus base, paired by maze): "
            f"optimal-move rate {_ci(om['base'])} → {_ci(om['adapter'])}, Δ {_ci(om['diff'], signed=True)}; "
            f"solve rate {_ci(sr['base'])} → {_ci(sr['adapter'])}, Δ {_ci(sr['diff'], signed=True)}."
        )
    return (
        f"{head}; base → SFT → GRPO, Δ paired by maze): solve rate {_ci(sr['base'])} → {_ci(sr['sft'])} → {_ci(sr['adapter'])}, "
        f"GRPO − SFT {_ci(sr['grpo_vs_sft'], signed=True)}; optimal-move rate {_ci(om['base'])} → {_ci(om['sft'])} → "
        f"{_ci(om['adapter'])}, GRPO − SFT {_ci(om['grpo_vs_sft'], signed=True)}. Every seed: [docs/sft.md](docs/sft.md#what-the-tiny-model-reaches)."
    )


def quickstart_seeds() -> str:
    """Issue 29's goal, seed by seed: held-out solve rates of base, SFT and GRPO, the paired GRPO − SFT
    gain, the wall time and the load the run started at; then the median and range over seeds."""
    res = load_result("quickstart")
    r = res["results"]
    runs, goal = r["seeds"], r["goal"]
    t = goal["targets"]
    rows = [
        f"`{_cmd(res)}`, measured {_provenance(res)}; {r['heldout_mazes']} held-out mazes per seed, greedy, "
        "value [95% bootstrap interval], Δ paired by maze:",
        "",
        "| seed | base solve rate | after SFT | after GRPO | GRPO − SFT | optimal-move rate, base → SFT → GRPO | wall time (load average at start) |",
        "|---|---|---|---|---|---|---|",
    ]
    for run in runs:
        sr, om = run["figures"]["solve_rate"], run["figures"]["optimal_move_rate"]
        rows.append(
            f"| {run['seed']} | {_ci(sr['base'])} | {_ci(sr['sft'])} | {_ci(sr['adapter'])} | {_ci(sr['grpo_vs_sft'], signed=True)} "
            f"| {om['base']['value']:.3f} → {om['sft']['value']:.3f} → {om['adapter']['value']:.3f} "
            f"| {run['wall_s_total']:.0f} s ({run['load_avg_start'][0]:.1f}) |"
        )

    def spread(values: list[float], fmt: str = "{:.3f}") -> str:
        return f"{fmt.format(statistics.median(values))} [{fmt.format(min(values))}–{fmt.format(max(values))}]"

    sft = [run["figures"]["solve_rate"]["sft"]["value"] for run in runs]
    gain = [run["figures"]["solve_rate"]["grpo_vs_sft"]["value"] for run in runs]
    walls = [run["wall_s_total"] for run in runs]
    idle = [ok for ok in goal["wall_s"] if ok is not None]
    met = sum(goal["sft_solve_rate"]), sum(a and b for a, b in zip(goal["grpo_gain_over_sft"], goal["grpo_gain_low_above_0"], strict=True))
    rows += [
        "",
        f"Median [range] over {len(runs)} seeds: solve rate after SFT {spread(sft)}, GRPO − SFT {spread(gain, '{:+.3f}')}, "
        f"wall time {spread(walls, '{:.0f}')} s. Goal: solve rate ≥ {t['sft_solve_rate']:.2f} after SFT in {met[0]} of {len(runs)} seeds; "
        f"GRPO ≥ {t['grpo_gain_over_sft']:.2f} above its SFT start with the interval's lower bound above 0 in {met[1]} of {len(runs)}; "
        + (
            f"within {t['wall_s']:.0f} s in {sum(idle)} of the {len(idle)} seeds that started on an idle machine (load average below 1)."
            if idle
            else f"the {t['wall_s']:.0f} s goal is for an idle machine, and no seed started on one (load average 1 or more), so it is not judged here."
        ),
    ]
    return "\n".join(rows)


def sft_sweep() -> str:
    """The SFT settings chosen on validation (issue 29 scope 4) and GRPO from the chosen start, on validation."""
    res = load_result("sft_sweep")
    r, p = res["results"], res["params"]
    seeds = p["seeds"]
    rows = [
        f"`{_cmd(res)}`, measured {_provenance(res)}; validation solve rate on {r['validation_mazes']} mazes per seed "
        f"(greedy, value [95% bootstrap interval]), {p['rows_per_step']} mazes per SFT step; the base model scores "
        + ", ".join(f"{b['solve_rate']:.3f}" for b in r["base"])
        + f" (seeds {', '.join(str(x) for x in seeds)}):",
        "",
        "| sft.lr | SFT steps | mean over seeds | " + " | ".join(f"seed {x}" for x in seeds) + " |",
        "|---|---|---|" + "---|" * len(seeds),
    ]
    for cell in r["cells"]:
        rows.append(
            f"| {cell['lr']:g} | {cell['steps']} | {cell['mean_solve_rate']:.3f} | "
            + " | ".join(_ci(run["solve_rate"]) for run in cell["seeds"])
            + " |"
        )
    c = r["chosen"]
    rows += [
        "",
        f"Chosen on validation (the best mean): `sft_lr={c['sft_lr']:g}`, `sft_steps={c['sft_steps']}`, the quickstart's defaults.",
    ]
    if r.get("grpo_from_chosen"):
        g = r["grpo_from_chosen"]
        rows[-1] += (
            f" GRPO from each seed's chosen SFT adapter ({p['grpo_steps']} steps, the quickstart's GRPO settings), validation solve rate and "
            "Δ against its SFT start, paired: "
            + "; ".join(f"seed {x['seed']} {_ci(x['solve_rate'])}, Δ {_ci(x['solve_rate_diff_vs_sft'], signed=True)}" for x in g)
            + "."
        )
    return "\n".join(rows)


def forward_rows() -> str:
    res = load_result("quickstart")
    fr = res["results"]["forward_rows"]
    return (
        f"over the quickstart's {fr['steps']} steps this cuts the policy-update forwards by {fr['saving']:.1f}× "
        f"({fr['samples']:,} samples in {fr['forward_rows']:,} forward rows, {fr['samples_per_step']:.0f} → "
        f"{fr['forward_rows_per_step']:.0f} per step on average; `benchmarks/results/quickstart.json`)"
    )


# ---------------------------------------------------------------- maze env throughput
def env_throughput() -> str:
    res = load_result("env_throughput")
    r = res["results"]
    rows = [
        "| figure | steps/s |",
        "|---|---|",
        f"| `rendered_steps_per_s` (as shipped: PNGs cached per maze and agent cell) | {r['rendered_steps_per_s']:,.0f} |",
        f"| `rendered_cold_png_steps_per_s` (every step draws the agent and encodes a PNG) | {r['rendered_cold_png_steps_per_s']:,.0f} |",
        f"| `unrendered_steps_per_s` (parse + move + reward) | {r['unrendered_steps_per_s']:,.0f} |",
        f"| `naive_rendered_steps_per_s` (baseline, same run: full redraw and an RGB PNG every step) | {r['naive_rendered_steps_per_s']:,.0f} |",
        "",
        f"As shipped, {r['speedup_vs_naive']:.1f}× the naive pipeline ({r['cold_png_speedup_vs_naive']:.1f}× with every PNG encoded); "
        f"Measured {_provenance(res)}; `benchmarks/results/env_throughput.json`.",
    ]
    return "\n".join(rows)


# ---------------------------------------------------------------- interface navigation (ui_nav)
def ui_nav_throughput() -> str:
    res = load_result("ui_nav_env_throughput")
    r = res["results"]
    rows = [
        "| figure | steps/s |",
        "|---|---|",
        f"| `rendered_steps_per_s` (as shipped: distance map, layout, static layer and PNGs cached) | {r['rendered_steps_per_s']:,.0f} |",
        f"| `rendered_cold_png_steps_per_s` (every step draws the values and encodes a PNG) | {r['rendered_cold_png_steps_per_s']:,.0f} |",
        f"| `unrendered_steps_per_s` (parse + apply + reward) | {r['unrendered_steps_per_s']:,.0f} |",
        f"| `naive_rendered_steps_per_s` (baseline, same run: every cache cleared before every step) | {r['naive_rendered_steps_per_s']:,.0f} |",
        "",
        f"As shipped, {r['speedup_vs_naive']:.1f}x the naive pipeline ({r['cold_png_speedup_vs_naive']:.1f}x with every PNG encoded); "
        f"{r['apps']} apps x {r['group']} rollouts, {r['image_px']}-px screens ({r['image_tokens']} vision tokens). "
        f"Measured {_provenance(res)}; `{_cmd(res)}`, `benchmarks/results/ui_nav_env_throughput.json`.",
    ]
    return "\n".join(rows)


def ui_nav_learning() -> str:
    res = load_result("ui_nav_learning")
    r = res["results"]
    d = r["paired_return_difference"]
    verdict = "excludes zero" if r["interval_excludes_zero"] else "does **not** exclude zero"
    rows = [
        "| policy | held-out mean return | solve rate | progress | optimal-action rate |",
        "|---|---|---|---|---|",
    ]
    for label, key in (("base model (step 0, same run)", "base"), (f"trained ({res['params']['steps']} steps)", "trained")):
        x = r[key]
        rows.append(f"| {label} | {x['mean_return']:.3f} | {x['solve_rate']:.3f} | {x['progress']:.3f} | {x['optimal_action_rate']:.3f} |")
    rows += [
        "",
        f"Paired difference of episode returns over {d['n']} held-out apps: {d['mean']:+.3f} "
        f"(95 % bootstrap interval [{d['ci95_low']:+.3f}, {d['ci95_high']:+.3f}]), which {verdict}. "
        f"Measured {_provenance(res)}; `{_cmd(res)}`, `benchmarks/results/ui_nav_learning.json`.",
    ]
    return "\n".join(rows)


# ---------------------------------------------------------------- serving
def serve_load() -> str:
    res = load_result("serve_load")
    r = res["results"]
    one, load = r["single_client"], r["load"]
    rows = [
        "| clients x requests | failed | p50 ms | p95 ms | p99 ms | max ms | requests/s |",
        "|---|---|---|---|---|---|---|",
    ]
    for label, x in (
        ("1 x {requests_per_client} (one after another: per-request latency, the baseline)", one),
        ("{clients} x {requests_per_client}", load),
    ):
        rows.append(
            f"| {label.format(**x)} | {x['failed']} | {x['p50_ms']:.1f} | {x['p95_ms']:.1f} | {x['p99_ms']:.1f} | {x['max_ms']:.1f} | {x['requests_per_s']:.1f} |"
        )
    rows += ["", f"Measured {_provenance(res)}; `python -m benchmarks.serve_load`, `benchmarks/results/serve_load.json`."]
    return "\n".join(rows)


def serve_per_request() -> str:
    res = load_result("serve_load")
    one = res["results"]["single_client"]
    return f"about {one['p50_ms']:.0f} ms each (median of {one['requests']} requests from one client, table above)"


# ---------------------------------------------------------------- live metrics
def metrics_latency() -> str:
    res = load_result("metrics_latency")
    r = res["results"]
    return (
        f"Measured {_provenance(res)} (`benchmarks/results/metrics_latency.json`): write → figure latency "
        f"p50 {r['p50_s']:.2f} s, p95 {r['p95_s']:.2f} s over {r['steps']} steps (poll interval {r['interval_s']} s); "
        f"idle poller CPU {100 * r['idle_poller_cpu_frac']:.2f} % of one core; {r['messages_per_update']:g} comm messages per "
        f"figure update (the same refresh unbatched: {r['messages_per_update_unbatched']})."
    )


# ---------------------------------------------------------------- learning experiments
def lr_sweep() -> str:
    """The learning-rate table: every rate from each seed, chosen on the mean validation rate, the
    chosen rate's adapters evaluated on held-out once per seed (issue 29 item 4)."""
    res = load_result("lr_sweep")
    r, p = res["results"], res["params"]
    seeds = p["seeds"]
    rows = [
        f"Measured on the first-move task (1 turn, {p['mazes_per_step']} mazes × {p['group_size']} samples per step, "
        f"{p['steps']} steps, validation greedy optimal-move rate on {r['validation_mazes']} mazes, seeds "
        f"{', '.join(str(x) for x in seeds)}); `{_cmd(res)}`, measured {_provenance(res)}:",
        "",
        "| lr | mean over seeds | "
        + " | ".join(f"seed {x}: rate, Δ vs base (paired)" for x in seeds)
        + " | policy entropy, first → last step |",
        "|---|---|" + "---|" * len(seeds) + "---|",
    ]
    for run in r["runs"]:
        cells = " | ".join(f"{c['optimal_move_rate']['value']:.3f}, {_ci(c['diff_vs_base'], signed=True)}" for c in run["seeds"])
        entropy = ", ".join(f"{c['entropy_curve'][0][1]:.2f} → {c['final_entropy']:.2f}" for c in run["seeds"])
        rows.append(f"| {run['lr']:g} | {run['mean_optimal_move_rate']:.3f} | {cells} | {entropy} |")
    held = "; ".join(
        f"seed {h['seed']} {_ci(h['optimal_move_rate'])} against the base's {h['base_optimal_move_rate']:.3f}, Δ {_ci(h['diff_vs_base'], signed=True)}"
        for h in r["heldout"]
    )
    rows += [
        "",
        f"Chosen on validation: lr {r['chosen_lr']:g}, the quickstart's default. Held-out ({r['heldout_mazes']} mazes), evaluated once for it: {held}.",
    ]
    return "\n".join(rows)


def sft_grpo_lr() -> str:
    """GRPO from an SFT start at several learning rates, scored on validation against that start."""
    res = load_result("sft_grpo_lr")
    r, p = res["results"], res["params"]
    cell = r["cells"][0]
    runs = "; ".join(
        f"lr {g['lr']:g} (seed {g['seed']}): {_ci(g['solve_rate'])}, Δ {_ci(g['solve_rate_diff_vs_sft'], signed=True)}"
        for g in r["grpo_from_chosen"]
    )
    return (
        f"GRPO for {p['grpo_steps']} steps from the SFT adapter (`sft_lr={cell['lr']:g}`, {cell['steps']} steps; validation solve rate "
        f"{_ci(cell['seeds'][0]['solve_rate'])}), validation solve rate and Δ against that start, paired: {runs} "
        f"(`{_cmd(res)}`, measured {_provenance(res)})"
    )


def sft_grpo_levers() -> str:
    """GRPO from the SFT start with each cell's settings, over seeds, scored on validation against that start."""
    res = load_result("sft_grpo_levers")
    r, p = res["results"], res["params"]
    runs = {(g["cell"], g["seed"]): g for g in r["grpo_from_chosen"]}
    seeds = p["seeds"]
    rows = [
        "| GRPO settings (besides the quickstart's) | mean validation solve | mean Δ vs SFT | "
        + " | ".join(f"seed {s}: Δ vs SFT" for s in seeds)
        + " |",
        "|---|---|---|" + "---|" * len(seeds),
    ]
    for cell in r["grpo_cells"]:
        settings = ", ".join(f"`{k}={v}`" for k, v in cell["settings"].items()) or "none"
        rows.append(
            f"| {settings} | {cell['mean_solve_rate']:.3f} | {cell['mean_diff_vs_sft']:+.3f} | "
            + " | ".join(_ci(runs[cell["cell"], s]["solve_rate_diff_vs_sft"], signed=True) for s in seeds)
            + " |"
        )
    sft = "; ".join(f"seed {c['seed']} {c['solve_rate']['value']:.3f}" for c in r["cells"][0]["seeds"])
    rows += [
        "",
        f"{p['grpo_steps']} GRPO steps from each seed's SFT adapter (`sft_lr={r['chosen']['sft_lr']:g}`, {r['chosen']['sft_steps']} steps; "
        f"validation solve rate {sft}), {r['validation_mazes']} validation mazes, 95 % paired intervals "
        f"(`{_cmd(res)}`, measured {_provenance(res)}).",
    ]
    return "\n".join(rows)


_LIMITS = ("limits_capacity_128x2", "limits_capacity_256x4", "limits_steps_128x2", "limits_steps_256x4")
_VIEW = ("limits_view_base", "limits_view_vision", "limits_view_cell48")


def _base_model(p: dict[str, Any]) -> str:
    """A limits run's tiny model and maze image, as ``text H × L, vision H × D, N-px cells``."""
    from hyperpod_rl.quickstart import QuickstartOptions

    o = {k: f.default for k, f in QuickstartOptions.model_fields.items()} | p["tiny"] | p.get("options", {})
    return (
        f"text {o['tiny_hidden_size']} × {o['tiny_layers']}, vision {o['tiny_vision_hidden_size']} × {o['tiny_vision_depth']}, "
        f"{o['cell_px']}-px cells"
    )


def _limits_rows(name: str) -> list[str]:
    """One table row per SFT cell of a limits run, with the GRPO from its chosen cell where it ran."""
    res = load_result(name)
    r, p = res["results"], res["params"]
    grpo = sorted(r["grpo_from_chosen"], key=lambda g: g["seed"])
    rows = []
    for cell in r["cells"]:
        runs = cell["seeds"]
        sft = f"{cell['mean_solve_rate']:.3f} ({', '.join(f'{s["solve_rate"]["value"]:.3f}' for s in runs)})"
        train = f"{statistics.mean(s['train_solve_rate'] for s in runs):.3f}" if p["train_eval"] else "not measured"
        row = f"| {_base_model(p)} | {cell['steps']} | {sft} | {train} | {statistics.mean(s['final_loss'] for s in runs):.3f} |"
        chosen = (cell["lr"], cell["steps"]) == (r["chosen"]["sft_lr"], r["chosen"]["sft_steps"])
        if chosen and grpo:
            deltas = ", ".join(f"{g['solve_rate_diff_vs_sft']['value']:+.3f}" for g in grpo)
            mean = statistics.mean(g["solve_rate_diff_vs_sft"]["value"] for g in grpo)
            first = statistics.mean(g["sampled_reward_first"] for g in grpo)
            last = statistics.mean(g["sampled_reward_last"] for g in grpo)
            tied = statistics.mean(g["tied_group_share"] for g in grpo)
            row += f" {p['grpo_steps']}, {mean:+.3f} ({deltas}) | {first:.3f} → {last:.3f} | {tied:.0%} |"
        elif chosen and p["grpo_steps"]:
            row += " not measured: the device call ended first | | |"
        else:
            row += " | | |"
        rows.append(row)
    return rows


def sft_limits() -> str:
    """What limits the tiny model: SFT and GRPO from it, by model size, SFT steps, vision tower and
    image size, on validation."""
    head = [
        "| tiny model and maze image | SFT steps | SFT validation solve: mean (seeds) | SFT train solve, mean | last SFT loss, mean "
        "| GRPO from it: steps, mean Δ vs SFT (seeds) | sampled reward, first → last tenth of GRPO | tied groups |",
        "|---|---|---|---|---|---|---|---|",
    ]
    first = load_result(_LIMITS[0])
    p = first["params"]
    settings = ", ".join(f"`{k}={v}`" for k, v in first["results"]["grpo_cells"][0]["settings"].items())
    text = [
        "**Text decoder size and SFT steps**, with GRPO from the best SFT cell of each run:",
        "",
        *head,
        *(row for name in _LIMITS for row in _limits_rows(name)),
        "",
        "**The view: vision tower and maze image size**, SFT only, against the quickstart's model in the same "
        "device call (each run pinned to its own cores):",
        "",
        *head,
        *(row for name in _VIEW for row in _limits_rows(name)),
        "",
        f"{first['results']['validation_mazes']} validation mazes per seed, greedy, seeds {', '.join(map(str, p['seeds']))}; "
        f"GRPO ({settings}); train solve: {p['train_eval']} of the SFT run's own train mazes. "
        + "; ".join(f"`{_cmd(res)}`, measured {_provenance(res)}" for res in map(load_result, (*_LIMITS, *_VIEW)))
        + ".",
    ]
    return "\n".join(text)


# ---------------------------------------------------------------- document reading
def doc_read_throughput() -> str:
    res = load_result("doc_read_throughput")
    r = res["results"]
    rows = [
        "| figure | per second, one core |",
        "|---|---|",
        f"| `rendered_samples_per_s` (as shipped: generate, render, size, PNG, prompt, env, {r['group']} answers scored) | {r['rendered_samples_per_s']:,.1f} |",
        f"| `naive_rendered_samples_per_s` (baseline, same run: RGB page, font decoded per text, no caches, NumPy noise, Lanczos, RGB PNG) | {r['naive_rendered_samples_per_s']:,.1f} |",
        f"| `scoring_steps_per_s` (`DocReadEnv.step`: parse, normalise, reward) | {r['scoring_steps_per_s']:,.0f} |",
        "",
        f"As shipped, {r['speedup_vs_naive']:.2f}× the naive pipeline on {r['samples']} pages of {r['mean_image_tokens']:.0f} vision tokens on average "
        f"(`{_cmd(res)}`). Measured {_provenance(res)}; `benchmarks/results/doc_read_throughput.json`.",
    ]
    return "\n".join(rows)


def doc_read_learning() -> str:
    res = load_result("doc_read_learning")
    r = res["results"]
    lo, hi = r["heldout_gain_ci95"]
    verdict = "excludes zero" if r["heldout_gain_excludes_zero"] else "does **not** exclude zero"
    steps = len(r["train_reward_curve"])
    return (
        f"held-out reward (unseen templates, {r['heldout_rows']} pages, question types {', '.join(r['qtypes'])}): base model "
        f"{r['base_heldout_reward']:.3f}, after {steps} GRPO steps {r['trained_heldout_reward']:.3f} (chance {r['chance_heldout']:.3f}); "
        f"gain {r['heldout_gain']:+.3f}, 95 % paired bootstrap interval [{lo:+.3f}, {hi:+.3f}], which {verdict}. "
        f"Out of distribution (denser pages, {r['ood_rows']}): {r['base_ood_reward']:.3f} → {r['trained_ood_reward']:.3f}. "
        f"`{_cmd(res)}`, one seed, measured {_provenance(res)}; `benchmarks/results/doc_read_learning.json`"
    )


def prompt_style() -> str:
    res = load_result("prompt_style")
    by = {s["style"]: s for s in res["results"]["styles"]}
    parts = []
    for style in ("full", "terse"):
        s = by[style]
        a0, a1 = s["accuracy_curve"][0][1], s["accuracy_curve"][-1][1]
        parts.append(f"`{style}` ({s['prompt_text_tokens']} text tokens) {a0:.2f} → {a1:.2f}")
    chance = by["terse"]["chance"]
    steps = by["terse"]["accuracy_curve"][-1][0]
    return (
        f"held-out supervised first-move accuracy after {steps} steps, one seed: {'; '.join(parts)} (a uniform random move scores "
        f"{chance:.2f}; `{_cmd(res)}`, measured {_provenance(res)})"
    )


# ---------------------------------------------------------------- planner (H200)
def planner_calibration() -> str:
    res = load_result("planner_calibration")
    r = res["results"]
    v, held = r["planner_values"], r["held"]
    fit = ", ".join(f"`{f}`" for f in r["fit_files"])
    out = ", ".join(f"`{f}`" for f in r["held_out_files"])
    configs = "; ".join(f"`{f}`: {', '.join(c)}" for f, c in r.get("held_out_configs", {}).items())
    fitted_memory = ", ".join(f"`{k}={v[k]:g}`" for k in ("activation_scale", "naive_logit_bytes", "chunk_logit_bytes") if k in r["fitted"])
    e = r["errors_with_planner_values"]["held_out"]
    return (
        f"Fitted by `python -m benchmarks.gpu.calibrate` (least squares on relative error) on the {r['fit_points']} measured points of "
        f"{fit} only; {out} are held out and never fitted on, and so are these configs of the fitted files ({configs}), so every "
        f"shape (2B, 4B, 8B) has measurements the fit never saw (`benchmarks/results/planner_calibration.json`). "
        f"Memory (`hyperpod_rl.plan.memory.CALIBRATION`): {fitted_memory}; held: "
        + ", ".join(f"`{k}={w:g}`" for k, w in held.items())
        + f". Step time (`hyperpod_rl.plan.throughput`): efficiency {v['efficiency_bf16']:.2f} (bf16 adapters) and "
        f"{v['efficiency_fp32']:.2f} (peft float32 adapters) at the 8B shape's hidden size, scaled by (hidden / 4096)^"
        f"{v['efficiency_hidden_exponent']:g} for smaller shapes, fixed {v['fixed_plain_s']:.3f} s (plain) and {v['fixed_fsdp_s']:.3f} s "
        f"(FSDP2) per micro batch, and {v['comm_exposed']:.2f} of the FSDP2 communication time exposed (added to the step). "
        f"Held-out error ({e['points']} points): peak memory max {e['peak_max_abs_err']:.1%}, mean {e['peak_mean_abs_err']:.1%}; "
        f"tokens/s max {e['tokens_per_s_max_abs_err']:.1%}, mean {e['tokens_per_s_mean_abs_err']:.1%}."
    )


def planner_fit_scope() -> str:
    """Limits: what the calibration was fitted on (GPU, shapes, points, files)."""
    from benchmarks.gpu import report

    r = load_result("planner_calibration")["results"]
    fit = ", ".join(f"`{f}`" for f in r["fit_files"])
    return (
        f"the memory and throughput factors are fitted across the {', '.join(report.fit_shapes())} shapes, on the "
        f"{r['fit_points']} measured points of {fit} (`python -m benchmarks.gpu.calibrate`)"
    )


def scaling_accuracy() -> str:
    """Inline (docs/scaling.md): the improved path's tokens/s error on the fit set and on the held-out runs."""
    from benchmarks.gpu import report

    rows = [r for r in report.prediction_rows() if r["variant"] == "improved"]

    def err(r: dict[str, Any]) -> float:
        return r["predicted_tokens_per_s"] / r["tokens_per_s"] - 1

    fit = [r for r in rows if r["file"] in ("h200_1gpu.json", "h200_2gpu_fsdp.json")]
    one = [r for r in rows if r["file"] == "h200_1gpu_fsdp.json"]
    run2 = [r for r in rows if r["file"] == "h200_2gpu_fsdp_run2.json"]
    bar = report.TOKENS_PER_S_BAR
    out = [r for r in run2 if abs(err(r)) > bar]
    misses = "; ".join(f"{r['config']}: {err(r):+.0%}" for r in out)
    return (
        f"agreement there is in-sample (improved path within ±{max(abs(err(r)) for r in fit):.1%} over its {len(fit)} points). "
        f"On the runs held out of the fit, the predicted tokens/s of the improved path is within ±{max(abs(err(r)) for r in one):.1%} "
        f"at every 1-GPU FSDP2 point (`h200_1gpu_fsdp.json`) and within ±{bar:.0%} at {len(run2) - len(out)} of {len(run2)} "
        f"points of run 2 ({misses or 'none outside'})"
    )


def comm_exposed() -> str:
    return f"{load_result('planner_calibration')['results']['planner_values']['comm_exposed']:.2f}"


# ---------------------------------------------------------------- end-to-end GRPO on one GPU
_E2E = ("h200_grpo_e2e_2b", "h200_grpo_e2e_4b", "h200_grpo_e2e_8b")
_E2E_TRL = (
    "h200_grpo_e2e_trl_2b_run1",
    "h200_grpo_e2e_trl_8b_run1",
    "h200_grpo_e2e_trl_2b",
    "h200_grpo_e2e_trl_8b",
    "h200_grpo_e2e_decode_2b",
    "h200_grpo_e2e_decode_8b",
    "h200_grpo_e2e_trl_mb8_2b",
)
#: Run labels: 1 and 2 decoded eagerly (before compiled decoding), 3 with compiled decoding, 4 also with micro batch 8.
_TRL_RUN = {
    n: "4 (compiled, micro batch 8)" if "mb8" in n else "3 (compiled decoding)" if "decode" in n else ("1" if n.endswith("_run1") else "2")
    for n in _E2E_TRL
}


def _gpu_provenance(res: dict[str, Any]) -> str:
    gpu = (res["machine"].get("gpus") or ["unknown GPU"])[0].split(",")[0]
    return f"{gpu}, {res['date'][:10]}, commit `{(code_commit(res) or 'unknown')[:10]}`"


def gpu_e2e() -> str:
    rows = [
        "| shape | samples/step | step s | rollout s (decode + log-prob pass) | update s | samples/s | generated tok/s | update tok/s | update MFU | peak GiB (rollout / update) | file |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    counts = []
    for name in _E2E:
        res = load_result(name)
        run = max((r for r in res["results"]["runs"] if r["impl"] == "hyperpod-rl reference"), key=lambda r: r["max_turns"])
        measured = [s for s in run["steps"] if not s["warmup"]]
        pr = max(s["peak_rollout_gib"] for s in measured)
        pu = max(s["peak_update_gib"] for s in measured)
        split = (
            f" ({run['median_rollout_decode_s']:.1f} + {run['median_rollout_logprob_pass_s']:.1f})"
            if "median_rollout_decode_s" in run
            else ""
        )
        rows.append(
            f"| {run['shape'].split('/')[-1]} | {run['samples_per_step']} ({run['max_turns']} turns) | {run['median_step_s']:.1f} | "
            f"{run['median_rollout_s']:.1f}{split} | {run['median_update_s']:.1f} | {run['samples_per_s']:.2f} | "
            f"{run['generated_tokens_per_s']:.0f} | {run['update_tokens_per_s']:,.0f} | {100 * run['update_mfu']:.0f} % | "
            f"{pr:.1f} / {pu:.1f} | `{name}.json` |"
        )
        counts.append(f"{len(measured)} for {run['shape'].split('-')[-2]}")
    res = load_result(_E2E[0])
    rows += [
        "",
        f"Medians of the measured steps after one warm-up ({', '.join(counts)}); {_gpu_provenance(res)} (each file has its own). "
        f"Command: `{_cmd(res)}` (and `--shapes 4B --steps 1`, `--shapes 8B`).",
    ]
    return "\n".join(rows)


def gpu_trl() -> str:
    rows = [
        "| run | shape | ours: step s (rollout / update) | ours: ms per decode step | TRL: step s | throughput ours / TRL | peak GiB ours / TRL | file |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name in _E2E_TRL:
        res = load_result(name)
        runs = res["results"]["runs"]
        ours = next(r for r in runs if r["impl"] == "hyperpod-rl reference" and r["max_turns"] == 1)
        trl = next(r for r in runs if r["impl"].startswith("trl"))
        cmp = next(c for c in res["results"]["comparisons"] if "throughput_ratio_ours_over_trl" in c)
        decode = (
            f"{1e3 * ours['median_rollout_decode_s'] / int(res['params']['max_new_tokens']):.0f}"
            if "median_rollout_decode_s" in ours
            else "not split"
        )
        rows.append(
            f"| {_TRL_RUN[name]} | {ours['shape'].split('/')[-1]} | {ours['median_step_s']:.1f} "
            f"({ours['median_rollout_s']:.1f} / {ours['median_update_s']:.1f}) | {decode} | {trl['median_step_s']:.1f} | "
            f"{cmp['throughput_ratio_ours_over_trl']:.2f}× | {cmp['peak_gib_ours']:.1f} / {cmp['peak_gib_trl']:.1f} | `{name}.json` |"
        )
    res = load_result(_E2E_TRL[-1])
    trl = next(r for r in res["results"]["runs"] if r["impl"].startswith("trl"))
    rows += [
        "",
        f"{trl['impl']}, {trl['samples_per_step']} samples a step (4 mazes × group 8, one turn, 128-token responses), "
        f"medians of the measured steps after one warm-up, both in the same process on the same GPU; run 4: {_gpu_provenance(res)}. "
        f"Command: `{_cmd(res)}`.",
    ]
    return "\n".join(rows)


#: The project's bar for the reference backend against TRL's GRPOTrainer: this many times its samples/s, at no more memory.
GPU_TRL_BAR = 1.5


def gpu_trl_verdict() -> str:
    """Inline (docs/gpu.md): the TRL bar, whether each shape of :data:`README_GPU_TRL` meets it, with ratio and peaks."""
    parts, met = [], []
    for shape, name in README_GPU_TRL.items():
        cmp = next(c for c in load_result(name)["results"]["comparisons"] if "throughput_ratio_ours_over_trl" in c)
        ratio, ours, trl = cmp["throughput_ratio_ours_over_trl"], cmp["peak_gib_ours"], cmp["peak_gib_trl"]
        met.append(ratio >= GPU_TRL_BAR and ours <= trl)
        parts.append(f"{shape}: {ratio:.2f}× at {ours:.1f} vs {trl:.1f} GiB (run {_TRL_RUN[name]}, `{name}.json`)")
    good = [s for s, ok in zip(README_GPU_TRL, met, strict=True) if ok]
    verdict = f"met at {'both' if len(met) == 2 else 'all'} shapes" if all(met) else f"met at {', '.join(good)} only" if good else "not met"
    bar = f"Throughput ≥ {GPU_TRL_BAR:g}× TRL's without vLLM (`use_vllm=False`, its slow path) at no more memory: {verdict}."
    return (
        f"**{bar}** "
        + "; ".join(parts)
        + ". Against TRL with vLLM colocate, the mode a user would pick: [the next section](#vllm-rollouts-against-trl-with-vllm-colocate)"
    )


_DECODE = ("h200_grpo_e2e_decode_2b", "h200_grpo_e2e_decode_8b")


def _ms_per_decode_step(run: dict[str, Any], max_new_tokens: int) -> float:
    return 1e3 * run["median_rollout_decode_s"] / (run["max_turns"] * max_new_tokens)


def gpu_decode() -> str:
    """Compiled vs eager decoding, end to end, from the decode runs (eager baseline in the same run where measured)."""
    rows = [
        "| shape | turns | decoding | step s | rollout s (decode + log-prob pass) | update s | ms per decode step | samples/s | first step s (compiles) | peak GiB | file |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    notes = []
    for name in _DECODE:
        res = load_result(name)
        tokens = int(res["params"]["max_new_tokens"])
        for run in res["results"]["runs"]:
            if run["impl"] != "hyperpod-rl reference":
                continue
            first = next(s["step_s"] for s in run["steps"] if s["warmup"])
            rows.append(
                f"| {run['shape'].split('/')[-1]} | {run['max_turns']} | {run['decode']} | {run['median_step_s']:.1f} | "
                f"{run['median_rollout_s']:.1f} ({run['median_rollout_decode_s']:.1f} + {run['median_rollout_logprob_pass_s']:.1f}) | "
                f"{run['median_update_s']:.1f} | {_ms_per_decode_step(run, tokens):.0f} | {run['samples_per_s']:.2f} | {first:.0f} | "
                f"{run['peak_gib']:.1f} | `{name}.json` |"
            )
        for c in res["results"]["comparisons"]:
            if "decode_speedup_compiled_over_eager" in c:
                notes.append(
                    f"{c['shape'].split('/')[-1]}, {c['max_turns']} turns, same run: compiled decoding is "
                    f"{c['decode_speedup_compiled_over_eager']:.1f}× faster than eager and the whole step "
                    f"{c['step_speedup_compiled_over_eager']:.1f}× (peak {c['peak_gib_compiled']:.1f} vs {c['peak_gib_eager']:.1f} GiB)"
                )
    res = load_result(_DECODE[0])
    rows += [
        "",
        "; ".join(notes) + f". Medians of 2 measured steps after one warm-up step; {_gpu_provenance(res)}. "
        f"Command: `{_cmd(res)}` (and `--shapes 8B --trl`).",
    ]
    return "\n".join(rows)


_LEVER_NAMES = {
    "naive": "naive (HF + peft, full logits)",
    "autocast_bf16": "bf16 autocast + chunked (the trainer's path)",
    "autocast_bf16_compile": "+ torch.compile per layer",
    "autocast_bf16_liger": "+ Liger kernels",
    "autocast_bf16_liger_compile": "+ Liger + compile",
}


def _variant_table(name: str, labels: dict[str, str], note: str) -> str:
    """One row per variant of ``labels``, one column per config of result ``name``: tokens/s (× naive), MFU, peak."""
    res = load_result(name)
    recs = res["results"]
    rows = ["| variant | " + " | ".join(r["config"]["name"] for r in recs) + " |", "|---|" + "---|" * len(recs)]
    for key, label in labels.items():
        cells = []
        for r in recs:
            v = r["variants"].get(key, {})
            if v.get("status") != "ok":
                cells.append(v.get("status", "not run"))
                continue
            ratio = v["tokens_per_s"] / r["variants"]["naive"]["tokens_per_s"]
            cells.append(f"{v['tokens_per_s']:,.0f} tok/s ({ratio:.2f}×), MFU {100 * r['variant_mfu'][key]:.0f} %, {v['peak_gib']:.1f} GiB")
        rows.append(f"| {label} | " + " | ".join(cells) + " |")
    rows += [
        "",
        f"One process, one GPU, the same batch for every variant{note}; median of 3 steps after one warm-up; {_gpu_provenance(res)}. Command: `{_cmd(res)}`.",
    ]
    return "\n".join(rows)


def gpu_levers() -> str:
    """Policy-update levers on the 8B shape: tokens/s (× naive), MFU and peak per variant and config."""
    return _variant_table("h200_update_levers", _LEVER_NAMES, "")


def gpu_compile_layers() -> str:
    """The e2e effect of trainer.compile_layers, 8B, 3 turns, against the compiled-decoding run without it."""
    on = load_result("h200_grpo_e2e_levers_8b")
    off = load_result("h200_grpo_e2e_decode_8b")
    a = next(r for r in on["results"]["runs"] if r["impl"] == "hyperpod-rl reference" and r["max_turns"] == 3)
    b = next(r for r in off["results"]["runs"] if r["impl"] == "hyperpod-rl reference" and r["max_turns"] == 3)
    first = next(s["step_s"] for s in a["steps"] if s["warmup"])
    return (
        f"8B, 3 turns, compiled decoding in both: with `trainer.compile_layers` the update took {a['median_update_s']:.1f} s "
        f"instead of {b['median_update_s']:.1f} s (MFU {100 * a['update_mfu']:.0f} % vs {100 * b['update_mfu']:.0f} %), but decoding "
        f"{a['median_rollout_decode_s']:.1f} s instead of {b['median_rollout_decode_s']:.1f} s, so the step took {a['median_step_s']:.1f} s "
        f"instead of {b['median_step_s']:.1f} s, and the first step {first:.0f} s (`h200_grpo_e2e_levers_8b.json` against "
        f"`h200_grpo_e2e_decode_8b.json`, two device calls; {_gpu_provenance(on)}; {on['notes'] or 'complete'})"
    )


#: The project's MFU bar for the policy update with checkpointing, at the reference batch 16 x 807.
GPU_MFU_BAR = 0.40


def gpu_ckpt_verdict() -> str:
    """Inline (docs/gpu.md): the MFU bar at 16 x 807 with checkpointing, its best variant and the half-checkpointed one."""
    name, config, best = README_GPU_MFU
    rec = next(r for r in load_result(name)["results"] if r["config"]["name"] == config)
    v, mfu = rec["variants"], rec["variant_mfu"]
    met = mfu[best] >= GPU_MFU_BAR
    return (
        f"**≥ {100 * GPU_MFU_BAR:.0f} % MFU at 16 × 807 with checkpointing: {'met' if met else 'not met'}**, "
        f"{100 * mfu[best]:.0f} % with compiled layers and selective checkpointing "
        f"({v[best]['tokens_per_s'] / v['naive']['tokens_per_s']:.2f}× naive), at {v[best]['peak_gib']:.0f} instead of "
        f"{v['autocast_bf16_compile']['peak_gib']:.0f} GiB: memory buys the speed, so it is a choice per run, not the default. "
        f"Checkpointing half of the layers gives {100 * mfu['compile_ckpt_half']:.0f} % at {v['compile_ckpt_half']['peak_gib']:.0f} GiB"
    )


_CKPT_NAMES = {
    "naive": "naive (HF + peft, full logits)",
    "autocast_bf16_compile": "compiled layers, transformers' checkpointing around each",
    "compile_ckpt_inside": "compiled layers, checkpoint inside each (full)",
    "compile_ckpt_half": "compiled layers, first half of the layers checkpointed",
    "compile_ckpt_quarter": "compiled layers, first quarter checkpointed",
    "compile_sac": "compiled layers, selective (`save_matmuls`)",
    "sac": "eager layers, selective (`save_matmuls`)",
}


def gpu_ckpt() -> str:
    """Checkpointing levers with compiled decoder layers, 8B: tokens/s (x naive), MFU and peak."""
    return _variant_table("h200_update_ckpt", _CKPT_NAMES, " (bf16 autocast, chunked log-probs but for naive)")


def _three_turn(name: str) -> dict[str, Any]:
    return next(
        r
        for r in load_result(name)["results"]["runs"]
        if r["impl"] == "hyperpod-rl reference" and r["max_turns"] == 3 and r["decode"] == "compiled"
    )


def gpu_e2e_sac() -> str:
    """End to end with compile_layers + save_matmuls against the same shapes' compiled-decoding runs without them."""
    rows = [
        "| shape | step s (default → knobs) | update s | decode s | update MFU | peak GiB | files |",
        "|---|---|---|---|---|---|---|",
    ]
    for shape, base_name, knob_name in (
        ("2B", "h200_grpo_e2e_decode_2b", "h200_grpo_e2e_sac_2b"),
        ("8B", "h200_grpo_e2e_decode_8b", "h200_grpo_e2e_sac_8b"),
    ):
        b, k = _three_turn(base_name), _three_turn(knob_name)
        rows.append(
            f"| Qwen3-VL-{shape} | {b['median_step_s']:.1f} → {k['median_step_s']:.1f} ({b['median_step_s'] / k['median_step_s']:.2f}×) | "
            f"{b['median_update_s']:.1f} → {k['median_update_s']:.1f} | {b['median_rollout_decode_s']:.1f} → {k['median_rollout_decode_s']:.1f} | "
            f"{100 * b['update_mfu']:.0f} % → {100 * k['update_mfu']:.0f} % | {b['peak_gib']:.1f} → {k['peak_gib']:.1f} | "
            f"`{base_name}.json`, `{knob_name}.json` |"
        )
    res = load_result("h200_grpo_e2e_sac_8b")
    rows += [
        "",
        f"96 samples a step (4 mazes × group 8, 3 turns, 128-token responses), medians of 2 steps after one warm-up; each pair from two "
        f"device calls; knobs: {_gpu_provenance(res)}. Command: `{_cmd(res)}` (and `--shapes 2B`).",
    ]
    return "\n".join(rows)


def gpu_decode_fit() -> str:
    """The planner's decode model of compiled decoding against every shape's measured step (4B held out)."""
    data = decode_fit.points()
    constants = decode_fit.fit(data)
    rows = ["| shape | runs | measured ms per decode step | predicted | error | |", "|---|---|---|---|---|---|"]
    for shape, measured in decode_fit.per_shape(data).items():
        pred = decode_fit.predicted_step_s(shape, constants)
        split = "held out" if shape in decode_fit.HELD_OUT_SHAPES else "fitted"
        n = sum(p["shape"] == shape for p in data)
        rows.append(f"| {shape.split('/')[-1]} | {n} | {1e3 * measured:.1f} | {1e3 * pred:.1f} | {pred / measured - 1:+.1%} | {split} |")
    rows += [
        "",
        f"`layer_s` = {1e3 * constants['layer_s']:.3f} ms, `head_s` = {1e3 * constants['head_s']:.3f} ms; medians over the compiled-decoding "
        f"runs of {', '.join(f'`{f}`' for f in decode_fit.FILES)} (32 episodes a batch, 128 new tokens a turn). "
        "Command: `python -m benchmarks.gpu.decode_fit`.",
    ]
    return "\n".join(rows)


# ---------------------------------------------------------------- README's GPU sentence
#: The runs README.md's GPU sentence quotes: the TRL comparison per shape, and the update-lever MFU
#: ``(result, config, variant)``. Re-point these when newer GPU results supersede them.
README_GPU_TRL: dict[str, str] = {"2B": "h200_grpo_e2e_trl_mb8_2b", "8B": "h200_grpo_e2e_decode_8b"}
README_GPU_MFU: tuple[str, str, str] = ("h200_update_ckpt", "b16_s807_img448_ckpt", "compile_sac")


#: The vLLM-engine comparison: the main file (both sides, repetitions alternated) and TRL's other settings.
VLLM_SIDES: tuple[str, ...] = ("h200_vllm_sides_2b_t1", "h200_vllm_sides_2b_t1_trl")
_SIDE_LABEL = {
    "ours-vllm": "hyperpod-rl reference, `rollout.engine: vllm`",
    "ours-vllm-fast": "hyperpod-rl reference, vLLM engine awake (`rollout.engine_sleep: false`), compiled layers + `save_matmuls`",
    "ours-hf": "hyperpod-rl reference, `rollout.engine: hf`",
    "trl": "TRL `GRPOTrainer`, `use_vllm=False`",
}


def _side_label(side: str) -> str:
    if side in _SIDE_LABEL:
        return _SIDE_LABEL[side]
    rest = side.removeprefix("trl-vllm-")
    fraction = rest.removesuffix("-nois")
    return f"TRL `GRPOTrainer`, vLLM colocate at {fraction}" + (", IS correction off" if rest.endswith("-nois") else "")


def _sides_runs() -> list[dict[str, Any]]:
    runs = []
    for name in VLLM_SIDES:
        for run in load_result(name)["results"]["runs"]:
            if run.get("status") != "failed":
                runs.append({**run, "file": name})
    return runs


def _range(values: list[float], fmt: str) -> str:
    med = statistics.median(values)
    return fmt.format(med) if len(values) == 1 else f"{fmt.format(med)} [{fmt.format(min(values))}–{fmt.format(max(values))}]"


def _learns(run: dict[str, Any]) -> str:
    lc = run["learning"]
    return f"{lc['grad_norm_nonzero_steps']}/{lc['steps']} steps (median {lc['grad_norm_median']:.2g})"


def _gap(side: str, runs: list[dict[str, Any]]) -> str:
    """``median mean / max`` of the rollout-vs-trainer log-prob gap (nats/token) over a side's measured steps: ours from
    its steps, TRL's from its ``sampling/sampling_logp_difference`` logs (where every run logged them)."""
    if side.startswith("ours"):
        steps = [st for r in runs for st in r["steps"] if not st["warmup"]]
        return f"{statistics.median(st['logprob_gap_mean'] for st in steps):.3f} / {max(st['logprob_gap_max'] for st in steps):.2f}"
    per = [r["per_step"] for r in runs]
    if not all("sampling/sampling_logp_difference/mean" in p for p in per):
        return "not logged by TRL"
    return (
        f"{statistics.median(x for p in per for x in p['sampling/sampling_logp_difference/mean']):.3f} / "
        f"{max(x for p in per for x in p['sampling/sampling_logp_difference/max']):.2f}"
    )


def gpu_vllm_sides() -> str:
    """Block (docs/gpu.md): every side of the vLLM comparison, median [min-max] over its repetitions."""
    runs = _sides_runs()
    rows = [
        "| side | runs | step s | samples/s | generated tok/s | peak GiB (device) | grad norm non-zero | log-prob gap, nats/token (mean / max) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for side in dict.fromkeys(r["side"] for r in runs):
        mine = [r for r in runs if r["side"] == side]
        gap = _gap(side, mine)
        rows.append(
            f"| {_side_label(side)} | {len(mine)} | {_range([r['median_step_s'] for r in mine], '{:.2f}')} | "
            f"{_range([r['samples_per_s'] for r in mine], '{:.2f}')} | {_range([r['generated_tokens_per_s'] for r in mine], '{:,.0f}')} | "
            f"{_range([r['peak_device_gib'] for r in mine], '{:.1f}')} | {' ; '.join(_learns(r) for r in mine)} | {gap} |"
        )
    res = load_result(VLLM_SIDES[0])
    warm, meas = res["params"]["warmup"], res["params"]["steps"]
    rows += [
        "",
        f"Qwen3-VL-2B shape, random init, 32 samples a step (4 mazes × group 8, one turn, 128-token responses, LoRA r32), each run "
        f"in a fresh process, {warm} warm-up and {meas} measured steps, medians [min–max] over runs; in `{VLLM_SIDES[0]}.json` the "
        f"two sides alternate order over {res['params']['reps']} repetitions; {_gpu_provenance(res)}. Command: `{_cmd(res)}` "
        f"(and `--sides trl-vllm-0.3-nois trl-vllm-0.5 --reps 1` for `{VLLM_SIDES[1]}.json`). Peak memory is what the device "
        "reports in use (total minus free, polled every 10 ms), so each colocated engine's reservation counts.",
    ]
    return "\n".join(rows)


VLLM_LEVERS = "h200_vllm_sides_fast_2b_t1"


def gpu_vllm_levers() -> str:
    """Block (docs/gpu.md): the engine and update levers against TRL + vLLM colocate, three paired repetitions."""
    res = load_result(VLLM_LEVERS)
    runs = [r for r in res["results"]["runs"] if r.get("status") != "failed"]
    ratios = res["results"]["summary"]["ratios_to_baseline"]
    rows = [
        "| side | runs | step s | samples/s | samples/s ÷ TRL's, same repetition | update s | adapter sync s | sleep + wake s | peak GiB (device) | grad norm non-zero |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for side in dict.fromkeys(r["side"] for r in runs):
        mine = [r for r in runs if r["side"] == side]
        steps = [st for r in mine for st in r.get("steps", []) if not st["warmup"]]
        ours = side.startswith("ours")

        def med(key: str, steps: list[dict[str, Any]] = steps) -> str:
            return f"{statistics.median(st[key] for st in steps):.2f}"

        ratio = ratios.get(side)
        vs = f"{ratio['median']:.2f}× [{ratio['min']:.2f}–{ratio['max']:.2f}]" if ratio else "baseline"
        naps = f"{statistics.median(st['engine_sleep_s'] + st['engine_wake_s'] for st in steps):.2f}" if ours else "-"
        rows.append(
            f"| {_side_label(side)} | {len(mine)} | {_range([r['median_step_s'] for r in mine], '{:.2f}')} | "
            f"{_range([r['samples_per_s'] for r in mine], '{:.2f}')} | {vs} | "
            f"{med('update_s') if ours else '-'} | {med('engine_sync_s') if ours else '-'} | {naps} | "
            f"{_range([r['peak_device_gib'] for r in mine], '{:.1f}')} | {' ; '.join(_learns(r) for r in mine)} |"
        )
    rows += [
        "",
        f"Qwen3-VL-2B shape, the workload of the table above; each run in a fresh process, {res['params']['warmup']} warm-up and "
        f"{res['params']['steps']} measured steps, medians [min–max] over {res['params']['reps']} repetitions, the order of the sides "
        f"alternating; {_gpu_provenance(res)}. Command: `{_cmd(res)}` (two device calls, the second with `--resume`).",
    ]
    return "\n".join(rows)


#: The comparison on the pinned stack (vLLM 0.23.0, TRL 1.16.0, one H100): one result per cell, SHAPE and turns.
PINNED_SIDES: tuple[str, ...] = ("h100_sides_8b_t1", "h100_sides_8b_t3", "h100_sides_2b_t3")


def _roofline(res: dict[str, Any], run: dict[str, Any]) -> dict[str, float]:
    """Lower bounds for one of our runs' step parts on the result's GPU (:data:`hyperpod_rl.plan.hardware.GPUS`).

    ``decode_s``: every decode step reads the bf16 weights once (``2 x total_params`` bytes over HBM bandwidth), and a
    rollout takes ``max_new_tokens x turns`` decode steps (all episodes of a turn in one batch; the KV cache read is
    left out, so the bound is low). ``update_s``: the update's model FLOPs (``update_model_flops`` of each step) over
    the dense bf16 rate.
    """
    from hyperpod_rl.plan.hardware import GPUS
    from hyperpod_rl.plan.shapes import model_shape

    gpu = GPUS["H200" if "H200" in " ".join(res["machine"].get("gpus") or []) else "H100"]
    steps = [st for st in run["steps"] if not st["warmup"]]
    turns = statistics.median(st.get("turns", 1.0) for st in steps)
    weight_bytes = 2 * model_shape(run["shape"]).total_params
    return {
        "decode_s": weight_bytes / gpu.hbm_bytes_per_s * int(res["params"].get("max_new_tokens", 128)) * turns,
        "update_s": statistics.median(st["update_model_flops"] for st in steps) / gpu.bf16_flops,
        "turns": turns,
    }


def gpu_pinned_sides() -> str:
    """Block (docs/gpu.md): ours against TRL + vLLM colocate per cell on the pinned stack, with each part of our
    step beside its hardware bound (:func:`_roofline`)."""
    rows = [
        "| cell | side | runs | step s | samples/s | samples/s ÷ TRL's, same repetition | peak GiB (device) | log-prob gap, nats/token (mean / max) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    parts = [
        "| cell | rollout s | of which engine generate s (bound: weight reads) | in-loop vs standalone engine tok/s | adapter sync + sleep + wake s | update s (bound: FLOPs) | update MFU |",
        "|---|---|---|---|---|---|---|",
    ]
    for name in PINNED_SIDES:
        res = load_result(name)
        runs = [r for r in res["results"]["runs"] if r.get("status") != "failed"]
        ratios = res["results"]["summary"]["ratios_to_baseline"]
        cell = f"{res['params']['shape']}, {res['params']['turns']} turn{'s' if res['params']['turns'] != '1' else ''}"
        for side in dict.fromkeys(r["side"] for r in runs):
            mine = [r for r in runs if r["side"] == side]
            gap = _gap(side, mine)
            ratio = ratios.get(side)
            if not ratio:
                vs = "baseline"
            elif ratio["n"] == 1:
                vs = f"{ratio['median']:.2f}× (one pair)"
            else:
                vs = f"{ratio['median']:.2f}× [{ratio['min']:.2f}–{ratio['max']:.2f}] (n={ratio['n']})"
            rows.append(
                f"| {cell} | {_side_label(side)} | {len(mine)} | {_range([r['median_step_s'] for r in mine], '{:.2f}')} | "
                f"{_range([r['samples_per_s'] for r in mine], '{:.2f}')} | {vs} | {_range([r['peak_device_gib'] for r in mine], '{:.1f}')} | {gap} |"
            )
        for run in (r for r in runs if r["side"] == "ours-vllm"):
            steps = [st for st in run["steps"] if not st["warmup"]]
            bound = _roofline(res, run)

            def med(key: str, steps: list[dict[str, Any]] = steps) -> float:
                return statistics.median(st.get(key, 0.0) for st in steps)

            generate = statistics.median(st["generated_tokens"] / st["engine_generate_tokens_per_s"] for st in steps)
            parts.append(
                f"| {cell}, rep {run['rep']} | {med('rollout_s'):.2f} | {generate:.2f} ({bound['decode_s']:.2f}) | "
                f"{med('engine_generate_tokens_per_s'):,.0f} vs {run['standalone_vllm']['tokens_per_s']:,.0f} | "
                f"{med('engine_sync_s') + med('engine_sleep_s') + med('engine_wake_s'):.2f} | {med('update_s'):.2f} ({bound['update_s']:.2f}) | "
                f"{run['update_mfu']:.0%} |"
            )
    first = load_result(PINNED_SIDES[0])
    trl = next(
        r["impl"] for name in PINNED_SIDES for r in load_result(name)["results"]["runs"] if r["side"].startswith("trl") and "impl" in r
    )
    return "\n".join(
        [
            *rows,
            "",
            f"Each run in a fresh process, {first['params']['warmup']} warm-up and {first['params']['steps']} measured steps, "
            "medians [min–max] over runs, the order of the sides alternating by repetition; 32 episodes a step (4 mazes × group 8, "
            "128-token responses, LoRA r32). Our side's samples are (prompt, response) pairs: at 3 turns an episode gives up to 3. "
            f"TRL's side is `{trl}` on one-turn prompts: its `GRPOTrainer` has no multi-turn maze loop, so at 3 turns it does "
            "less work per step than ours. Peak memory is what the device reports in use (total minus free, polled every 10 ms). "
            + " ".join(
                f"`{n}.json`: {_gpu_provenance(r)}, vLLM {r['packages'].get('vllm')}, "
                f"{len(r['results']['runs'])} runs{' (' + r['notes'] + ')' if r.get('notes') else ''}."
                for n, r in ((n, load_result(n)) for n in PINNED_SIDES)
            )
            + f" Command: `{_cmd(first)}`, run by `benchmarks/gpu/run_sides.sh` (several device calls, each with `--resume`).",
            "",
            "Where our step's time goes, medians over measured steps, each part beside its hardware bound in brackets "
            "(decode: the bf16 weights read once per decode step at the datasheet's HBM bandwidth, `max_new_tokens × turns` steps; "
            "update: its model FLOPs at the dense bf16 rate):",
            "",
            *parts,
        ]
    )


def gpu_pinned_verdict() -> str:
    """Inline (docs/gpu.md): issue 41's goal, cell by cell, on the pinned stack's results (:data:`PINNED_SIDES`)."""
    out = []
    for name in PINNED_SIDES:
        res = load_result(name)
        runs = [r for r in res["results"]["runs"] if r.get("status") != "failed"]
        ours = [r for r in runs if r["side"] == "ours-vllm"]
        trl = [r for r in runs if r["side"].startswith("trl")]
        ratio = res["results"]["summary"]["ratios_to_baseline"]["ours-vllm"]
        steps = [st for r in ours for st in r["steps"] if not st["warmup"]]
        # the whole rollout phase against the same engine generating the same number of tokens alone
        slow = statistics.median(
            st["rollout_s"] / (st["generated_tokens"] / r["standalone_vllm"]["tokens_per_s"])
            for r in ours
            for st in r["steps"]
            if not st["warmup"]
        )
        peak_o, peak_t = statistics.median(r["peak_device_gib"] for r in ours), min(r["peak_device_gib"] for r in trl)
        gap = max(st["logprob_gap_mean"] for st in steps)
        out.append(
            f"**{res['params']['shape']}, {res['params']['turns']} turn(s):** "
            f"{ratio['median']:.2f}× TRL's samples/s ({ratio['n']} paired repetition{'s' if ratio['n'] != 1 else ''}"
            f"{', ' + format(ratio['min'], '.2f') + '–' + format(ratio['max'], '.2f') if ratio['n'] > 1 else ''}; goal 1.5×: "
            f"{'met' if ratio['median'] >= 1.5 else 'not met'}), peak {peak_o:.1f} GiB against TRL's {peak_t:.1f} "
            f"({'met' if peak_o <= peak_t else 'not met'}), log-prob gap at most {gap:.3f} nats/token per step "
            f"({'met' if gap <= 0.05 else 'not met'}), the rollout phase {slow:.2f}× the standalone engine's time for the same "
            f"tokens (goal 1.3×: {'met' if slow <= 1.3 else 'not met'})"
        )
    return ". ".join(out)


def _ours_steps() -> list[dict[str, Any]]:
    return [st for r in _sides_runs() if r["side"] == "ours-vllm" for st in r["steps"] if not st["warmup"]]


def gpu_vllm_verdict() -> str:
    """Inline (docs/gpu.md): the goal's four parts against the vLLM comparison, and where our step's time goes."""
    runs = _sides_runs()
    res = load_result(VLLM_SIDES[0])
    ratio = res["results"]["summary"]["ratios_to_baseline"]["ours-vllm"]
    ours = [r for r in runs if r["side"] == "ours-vllm"]
    trl = [r for r in runs if r["side"] == "trl-vllm-0.3"]
    steps = _ours_steps()
    st = {
        k: statistics.median(s[k] for s in steps)
        for k in ("step_s", "rollout_s", "update_s", "engine_sync_s", "engine_sleep_s", "engine_wake_s")
    }
    loop = statistics.median(s["engine_generate_tokens_per_s"] for s in steps)
    alone = statistics.median(r["standalone_vllm"]["tokens_per_s"] for r in ours)
    whole = statistics.median(r["generated_tokens_per_s"] for r in ours)
    gap = statistics.median(s["logprob_gap_mean"] for s in steps)
    peak_ours = max(r["peak_device_gib"] for r in ours)
    peak_trl = min(r["peak_device_gib"] for r in trl)
    return (
        f"**≥ 1.5× TRL + vLLM colocate's samples/s: not met** ({ratio['median']:.2f}× median over {ratio['n']} paired "
        f"repetitions, {ratio['min']:.2f}–{ratio['max']:.2f}, against `vllm_gpu_memory_utilization=0.3`). **No more peak memory: met** "
        f"({peak_ours:.1f} vs {peak_trl:.1f} GiB). **Log-prob gap ≤ 0.05 nats/token: met** ({gap:.3f}; TRL's own is above 0.8, "
        f"so its default importance-sampling correction zeroes every gradient). **Rollout inside the loop within 1.2× of standalone "
        f"vLLM: {'met' if alone / whole <= 1.2 else 'not met'}** for the whole rollout phase ({whole:,.0f} generated tokens/s with "
        f"the adapter reload, wake, request building and env steps, against {alone:,.0f} for the same engine on the last step's "
        f"requests alone: {alone / whole:.2f}×); the engine's own `generate` inside the loop ran at {loop:,.0f} tokens/s "
        f"({alone / loop:.2f}×). Where a step's {st['step_s']:.2f} s go (medians): rollout {st['rollout_s']:.2f} s, of "
        f"which adapter save + reload {st['engine_sync_s']:.2f} s and wake {st['engine_wake_s']:.2f} s; update {st['update_s']:.2f} s; "
        f"sleep {st['engine_sleep_s']:.2f} s"
    )


def readme_gpu() -> str:
    """Inline (README): samples/s over TRL's per shape, at more or less memory, and the update levers' MFU on 8B."""
    parts, less = [], []
    for shape, name in README_GPU_TRL.items():
        cmp = next(c for c in load_result(name)["results"]["comparisons"] if "throughput_ratio_ours_over_trl" in c)
        parts.append(f"{cmp['throughput_ratio_ours_over_trl']:.2f}× {'its samples/s ' if not parts else ''}at {shape}")
        less.append(cmp["peak_gib_ours"] < cmp["peak_gib_trl"])
    memory = "each at less memory" if all(less) else "each at more memory" if not any(less) else "at mixed memory"
    name, config, variant = README_GPU_MFU
    rec = next(r for r in load_result(name)["results"] if r["config"]["name"] == config)
    more = rec["variants"][variant]["peak_gib"] > rec["variants"]["naive"]["peak_gib"]
    ratio = load_result(VLLM_SIDES[0])["results"]["summary"]["ratios_to_baseline"]["ours-vllm"]
    pinned = []
    for pname in PINNED_SIDES:
        res = load_result(pname)
        runs = [r for r in res["results"]["runs"] if r.get("status") != "failed"]
        r = res["results"]["summary"]["ratios_to_baseline"]["ours-vllm"]
        peak_o = statistics.median(x["peak_device_gib"] for x in runs if x["side"] == "ours-vllm")
        peak_t = statistics.median(x["peak_device_gib"] for x in runs if x["side"].startswith("trl"))
        turns = int(res["params"]["turns"])
        spread = f"{r['min']:.2f}–{r['max']:.2f} over {r['n']} paired repetitions" if r["n"] > 1 else "one pair"
        pinned.append(
            f"{r['median']:.2f}× at {res['params']['shape']}, {turns} turn{'s' if turns > 1 else ''} ({spread}; "
            f"{peak_o:.1f} GiB against {peak_t:.1f}{'; TRL on one-turn prompts' if turns > 1 else ''})"
        )
    first = load_result(PINNED_SIDES[0])
    return (
        f"with the colocated vLLM engine (`rollout.engine: vllm`, its defaults) against TRL's `GRPOTrainer` with vLLM colocate "
        f"(`vllm_gpu_memory_utilization=0.3`): on one H100 with the image's vLLM {first['packages'].get('vllm')}, "
        f"{', '.join(pinned[:-1]) + ' and ' + pinned[-1] if len(pinned) > 1 else pinned[0]} of its samples/s; on one H200 with vLLM 0.25.0, "
        f"{ratio['median']:.2f}× at 2B (range {ratio['min']:.2f}–{ratio['max']:.2f}, at less memory, learning where TRL's default correction "
        f"zeroes the gradient); against TRL *without* vLLM on one H200, compiled transformers decoding at "
        f"{', '.join(parts)} ({memory}), and the update levers (`trainer.compile_layers` + "
        f"`checkpoint_policy: save_matmuls`: {100 * rec['variant_mfu'][variant]:.0f} % MFU on the 8B update at "
        f"{'more' if more else 'less'} memory)"
    )


#: The SkyRL 0.3.0 backend on one GPU (benchmarks/gpu/skyrl_e2e.py), three device calls in one sitting: the first job,
#: stopped once checkpoint 3 was written (``--phases train``); the same run resubmitted, resumed for step 4, exported
#: and served (``--phases resume,serve``); then the reference backend on the same workload (``--phases reference``).
SKYRL_E2E: tuple[str, str] = ("h100_skyrl030_stop_2b", "h100_skyrl030_resume_2b")
SKYRL_REFERENCE = "h100_skyrl030_reference_sitting2_2b"


#: The workload fields that must agree across the sitting's records (the reference beside SkyRL on the same work).
_SKYRL_SAME = ("shape", "mazes", "group", "max_turns", "max_new_tokens", "max_model_len", "micro_batch", "gpu_memory_utilization")


def _skyrl_records() -> dict[str, Any]:
    """The SkyRL sitting: the three records, the phases, every SkyRL step tagged with its job (1: stopped, 2:
    resumed), the steps that were not their job's first, and the medians over them (:func:`_side`).

    Raises:
        ValueError: the records do not show what the passages say: one GPU and commit, the same workload, the
            order stop -> resume -> reference, each step once, SkyRL's own line saying it resumed.
    """
    from hyperpod_rl.jobs import strip_ansi

    first, second, ref = (load_result(name) for name in (*SKYRL_E2E, SKYRL_REFERENCE))
    train, resume = first["results"]["phases"]["train"], second["results"]["phases"]["resume"]
    steps = [{**m, "job": 1} for m in train["metrics"]]
    steps += [{**m, "job": 2} for m in resume["metrics"] if m["step"] > resume["resumed_from"]]
    said = f"Resuming from global_step: {resume['resumed_from']}"
    resumed_line = next((strip_ansi(x) for x in resume["skyrl_lines"] if said in strip_ansi(x)), None)
    records = (first, second, ref)
    if (
        resumed_line is None
        or [m["step"] for m in steps] != list(range(1, len(steps) + 1))
        or resume["metric_steps"] != [m["step"] for m in steps]
        or len({(r["machine"]["gpus"][0], code_commit(r)) for r in records}) != 1
        or any(r["params"][k] != first["params"][k] for r in records for k in _SKYRL_SAME)
        or [r["date"] for r in records] != sorted(r["date"] for r in records)
    ):
        raise ValueError(f"{', '.join(SKYRL_E2E)} and {SKYRL_REFERENCE} are not one sitting's stop, resume and reference")
    # a job's first step holds its process's warm-up and SkyRL's first checkpoint-cleanup call
    later = [m for i, m in enumerate(steps) if i and steps[i - 1]["job"] == m["job"]]
    return {
        "first": first,
        "second": second,
        "ref": ref,
        "train": train,
        "resume": resume,
        "serve": second["results"]["phases"]["serve"],
        "steps": steps,
        "later": later,
        "side": _side(later),
        "peak": max(train["peak_gpu_gib"], resume["peak_gpu_gib"]),
        "resumed_line": resumed_line.split(" - ")[-1].strip(),
    }


def gpu_skyrl() -> str:
    """Block (docs/gpu.md): each SkyRL step's timings over the stop and the resume, then the adapter and its serving check."""
    r = _skyrl_records()
    tr, rs, sv, sk, p = r["train"], r["resume"], r["serve"], r["side"], r["first"]["params"]
    rows = [
        "| step | job | step s | generate s | policy update s | checkpoint save s | weight sync s | samples/s | generated tok/s¹ "
        "| rollout vs train log-prob, mean abs (nats/token) | tied groups |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for m in r["steps"]:
        rows.append(
            f"| {m['step']} | {m['job']} | {m['timing/step']:.1f} | {m['timing/generate']:.1f} | {m['timing/policy_train']:.1f} | "
            f"{m['timing/save_checkpoints']:.1f} | {m['timing/sync_weights']:.2f} | {m['samples_per_s']:.2f} | "
            f"{m['generated_tokens_per_s']:,.0f} | {m['policy/rollout_train_logprobs_abs_diff_mean']:.4f} | "
            f"{100 * m['reward/tied_group_share']:.0f} % |"
        )
    init, prov = tr["init_adapter_check"], rs["provenance"]
    stages = " → ".join(f"{e['stage']} `{e.get('run_id') or e.get('model_id')}`" for e in prov["lineage"])
    margins = [x for x in sv["top2_margin_nats"] if x is not None]
    effect = sv["adapter_vs_base_max_logprob_change"]
    answers = sorted(set(sv["vllm_answers"]))
    rows += [
        "",
        f"- **Run**: `python -m hyperpod_rl.train --backend skyrl` submitted with `submit_run` to the embedded cluster; "
        f"{p['mazes']} mazes × group {p['group']} = {p['mazes'] * p['group']} episodes a step, up to {p['max_turns']} turns, "
        f"{p['max_new_tokens']} new tokens a turn. Median of the steps that were not their job's first "
        f"(steps {', '.join(str(m['step']) for m in r['later'])}): {sk['timing/step']:.1f} s a step, of which "
        f"{sk['timing/save_checkpoints']:.1f} s checkpoint save, {sk['samples_per_s']:.2f} samples/s. Peak GPU memory "
        f"{r['peak']:.1f} GiB (device level, nvidia-smi).",
        f"- **Stopped and resumed**: job `{tr['submission_id']}` was stopped once checkpoint {tr['latest_checkpoint']} was "
        f"written ({tr['status']}; the phase, submission to stop, took {tr['seconds']:.0f} s); the next device call submitted "
        f"the same config again (`checkpoint.resume: latest`) as job `{rs['submission_id']}`. SkyRL's log: "
        f'"{r["resumed_line"]}"; that job logged step {rs["metric_steps"][-1]} only, and the run\'s metrics hold each step '
        f"once; it exported and ended {rs['status']} ({rs['seconds']:.0f} s). The evidence of the resume is the step counter "
        "and SkyRL's log, not the weights: no gradient flowed (below), so a resumed adapter and a fresh one from the "
        "starting adapter are the same. Each job's first step holds its process's warm-up and SkyRL's first "
        "checkpoint-cleanup call (a Ray task on each node, inside the save column).",
        f"- **Learning: none here.** Mean reward {statistics.mean(m['reward/avg_raw_reward'] for m in r['steps']):.2f}; "
        f"{min(100 * m['reward/tied_group_share'] for m in r['steps']):.0f} % of groups tied in every step (the random-init "
        f"policy wrote no valid move), so every advantage and gradient was zero (grad norm "
        f"{max(m['policy/grad_norm'] for m in r['steps']):g}): this run shows the machinery, not learning.",
        f"- **Starting adapter** (`model.init_adapter`): {init['tensors']} LoRA tensors loaded into the FSDP2-sharded policy "
        f"and read back with max |difference| {init['max_abs_diff']:g}.",
        f"- **Export**: `{prov['steps']}` steps, adapter sha256 `{prov['adapter_sha256'][:12]}…`, "
        f"{sum(prov['lora_matched_modules'].values())} language-model modules wrapped, files "
        f"{', '.join(f'`{f}`' for f in rs['adapter_files'])}; lineage {stages}. Its `git` field reads the device copy's "
        f"git metadata (`{prov['git']['commit'][:10]}`, {'dirty' if prov['git']['dirty'] else 'clean'}); the records' "
        f"commit is `{code_commit(r['first'])[:10]}`.",
        f"- **Served by vLLM** (`LoRARequest`, its own engine, after the cluster stopped): greedy answers equal to the in-process "
        f"policy's on {sv['equal']} of {sv['mazes']} held-out mazes ({', '.join(f'`{a}`' for a in answers)}"
        f"{' in every maze' if len(answers) == 1 else ''}). This checks the plumbing (the adapter loads, its modules map, "
        f"the prompt and answer words agree), not that the adapter matters: vLLM's answer led the runner-up answer word by "
        f"{min(margins):.2f}–{max(margins):.2f} nats, and the adapter moved the answer log-probs by only "
        f"{min(effect):.3f}–{max(effect):.3f} nats against the base model, so the base model alone answers the same.",
        f"- {_gpu_provenance(r['first'])}; `{SKYRL_E2E[0]}.json`, `{SKYRL_E2E[1]}.json`.",
        "- ¹ Episodes × SkyRL's `generate/avg_assistant_tokens` (the tokens it sampled; not the observation tokens between "
        "turns) ÷ generate seconds.",
    ]
    return "\n".join(rows)


def _side(steps: list[dict[str, Any]]) -> dict[str, float]:
    """Medians over ``steps`` (those that were not their process's first) of the timing, rate and log-prob fields
    both backends record; ``bare_step`` is the step less its checkpoint save (the reference saves outside its step)."""

    def med(key: str) -> float:
        return statistics.median(m[key] for m in steps)

    keys = ("timing/step", "timing/generate", "timing/policy_train", "timing/sync_weights", "samples_per_s", "generated_tokens_per_s")
    out = {k: med(k) for k in keys}
    out["timing/save_checkpoints"] = statistics.median(m.get("timing/save_checkpoints", 0.0) for m in steps)
    out["bare_step"] = statistics.median(m["timing/step"] - m.get("timing/save_checkpoints", 0.0) for m in steps)
    out["steps"] = len(steps)
    return out


def gpu_skyrl_reference() -> str:
    """Block (docs/gpu.md): SkyRL's steps beside the reference backend's on the same prompts and limits, and what differs."""
    r = _skyrl_records()
    rp, rpar = r["ref"]["results"]["phases"]["reference"], r["ref"]["params"]
    sk, rf = r["side"], _side(rp["metrics"][1:])
    forward = statistics.median(m["timing/fwd_logprobs_values_reward"] for m in r["later"])
    rows = [
        "| backend | steps (not a process's first) | step s | step s less SkyRL's checkpoint save | generate s | policy update s | "
        "weight sync s | samples/s | generated tok/s | peak GPU GiB |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for label, side, peak in (
        ("SkyRL 0.3.0 (FSDP2 + its vLLM engine)", sk, r["peak"]),
        ("reference (`rollout.engine: vllm`)", rf, rp["peak_gpu_gib"]),
    ):
        rows.append(
            f"| {label} | {side['steps']} | {side['timing/step']:.1f} | {side['bare_step']:.1f} | {side['timing/generate']:.1f} | "
            f"{side['timing/policy_train']:.1f} | {side['timing/sync_weights']:.2f} | {side['samples_per_s']:.2f} | "
            f"{side['generated_tokens_per_s']:,.0f} | {peak:.1f} |"
        )
    response = statistics.median(m["policy/response_length"] for m in rp["metrics"])
    rows += [
        "",
        f"- **One run each, in one sitting on one GPU: not a speed verdict.** Medians of {sk['steps']} and {rf['steps']} "
        f"steps ({_gpu_provenance(r['ref'])}; in this order: SkyRL's stopped job, its resumed job, the reference, each in its own device call), not measured as this "
        "project's speed comparisons are (order alternated, at least 3 warm-up and 5 measured steps, 3 repetitions): a "
        "SkyRL job's start takes most of a device call, and the session's device time held one run a side.",
        f"- **The columns are not cut alike.** SkyRL's step holds its checkpoint save (the column beside it takes that out, "
        f"step by step) and a log-prob forward pass that no column shows (median {forward:.1f} s); the reference backend's "
        "generate holds its adapter sync, engine sleep and wake, and it saves between steps, outside its step time. "
        f"Samples/s: SkyRL {sk['samples_per_s']:.2f} against {rf['samples_per_s']:.2f}; without its save, SkyRL's rate would "
        f"be {rf['timing/step'] / sk['bare_step']:.2f}× the reference's.",
        "- **Neither is a like-for-like rate, because the two sides did different work.** SkyRL samples only the answer "
        "words (`rollout.action_constraint: directions`: its VLM generator needs each turn to tokenize back to what was "
        "sampled), so its turns end early; the reference backend samples free text, every turn to the "
        f"{rpar['max_new_tokens']}-token limit (its response length: {response:.0f} tokens a turn), and trains on all of "
        "it. SkyRL started from the starting adapter, the reference from a fresh LoRA. Every group tied on both sides, so "
        "no gradient flowed.",
        "- **No log-prob column**: SkyRL's rollout-vs-train difference (table above) is a mean over tokens; in this record "
        "the reference backend reported the same metric name per sampled turn (the difference of the turn's summed "
        "log-probs), a different quantity, and its per-token figure (`rollout/logprob_gap_mean`) was not kept. The "
        "reference backend now reports SkyRL's per-token meaning under SkyRL's name, and `skyrl_e2e` keeps `rollout/*`.",
        "- **The same on both sides** (checked across the three records): the random-init Qwen3-VL-2B-shaped checkpoint, "
        f"the maze data, {rpar['mazes']} mazes × group {rpar['group']} a step, up to {rpar['max_turns']} turns, "
        f"{rpar['max_new_tokens']} new tokens a turn at most, LoRA r32, one colocated vLLM engine with sleep mode "
        f"capped at {rpar['gpu_memory_utilization']} of the GPU, configured to checkpoint every step, submitted with "
        "`submit_run` to the embedded cluster.",
        f"- `{SKYRL_E2E[0]}.json`, `{SKYRL_E2E[1]}.json`, `{SKYRL_REFERENCE}.json`.",
    ]
    return "\n".join(rows)


def skyrl_summary() -> str:
    """Inline (README, docs/container.md): what the SkyRL backend ran, on which GPU, with which versions."""
    r = _skyrl_records()
    res, sv, rs, sk = r["first"], r["serve"], r["resume"], r["side"]
    v = res["packages"]
    gpu = (res["machine"].get("gpus") or ["a GPU"])[0].split(",")[0]
    return (
        f"On one {gpu} ({res['date'][:10]}), SkyRL {v['skyrl']} with vLLM {v['vllm']}, Ray {v['ray']}, transformers "
        f"{v['transformers']} and torch {v['torch']} ran {len(r['train']['metrics'])} GRPO steps of a random-init "
        f"Qwen3-VL-2B-shaped model through our entrypoint, from a starting adapter (no gradient: every group tied), was "
        f"stopped after checkpoint {r['train']['latest_checkpoint']}, resumed from it for step {rs['metric_steps'][-1]} in "
        f"a new job, at {sk['timing/step']:.0f} s a step after each job's first (of which {sk['timing/save_checkpoints']:.0f} s "
        f"checkpoint save), exported the adapter with provenance, and vLLM served it with greedy answers equal to the "
        f"in-process policy's on {sv['equal']} of {sv['mazes']} held-out mazes (a plumbing check: this adapter barely "
        f"moves the answers) (`benchmarks/results/{SKYRL_E2E[0]}.json`, `{SKYRL_E2E[1]}.json`)"
    )


def decode_fit_held_out() -> str:
    """Inline (docs/planner.md): the decode model's error on each held-out shape."""
    data = decode_fit.points()
    constants = decode_fit.fit(data)
    measured = decode_fit.per_shape(data)
    return ", ".join(
        f"{_model_size(shape)} held out: {100 * (decode_fit.predicted_step_s(shape, constants) / measured[shape] - 1):+.1f} %"
        for shape in decode_fit.HELD_OUT_SHAPES
    )


def _model_size(shape: str) -> str:
    return shape.split("/")[-1].removeprefix("Qwen3-VL-").removesuffix("-Instruct")


# ---------------------------------------------------------------- hyperpod-rl plan (docs/planner.md)
def _plan_cli(case: str, *, tables: bool) -> Callable[[], str]:
    """The recorded ``hyperpod-rl plan`` session of ``case`` as a text block (``tables=False``: summary and verdicts only)."""

    def render() -> str:
        res = load_result("plan_cli")
        run = res["results"][case]
        lines = run["output"].rstrip("\n").splitlines()
        if not tables:
            verdicts = lines.index("Verdicts")
            lines = [lines[0], "... (the memory, KV-cache and step-time tables) ...", *lines[verdicts:]]
        body = "\n".join(line.rstrip() for line in lines)
        return (
            f"```text\n$ {run['command']}\n{body}\n$ echo $?\n{run['exit_code']}\n```\n\n"
            f"Recorded by `python -m benchmarks.plan_cli` {_provenance(res, load=False)} (`benchmarks/results/plan_cli.json`)."
        )

    return render


def _report(fn: str, *args: str) -> Callable[[], str]:
    def render() -> str:
        from benchmarks.gpu import report

        return getattr(report, fn)(*args)

    return render


_H200 = ("h200_1gpu", "h200_1gpu_2b", "h200_1gpu_4b", "h200_1gpu_fsdp", "h200_2gpu_fsdp", "h200_2gpu_fsdp_run2", "planner_predictions")

# ---------------------------------------------------------------- the GPU learning curve (issue 40, docs/sft.md)
#: benchmarks/gpu/maze_curve.py's records, one a seed (each rewritten by every device call of its seed).
MAZE_CURVE: tuple[str, ...] = ("h100_maze_curve_s0", "h100_maze_curve_s1")
_ENGINE_RAN = {"hf": "transformers", "vllm": "vLLM"}


def maze_curve() -> str:
    """Block (docs/sft.md): each seed's SFT stop, the GRPO engine that ran, the held-out solve rate at every
    evaluation point (200 mazes and their first 64, 95 % bootstrap intervals), and the issue's goal against it.

    Raises:
        ValueError: the records are not finished curves of one commit and one GPU.
    """
    records = [load_result(name) for name in MAZE_CURVE]
    runs = [r["results"] for r in records]
    if (
        len({(r["machine"]["gpus"][0], code_commit(r)) for r in records}) != 1
        or not all(x["sft"]["done"] and x["grpo"].get("done") for x in runs)
        or len({tuple(p["step"] for p in x["grpo"]["points"]) for x in runs}) != 1
    ):
        raise ValueError(f"{', '.join(MAZE_CURVE)} are not finished curves of one commit and one GPU")
    first, r0 = records[0], runs[0]
    gpu = first["machine"]["gpus"][0].split(",")[0]
    m = r0["model"]
    rows = [
        f"`benchmarks/gpu/run_curve.sh` (`python -m benchmarks.gpu.maze_curve run` with the defaults), one {gpu}, "
        f"{first['date'][:10]}, commit `{(code_commit(first) or 'unknown')[:10]}`: a random-init Qwen3-VL of "
        f"{m['parameters']['total'] / 1e6:.1f} M parameters (text {m['text']['hidden_size']} × {m['text']['layers']}, vision "
        f"{m['vision']['hidden_size']} × {m['vision']['depth']}), {len(runs)} seeds; held-out solve rate, greedy, value [95 % bootstrap "
        f"interval], on the quickstart's {r0['grpo']['heldout_mazes']} held-out mazes and on their first {r0['grpo']['heldout_small_mazes']}.",
        "",
        "| seed | SFT stop (validation solve rate) | SFT reached it | GRPO rollouts | held-out, step 0 → "
        f"{r0['grpo']['steps']} | first {r0['grpo']['heldout_small_mazes']}, step 0 → {r0['grpo']['steps']} |",
        "|---|---|---|---|---|---|",
    ]
    for x in runs:
        sft, pts = x["sft"], x["grpo"]["points"]
        stop = next(c for c in sft["curve"] if c["step"] == sft["stop_step"])
        engine = x["grpo"]["engine"]
        rows.append(
            f"| {x['seed']} | step {sft['stop_step']} ({_ci(stop['validation_solve'])}; random init "
            f"{sft['random_init_validation_solve']:.3f}) | {stop['seconds']:.0f} s into its device call | "
            f"{_ENGINE_RAN[engine['ran']]} (`rollout.engine: {engine['rollout.engine']}`) | {_ci(pts[0]['heldout'])} → "
            f"{_ci(pts[-1]['heldout'])} | {_ci(pts[0]['heldout_small'])} → {_ci(pts[-1]['heldout_small'])} |"
        )
    steps = [p["step"] for p in r0["grpo"]["points"]]
    rows += [
        "",
        "| GRPO step | "
        + " | ".join(
            f"seed {x['seed']}: {r0['grpo']['heldout_mazes']} mazes | seed {x['seed']}: first {r0['grpo']['heldout_small_mazes']}"
            for x in runs
        )
        + " |",
        "|---|" + "---|---|" * len(runs),
    ]
    for i, step in enumerate(steps):
        cells = " | ".join(f"{_ci(x['grpo']['points'][i]['heldout'])} | {_ci(x['grpo']['points'][i]['heldout_small'])}" for x in runs)
        rows.append(f"| {step} | {cells} |")
    gains = ", ".join(
        f"seed {x['seed']} {x['grpo']['points'][-1]['heldout']['value'] - x['grpo']['points'][0]['heldout']['value']:+.3f}" for x in runs
    )
    reached = all(x["grpo"]["points"][-1]["heldout"]["value"] >= 0.9 for x in runs)
    rows += [
        "",
        f"The issue's goal (from a start of 0.40–0.50, at least 0.90 at step {r0['grpo']['steps']}, the gain's interval above "
        f"+0.30): {'reached' if reached else 'not reached'} in {'every' if reached else 'either'} seed. Step "
        f"{r0['grpo']['steps']} less step 0 on the {r0['grpo']['heldout_mazes']} mazes: {gains} (point values: the records "
        "keep no per-maze outcomes, so no paired interval). Records: "
        + ", ".join(f"`benchmarks/results/{name}.json`" for name in MAZE_CURVE)
        + ".",
    ]
    return "\n".join(rows)


#: Issue 40's lever runs on seed 0's SFT model, read on validation (benchmarks/gpu/curve_jobs/levers*_s0.json), with what each changes.
MAZE_LEVERS: dict[str, str] = {
    "h100_maze_lever_base_s0": "none: the curve's settings (lr 1e-4, groups of 8, 8 mazes a step, process advantage)",
    "h100_maze_lever_lr3e-4_s0": "`grpo.lr` 3e-4",
    "h100_maze_lever_lr1e-3_s0": "`grpo.lr` 1e-3",
    "h100_maze_lever_lr3e-3_s0": "`grpo.lr` 3e-3",
    "h100_maze_lever_group16_s0": "groups of 16 (`--group-size 16`)",
    "h100_maze_lever_prompts32_s0": "32 mazes a step (`--prompts-per-step 32`)",
    "h100_maze_lever_outcome_s0": "`grpo.advantage` outcome (not process)",
    "h100_maze_lever_steps480_s0": "480 steps (`--grpo-steps 480`, evaluated every 40)",
    "h100_maze_lever_vllm_s0": "vLLM rollouts, free text (`--engine vllm`: `rollout.action_constraint` none)",
}


def maze_levers() -> str:
    """Block (docs/sft.md): each lever run's validation solve rate at step 0 and at its last point (95 %
    bootstrap intervals), the steps it reached, its last window's sampled reward and tied-group share.

    Raises:
        ValueError: a record is not a lever run (validation split, GRPO from another state's SFT) of seed 0's SFT model.
    """
    records = {name: load_result(name) for name in MAZE_LEVERS}
    revisions = {r["results"]["sft"]["revision"] for r in records.values()}
    if len(revisions) != 1 or any(r["results"]["grpo"].get("eval_split") != "validation" for r in records.values()):
        raise ValueError("the lever records are not validation runs from one SFT model")
    first = next(iter(records.values()))
    gpu = first["machine"]["gpus"][0].split(",")[0]
    rows = [
        f"`python -m benchmarks.gpu.curve_batch` (`benchmarks/gpu/curve_jobs/levers_s0.json`, `levers2_s0.json`), one {gpu}, "
        f"{first['date'][:10]}, commit `{(code_commit(first) or 'unknown')[:10]}`, side by side in two device calls: GRPO "
        f"from seed 0's SFT model (revision `{revisions.pop()}`), each lever alone against the curve's settings, "
        "validation solve rate, greedy, on the 200 validation mazes, value [95 % bootstrap interval]. "
        "A run that did not reach its last step in the call's time says where it stopped.",
        "",
        "| lever | validation, step 0 | validation, last point | steps reached | sampled reward, last window | tied groups, last window |",
        "|---|---|---|---|---|---|",
    ]
    for name, lever in MAZE_LEVERS.items():
        g = records[name]["results"]["grpo"]
        pts = g["points"]
        last = pts[-1]
        reward = "–" if last["sampled_reward"] is None else f"{last['sampled_reward']:+.3f}"
        tied = "–" if last["tied_group_share"] is None else f"{last['tied_group_share']:.2f}"
        reached = f"{last['step']} of {g['steps']}" + ("" if g.get("done") else " (paused)")
        rows.append(f"| {lever} | {_ci(pts[0]['validation'])} | {_ci(last['validation'])} | {reached} | {reward} | {tied} |")
    base = records["h100_maze_lever_base_s0"]["results"]["grpo"]["points"][-1]["validation"]
    above = [MAZE_LEVERS[n] for n, r in records.items() if r["results"]["grpo"]["points"][-1]["validation"]["low"] > base["value"]]
    rows += [
        "",
        "A lever whose last point's interval lies above the unchanged run's last value: "
        + (", ".join(above) if above else "none")
        + ". Records: "
        + ", ".join(f"`benchmarks/results/{name}.json`" for name in MAZE_LEVERS)
        + ".",
    ]
    return "\n".join(rows)


#: Issue 40's model-size lever runs (``benchmarks/gpu/curve_jobs/size_s0.json``, ``size_lr_s0.json``):
#: record -> what changed against the curve's model (text 384x6, vision 128x2, SFT lr 1e-3).
MAZE_SIZES: dict[str, str] = {
    "h100_maze_lever_base_s0": "none: the curve's model (text 384x6, vision 128x2), SFT lr 1e-3",
    "h100_maze_lever_t512x8_s0": "text 512x8, SFT lr 1e-3",
    "h100_maze_lever_t768x8_s0": "text 768x8, SFT lr 1e-3",
    "h100_maze_lever_t768x8_v256x4_s0": "text 768x8, vision 256x4, SFT lr 1e-3",
    "h100_maze_lever_t512x8_sftlr3e-4_s0": "text 512x8, SFT lr 3e-4",
    "h100_maze_lever_t768x8_sftlr3e-4_s0": "text 768x8, SFT lr 3e-4",
    "h100_maze_lever_t768x8_sftlr1e-4_s0": "text 768x8, SFT lr 1e-4",
}


def maze_sizes() -> str:
    """Block (docs/sft.md): per model size, its parameters, where SFT stopped (validation solve rate,
    95 % bootstrap interval), and GRPO's validation solve rate at step 0 and at its last point.

    Raises:
        ValueError: a record's GRPO points are not read on the validation split.
    """
    records = {name: load_result(name) for name in MAZE_SIZES}
    if any(r["results"]["grpo"].get("eval_split") != "validation" for r in records.values()):
        raise ValueError("the model-size records are not validation runs")
    first = records["h100_maze_lever_t512x8_s0"]
    gpu = first["machine"]["gpus"][0].split(",")[0]
    rows = [
        f"`python -m benchmarks.gpu.curve_batch` (`benchmarks/gpu/curve_jobs/size_s0.json`, `size_lr_s0.json`), one {gpu}, "
        f"{first['date'][:10]}, commit `{(code_commit(first) or 'unknown')[:10]}`, three runs side by side in each of three "
        "device calls, seed 0: each model built in code and trained by full-parameter SFT from random weights until the "
        "validation target (0.45, at most 3,000 steps), then GRPO with the curve's settings (LoRA r32, lr 1e-4, groups of 8, "
        "8 mazes a step); validation solve rate, greedy, on the 200 validation mazes, value [95 % bootstrap interval]. "
        "The first row is the unchanged lever run above (seed 0's SFT model).",
        "",
        "| model | parameters | SFT stop (steps) | validation at SFT stop | GRPO step 0 | GRPO last point | steps reached |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, what in MAZE_SIZES.items():
        r = records[name]["results"]
        sft, g = r["sft"], r["grpo"]
        pts = g["points"]
        stop = f"{sft['stop_step']}" + ("" if sft.get("reached_target") else " (target not reached)")
        sft_val = _ci(sft["curve"][-1]["validation_solve"]) if sft.get("curve") else "–"
        reached = f"{pts[-1]['step']} of {g['steps']}" + ("" if g.get("done") else " (paused)")
        rows.append(
            f"| {what} | {r['model']['parameters']['total'] / 1e6:.1f} M | {stop} | {sft_val} | {_ci(pts[0]['validation'])} "
            f"| {_ci(pts[-1]['validation'])} | {reached} |"
        )
    rows += ["", "Records: " + ", ".join(f"`benchmarks/results/{name}.json`" for name in MAZE_SIZES) + "."]
    return "\n".join(rows)


#: ``maze_curve explore`` on the curve's two seeds (their SFT models and GRPO adapters at step 160).
MAZE_EXPLORE: tuple[str, ...] = ("maze_explore_s0", "maze_explore_s1")


def maze_explore() -> str:
    """Block (docs/sft.md): per seed, the SFT model and the GRPO adapter on the validation mazes, greedy
    against sampled (solve rates, pass@k, the share greedy fails and a sample solves), and GRPO less
    SFT paired by maze; 95 % bootstrap intervals.

    Raises:
        ValueError: a record lacks the GRPO adapter's row or reads another split.
    """
    records = [load_result(name) for name in MAZE_EXPLORE]
    if any(r["results"]["split"] != "validation" or "grpo_minus_sft" not in r["results"] for r in records):
        raise ValueError(f"{', '.join(MAZE_EXPLORE)} must read validation and hold both the SFT model and the GRPO adapter")
    first = records[0]
    r0 = first["results"]
    k = r0["samples"]
    rows = [
        f"`python -m benchmarks.gpu.maze_curve explore --state <seed's state> --out ...` on each seed's state from the GPU "
        f"curve above (SFT model; GRPO adapter at step {r0['grpo_steps']}), measured {_provenance(first)}: the "
        f"{r0['mazes']} validation mazes, one greedy episode and {k} sampled episodes a maze (temperature "
        f"{r0['temperature']:g}, up to {r0['max_turns']} turns, constrained answers: as GRPO samples its groups), value [95 % "
        "bootstrap interval over mazes].",
        "",
        f"| seed | model | greedy solve rate | sampled solve rate | pass@{k} | greedy fails, a sample solves |",
        "|---|---|---|---|---|---|",
    ]
    for r in records:
        x = r["results"]
        for name, label in (("sft", "SFT model"), ("grpo", f"GRPO adapter, step {x['grpo_steps']}")):
            pol = x["policies"][name]
            rows.append(
                f"| {r['params']['options']['seed']} | {label} | {_ci(pol['greedy_solve'])} | {_ci(pol['sampled_solve'])} | "
                f"{_ci(pol[f'pass_at_{k}'])} | {_ci(pol['greedy_fails_a_sample_solves'])} |"
            )
    rows += ["", "GRPO less SFT, paired by maze:", ""]
    for r in records:
        d = r["results"]["grpo_minus_sft"]
        rows.append(
            f"- seed {r['params']['options']['seed']}: greedy {_ci(d['greedy'], signed=True)}, sampled {_ci(d['sampled'], signed=True)}, "
            f"pass@{k} {_ci(d['pass'], signed=True)}"
        )
    rows += ["", "The GRPO runs' own training batches (their `metrics.jsonl`), mean of the first and of the last 20 steps:", ""]
    for r in records:
        b = r["results"]["grpo_training_batches"]
        first, last = b["first"], b["last"]
        rows.append(
            f"- seed {r['params']['options']['seed']}: policy entropy {first['entropy']:.3f} → {last['entropy']:.3f} nats a token; "
            f"sampled solve rate {first['sampled_solve']:.3f} → {last['sampled_solve']:.3f}; pass@{b['group_size']} {first['pass_at_group']:.3f} → "
            f"{last['pass_at_group']:.3f} (different mazes in each window)"
        )
    rows += ["", "Records: " + ", ".join(f"`benchmarks/results/{name}.json`" for name in MAZE_EXPLORE) + "."]
    return "\n".join(rows)


#: ``maze_curve run --grpo-train 200 --eval-split train`` from seed 0's SFT model, on this machine's CPU.
MAZE_DIAGNOSIS = "cpu_maze_diag_train200_s0"


def maze_diagnosis() -> str:
    """Block (docs/sft.md): GRPO on the first N train mazes alone, read greedily on those N at every
    point (95 % bootstrap intervals), with each window's sampled solve rate and pass@group on them.

    Raises:
        ValueError: the record is not a train-split diagnosis run.
    """
    res = load_result(MAZE_DIAGNOSIS)
    r, p = res["results"], res["params"]
    g = r["grpo"]
    if g.get("eval_split") != "train" or not p.get("grpo_train"):
        raise ValueError(f"{MAZE_DIAGNOSIS} is not a --grpo-train --eval-split train run")
    pts = g["points"]
    s = g["settings"]
    rows = [
        f"`python -m benchmarks.gpu.maze_curve run --seed {p['seed']} --engine hf --sft-from <seed {p['seed']}'s curve state> "
        f"--grpo-train {p['grpo_train']} --eval-split train`, measured {_provenance(res)}: GRPO from seed {p['seed']}'s SFT model "
        f"(revision `{r['sft']['revision']}`) with the curve's settings (LoRA r{s['lora']['rank']}, lr {s['grpo']['lr']:g}, groups of "
        f"{s['grpo']['group_size']}, {s['data']['prompts_per_step']} mazes a step) on the first {p['grpo_train']} train mazes alone, read "
        f"greedily on those same {p['grpo_train']} at every point, value [95 % bootstrap interval]; each window's sampled solve "
        "rate and pass@group are its own training batches'."
        + ("" if g.get("done") else f" Paused at step {pts[-1]['step']} of {g['steps']}."),
        "",
        f"| GRPO step | greedy solve rate on its {p['grpo_train']} train mazes | sampled solve rate, window | pass@{s['grpo']['group_size']}, window |",
        "|---|---|---|---|",
    ]
    for pt in pts:
        sampled = "–" if pt.get("sampled_solve") is None else f"{pt['sampled_solve']:.3f}"
        passed = "–" if pt.get("pass_at_group") is None else f"{pt['pass_at_group']:.3f}"
        rows.append(f"| {pt['step']} | {_ci(pt['train'])} | {sampled} | {passed} |")
    rows += ["", f"Record: `benchmarks/results/{MAZE_DIAGNOSIS}.json`."]
    return "\n".join(rows)


PASSAGES: dict[str, Passage] = {
    "quickstart-time": Passage("README.md", ("quickstart",), quickstart_time),
    "quickstart-eval": Passage("README.md", ("quickstart",), quickstart_eval),
    "quickstart-seeds": Passage("docs/sft.md", ("quickstart",), quickstart_seeds, block=True),
    "sft-sweep": Passage("docs/sft.md", ("sft_sweep",), sft_sweep, block=True),
    "sft-grpo-lr": Passage("docs/sft.md", ("sft_grpo_lr",), sft_grpo_lr),
    "sft-grpo-levers": Passage("docs/sft.md", ("sft_grpo_levers",), sft_grpo_levers, block=True),
    "sft-limits": Passage("docs/sft.md", (*_LIMITS, *_VIEW), sft_limits, block=True),
    "maze-curve": Passage("docs/sft.md", MAZE_CURVE, maze_curve, block=True),
    "maze-levers": Passage("docs/sft.md", tuple(MAZE_LEVERS), maze_levers, block=True),
    "maze-sizes": Passage("docs/sft.md", tuple(MAZE_SIZES), maze_sizes, block=True),
    "maze-explore": Passage("docs/sft.md", MAZE_EXPLORE, maze_explore, block=True),
    "maze-diagnosis": Passage("docs/sft.md", (MAZE_DIAGNOSIS,), maze_diagnosis, block=True),
    "readme-gpu": Passage("README.md", (*README_GPU_TRL.values(), README_GPU_MFU[0], VLLM_SIDES[0], *PINNED_SIDES), readme_gpu),
    "forward-rows": Passage("docs/reference-trainer.md", ("quickstart",), forward_rows),
    "env-throughput": Passage("docs/maze-task.md", ("env_throughput",), env_throughput, block=True),
    "ui-nav-throughput": Passage("docs/ui-nav-task.md", ("ui_nav_env_throughput",), ui_nav_throughput, block=True),
    "ui-nav-learning": Passage("docs/ui-nav-task.md", ("ui_nav_learning",), ui_nav_learning, block=True),
    "serve-load": Passage("docs/serving.md", ("serve_load",), serve_load, block=True),
    "serve-per-request": Passage("docs/serving.md", ("serve_load",), serve_per_request),
    "metrics-latency": Passage("docs/widgets.md", ("metrics_latency",), metrics_latency),
    "lr-sweep": Passage("docs/reference-trainer.md", ("lr_sweep",), lr_sweep, block=True),
    "prompt-style": Passage("docs/reference-trainer.md", ("prompt_style",), prompt_style),
    "prompt-style-maze": Passage("docs/maze-task.md", ("prompt_style",), prompt_style),
    "doc-read-throughput": Passage("docs/doc-read-task.md", ("doc_read_throughput",), doc_read_throughput, block=True),
    "doc-read-learning": Passage("docs/doc-read-task.md", ("doc_read_learning",), doc_read_learning),
    "planner-calibration": Passage("docs/planner.md", ("planner_calibration",), planner_calibration),
    "planner-single-gpu": Passage("docs/planner.md", ("h200_1gpu",), _report("single_gpu_table"), block=True),
    "planner-logprob": Passage("docs/planner.md", ("h200_logprob_check",), _report("logprob_check")),
    "planner-tuning": Passage("docs/planner.md", ("h200_1gpu_fsdp_tuning",), _report("tuning_table"), block=True),
    "planner-errors": Passage("docs/planner.md", (*_H200, "planner_calibration"), _report("error_summary"), block=True),
    "planner-fit": Passage("docs/planner.md", _H200, _report("prediction_table", "fit"), block=True),
    "planner-held-out": Passage("docs/planner.md", _H200, _report("prediction_table", "held out"), block=True),
    "scaling-run1": Passage("docs/scaling.md", _H200, _report("scaling_table", "h200_2gpu_fsdp.json"), block=True),
    "scaling-run2": Passage("docs/scaling.md", _H200, _report("scaling_table", "h200_2gpu_fsdp_run2.json"), block=True),
    "scaling-curve": Passage("docs/scaling.md", ("planner_predictions",), _report("predicted_curve"), block=True),
    "planner-held-out-memory": Passage("docs/planner.md", _H200, _report("held_out_memory_evidence")),
    "planner-held-out-misses": Passage("docs/planner.md", _H200, _report("held_out_misses")),
    "planner-second-machine": Passage("docs/planner.md", ("h200_2gpu_fsdp", "h200_2gpu_fsdp_run2"), _report("second_machine_comparison")),
    "scaling-second-machine": Passage("docs/scaling.md", ("h200_2gpu_fsdp", "h200_2gpu_fsdp_run2"), _report("second_machine_comparison")),
    "scaling-comm-exposed": Passage("docs/scaling.md", ("planner_calibration",), comm_exposed),
    "scaling-accuracy": Passage("docs/scaling.md", _H200, scaling_accuracy),
    "planner-fit-scope": Passage("docs/planner.md", (*_H200, "planner_calibration"), planner_fit_scope),
    "planner-cli-fits": Passage("docs/planner.md", ("plan_cli",), _plan_cli("fits", tables=True), block=True),
    "planner-cli-blocked": Passage("docs/planner.md", ("plan_cli",), _plan_cli("blocked", tables=False), block=True),
    "planner-cli-own-gpu": Passage("docs/planner.md", ("plan_cli",), _plan_cli("own-gpu", tables=False), block=True),
    "planner-cli-a10g": Passage("docs/planner.md", ("plan_cli",), _plan_cli("a10g", tables=False), block=True),
    "gpu-e2e": Passage("docs/gpu.md", _E2E, gpu_e2e, block=True),
    "gpu-skyrl": Passage("docs/gpu.md", SKYRL_E2E, gpu_skyrl, block=True),
    "gpu-skyrl-summary": Passage("docs/gpu.md", SKYRL_E2E, skyrl_summary),
    "gpu-skyrl-reference": Passage("docs/gpu.md", (*SKYRL_E2E, SKYRL_REFERENCE), gpu_skyrl_reference, block=True),
    "readme-skyrl": Passage("README.md", SKYRL_E2E, skyrl_summary),
    "container-skyrl": Passage("docs/container.md", SKYRL_E2E, skyrl_summary),
    "gpu-vllm-sides": Passage("docs/gpu.md", VLLM_SIDES, gpu_vllm_sides, block=True),
    "gpu-pinned-sides": Passage("docs/gpu.md", PINNED_SIDES, gpu_pinned_sides, block=True),
    "gpu-pinned-verdict": Passage("docs/gpu.md", PINNED_SIDES, gpu_pinned_verdict),
    "gpu-vllm-verdict": Passage("docs/gpu.md", VLLM_SIDES, gpu_vllm_verdict),
    "gpu-vllm-levers": Passage("docs/gpu.md", (VLLM_LEVERS,), gpu_vllm_levers, block=True),
    "gpu-trl": Passage("docs/gpu.md", _E2E_TRL, gpu_trl, block=True),
    "gpu-trl-verdict": Passage("docs/gpu.md", tuple(README_GPU_TRL.values()), gpu_trl_verdict),
    "gpu-decode": Passage("docs/gpu.md", _DECODE, gpu_decode, block=True),
    "gpu-levers": Passage("docs/gpu.md", ("h200_update_levers",), gpu_levers, block=True),
    "gpu-ckpt": Passage("docs/gpu.md", ("h200_update_ckpt",), gpu_ckpt, block=True),
    "gpu-ckpt-verdict": Passage("docs/gpu.md", (README_GPU_MFU[0],), gpu_ckpt_verdict),
    "gpu-e2e-knobs": Passage(
        "docs/gpu.md",
        ("h200_grpo_e2e_decode_2b", "h200_grpo_e2e_sac_2b", "h200_grpo_e2e_decode_8b", "h200_grpo_e2e_sac_8b"),
        gpu_e2e_sac,
        block=True,
    ),
    "planner-decode-held-out": Passage("docs/planner.md", tuple(f.removesuffix(".json") for f in decode_fit.FILES), decode_fit_held_out),
    "gpu-decode-fit": Passage("docs/gpu.md", tuple(f.removesuffix(".json") for f in decode_fit.FILES), gpu_decode_fit, block=True),
    "gpu-compile-layers": Passage("docs/gpu.md", ("h200_grpo_e2e_levers_8b", "h200_grpo_e2e_decode_8b"), gpu_compile_layers),
}


def _pattern(name: str) -> re.Pattern[str]:
    return re.compile(rf"<!-- fig:{re.escape(name)} -->(.*?)<!-- /fig:{re.escape(name)} -->", re.S)


def render(name: str) -> str:
    """The text between the markers of passage ``name``, as its result files say it."""
    p = PASSAGES[name]
    text = p.render()
    return f"\n{text}\n" if p.block else text


def update(names: list[str] | None = None) -> list[str]:
    """Rewrite the passages ``names`` (default: all) in their documents; return the documents changed.

    Raises:
        KeyError: a document lacks a passage's markers.
    """
    changed = []
    for name in names or list(PASSAGES):
        missing = [r for r in PASSAGES[name].results if not (results_dir() / f"{r}.json").is_file()]
        if missing:
            print(f"skipped passage {name}: no result file {', '.join(missing)} yet", file=sys.stderr)
            continue
        path = REPO / PASSAGES[name].doc
        text = path.read_text()
        pattern = _pattern(name)
        if not pattern.search(text):
            raise KeyError(f"{PASSAGES[name].doc} has no <!-- fig:{name} --> ... <!-- /fig:{name} --> passage")
        new = pattern.sub(lambda _m, n=name: f"<!-- fig:{n} -->{render(n)}<!-- /fig:{n} -->", text)
        if new != text:
            path.write_text(new)
            changed.append(PASSAGES[name].doc)
    return sorted(set(changed))


def check(names: list[str] | None = None) -> list[str]:
    """Problems: passages missing from their document, or saying something else than their results."""
    problems = []
    for name in names or list(PASSAGES):
        doc = PASSAGES[name].doc
        missing = [r for r in PASSAGES[name].results if not (results_dir() / f"{r}.json").is_file()]
        if missing:
            problems.append(f"{doc}: passage {name!r} quotes {', '.join(missing)}, which has no result file in {results_dir()}")
            continue
        found = _pattern(name).findall((REPO / doc).read_text())
        if len(found) != 1:
            problems.append(f"{doc}: {len(found)} <!-- fig:{name} --> passages (expected 1)")
        elif found[0] != render(name):
            problems.append(f"{doc}: passage {name!r} differs from its result files; run python -m benchmarks.figures")
    return problems


# ---------------------------------------------------------------- figures outside rendered passages
#: Units of measure whose figures must come from a result file: time, bytes, rates, FLOP rates, power,
#: percentages, and ratios written ``1.87×`` / ``3.4x`` (a ``×`` or ``x`` followed by another number,
#: ``16 x 807`` or ``320 × 224``, is a shape, not a ratio). Model sizes (``8B``), pixels and token counts are not units here.
_UNIT = r"(?<=\d)[×x]|(?:%|ns|µs|us|ms|s|sec|min|minutes|h|hours|KB|KiB|MB|MiB|GB|GiB|TB|TiB|TFLOP/s|TFLOPS|PFLOPS|W|GHz|[A-Za-z]+/s)"
FIGURE = re.compile(rf"(?<![\w.@/#-])(?P<num>[+±−-]?\d+(?:[.,]\d+)*)(?:\s?(?P<unit>{_UNIT}))(?![\w/])(?!\s*\d)")
#: ``<!-- quoted: SOURCE -->...<!-- /quoted -->``: figures quoted from elsewhere. SOURCE is a URL, a repository
#: path that exists (optionally ``#anchor`` or `` §N``), or a named outside source (``NVIDIA H200 datasheet``).
QUOTED = re.compile(r"<!-- quoted: (?P<source>[^>]*?) -->(?P<body>.*?)<!-- /quoted -->", re.S)
#: ``<!-- measured: benchmarks/results/A.json[, ...] -->...<!-- /measured -->``: figures typed by hand from
#: committed results; each must equal, at its printed precision, a number in those files (or a ratio of two, for × / x).
MEASURED = re.compile(r"<!-- measured: (?P<source>[^>]*?) -->(?P<body>.*?)<!-- /measured -->", re.S)
#: A confidence level (``95 % bootstrap interval``) names a method, not a measurement.
_CONFIDENCE_LEVEL = re.compile(r"95\s?%[\s-]+(?:paired[\s-]+|percentile[\s-]+)*(?:bootstrap|confidence|interval)")
_FIG_PASSAGE = re.compile(r"<!-- fig:([\w.-]+) -->.*?<!-- /fig:\1 -->", re.S)
_CODE = re.compile(r"```.*?```|`[^`\n]*`", re.S)
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_LINK_TARGET = re.compile(r"\]\([^)]*\)")


def _blank(text: str, pattern: re.Pattern[str]) -> str:
    """``text`` with every match of ``pattern`` blanked to spaces, newlines kept (offsets and line numbers stay)."""
    return pattern.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def _figures(text: str) -> list[tuple[int, str, str, str]]:
    """``(line, figure, number, unit)`` of every figure in ``text`` outside code, comments and link targets."""
    text = _blank(_blank(_blank(text, _CODE), _COMMENT), _LINK_TARGET)
    return [
        (text.count("\n", 0, m.start()) + 1, m.group(0), m.group("num"), m.group("unit"))
        for m in FIGURE.finditer(text)
        if not _CONFIDENCE_LEVEL.match(text, m.start())
    ]


def _leaves(obj: Any, key: str = "") -> list[tuple[str, float]]:
    """``(key, value)`` of every number in a JSON value (numeric strings included; booleans not)."""
    if isinstance(obj, bool):
        return []
    if isinstance(obj, int | float):
        return [(key, float(obj))]
    if isinstance(obj, str):
        try:
            return [(key, float(obj))]
        except ValueError:
            return []
    if isinstance(obj, dict):
        return [x for k, v in obj.items() for x in _leaves(v, str(k))]
    if isinstance(obj, list):
        return [x for v in obj for x in _leaves(v, key)]
    return []


def _matches(number: str, unit: str, leaves: list[tuple[str, float]]) -> bool:
    """True when ``number`` (as printed, with ``unit``) is a value of ``leaves`` rounded at its precision, or a ratio
    (× / x) or a difference (absolute, or relative for %) of two values under the same key (like with like)."""
    import bisect
    from collections import defaultdict

    digits = number.lstrip("+±−-").replace(",", "")
    decimals = len(digits.split(".")[1]) if "." in digits else 0
    target, half = float(digits), 0.5 * 10.0**-decimals + 1e-9
    scales = (1.0, 100.0) if unit == "%" else (1.0, 1e3, 1e-3)
    if unit not in ("×", "x") and any(abs(abs(v) * k - target) <= half for _, v in leaves for k in scales):
        return True
    by_key: dict[str, set[float]] = defaultdict(set)
    for key, v in leaves:
        if v:
            by_key[key].add(abs(v))
    for values in by_key.values():
        mags = sorted(values)
        for a in mags:
            if unit in ("×", "x"):
                candidates = [(a / target, a / target - a / (target + half))]
            elif unit == "%":
                candidates = [(a * (1 + s * target / 100), a * half / 100) for s in (1, -1)]
            else:
                candidates = [(a + s * target / k, half / k) for s in (1, -1) for k in scales]
            for b, tol in candidates:
                i = bisect.bisect_left(mags, b - abs(tol))
                if i < len(mags) and mags[i] <= b + abs(tol) and mags[i] != a:
                    return True
    return False


def _source_problem(source: str) -> str | None:
    source = source.strip()
    if not source:
        return "names no source"
    if "://" in source:
        return None
    head = re.split(r"[\s#§:]", source, maxsplit=1)[0].rstrip(",;")
    if "/" in head or head.endswith((".py", ".md", ".json", ".toml", ".yaml")):
        return None if (REPO / head).exists() else f"names {head}, which is not a file of this repository"
    return None if re.search(r"[A-Za-z]{3,}", source) else "names no source"


def unrendered(doc: str, text: str | None = None) -> list[str]:
    """Problems of ``doc`` (repo-relative; ``text`` in place of its file, for tests): a figure (:data:`FIGURE`) outside
    a rendered, measured or quoted passage, a ``measured`` figure its result files do not hold, or a ``quoted``
    passage without a real source. One line each, ``doc:line: ...``, saying what to do.

    A ``measured`` figure passes when its result files hold it as a value, a ratio of two values (``×``/``x``)
    or a difference of two (``+13 GiB``, ``+3.7 %``) at its printed precision: a check that it comes from
    those files, weaker than a rendered passage, which is the way for any figure that will change.
    """
    text = _blank((REPO / doc).read_text() if text is None else text, _CODE)  # a marker shown as code is no marker
    problems = []
    for m in QUOTED.finditer(text):
        if why := _source_problem(m.group("source")):
            problems.append(f"{doc}:{text.count(chr(10), 0, m.start()) + 1}: <!-- quoted: {m.group('source')} --> {why}")
    for m in MEASURED.finditer(text):
        line0 = text.count("\n", 0, m.start())
        files = [f.strip() for f in m.group("source").split(",") if f.strip()]
        missing = [f for f in files if not re.fullmatch(r"benchmarks/results/[\w.-]+\.json", f) or not (REPO / f).is_file()]
        if not files or missing:
            problems.append(f"{doc}:{line0 + 1}: <!-- measured: {m.group('source')} --> must name committed result files ({missing})")
            continue
        leaves = [x for f in files for x in _leaves(json.loads((REPO / f).read_text()))]
        for line, fig, number, unit in _figures(m.group("body")):
            if not _matches(number, unit, leaves):
                problems.append(f"{doc}:{line0 + line}: {fig!r} is not a number of {', '.join(files)} at that precision")
    rest = _blank(_blank(_blank(text, _FIG_PASSAGE), QUOTED), MEASURED)
    for line, fig, _, _ in _figures(rest):
        problems.append(
            f"{doc}:{line}: {fig!r} is typed by hand: render it from a result (benchmarks/figures.py PASSAGES), or mark it "
            "<!-- measured: benchmarks/results/NAME.json -->...<!-- /measured --> or <!-- quoted: SOURCE -->...<!-- /quoted -->"
        )
    return problems


def documents() -> list[str]:
    """README.md and every page of docs/ (repo-relative): the documents whose figures are checked."""
    return ["README.md", *(str(p.relative_to(REPO)) for p in sorted((REPO / "docs").glob("*.md")))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check; exit 1 if a document is stale")
    parser.add_argument("names", nargs="*", help=f"passages (default: all of {', '.join(PASSAGES)})")
    args = parser.parse_args()
    if args.check:
        problems = check(args.names or None) + ([] if args.names else [p for doc in documents() for p in unrendered(doc)])
        print("\n".join(problems) or "every passage matches its result files")
        return 1 if problems else 0
    for doc in update(args.names or None):
        print(f"updated {doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
