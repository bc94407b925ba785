"""Fit the planner's memory CALIBRATION factors to the measured peaks (least squares on relative error).

The memory model is linear in its factors, so each factor's feature is the change in
predicted bytes when that factor alone goes from 0 to 1. Prints the fit and the
per-variant errors; the chosen values are then written into hyperpod_rl/plan/memory.py
by hand (rounded), so the planner stays a plain module.

    python -m benchmarks.gpu.calibrate benchmarks/results/h200_1gpu.json benchmarks/results/h200_2gpu_fsdp.json
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from hyperpod_rl.plan import memory
from hyperpod_rl.plan.benchmark import bench_plan_input, load_records


def rows(paths: list[Path]) -> list[tuple[str, object, float]]:
    out = []
    for p in paths:
        for rec in load_records(p):
            for variant, res in rec["variants"].items():
                if res.get("status") == "ok":
                    out.append(
                        (
                            f"{rec['gpus']}gpu {rec['config']['name']} {variant}",
                            bench_plan_input(rec["config"], gpus=rec["gpus"], variant=variant),
                            res["peak_gib"],
                        )
                    )
    return out


def main() -> None:
    fixed = {k: float(v) for k, v in (a.removeprefix("--fix=").split("=") for a in sys.argv[1:] if a.startswith("--fix="))}
    data = rows([Path(a) for a in sys.argv[1:] if not a.startswith("--")])
    keys = [k for k in memory.CALIBRATION if k not in fixed]
    saved = dict(memory.CALIBRATION)
    zero = {k: 0.0 for k in keys} | fixed
    memory.CALIBRATION.update(zero)
    base = np.array([memory.policy_update_memory(inp).peak_gib for _, inp, _ in data])
    feats = []
    for k in keys:
        memory.CALIBRATION.update(zero | {k: 1.0})
        feats.append([memory.policy_update_memory(inp).peak_gib for _, inp, _ in data])
    a = np.array(feats).T - base[:, None]
    y = np.array([m for _, _, m in data])
    coef, *_ = np.linalg.lstsq(a / y[:, None], (y - base) / y, rcond=None)
    memory.CALIBRATION.update(saved)
    print(f"max |error| of the fit: {np.max(np.abs(base + a @ coef - y) / y):.1%}")
    print("fit:", dict(zip(keys, np.round(coef, 3).tolist(), strict=True)), "fixed:", fixed)
    pred_fit = base + a @ coef
    pred_now = np.array([memory.policy_update_memory(inp).peak_gib for _, inp, _ in data])
    for (name, _, m), pf, pn in zip(data, pred_fit, pred_now, strict=True):
        print(f"{name:45s} measured {m:6.2f}  fit {pf:6.2f} ({pf / m - 1:+.1%})  current {pn:6.2f} ({pn / m - 1:+.1%})")


if __name__ == "__main__":
    main()
