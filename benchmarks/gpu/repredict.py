"""The planner's predictions for every H200 measurement, in their own file.

Writes ``benchmarks/results/planner_predictions.json`` (never the measurement files): for every
variant of every record of the H200 runs, the predicted peak GiB and tokens/s per GPU; for every
2-GPU record, the predicted 1 -> 2 GPU scaling efficiency; and the predicted 1/2/4/8-GPU curve of
the reference batch (16 x 807). Run it after every calibration change (``tests/test_results_data.py``
fails while the file is stale); ``python -m benchmarks.gpu.report`` turns it into the docs' tables.

    python -m benchmarks.gpu.repredict
"""

from __future__ import annotations

from typing import Any

from benchmarks._record import RESULTS_DIR, Recording
from benchmarks.gpu.calibrate import FIT_FILES, HELD_OUT_CONFIGS, HELD_OUT_FILES, planner_constants
from hyperpod_rl.plan import policy_update_memory, predict_scaling
from hyperpod_rl.plan.benchmark import bench_plan_input, load_records
from hyperpod_rl.plan.throughput import COMM, comm_seconds, train_seconds_per_micro_batch

FILES = FIT_FILES + HELD_OUT_FILES
#: 2-GPU strong-scaling configs -> (file, config) of the 1-GPU point with the same global batch.
STRONG_W1 = {
    "b8_s807_img448_ckpt": ("h200_1gpu_fsdp.json", "b16_s807_img448_ckpt"),
    "b16_s551_img448_ckpt": ("h200_1gpu.json", "b32_s551_img448_ckpt"),
}
#: The config of the predicted 1/2/4/8-GPU curve (the reference batch).
CURVE = ("h200_1gpu_fsdp.json", "b16_s807_img448_ckpt")


def predicted_tokens_per_s(config: dict[str, Any], *, gpus: int, variant: str) -> float:
    """Per-GPU tokens/s of one micro-batch step, as the planner predicts it."""
    inp = bench_plan_input(config, gpus=gpus, variant=variant)
    step = train_seconds_per_micro_batch(inp) + COMM["exposed"] * comm_seconds(inp)
    return inp.micro_train_batch_size_per_gpu * inp.seq_len / step


def _config(name: str, config: str) -> dict[str, Any]:
    return next(r["config"] for r in load_records(RESULTS_DIR / name) if r["config"]["name"] == config)


def predictions() -> dict[str, Any]:
    """Everything the file holds (see the module docstring)."""
    points = []
    scaling = []
    for name in FILES:
        for rec in load_records(RESULTS_DIR / name):
            cfg, gpus = rec["config"], rec["gpus"]
            for variant in rec["variants"]:
                points.append(
                    {
                        "file": name,
                        "config": cfg["name"],
                        "gpus": gpus,
                        "variant": variant,
                        "peak_gib": round(policy_update_memory(bench_plan_input(cfg, gpus=gpus, variant=variant)).peak_gib, 4),
                        "tokens_per_s_per_gpu": round(predicted_tokens_per_s(cfg, gpus=gpus, variant=variant), 1),
                    }
                )
            if gpus == 2:
                if rec["scaling"] == "weak":
                    inp = bench_plan_input(cfg, gpus=1, variant="improved")
                else:
                    inp = bench_plan_input(_config(*STRONG_W1[cfg["name"]]), gpus=1, variant="improved")
                eff = predict_scaling(inp, [1, 2], mode=rec["scaling"])[1].efficiency
                scaling.append({"file": name, "config": cfg["name"], "kind": rec["scaling"], "efficiency": round(eff, 4)})
    inp = bench_plan_input(_config(*CURVE), gpus=1, variant="improved")
    curve = {
        mode: [
            {
                "gpus": p.gpus,
                "tokens_per_s": round(p.tokens_per_s, 1),
                "tokens_per_s_per_gpu": round(p.tokens_per_s_per_gpu, 1),
                "efficiency": round(p.efficiency, 4),
            }
            for p in predict_scaling(inp, [1, 2, 4, 8], mode=mode)
        ]
        for mode in ("weak", "strong")
    }
    return {
        "kind": "prediction",
        "planner_constants": planner_constants(),
        "fit_files": list(FIT_FILES),
        "held_out_files": list(HELD_OUT_FILES),
        "held_out_configs": {k: list(v) for k, v in HELD_OUT_CONFIGS.items()},
        "points": points,
        "scaling": scaling,
        "curve": {"config": CURVE[1], **curve},
    }


def main() -> None:
    with Recording("planner_predictions", notes="Predictions of hyperpod_rl.plan for the H200 measurements; not measurements.") as rec:
        rec.results = predictions()
        print(f"{len(rec.results['points'])} predicted points, {len(rec.results['scaling'])} scaling points")


if __name__ == "__main__":
    main()
