"""The planner's decode-time model of the reference backend (compiled decoding), against the H200 runs.

The constants are the committed fit on the 2B and 8B shapes (``python -m benchmarks.gpu.decode_fit``);
the 4B shape is held out and must come within the issue's 15 %. A reference-backend run is planned
with that model (no vLLM engine, no KV-cache table, no weight sync), a SkyRL run with vLLM's.
"""

from __future__ import annotations

import pytest

from benchmarks.gpu import decode_fit
from hyperpod_rl.config.run import RunConfig
from hyperpod_rl.errors import ConfigError
from hyperpod_rl.plan import PlanInput, plan
from hyperpod_rl.plan.memory import policy_update_memory
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
    ck.mkdir(parents=True, exist_ok=True)
    (ck / "config.json").write_text(hf_config(model_shape(SHAPES["8B"])).to_json_string())
    base = {
        "run_id": "plan-decode",
        "backend": backend,
        "model": {"path": str(ck) if backend == "reference" else "Qwen/Qwen3-VL-8B-Instruct"},
        "data": {"train_path": "/d/t.parquet", "heldout_path": "/d/h.parquet", "prompts_per_step": 4},
        # engine hf: the compiled transformers decoding this file's model is fitted to (auto would plan vLLM)
        "rollout": {"max_turns": 3, "action_constraint": "none", "max_new_tokens": 128, "engine": "hf"},
    }
    assert json.loads((ck / "config.json").read_text())["text_config"]["num_hidden_layers"] == 36
    return RunConfig.build(base | over)


def test_reference_runs_are_planned_with_compiled_decoding_and_no_vllm(tmp_path):
    result = plan(plan_input_for(_config("reference", tmp_path)))
    assert result.input.rollout_engine == "hf_compiled"
    steps = 3 * 128
    assert result.step.generate_s == pytest.approx(steps * decode_fit.predicted_step_s("Qwen/Qwen3-VL-8B-Instruct", HF_DECODE))
    assert result.step.sync_s == 0.0
    assert [t.title for t in plan_tables(result)] == [
        "Policy update memory per GPU (GiB)",
        "Rollout memory per GPU (compiled decoding, last turn)",
        "Step time estimate (one GRPO step)",
    ]
    assert result.rollout is not None and result.rollout.rows == 32
    assert not any(v.startswith(("vLLM KV cache", "gpu_memory_utilization")) for v in result.verdicts)
    assert any(v.startswith("rollouts: compiled decoding in the training process") for v in result.verdicts)


@pytest.mark.parametrize("engine", ["vllm", "auto"])
def test_reference_runs_with_the_vllm_engine_are_planned_as_one_colocated_engine(tmp_path, engine):
    """rollout.engine vllm (and auto with free generation) on the reference backend: one vLLM engine
    in the training process, asking for the share the trainer counts; no SkyRL batch rules."""
    from hyperpod_rl.plan.memory import vllm_rollout_fraction
    from hyperpod_rl.run_plan import engine_sizing, planned_reference_engine

    cfg = _config(
        "reference",
        tmp_path,
        rollout={"max_turns": 3, "action_constraint": "none", "max_new_tokens": 128, "engine": engine},
        trainer={"micro_batch_size": 5},  # 32 sequences: not a multiple, fine for the reference trainer
    )
    assert planned_reference_engine(cfg) == "vllm"
    inp = plan_input_for(cfg)
    result = plan(inp)
    assert inp.rollout_engine == "vllm" and not inp.fsdp and inp.placement == "colocated"
    sizing = engine_sizing(cfg)
    assert sizing.sequences == 32
    total = inp.gpu_spec().memory_gib * 2**30
    expected = vllm_rollout_fraction(
        inp.shape(),
        sequences=32,
        tokens_per_sequence=sizing.tokens_per_sequence,
        gpu_total_bytes=int(total),
        free_bytes=int(total - inp.shape().total_params * 2),
        cap=cfg.rollout.gpu_memory_utilization,
    )
    assert (
        inp.gpu_memory_utilization == pytest.approx(expected, abs=1e-4) and inp.gpu_memory_utilization < cfg.rollout.gpu_memory_utilization
    )
    assert result.rollout is None and result.step.sync_s > 0 and result.fits, result.blockers
    assert "vLLM KV cache per engine" in [t.title for t in plan_tables(result)]
    assert not any("must be a multiple" in v for v in result.verdicts), result.verdicts
    assert any(v.startswith("room for the faster update") for v in result.verdicts), result.verdicts


def test_constrained_actions_keep_compiled_decoding_under_auto(tmp_path):
    from hyperpod_rl.run_plan import planned_reference_engine

    cfg = _config("reference", tmp_path, rollout={"max_turns": 3, "action_constraint": "directions", "engine": "auto"})
    assert planned_reference_engine(cfg) == "hf_compiled"
    assert plan_input_for(cfg).rollout_engine == "hf_compiled"


def test_skyrl_runs_keep_the_vllm_model(tmp_path):
    cfg = RunConfig.from_preset("single-gpu", run_id="plan-decode-skyrl")
    result = plan(plan_input_for(cfg))
    assert result.input.rollout_engine == "vllm"
    assert "vLLM KV cache per engine" in [t.title for t in plan_tables(result)]
    assert result.step.sync_s > 0


RUNS = {"2B": "h200_grpo_e2e_decode_2b", "4B": "h200_grpo_e2e_decode_4b", "8B": "h200_grpo_e2e_decode_8b"}


@pytest.mark.parametrize("shape", sorted(RUNS))
def test_rollout_memory_against_the_measured_rollout_peaks(shape):
    """Counted, not fitted: within 5 % under and 20 % over the rollout peaks of the 3-turn runs (32 episodes)."""
    import json

    from hyperpod_rl.plan import PlanInput
    from hyperpod_rl.plan.memory import rollout_memory

    doc = json.loads((decode_fit.RESULTS_DIR / f"{RUNS[shape]}.json").read_text())
    run = next(r for r in doc["results"]["runs"] if r.get("decode") == "compiled" and r["max_turns"] == 3)
    measured = max(s["peak_rollout_gib"] for s in run["steps"] if not s["warmup"])
    # the benchmark's episode: a 376-token first prompt (image included), then 3 turns of 128 generated tokens
    # and a reply of one image and about 32 tokens of text
    inp = PlanInput(
        model=shape,
        turns=3,
        max_prompt_tokens=178,
        max_response_tokens=160,
        generated_tokens_per_turn=128,
        images_per_prompt=3,
        train_batch_size=4,
        group_size=8,
        mini_batch_size=32,
        micro_train_batch_size_per_gpu=16,
        gpus_per_node=1,
        fsdp=False,
        rollout_engine="hf_compiled",
    )
    predicted = rollout_memory(inp).peak_gib
    assert -0.05 <= predicted / measured - 1 <= 0.20, (predicted, measured)


def test_a_rollout_that_cannot_fit_is_a_blocker_saying_what_to_lower(tmp_path):
    result = plan(
        plan_input_for(
            _config("reference", tmp_path, data={"train_path": "/d/t.parquet", "heldout_path": "/d/h.parquet", "prompts_per_step": 64}),
            gpu="H100",
        )
    )
    assert not result.fits
    assert any(
        b.startswith("rollouts: the static KV cache of the last turn (512 rows") and "lower data.prompts_per_step" in b
        for b in result.blockers
    ), result.blockers


def test_bad_model_paths_are_config_errors(tmp_path):
    from hyperpod_rl.errors import ConfigError

    ck = tmp_path / "bad"
    ck.mkdir()
    (ck / "config.json").write_text("")
    cfg = RunConfig.build(
        {
            "run_id": "bad-ck",
            "backend": "reference",
            "model": {"path": str(ck)},
            "data": {"train_path": "/d/t.parquet", "heldout_path": "/d/h.parquet"},
        }
    )
    with pytest.raises(
        ConfigError, match=r"config.json '.*/config.json' is not valid JSON at line 1, column 1: point model.path at a checkpoint directory"
    ):
        plan_input_for(cfg)
    tiny = RunConfig.build({"run_id": "tiny-ck", "data": {"train_path": "/d/t.parquet", "heldout_path": "/d/h.parquet"}})
    with pytest.raises(ConfigError, match=r"model.path='tiny' is the embedded CPU model.*Qwen/Qwen3-VL-8B-Instruct"):
        plan_input_for(tiny)


@pytest.mark.parametrize(("micro", "planned"), [(5, 5), (64, 32)])
def test_reference_micro_batches_follow_the_reference_trainer(tmp_path, micro, planned):
    """Any micro batch runs (no SkyRL divisibility blockers); one above a worker's 32 sequences is planned as 32."""
    from hyperpod_rl.plan.report import plan_summary

    cfg = _config("reference", tmp_path, trainer={"micro_batch_size": micro})
    result = plan(plan_input_for(cfg))
    assert result.input.micro_train_batch_size_per_gpu == planned
    assert result.fits and not result.blockers
    assert "rollouts in the training process" in plan_summary(result) and "colocated" not in plan_summary(result)


def test_an_awake_engine_is_planned_beside_the_update(tmp_path):
    """rollout.engine_sleep=false: the engine's whole share stays on the GPU during the update, so the
    plan adds it to the update's memory, and a run that then does not fit is told to let it sleep."""
    rollout = {"max_turns": 3, "action_constraint": "none", "max_new_tokens": 128, "engine": "vllm"}
    asleep = plan_input_for(_config("reference", tmp_path, rollout=rollout))
    awake = plan_input_for(_config("reference", tmp_path / "awake", rollout=rollout | {"engine_sleep": False}))
    assert asleep.engine_sleeps and not awake.engine_sleeps
    held = awake.gpu_spec().memory_gib * awake.gpu_memory_utilization
    fits = plan(awake)
    assert fits.fits and any(f"with {held:.0f} GiB held by the awake vLLM engine" in v for v in fits.verdicts), fits.verdicts
    assert any("held by the sleeping vLLM engine" in v for v in plan(asleep).verdicts)
    # a micro batch whose update fits beside a sleeping engine but not beside an awake one
    update = policy_update_memory(awake).peak_gib
    big = awake.model_copy(
        update={"gpu_memory_utilization": round((awake.gpu_spec().memory_gib - update / 2) / awake.gpu_spec().memory_gib, 3)}
    )
    blocked = plan(big)
    assert not blocked.fits and "set rollout.engine_sleep=true" in blocked.blockers[0], blocked.blockers
    assert plan(big.model_copy(update={"engine_sleeps": True})).fits
    with pytest.raises(ConfigError, match="engine_sleeps=False"):
        PlanInput(engine_sleeps=False)  # SkyRL's FSDP2 layout


def test_the_engine_context_stays_within_the_base_models_positions(tmp_path):
    """vLLM refuses a max_model_len beyond the model's max_position_embeddings: on the GPU the
    default 8192 + 32 = 8224 stopped a 4096-position model's engine before GRPO's first step
    (issue 40's curve, 2026-12-07). Unset, it is capped; set above the model, or with prompts that
    cannot fit, it is one clear error before the engine starts."""
    from hyperpod_rl.run_plan import engine_sizing

    cfg = _config("reference", tmp_path, rollout={"engine": "vllm", "action_constraint": "none", "max_new_tokens": 32})
    assert engine_sizing(cfg).max_model_len == 8192 + 32  # the model's limit unknown: as configured
    capped = engine_sizing(cfg, 4096)
    assert capped.max_model_len == 4096 and capped.tokens_per_sequence == min(4096, cfg.rollout.max_prompt_tokens + 32)
    assert engine_sizing(cfg, 262144).max_model_len == 8192 + 32  # Qwen3-VL-8B's 256k: unchanged
    explicit = _config("reference", tmp_path, rollout={"engine": "vllm", "action_constraint": "none", "max_model_len": 8192})
    with pytest.raises(ConfigError, match=r"rollout.max_model_len=8192 is more than the base model's 4096 positions.*at most 4096"):
        engine_sizing(explicit, 4096)
    with pytest.raises(ConfigError, match=r"more than the base model's 1024 positions .*lower rollout.max_prompt_tokens"):
        engine_sizing(cfg, 1024)
