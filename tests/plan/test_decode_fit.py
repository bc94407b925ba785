"""The planner's decode-time model of the reference backend (compiled decoding), against the H200 runs.

The constants are the committed fit on the 2B and 8B shapes (``python -m benchmarks.gpu.decode_fit``);
the 4B shape is held out and must come within the issue's 15 %. A reference-backend run is planned
with that model (no vLLM engine, no KV-cache table, no weight sync), a SkyRL run with vLLM's.
"""

from __future__ import annotations

import pytest

from benchmarks.gpu import decode_fit
from hyperpod_rl.config.run import RunConfig
from hyperpod_rl.plan import plan
from hyperpod_rl.plan.report import plan_tables
from hyperpod_rl.plan.throughput import HF_DECODE
from hyperpod_rl.run_plan import plan_input_for


def test_planner_constants_are_the_committed_fit():
    assert decode_fit.fit(decode_fit.points()) == pytest.approx(HF_DECODE, rel=1e-9)


@pytest.mark.parametrize("shape", decode_fit.HELD_OUT_SHAPES)
def test_held_out_shape_within_15_percent(shape):
    data = decode_fit.points()
    assert shape not in decode_fit.FIT_SHAPES and any(p["shape"] == shape for p in data)
    measured = decode_fit.per_shape(data)[shape]
    assert decode_fit.predicted_step_s(shape, HF_DECODE) == pytest.approx(measured, rel=0.15)


def _config(backend: str, tmp_path, **over) -> RunConfig:
    import json

    from benchmarks.gpu.workload import SHAPES, hf_config
    from hyperpod_rl.plan import model_shape

    ck = tmp_path / "ck"
    ck.mkdir()
    (ck / "config.json").write_text(hf_config(model_shape(SHAPES["8B"])).to_json_string())
    base = {
        "run_id": "plan-decode",
        "backend": backend,
        "model": {"path": str(ck) if backend == "reference" else "Qwen/Qwen3-VL-8B-Instruct"},
        "data": {"train_path": "/d/t.parquet", "heldout_path": "/d/h.parquet", "mazes_per_step": 4},
        "rollout": {"max_turns": 3, "action_constraint": "none", "max_new_tokens": 128},
    }
    assert json.loads((ck / "config.json").read_text())["text_config"]["num_hidden_layers"] == 36
    return RunConfig.build(base | over)


def test_reference_runs_are_planned_with_compiled_decoding_and_no_vllm(tmp_path):
    result = plan(plan_input_for(_config("reference", tmp_path)))
    assert result.input.rollout_engine == "hf_compiled"
    steps = 3 * 128
    assert result.step.generate_s == pytest.approx(steps * decode_fit.predicted_step_s("Qwen/Qwen3-VL-8B-Instruct", HF_DECODE))
    assert result.step.sync_s == 0.0
    assert [t.title for t in plan_tables(result)] == ["Policy update memory per GPU (GiB)", "Step time estimate (one GRPO step)"]
    assert not any(v.startswith(("vLLM KV cache", "gpu_memory_utilization")) for v in result.verdicts)
    assert any(v.startswith("rollouts: compiled decoding in the training process") for v in result.verdicts)


def test_skyrl_runs_keep_the_vllm_model(tmp_path):
    cfg = RunConfig.from_preset("single-gpu", run_id="plan-decode-skyrl")
    result = plan(plan_input_for(cfg))
    assert result.input.rollout_engine == "vllm"
    assert "vLLM KV cache per engine" in [t.title for t in plan_tables(result)]
    assert result.step.sync_s > 0
