"""Markdown tables of the committed results (pasted into docs/planner.md and docs/scaling.md).

python -m benchmarks.gpu.report
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.gpu.repredict import predicted_tokens_per_s
from hyperpod_rl.plan import predict_scaling
from hyperpod_rl.plan.benchmark import bench_plan_input, load_records

RESULTS = Path(__file__).resolve().parents[1] / "results"


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


def prediction_table() -> str:
    rows = [
        "| file | config | GPUs | variant | measured peak GiB | predicted GiB | error | measured tok/s/GPU | predicted | error |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in ("h200_1gpu.json", "h200_1gpu_fsdp.json", "h200_2gpu_fsdp.json", "h200_2gpu_fsdp_run2.json"):
        for r in load_records(RESULTS / name):
            for variant, res in r["variants"].items():
                inp = bench_plan_input(r["config"], gpus=r["gpus"], variant=variant)
                from hyperpod_rl.plan import policy_update_memory

                pk = policy_update_memory(inp).peak_gib
                tps = predicted_tokens_per_s(r["config"], gpus=r["gpus"], variant=variant)
                rows.append(
                    f"| {name} | {r['config']['name']} | {r['gpus']} | {variant} | {res['peak_gib']:.2f} | {pk:.2f} | {pk / res['peak_gib'] - 1:+.1%} "
                    f"| {res['tokens_per_s']:,.0f} | {tps:,.0f} | {tps / res['tokens_per_s'] - 1:+.1%} |"
                )
    return "\n".join(rows)


STRONG_W1 = {
    "b8_s807_img448_ckpt": ("h200_1gpu_fsdp.json", "b16_s807_img448_ckpt"),
    "b16_s551_img448_ckpt": ("h200_1gpu.json", "b32_s551_img448_ckpt"),
}


def scaling_table(name: str = "h200_2gpu_fsdp.json") -> str:
    one = {r["config"]["name"]: r for r in load_records(RESULTS / "h200_1gpu_fsdp.json")}
    rows = [
        "| kind | per-GPU micro batch (1 GPU -> 2 GPUs) | 1 GPU tok/s | 2 GPUs tok/s (total) | tok/s per GPU | efficiency | predicted efficiency | peak GiB/GPU 1 -> 2 | all-gather + reduce-scatter share (2 GPUs) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r2 in load_records(RESULTS / name):
        c = r2["config"]
        if r2["scaling"] == "weak":
            r1 = one[c["name"]]
            inp = bench_plan_input(c, gpus=1, variant="improved")
            pred = predict_scaling(inp, [1, 2], mode="weak")[1].efficiency
            label = f"{c['batch']} x {c['seq_len']} -> {c['batch']} x {c['seq_len']}"
        else:
            f1, n1 = STRONG_W1[c["name"]]
            r1 = {r["config"]["name"]: r for r in load_records(RESULTS / f1)}[n1]
            inp = bench_plan_input(r1["config"], gpus=1, variant="improved")
            pred = predict_scaling(inp, [1, 2], mode="strong")[1].efficiency
            label = f"{r1['config']['batch']} x {c['seq_len']} -> {c['batch']} x {c['seq_len']}"
        total2 = 2 * r2["tokens_per_s"]
        eff = total2 / (2 * r1["tokens_per_s"])
        rows.append(
            f"| {r2['scaling']} | {label} ({'ckpt' if c['gradient_checkpointing'] else 'no ckpt'}) | {r1['tokens_per_s']:,.0f} | {total2:,.0f} | {r2['tokens_per_s']:,.0f} "
            f"| {eff:.1%} | {pred:.1%} | {r1['measured_peak_gib']:.1f} -> {r2['measured_peak_gib']:.1f} | {r2['comm_share']:.1%} (AG {r2['allgather_s']:.3f} s, RS {r2['reducescatter_s']:.3f} s of {r2['profiled_step_s']:.3f} s) |"
        )
    return "\n".join(rows)


def predicted_curve() -> str:
    inp = bench_plan_input(load_records(RESULTS / "h200_1gpu_fsdp.json")[1]["config"], gpus=1, variant="improved")
    rows = [
        "| GPUs | weak: tok/s (per GPU, efficiency) | strong (global 16 x 807): tok/s (per GPU, efficiency) | measured? |",
        "|---|---|---|---|",
    ]
    for w, s in zip(predict_scaling(inp, [1, 2, 4, 8], mode="weak"), predict_scaling(inp, [1, 2, 4, 8], mode="strong"), strict=True):
        rows.append(
            f"| {w.gpus} | {w.tokens_per_s:,.0f} ({w.tokens_per_s_per_gpu:,.0f}, {w.efficiency:.0%}) | {s.tokens_per_s:,.0f} ({s.tokens_per_s_per_gpu:,.0f}, {s.efficiency:.0%}) | {'yes' if w.gpus <= 2 else 'no: kind not lent'} |"
        )
    return "\n".join(rows)


if __name__ == "__main__":
    for title, table in (
        ("single GPU", single_gpu_table()),
        ("predictions", prediction_table()),
        ("scaling", scaling_table()),
        ("scaling, second machine", scaling_table("h200_2gpu_fsdp_run2.json")),
        ("predicted curve", predicted_curve()),
    ):
        print(f"### {title}\n\n{table}\n")
