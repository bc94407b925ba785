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
from hyperpod_rl.plan.benchmark import load_records


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
