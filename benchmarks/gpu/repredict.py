"""Refresh the planner's predictions stored beside the measurements (after a calibration change).

Keeps ``predicted_peak_gib_at_run`` (what the planner said when the run was made)
and rewrites ``predicted_peak_gib`` / ``predicted_baseline_peak_gib`` /
``predicted_tokens_per_s`` / ``predicted_baseline_tokens_per_s`` with the current planner.

    python -m benchmarks.gpu.repredict benchmarks/results/h200_*.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from hyperpod_rl.plan import policy_update_memory
from hyperpod_rl.plan.benchmark import bench_plan_input, load_records
from hyperpod_rl.plan.throughput import COMM, comm_seconds, train_seconds_per_micro_batch


def predicted_tokens_per_s(config: dict, *, gpus: int, variant: str) -> float:
    """Per-GPU tokens/s of one micro-batch step, as the planner predicts it."""
    inp = bench_plan_input(config, gpus=gpus, variant=variant)
    step = train_seconds_per_micro_batch(inp) + COMM["exposed"] * comm_seconds(inp)
    return inp.micro_train_batch_size_per_gpu * inp.seq_len / step


def main() -> None:
    for path in map(Path, sys.argv[1:]):
        records = load_records(path)
        for rec in records:
            cfg, gpus = rec["config"], rec["gpus"]
            for key, variant in (("", rec["improved_variant"]), ("baseline_", rec["baseline_variant"])):
                rec[f"predicted_{key}peak_gib"] = policy_update_memory(bench_plan_input(cfg, gpus=gpus, variant=variant)).peak_gib
                rec[f"predicted_{key}tokens_per_s"] = predicted_tokens_per_s(cfg, gpus=gpus, variant=variant)
        path.write_text(json.dumps(records, indent=1))
        print(f"updated {len(records)} records in {path}")


if __name__ == "__main__":
    main()
