"""Markdown tables of the committed H200 results, as docs/planner.md and docs/scaling.md show them.

Reads only committed files: the measurements (``h200_*.json``) and the planner's predictions
(``planner_predictions.json``, written by ``python -m benchmarks.gpu.repredict``). The docs quote
these tables verbatim; ``tests/test_results_data.py`` checks that they still do.

    python -m benchmarks.gpu.report
"""

from __future__ import annotations

import json
from typing import Any

from benchmarks._record import RESULTS_DIR as RESULTS
from benchmarks.gpu.repredict import STRONG_W1
from hyperpod_rl.plan.benchmark import bench_plan_input, load_records


def single_gpu_table() -> str:
    rows = [
        "| config | tokens | ckpt | naive tok/s | chunked tok/s | improved tok/s | speed-up | naive peak GiB | chunked peak | improved peak | peak cut | MFU (improved) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in load_records(RESULTS / "h200_1gpu.json"):
        c, v = r["config"], r["variants"]
        rows.append(
            f"| {c['batch']} x {c['seq_len']} ({c['image_px']} px, {c['image_tokens']} img tok) | {c['batch'] * c['seq_len']:,} | {'on' if c['gradient_checkpointing'] else 'off'} "
            f"| {v['naive']['tokens_per_s']:,.0f} | {v['chunked']['tokens_per_s']:,.0f} | {v['improved']['tokens_per_s']:,.0f} | {r['tokens_per_s'] / r['baseline_tokens_per_s']:.2f}x "
            f"| {v['naive']['peak_gib']:.1f} | {v['chunked']['peak_gib']:.1f} | {v['improved']['peak_gib']:.1f} | {1 - r['measured_peak_gib'] / r['baseline_peak_gib']:.0%} | {r['mfu']:.1%} |"
        )
    return "\n".join(rows)


def _predictions() -> dict[str, Any]:
    return json.loads((RESULTS / "planner_predictions.json").read_text())["results"]


def prediction_rows() -> list[dict[str, Any]]:
    """Measured vs predicted for every variant of every H200 record, with its set (fit / held out)."""
    pred = _predictions()
    by_key = {(p["file"], p["config"], p["variant"]): p for p in pred["points"]}
    rows = []
    for name in pred["fit_files"] + pred["held_out_files"]:
        for r in load_records(RESULTS / name):
            held = name in pred["held_out_files"] or r["config"]["name"] in pred.get("held_out_configs", {}).get(name, [])
            for variant, res in r["variants"].items():
                if res.get("status") != "ok":
                    continue
                p = by_key[(name, r["config"]["name"], variant)]
                rows.append(
                    {
                        "set": "held out" if held else "fit",
                        "file": name,
                        "model": bench_plan_input(r["config"], gpus=r["gpus"], variant=variant).shape().name,
                        "config": r["config"]["name"],
                        "gpus": r["gpus"],
                        "variant": variant,
                        "peak_gib": res["peak_gib"],
                        "predicted_peak_gib": p["peak_gib"],
                        "tokens_per_s": res["tokens_per_s"],
                        "predicted_tokens_per_s": p["tokens_per_s_per_gpu"],
                    }
                )
    return rows


def prediction_table(which: str) -> str:
    """Markdown table of :func:`prediction_rows` of one set (``"fit"`` or ``"held out"``)."""
    rows = [
        "| file | config | GPUs | variant | measured peak GiB | predicted GiB | error | measured tok/s/GPU | predicted | error |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in prediction_rows():
        if r["set"] != which:
            continue
        pk, tps = r["predicted_peak_gib"], r["predicted_tokens_per_s"]
        rows.append(
            f"| {r['file']} | {r['config']} | {r['gpus']} | {r['variant']} | {r['peak_gib']:.2f} | {pk:.2f} | {pk / r['peak_gib'] - 1:+.1%} "
            f"| {r['tokens_per_s']:,.0f} | {tps:,.0f} | {tps / r['tokens_per_s'] - 1:+.1%} |"
        )
    return "\n".join(rows)


def error_summary() -> str:
    """One line per set: points, max and mean |error| of peak memory and tokens/s."""
    lines = []
    for which in ("fit", "held out"):
        rows = [r for r in prediction_rows() if r["set"] == which]
        mem = [abs(r["predicted_peak_gib"] / r["peak_gib"] - 1) for r in rows]
        tps = [abs(r["predicted_tokens_per_s"] / r["tokens_per_s"] - 1) for r in rows]
        lines.append(f"| {which} | {len(rows)} | {max(mem):.1%} | {sum(mem) / len(mem):.1%} | {max(tps):.1%} | {sum(tps) / len(tps):.1%} |")
    head = "| set | points | peak: max abs error | peak: mean abs error | tok/s: max abs error | tok/s: mean abs error |\n|---|---|---|---|---|---|"
    return head + "\n" + "\n".join(lines)


#: The planner's held-out bar for tokens/s (``tests/plan/test_plan_against_h200.py``): +-20 %.
TOKENS_PER_S_BAR = 0.20
_WORDS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six"}


def _shape(model: str) -> str:
    return model.removeprefix("Qwen/Qwen3-VL-").removesuffix("-Instruct")


def fit_shapes() -> list[str]:
    """Model shapes of the fitted points, smallest first (``["2B", "4B", "8B"]``)."""
    shapes = {_shape(r["model"]) for r in prediction_rows() if r["set"] == "fit"}
    return sorted(shapes, key=lambda s: float(s.removesuffix("B")))


def held_out_memory_evidence() -> str:
    """Inline: the held-out points whose (shape, config, GPUs, variant) the fit never saw, and their largest peak error.

    Peak memory is deterministic, so only those points are new evidence (the same selection as the
    test ``test_held_out_peak_memory_within_15_percent``).
    """
    rows = prediction_rows()
    fitted = {(r["model"], r["config"], r["gpus"], r["variant"]) for r in rows if r["set"] == "fit"}
    new = [r for r in rows if r["set"] == "held out" and (r["model"], r["config"], r["gpus"], r["variant"]) not in fitted]
    worst = max(new, key=lambda r: abs(r["predicted_peak_gib"] / r["peak_gib"] - 1))
    err = worst["predicted_peak_gib"] / worst["peak_gib"] - 1
    files = sorted({r["file"] for r in new})
    groups = "; ".join(f"`{f}`: {', '.join(sorted({r['config'] for r in new if r['file'] == f}))}" for f in files)
    return (
        f"{len(new)} points ({groups}), all within {abs(err):.1%} "
        f"(largest: {_shape(worst['model'])} {worst['config']} {worst['variant']}, {err:+.1%})"
    )


def held_out_misses() -> str:
    """Inline headline: how many held-out points miss the tokens/s bar, of how many, then each miss with its error."""
    held = [r for r in prediction_rows() if r["set"] == "held out"]
    miss = [r for r in held if abs(r["predicted_tokens_per_s"] / r["tokens_per_s"] - 1) > TOKENS_PER_S_BAR]
    parts = [
        f"{_shape(r['model'])} {r['config']} {r['variant']} on {r['gpus']} GPU{'s' if r['gpus'] > 1 else ''} (`{r['file']}`): "
        f"{r['predicted_tokens_per_s'] / r['tokens_per_s'] - 1:+.1%}"
        for r in miss
    ]
    return (
        f"{_WORDS.get(len(miss), str(len(miss)))} of the {len(held)} held-out points miss ±{TOKENS_PER_S_BAR:.0%} "
        f"({len(held) - len(miss)} are within it): " + "; ".join(parts)
    )


def second_machine_comparison(first: str = "h200_2gpu_fsdp.json", second: str = "h200_2gpu_fsdp_run2.json") -> str:
    """Inline: how the second 2-GPU machine's tokens/s and NCCL all-gather time compare with the first's, same configs."""
    one = {r["config"]["name"]: r for r in load_records(RESULTS / first)}
    ratios, gathers = [], []
    for r2 in load_records(RESULTS / second):
        r1 = one.get(r2["config"]["name"])
        if r1 is None:
            continue
        for variant, v2 in r2["variants"].items():
            v1 = r1["variants"].get(variant)
            if not v1 or v1.get("status") != "ok" or v2.get("status") != "ok":
                continue
            ratios.append(v2["tokens_per_s"] / v1["tokens_per_s"] - 1)
            ag = [sum(op["s"] for op in v.get("top_device_ops", []) if op["name"].startswith("ncclDevKernel_AllGather")) for v in (v1, v2)]
            if all(ag):
                gathers.append(ag[1] / ag[0])
    lo, hi = min(ratios), max(ratios)
    span = f"from {-lo:.1%} lower to {hi:.1%} higher" if hi > 0 else f"{-hi:.1%} to {-lo:.1%} lower"
    return (
        f"its tokens/s on the {len(ratios)} (config, variant) points both machines ran were {span} than the first's, "
        f"and its NCCL all-gather kernels took up to {max(gathers):.1f}x as long"
    )


def scaling_table(name: str = "h200_2gpu_fsdp.json") -> str:
    """1 -> 2 GPU efficiency of one 2-GPU run, measured and predicted."""
    one = {r["config"]["name"]: r for r in load_records(RESULTS / "h200_1gpu_fsdp.json")}
    predicted = {(p["file"], p["config"]): p["efficiency"] for p in _predictions()["scaling"]}
    rows = [
        "| kind | per-GPU micro batch (1 GPU -> 2 GPUs) | 1 GPU tok/s | 2 GPUs tok/s (total) | tok/s per GPU | efficiency | predicted efficiency | peak GiB/GPU 1 -> 2 | all-gather + reduce-scatter share (2 GPUs) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r2 in load_records(RESULTS / name):
        c = r2["config"]
        if r2["scaling"] == "weak":
            r1 = one[c["name"]]
            label = f"{c['batch']} x {c['seq_len']} -> {c['batch']} x {c['seq_len']}"
        else:
            f1, n1 = STRONG_W1[c["name"]]
            r1 = {r["config"]["name"]: r for r in load_records(RESULTS / f1)}[n1]
            label = f"{r1['config']['batch']} x {c['seq_len']} -> {c['batch']} x {c['seq_len']}"
        total2 = 2 * r2["tokens_per_s"]
        eff = total2 / (2 * r1["tokens_per_s"])
        rows.append(
            f"| {r2['scaling']} | {label} ({'ckpt' if c['gradient_checkpointing'] else 'no ckpt'}) | {r1['tokens_per_s']:,.0f} | {total2:,.0f} | {r2['tokens_per_s']:,.0f} "
            f"| {eff:.1%} | {predicted[(name, c['name'])]:.1%} | {r1['measured_peak_gib']:.1f} -> {r2['measured_peak_gib']:.1f} | {r2['comm_share']:.1%} (AG {r2['allgather_s']:.3f} s, RS {r2['reducescatter_s']:.3f} s of {r2['profiled_step_s']:.3f} s) |"
        )
    return "\n".join(rows)


def predicted_curve() -> str:
    """The planner's 1/2/4/8-GPU weak and strong scaling of the reference batch."""
    curve = _predictions()["curve"]
    rows = [
        "| GPUs | weak: tok/s (per GPU, efficiency) | strong (global 16 x 807): tok/s (per GPU, efficiency) | measured? |",
        "|---|---|---|---|",
    ]
    for w, s in zip(curve["weak"], curve["strong"], strict=True):
        rows.append(
            f"| {w['gpus']} | {w['tokens_per_s']:,.0f} ({w['tokens_per_s_per_gpu']:,.0f}, {w['efficiency']:.0%}) | {s['tokens_per_s']:,.0f} ({s['tokens_per_s_per_gpu']:,.0f}, {s['efficiency']:.0%}) | {'yes' if w['gpus'] <= 2 else 'no: kind not lent'} |"
        )
    return "\n".join(rows)


def tuning_table() -> str:
    """FSDP2 wrapping options on one GPU (``h200_1gpu_fsdp_tuning.json``)."""
    rows = [
        "| config | FSDP2, vision per block (as above) | FSDP2, vision as one unit | + `reshard_after_forward=False` | plain peft, adapters stored in bf16 (diagnostic) |",
        "|---|---|---|---|---|",
    ]
    for r in load_records(RESULTS / "h200_1gpu_fsdp_tuning.json"):
        c, v = r["config"], r["variants"]
        cells = [
            f"{v[k]['tokens_per_s']:,.0f} tok/s, {v[k]['peak_gib']:.1f} GiB"
            for k in ("fsdp_per_block", "fsdp_vision_one_unit", "fsdp_vision_one_unit_no_reshard", "plain_bf16")
        ]
        rows.append(
            f"| {c['batch']} x {c['seq_len']} ({'ckpt' if c['gradient_checkpointing'] else 'no ckpt'}) | " + " | ".join(cells) + " |"
        )
    return "\n".join(rows)


def logprob_check() -> str:
    """The chunked vs naive log-prob agreement on the 8B-shaped model (``h200_logprob_check.json``)."""
    (r,) = load_records(RESULTS / "h200_logprob_check.json")
    c = r["config"]
    return (
        f"Agreement (`h200_logprob_check.json`, {c['batch']} x {c['seq_len']}, {r['response_tokens_checked']:,} response tokens, on the "
        f"8B-shaped model with non-zero adapters): chunked vs naive log-probs relative error {r['rel_err_chunked_vs_naive']:.1e} "
        f"(max abs {r['max_abs_diff_chunked_vs_naive']:.1e}); against a float64 output head {r['rel_err_chunked_vs_fp64']:.1e} (chunked) "
        f"and {r['rel_err_naive_vs_fp64']:.1e} (naive); LoRA gradients of the two paths agree to {r['lora_grad_rel_err_chunked_vs_naive']:.1%} relative"
    )


TABLES = {
    "log-prob agreement": logprob_check,
    "FSDP2 options": tuning_table,
    "single GPU": single_gpu_table,
    "predictions, fitted runs": lambda: prediction_table("fit"),
    "predictions, held-out runs": lambda: prediction_table("held out"),
    "prediction error by set": error_summary,
    "scaling": scaling_table,
    "scaling, second machine": lambda: scaling_table("h200_2gpu_fsdp_run2.json"),
    "predicted curve": predicted_curve,
}


if __name__ == "__main__":
    for title, table in TABLES.items():
        print(f"### {title}\n\n{table()}\n")
