"""Planner inputs, shapes, image tokens, verdicts and scaling, on CPU."""

from __future__ import annotations

import itertools
import subprocess
import sys

import pytest

from hyperpod_rl.errors import ConfigError
from hyperpod_rl.plan import (
    QWEN3_VL_SHAPES,
    PlanInput,
    image_tokens,
    lora_params,
    model_shape,
    plan,
    predict_scaling,
    shape_from_hf_config,
    smart_resize,
)


def test_8b_parameter_count_matches_model_card() -> None:
    assert model_shape("8B").total_params == pytest.approx(8.77e9, rel=0.005)
    assert model_shape("Qwen3-VL-2B").tie_word_embeddings
    sizes = [s.total_params for s in QWEN3_VL_SHAPES.values()]
    assert sizes == sorted(sizes)


def test_shape_from_config_dict_round_trips() -> None:
    s = model_shape("4B")
    cfg = {
        "tie_word_embeddings": True,
        "text_config": {
            "hidden_size": s.hidden_size,
            "intermediate_size": s.intermediate_size,
            "num_hidden_layers": s.num_hidden_layers,
            "num_attention_heads": s.num_attention_heads,
            "num_key_value_heads": s.num_key_value_heads,
            "head_dim": 128,
            "vocab_size": s.vocab_size,
        },
        "vision_config": s.vision.model_dump(),
    }
    assert shape_from_hf_config(cfg).total_params == s.total_params
    with pytest.raises(ConfigError, match="text_config.vocab_size"):
        shape_from_hf_config(
            {"text_config": {k: v for k, v in cfg["text_config"].items() if k != "vocab_size"}, "vision_config": cfg["vision_config"]}
        )
    with pytest.raises(ConfigError, match="not a known Qwen3-VL shape"):
        model_shape("Qwen3-VL-9B")


@pytest.mark.parametrize(
    ("hw", "resized", "tokens"),
    [
        ((448, 448), (448, 448), 196),
        ((300, 500), (288, 512), 144),
        ((10, 10), (64, 64), 4),
        ((896, 896), (896, 896), 784),
        ((8000, 8000), (4096, 4096), 16384),
    ],
)
def test_image_tokens_follow_smart_resize(hw: tuple[int, int], resized: tuple[int, int], tokens: int) -> None:
    assert smart_resize(*hw) == resized
    assert image_tokens(*hw) == tokens


def test_image_errors_name_the_problem() -> None:
    with pytest.raises(ConfigError, match="aspect ratio"):
        smart_resize(10, 5000)
    with pytest.raises(ConfigError, match="image_px must be positive"):
        PlanInput(image_px=(0, 448))


def test_lora_r32_all_linear_on_8b() -> None:
    # 36 layers x 32 x (8192 + 5120 + 5120 + 8192 + 3 x 16384)
    assert lora_params(PlanInput(model="8B", lora_rank=32)) == 36 * 32 * (8192 + 5120 + 5120 + 8192 + 3 * 16384)


def test_oversized_micro_batch_gets_a_verdict_with_a_fix() -> None:
    p = plan(
        PlanInput(
            model="8B",
            micro_train_batch_size_per_gpu=64,
            gpus_per_node=8,
            gradient_checkpointing=False,
            max_response_tokens=2048,
            mini_batch_size=512,
            train_batch_size=64,
        )
    )
    assert not p.fits
    assert p.memory.peak_gib > 141
    verdict = p.verdicts[0]
    assert verdict.startswith("micro_train_batch_size_per_gpu=64 needs about")
    fix = int(verdict.split(": use ", 1)[1].split()[0])
    assert 1 <= fix < 64
    smaller = plan(
        PlanInput(
            model="8B",
            micro_train_batch_size_per_gpu=fix,
            gpus_per_node=8,
            gradient_checkpointing=False,
            max_response_tokens=2048,
            mini_batch_size=512,
            train_batch_size=64,
        )
    )
    assert smaller.fits


def test_small_run_fits_and_reports_kv_cache_and_step_split() -> None:
    p = plan(PlanInput(model="8B", micro_train_batch_size_per_gpu=4, gpus_per_node=8))
    assert p.fits
    assert p.kv_cache.bytes_per_token == 2 * 36 * 1024 * 2
    assert p.kv_cache.concurrent_sequences == p.kv_cache.tokens // p.seq_len > 0
    assert p.step.generate_s > 0 and p.step.train_s > 0 and p.step.sync_s > 0
    assert any("vLLM KV cache" in v for v in p.verdicts)


def test_low_gpu_memory_utilization_leaves_no_kv_cache() -> None:
    p = plan(PlanInput(model="32B", gpu_memory_utilization=0.3, gpus_per_node=8, micro_train_batch_size_per_gpu=1, mini_batch_size=8))
    assert not p.fits
    assert any("gpu_memory_utilization=0.3" in v and "raise gpu_memory_utilization to at least 0." in v for v in p.blockers)


def test_kl_reference_model_costs_memory_only_when_resident() -> None:
    base = PlanInput(model="8B", gpus_per_node=2, mini_batch_size=8)
    offloaded = plan(base.model_copy(update={"use_kl": True})).memory
    resident = plan(base.model_copy(update={"use_kl": True, "offload_reference": False})).memory
    assert offloaded.reference_gib == 0
    assert resident.reference_gib == pytest.approx(model_shape("8B").total_params * 2 / 2 / 2**30)


def test_naive_path_and_no_checkpointing_cost_more() -> None:
    base = PlanInput(model="8B", micro_train_batch_size_per_gpu=8, gpus_per_node=1, mini_batch_size=8)
    assert plan(base.model_copy(update={"logprob_impl": "naive"})).memory.peak_gib > plan(base).memory.peak_gib + 5
    assert plan(base.model_copy(update={"gradient_checkpointing": False})).memory.activations_gib > 5 * plan(base).memory.activations_gib


def test_batch_divisibility_is_checked() -> None:
    p = plan(PlanInput(model="2B", micro_train_batch_size_per_gpu=3, gpus_per_node=2, mini_batch_size=8))
    assert not p.fits
    assert any("must be a multiple of micro_train_batch_size_per_gpu x GPUs = 6" in v for v in p.verdicts)


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("lora_target_modules", ("qkv",), "not Qwen3-VL language linears"),
        ("gpu_memory_utilization", 0.99, "use 0.9 or less"),
        ("gpu", "TPU", "not known to the planner"),
        ("inference_gpus", 4, "only for placement='split'"),
    ],
)
def test_bad_inputs_raise_config_error(field: str, value: object, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        PlanInput(**{field: value})


def test_scaling_model_shapes() -> None:
    inp = PlanInput(model="8B", micro_train_batch_size_per_gpu=16, gpus_per_node=1, mini_batch_size=16, max_prompt_tokens=97, turns=1)
    weak = predict_scaling(inp, [1, 2, 4, 8], mode="weak")
    strong = predict_scaling(inp, [1, 2, 4, 8], mode="strong")
    assert [p.efficiency for p in weak] == sorted((p.efficiency for p in weak), reverse=True)
    assert weak[-1].efficiency > strong[-1].efficiency
    assert [p.micro_batch_per_gpu for p in strong] == [16, 8, 4, 2]
    assert all(b.tokens_per_s > a.tokens_per_s for a, b in itertools.pairwise(strong))
    assert weak[-1].peak_gib < weak[0].peak_gib  # sharded weights shrink per GPU


def test_planner_imports_no_torch() -> None:
    code = "import sys, hyperpod_rl.plan; sys.exit(1 if 'torch' in sys.modules else 0)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


# ---- suggestions are valid values (reported: "use 42" for a batch of 64) -------------------------
def _suggested_micro_batch(verdict: str) -> int:
    return int(verdict.split(": use ")[1].split()[0].removeprefix("micro_train_batch_size_per_gpu="))


@pytest.mark.parametrize(
    ("gpu", "gpus", "mini", "micro"),
    [("H100", 1, 64, 64), ("H100", 1, 48, 48), ("H200", 1, 96, 96), ("A10G", 2, 48, 24), ("A10G", 6, 48, 8), ("H100", 3, 144, 48)],
)
def test_a_too_large_micro_batch_gets_a_suggestion_that_divides_the_batch(gpu: str, gpus: int, mini: int, micro: int) -> None:
    inp = PlanInput(
        gpu=gpu,
        gpus_per_node=gpus,
        micro_train_batch_size_per_gpu=micro,
        mini_batch_size=mini,
        train_batch_size=mini // 8,
        max_response_tokens=2048,
        turns=2,
        images_per_prompt=2,
    )
    p = plan(inp)
    memory = [v for v in p.blockers if v.startswith(f"micro_train_batch_size_per_gpu={micro} needs")]
    assert memory, p.verdicts
    b = _suggested_micro_batch(memory[0])
    assert (mini // gpus) % b == 0, f"suggested {b} does not divide the {mini // gpus} sequences per GPU"
    fixed = plan(inp.model_copy(update={"micro_train_batch_size_per_gpu": b}))
    assert not any("needs about" in v or "must be a multiple" in v for v in fixed.blockers), fixed.blockers


def test_reported_single_gpu_h100_case_suggests_32_not_42() -> None:
    p = plan(
        PlanInput(
            gpu="H100",
            gpus_per_node=1,
            micro_train_batch_size_per_gpu=64,
            mini_batch_size=64,
            train_batch_size=8,
            turns=6,
            images_per_prompt=6,
            max_prompt_tokens=256,
            max_response_tokens=160,
        )
    )
    assert _suggested_micro_batch(p.blockers[0]) == 32, p.blockers


def test_an_indivisible_micro_batch_gets_a_valid_one() -> None:
    p = plan(PlanInput(gpus_per_node=8, micro_train_batch_size_per_gpu=3, mini_batch_size=64))
    [blocker] = p.blockers
    b = _suggested_micro_batch(blocker)
    assert 8 % b == 0 and plan(PlanInput(gpus_per_node=8, micro_train_batch_size_per_gpu=b, mini_batch_size=64)).fits


def test_a_mini_batch_that_does_not_divide_the_step_gets_a_valid_one() -> None:
    inp = PlanInput(gpus_per_node=3, micro_train_batch_size_per_gpu=4, mini_batch_size=36, train_batch_size=4, group_size=8)
    [blocker] = plan(inp).blockers
    assert blocker.startswith("train_batch_size x group_size = 32 sequences must be a multiple of mini_batch_size=36"), blocker
    assert blocker.endswith("make train_batch_size x group_size a multiple of micro_train_batch_size_per_gpu x GPUs = 12")
    inp = PlanInput(gpus_per_node=2, micro_train_batch_size_per_gpu=4, mini_batch_size=48, train_batch_size=8, group_size=8)
    [blocker] = plan(inp).blockers
    m = int(blocker.rsplit("mini_batch_size=", 1)[1])
    assert 64 % m == 0 and m % 8 == 0 and plan(inp.model_copy(update={"mini_batch_size": m})).fits


def test_no_kv_room_suggests_a_tensor_parallel_size_that_tiles_the_gpus_and_splits_the_heads() -> None:
    inp = PlanInput(
        gpu="A10G",
        gpus_per_node=2,
        nodes=3,
        micro_train_batch_size_per_gpu=2,
        mini_batch_size=48,
        train_batch_size=12,
        gpu_memory_utilization=0.9,
    )
    [blocker] = [v for v in plan(inp).blockers if "KV cache" in v]
    assert blocker.endswith("set inference_tensor_parallel_size=2 (3 engines of 2 GPUs)"), blocker
    assert plan(inp.model_copy(update={"inference_tensor_parallel_size": 2})).kv_cache.concurrent_sequences >= 1


def test_gpu_names_are_case_insensitive_and_the_error_lists_the_known_gpus() -> None:
    assert PlanInput(gpu="a10g").gpu == "A10G" and PlanInput(gpu=" h100 ").gpu_spec().name.startswith("NVIDIA H100")
    with pytest.raises(ConfigError, match=r"gpu 'A100' is not known to the planner; use one of H200 .*H100 .*A10G \(NVIDIA A10G, 22 GiB\)"):
        PlanInput(gpu="A100")


def test_gpus_other_than_the_calibration_gpu_say_their_step_time_is_extrapolated() -> None:
    from hyperpod_rl.plan import GPUS

    assert [k for k, g in GPUS.items() if g.fitted] == ["H200"]
    assert all(g.source for g in GPUS.values())
    assert not any("extrapolated" in v for v in plan(PlanInput(gpu="H200")).verdicts)
    for gpu in ("H100", "A10G"):
        assert any(v.startswith(f"step time on {GPUS[gpu].name} is extrapolated") for v in plan(PlanInput(gpu=gpu)).verdicts)
