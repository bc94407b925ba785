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
    fix = int(verdict.rsplit("use ", 1)[1])
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
    assert any("gpu_memory_utilization=0.3" in v and "raise it" in v for v in p.verdicts)


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
