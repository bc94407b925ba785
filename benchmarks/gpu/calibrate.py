"""Fit the planner's calibration factors to the H200 runs in ``FIT_FILES``; hold the rest out.

Memory (``hyperpod_rl.plan.memory.CALIBRATION``): the model is linear in its factors, so each
factor's feature is the change in predicted peak GiB when that factor alone goes from 0 to 1;
least squares on the relative error over every variant of every fitted record. Three factors are
held at their counted values (``HELD``).

Step time (``hyperpod_rl.plan.throughput``): measured seconds per micro batch =
executed FLOPs / (dense bf16 rate x efficiency[adapter dtype]) + fixed[plain | FSDP2]
+ exposed x FSDP2 communication seconds. Linear in (1/efficiency_bf16, 1/efficiency_fp32,
fixed_plain, fixed_fsdp, exposed); least squares on the relative error.

The runs in ``HELD_OUT_FILES`` are never fitted on: ``tests/plan`` checks the planner's accuracy on
them only, and docs/planner.md reports their error separately. The planner's constants are the
rounded fit (``ROUNDING``), copied into ``hyperpod_rl/plan/memory.py`` and ``throughput.py`` by hand
so the planner stays a plain module; ``tests/plan`` checks that they equal the committed fit.

    python -m benchmarks.gpu.calibrate      # writes benchmarks/results/planner_calibration.json
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._record import RESULTS_DIR, Recording
from hyperpod_rl.plan import memory
from hyperpod_rl.plan import throughput as tp
from hyperpod_rl.plan.benchmark import bench_plan_input, load_records
from hyperpod_rl.plan.inputs import PlanInput

#: Runs the calibration is fitted on: the single-GPU suite on the 8B, 2B and 4B shapes and the first 2-GPU FSDP2 run
#: (less the configs of ``HELD_OUT_CONFIGS``).
FIT_FILES = ("h200_1gpu.json", "h200_2gpu_fsdp.json", "h200_1gpu_2b.json", "h200_1gpu_4b.json")
#: The two splits of the measurements (:func:`records`, :func:`points`).
SPLITS = ("fit", "held_out")
#: Runs never fitted on: FSDP2 at world size 1 (torchrun) and the 2-GPU rerun on a second machine.
HELD_OUT_FILES = ("h200_1gpu_fsdp.json", "h200_2gpu_fsdp_run2.json")
#: Configs of fitted files that are held out too: the two 896 px configs of each smaller shape, so that
#: every shape has measurements the fit never saw.
HELD_OUT_CONFIGS: dict[str, tuple[str, ...]] = {
    "h200_1gpu_2b.json": ("b8_s1139_img896_ckpt", "b2_s1907_img896_nockpt"),
    "h200_1gpu_4b.json": ("b8_s1139_img896_ckpt", "b2_s1907_img896_nockpt"),
}
#: Memory factors held at their counted values.
#: ``overhead_gib`` is held at the cuBLAS workspaces and allocator slack seen on the H200 (about 0.5 GiB): fitted
#: freely over the three shapes it goes below zero (-0.2 GiB), which no memory can be. ``chunk_logit_bytes`` is fitted.
HELD = {"ckpt_layers_live": 1.0, "fsdp_layers_gathered": 2.0, "overhead_gib": 0.5}
#: Decimal places of each constant as the planner carries it.
ROUNDING = {
    "activation_scale": 2,
    "naive_logit_bytes": 1,
    "chunk_logit_bytes": 1,
    "overhead_gib": 1,
    "efficiency_bf16": 2,
    "efficiency_fp32": 2,
    "fixed_plain_s": 3,
    "fixed_fsdp_s": 3,
    "comm_exposed": 2,
    "efficiency_hidden_exponent": 2,
}


def records(split: str, results: Path = RESULTS_DIR) -> list[tuple[str, dict[str, Any]]]:
    """``(file, record)`` of the ``"fit"`` or ``"held_out"`` split (files plus :data:`HELD_OUT_CONFIGS`).

    Raises:
        ValueError: ``split`` is not ``"fit"`` or ``"held_out"`` (a tuple of file names is not a split).
    """
    if split not in SPLITS:
        raise ValueError(f"split {split!r} is not one of {SPLITS}")
    out = []
    for name in FIT_FILES + HELD_OUT_FILES:
        for rec in load_records(results / name):
            held = name in HELD_OUT_FILES or rec["config"]["name"] in HELD_OUT_CONFIGS.get(name, ())
            if held == (split == "held_out"):
                out.append((name, rec))
    return out


def points(split: str, results: Path = RESULTS_DIR) -> list[dict[str, Any]]:
    """Every measured variant of every record of ``split``: name, PlanInput, peak GiB, seconds per micro batch."""
    out = []
    for name, rec in records(split, results):
        for variant, res in rec["variants"].items():
            if res.get("status") != "ok":
                continue
            inp = bench_plan_input(rec["config"], gpus=rec["gpus"], variant=variant)
            out.append(
                {
                    "file": name,
                    "config": rec["config"]["name"],
                    "gpus": rec["gpus"],
                    "variant": variant,
                    "input": inp,
                    "peak_gib": res["peak_gib"],
                    "step_s": inp.micro_train_batch_size_per_gpu * inp.seq_len / res["tokens_per_s"],
                }
            )
    return out


def fit_memory(data: list[dict[str, Any]]) -> dict[str, float]:
    """Least-squares memory factors (relative error), the ``HELD`` ones fixed."""
    keys = [k for k in memory.CALIBRATION if k not in HELD]
    saved = dict(memory.CALIBRATION)
    try:
        zero = {k: 0.0 for k in keys} | HELD
        memory.CALIBRATION.update(zero)
        base = np.array([memory.policy_update_memory(p["input"]).peak_gib for p in data])
        feats = []
        for k in keys:
            memory.CALIBRATION.update(zero | {k: 1.0})
            feats.append([memory.policy_update_memory(p["input"]).peak_gib for p in data])
    finally:
        memory.CALIBRATION.clear()
        memory.CALIBRATION.update(saved)
    a = np.array(feats).T - base[:, None]
    y = np.array([p["peak_gib"] for p in data])
    coef, *_ = np.linalg.lstsq(a / y[:, None], (y - base) / y, rcond=None)
    return dict(zip(keys, coef.tolist(), strict=True))


def _step_features(inp: PlanInput, exponent: float) -> list[float]:
    scale = (tp.REFERENCE_HIDDEN / inp.shape().hidden_size) ** exponent
    compute = scale * inp.micro_train_batch_size_per_gpu * tp._executed_flops(inp) / inp.gpu_spec().bf16_flops
    bf16 = inp.adapter_compute_dtype == "bf16"
    return [compute if bf16 else 0.0, 0.0 if bf16 else compute, 0.0 if inp.fsdp else 1.0, 1.0 if inp.fsdp else 0.0, tp.comm_seconds(inp)]


#: Candidate values of the efficiency's hidden-size exponent (grid search around the linear least squares).
EXPONENT_GRID = tuple(round(0.05 * k, 2) for k in range(41))


def fit_step_time(data: list[dict[str, Any]]) -> dict[str, float]:
    """Least-squares efficiencies, fixed costs and exposed-communication share (relative error).

    Linear in the other five for a given hidden-size exponent; the exponent is the grid value
    (:data:`EXPONENT_GRID`) with the least squared relative error.
    """
    y = np.array([p["step_s"] for p in data])
    best: tuple[float, float, Any] | None = None
    for exponent in EXPONENT_GRID:
        a = np.array([_step_features(p["input"], exponent) for p in data])
        coef, *_ = np.linalg.lstsq(a / y[:, None], np.ones_like(y), rcond=None)
        sse = float(np.sum((a @ coef / y - 1) ** 2))
        if best is None or sse < best[0]:
            best = (sse, exponent, coef)
    assert best is not None
    _, exponent, coef = best
    return {
        "efficiency_bf16": 1.0 / coef[0],
        "efficiency_fp32": 1.0 / coef[1],
        "fixed_plain_s": coef[2],
        "fixed_fsdp_s": coef[3],
        "comm_exposed": coef[4],
        "efficiency_hidden_exponent": exponent,
    }


def planner_constants() -> dict[str, float]:
    """The constants the planner carries now, under the names of :data:`ROUNDING`."""
    return {
        "activation_scale": memory.CALIBRATION["activation_scale"],
        "naive_logit_bytes": memory.CALIBRATION["naive_logit_bytes"],
        "chunk_logit_bytes": memory.CALIBRATION["chunk_logit_bytes"],
        "overhead_gib": memory.CALIBRATION["overhead_gib"],
        "efficiency_bf16": tp.TRAIN_EFFICIENCY["bf16"],
        "efficiency_fp32": tp.TRAIN_EFFICIENCY["fp32"],
        "fixed_plain_s": tp.FIXED_STEP_S["plain"],
        "fixed_fsdp_s": tp.FIXED_STEP_S["fsdp"],
        "comm_exposed": tp.COMM["exposed"],
        "efficiency_hidden_exponent": tp.EFFICIENCY_HIDDEN_EXPONENT,
    }


@contextmanager
def constants(values: dict[str, float]) -> Iterator[None]:
    """Run the planner with ``values`` (names of :data:`ROUNDING`) in place of its constants."""
    saved = (dict(memory.CALIBRATION), dict(tp.TRAIN_EFFICIENCY), dict(tp.FIXED_STEP_S), dict(tp.COMM))
    saved_exponent = tp.EFFICIENCY_HIDDEN_EXPONENT
    tp.EFFICIENCY_HIDDEN_EXPONENT = values["efficiency_hidden_exponent"]
    memory.CALIBRATION.update({k: values[k] for k in ("activation_scale", "naive_logit_bytes", "chunk_logit_bytes", "overhead_gib")})
    tp.TRAIN_EFFICIENCY.update(bf16=values["efficiency_bf16"], fp32=values["efficiency_fp32"])
    tp.FIXED_STEP_S.update(plain=values["fixed_plain_s"], fsdp=values["fixed_fsdp_s"])
    tp.COMM.update(exposed=values["comm_exposed"])
    try:
        yield
    finally:
        tp.EFFICIENCY_HIDDEN_EXPONENT = saved_exponent
        for target, old in zip((memory.CALIBRATION, tp.TRAIN_EFFICIENCY, tp.FIXED_STEP_S, tp.COMM), saved, strict=True):
            target.clear()
            target.update(old)


def _errors(data: list[dict[str, Any]]) -> dict[str, float]:
    """Max and mean |relative error| of the planner (as it is configured now) on ``data``."""
    mem = [memory.policy_update_memory(p["input"]).peak_gib / p["peak_gib"] - 1 for p in data]
    step = [
        (tp.train_seconds_per_micro_batch(p["input"]) + tp.COMM["exposed"] * tp.comm_seconds(p["input"])) / p["step_s"] - 1 for p in data
    ]
    # tokens/s error = 1 / (1 + step error) - 1
    tps = [1 / (1 + e) - 1 for e in step]
    return {
        "points": len(data),
        "peak_max_abs_err": round(max(abs(e) for e in mem), 4),
        "peak_mean_abs_err": round(float(np.mean(np.abs(mem))), 4),
        "tokens_per_s_max_abs_err": round(max(abs(e) for e in tps), 4),
        "tokens_per_s_mean_abs_err": round(float(np.mean(np.abs(tps))), 4),
    }


def main() -> None:
    params = {"fit_files": FIT_FILES, "held_out_files": HELD_OUT_FILES, "held_out_configs": HELD_OUT_CONFIGS, "held": HELD}
    with Recording("planner_calibration", params=params) as rec:
        fit_data = points("fit")
        fitted = fit_memory(fit_data) | fit_step_time(fit_data)
        rounded = {k: round(v, ROUNDING[k]) for k, v in fitted.items()} | {k: v for k, v in HELD.items() if k in ROUNDING}
        current = planner_constants()
        for key, value in fitted.items():
            flag = "" if current[key] == rounded[key] else f"   <-- planner has {current[key]}: copy {rounded[key]} into hyperpod_rl/plan"
            print(f"{key:20s} fit {value:9.4f}  rounded {rounded[key]:<8}{flag}")
        with constants(rounded):
            errors = {"fit": _errors(fit_data), "held_out": _errors(points("held_out"))}
        for split, e in errors.items():
            print(
                f"{split:8s} {e['points']:3d} points: peak |error| max {e['peak_max_abs_err']:.1%} mean {e['peak_mean_abs_err']:.1%}; "
                f"tokens/s |error| max {e['tokens_per_s_max_abs_err']:.1%} mean {e['tokens_per_s_mean_abs_err']:.1%} (rounded fit)"
            )
        rec.results = {
            "fit_files": list(FIT_FILES),
            "held_out_files": list(HELD_OUT_FILES),
            "held_out_configs": {k: list(v) for k, v in HELD_OUT_CONFIGS.items()},
            "fit_points": len(fit_data),
            "held": HELD,
            "fitted": {k: round(v, 6) for k, v in fitted.items()},
            "planner_values": rounded,
            "errors_with_planner_values": errors,
        }


if __name__ == "__main__":
    main()
