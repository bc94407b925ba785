"""The planner against the committed H200 measurements (benchmarks/results/*.json), on CPU."""

from __future__ import annotations

from pathlib import Path

import pytest

from hyperpod_rl.plan import policy_update_memory, predict_scaling
from hyperpod_rl.plan.benchmark import bench_plan_input, load_records
from hyperpod_rl.plan.throughput import COMM, comm_seconds, train_seconds_per_micro_batch

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results"
FILES = ("h200_1gpu.json", "h200_1gpu_fsdp.json", "h200_2gpu_fsdp.json", "h200_2gpu_fsdp_run2.json")
REQUIRED = (
    "config",
    "gpus",
    "device",
    "date",
    "measured_peak_gib",
    "predicted_peak_gib",
    "tokens_per_s",
    "baseline_tokens_per_s",
    "baseline_peak_gib",
    "mfu",
)


def _records(name: str) -> list[dict]:
    return load_records(RESULTS / name)


ALL = [(f, r) for f in FILES for r in _records(f)]
IDS = [f"{f}:{r['config']['name']}" for f, r in ALL]


@pytest.mark.parametrize(("fname", "rec"), ALL, ids=IDS)
def test_record_has_the_issue_fields(fname: str, rec: dict) -> None:
    for key in REQUIRED:
        assert rec.get(key) is not None, f"{fname} {rec['config']['name']} lacks {key}"
    assert "H200" in rec["device"]
    assert rec["date"].startswith("20")
    if rec["gpus"] > 1:
        assert 0.0 < rec["comm_share"] < 1.0


@pytest.mark.parametrize(("fname", "rec"), ALL, ids=IDS)
def test_peak_prediction_within_15_percent(fname: str, rec: dict) -> None:
    """Issue 9 bar: every measured config, both the improved path and its baseline."""
    for variant, res in rec["variants"].items():
        predicted = policy_update_memory(bench_plan_input(rec["config"], gpus=rec["gpus"], variant=variant)).peak_gib
        assert abs(predicted / res["peak_gib"] - 1) <= 0.15, f"{variant}: predicted {predicted:.1f} GiB, measured {res['peak_gib']:.1f} GiB"
    stored = rec["predicted_peak_gib"]
    assert stored == pytest.approx(
        policy_update_memory(bench_plan_input(rec["config"], gpus=rec["gpus"], variant=rec["improved_variant"])).peak_gib, rel=1e-6
    ), "run benchmarks/gpu/repredict.py"


def test_improved_path_bar_at_the_reference_batch_and_large_batches() -> None:
    """Issue 9 bar: >= 1.3x tokens/s or >= 30% lower peak, same batch, same GPU, same run.

    It holds for every checkpointed single-GPU config of at least 8k tokens per micro batch,
    the reference batch 16 x 807 included; docs/planner.md lists the configs where it does not.
    """
    checked = 0
    for rec in _records("h200_1gpu.json"):
        cfg = rec["config"]
        if not cfg["gradient_checkpointing"] or cfg["batch"] * cfg["seq_len"] < 8000:
            continue
        speedup = rec["tokens_per_s"] / rec["baseline_tokens_per_s"]
        saving = 1 - rec["measured_peak_gib"] / rec["baseline_peak_gib"]
        assert speedup >= 1.3 or saving >= 0.30, f"{cfg['name']}: {speedup:.2f}x, {saving:.0%} lower"
        checked += 1
    assert checked >= 3
    ref = next(r for r in _records("h200_1gpu.json") if r["config"]["name"] == "b16_s807_img448_ckpt")
    assert ref["tokens_per_s"] / ref["baseline_tokens_per_s"] >= 1.3 and 1 - ref["measured_peak_gib"] / ref["baseline_peak_gib"] >= 0.30


def test_naive_baseline_matches_the_reference_point() -> None:
    """docs/references.md §6: ~5.4k tok/s at 8 x 551 and ~5.8k at 16 x 807, peaks 24 and 43 GiB."""
    by_name = {r["config"]["name"]: r for r in _records("h200_1gpu.json")}
    small, large = by_name["b8_s551_img448_ckpt"], by_name["b16_s807_img448_ckpt"]
    assert small["config"]["seq_len"] == 551 and large["config"]["seq_len"] == 807
    assert small["baseline_tokens_per_s"] == pytest.approx(5400, rel=0.1)
    assert large["baseline_tokens_per_s"] == pytest.approx(5800, rel=0.1)
    assert large["baseline_peak_gib"] == pytest.approx(43, rel=0.1)


def test_full_size_logprobs_agree_with_naive_to_bf16_tolerance() -> None:
    """Issue 9 bar, measured on the 8B-shaped model on an H200 (benchmarks/gpu/policy_update.py --suite check)."""
    (rec,) = _records("h200_logprob_check.json")
    assert "H200" in rec["device"] and rec["response_tokens_checked"] >= 1000
    assert rec["rel_err_chunked_vs_naive"] <= 1e-2
    assert rec["rel_err_chunked_vs_fp64"] <= 1e-2
    assert rec["rel_err_chunked_vs_fp64"] <= 1.01 * rec["rel_err_naive_vs_fp64"]  # no worse than the naive path
    assert rec["lora_grad_rel_err_chunked_vs_naive"] <= 5e-2


def _fsdp_points() -> list[tuple[dict, dict]]:
    one = {r["config"]["name"]: r for r in _records("h200_1gpu_fsdp.json")}
    return [(one[r["config"]["name"]], r) for r in _records("h200_2gpu_fsdp.json")]


@pytest.mark.parametrize(("rec1", "rec2"), _fsdp_points(), ids=lambda r: r["config"]["name"])
def test_planner_tokens_per_s_within_20_percent_at_each_scaling_point(rec1: dict, rec2: dict) -> None:
    """Issue 10 bar, for the GPU counts that were lent (1 and 2)."""
    for rec in (rec1, rec2):
        inp = bench_plan_input(rec["config"], gpus=rec["gpus"], variant="improved")
        step = train_seconds_per_micro_batch(inp) + COMM["exposed"] * comm_seconds(inp)
        predicted = inp.micro_train_batch_size_per_gpu * inp.seq_len / step
        assert abs(predicted / rec["tokens_per_s"] - 1) <= 0.20, (
            f"{rec['gpus']} GPU: predicted {predicted:.0f}, measured {rec['tokens_per_s']:.0f}"
        )


def test_weak_scaling_measured_and_predicted_agree() -> None:
    one = {r["config"]["name"]: r for r in _records("h200_1gpu_fsdp.json")}
    for rec2 in _records("h200_2gpu_fsdp.json"):
        if rec2["scaling"] != "weak":
            continue
        measured = rec2["tokens_per_s"] / one[rec2["config"]["name"]]["tokens_per_s"]
        inp = bench_plan_input(rec2["config"], gpus=1, variant="improved")
        predicted = predict_scaling(inp, [1, 2], mode="weak")[1].efficiency
        assert 0.85 <= measured <= 1.05
        assert abs(predicted - measured) <= 0.1
