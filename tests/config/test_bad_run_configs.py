"""Invalid run configs cannot be built, so they never reach ``submit_job``.

Each row: overrides on top of a valid preset -> the message the user sees. Validation runs in
``RunConfig`` construction (``build``, ``from_preset``, ``model_validate``, ``model_validate_json``)
and in ``RunConfig.validated()`` for copies made with ``model_copy``.
"""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from hyperpod_rl.config.presets import preset_dict
from hyperpod_rl.config.run import RunConfig
from hyperpod_rl.errors import ConfigError

BAD: list[tuple[str, str, dict, str]] = [
    # (id, preset, overrides, expected message regex)
    (
        "engines-vs-gpus",
        "hyperpod-6gpu",
        {"placement": {"num_engines": 5}},
        r"policy GPUs \(nodes 3 x gpus_per_node 2 = 6\) must equal rollout GPUs \(num_engines 5 x tensor_parallel_size 1 = 5\)",
    ),
    (
        "tp-vs-gpus",
        "hyperpod-6gpu",
        {"placement": {"tensor_parallel_size": 2}},
        r"must equal rollout GPUs .* = 12\)",
    ),
    (
        "tp-beyond-node",
        "single-gpu",
        {
            "placement": {
                "tensor_parallel_size": 2,
                "gpus_per_node": 1,
                "num_engines": 1,
            }
        },
        r"placement.tensor_parallel_size=2 exceeds gpus_per_node=1",
    ),
    (
        "multinode-not-shared",
        "hyperpod-6gpu",
        {"storage": {"shared": False}},
        r"3-node run writes ckpt_path, export_path and lora_sync_path .* storage.shared=true",
    ),
    (
        "multinode-no-root",
        "hyperpod-6gpu",
        {"storage": {"root": None, "shared": True}},
        r"set storage.root to shared storage",
    ),
    (
        "multinode-tmp-root",
        "hyperpod-6gpu",
        {"storage": {"root": "/tmp/runs", "shared": True}},
        r"storage.root='/tmp/runs' is node-local",
    ),
    (
        "relative-root",
        "single-gpu",
        {"storage": {"root": "fsx/runs"}},
        r"storage.root: storage.root must be an absolute path",
    ),
    (
        "rank-not-vllm",
        "single-gpu",
        {"lora": {"rank": 48}},
        r"lora.rank=48 is not a rank vLLM can serve",
    ),
    (
        "rank-above-serving",
        "single-gpu",
        {"lora": {"rank": 128}},
        r"lora.rank=128 is above the serving limit lora.max_serving_rank=64",
    ),
    (
        "rank-above-lowered-limit",
        "hyperpod-6gpu",
        {"lora": {"max_serving_rank": 16}},
        r"lora.rank=32 is above the serving limit lora.max_serving_rank=16",
    ),
    (
        "vision-lora-none",
        "single-gpu",
        {"lora": {"exclude_modules": None}},
        r"lora.exclude_modules=None leaves LoRA on the vision tower",
    ),
    (
        "vision-lora-regex",
        "single-gpu",
        {"lora": {"exclude_modules": ".*mlp.*"}},
        r"leaves LoRA on the vision tower \(model.visual.blocks.0.attn.qkv\)",
    ),
    (
        "vision-lora-targets",
        "single-gpu",
        {"lora": {"target_modules": ["q_proj", "visual.blocks.0.attn.qkv"]}},
        r"lora.target_modules names vision-tower modules",
    ),
    (
        "thinking-path",
        "single-gpu",
        {"model": {"path": "Qwen/Qwen3-VL-8B-Thinking", "model_id": None}},
        r"model.path names a Thinking variant",
    ),
    (
        "thinking-id",
        "single-gpu",
        {"model": {"model_id": "Qwen/Qwen3-VL-8B-Thinking"}},
        r"model.model_id names a Thinking variant",
    ),
    (
        "tiny-on-skyrl",
        "single-gpu",
        {"model": {"path": "tiny"}},
        r"model.path='tiny' is the embedded CPU model, which vLLM cannot serve",
    ),
    (
        "relative-model",
        "single-gpu",
        {"model": {"path": "./qwen"}},
        r"model.path='./qwen' is neither a hub id",
    ),
    (
        "process-advantage",
        "single-gpu",
        {"grpo": {"advantage": "process"}},
        r"grpo.advantage='process' is implemented by the reference backend only",
    ),
    (
        "input-below-prompt",
        "single-gpu",
        {"rollout": {"max_input_tokens": 1024}},
        r"rollout.max_input_tokens=1024 is below rollout.max_prompt_tokens=2048",
    ),
    (
        "model-len-short",
        "single-gpu",
        {"rollout": {"max_model_len": 4096}},
        r"rollout.max_model_len=4096 is below max_input_tokens \+ max_new_tokens \(8320\)",
    ),
    (
        "mini-above-step",
        "single-gpu",
        {"trainer": {"mini_batch_size": 16}},
        r"trainer.mini_batch_size=16 exceeds data.prompts_per_step=8",
    ),
    (
        "mini-not-divisor",
        "hyperpod-6gpu",
        {"trainer": {"mini_batch_size": 5}},
        r"data.prompts_per_step=12 is not a multiple of trainer.mini_batch_size=5",
    ),
    (
        "uneven-over-gpus",
        "hyperpod-6gpu",
        {"trainer": {"mini_batch_size": 4}},
        r"32 episodes do not split evenly over 6 policy GPUs",
    ),
    (
        "micro-not-divisor",
        "hyperpod-6gpu",
        {"trainer": {"micro_batch_size": 3}},
        r"trainer.micro_batch_size=3 does not divide the 8 episodes each GPU gets",
    ),
    (
        "no-checkpoints",
        "single-gpu",
        {"checkpoint": {"interval": 0}},
        r"checkpoint.interval=0 turns SkyRL checkpoints off",
    ),
    (
        "vllm-memory-too-high",
        "single-gpu",
        {"rollout": {"gpu_memory_utilization": 0.99}},
        r"rollout.gpu_memory_utilization",
    ),
    (
        "megatron",
        "single-gpu",
        {"placement": {"strategy": "megatron"}},
        r"placement.strategy",
    ),
    (
        "unknown-logger",
        "single-gpu",
        {"logging": {"logger": "neptune"}},
        r"logging.logger",
    ),
    (
        "group-of-one",
        "single-gpu",
        {"grpo": {"group_size": 1}},
        r"grpo.group_size: group_size must be >= 2",
    ),
    (
        "unknown-field",
        "single-gpu",
        {"placement": {"gpus": 8}},
        r"placement.gpus: not a known field",
    ),
    ("zero-nodes", "single-gpu", {"placement": {"nodes": 0}}, r"placement.nodes"),
    # issue 42 item 1: values at numeric extremes are refused where they are given, not in torch
    ("temperature-underflows", "single-gpu", {"rollout": {"temperature": 1e-320}}, r"rollout.temperature: must be >= 0.01"),
    ("seed-beyond-64-bit", "single-gpu", {"trainer": {"seed": 2**64}}, r"trainer.seed: must be <= 9223372036854775807"),
    ("seed-below-64-bit", "single-gpu", {"trainer": {"seed": -(2**63) - 1}}, r"trainer.seed: must be >= -9223372036854775808"),
    ("task-seed-beyond-64-bit", "single-gpu", {"task": {"options": {"seed": 2**80}}}, r"seed: must be <= 9223372036854775807"),
]


def test_table_is_large_enough():
    assert len(BAD) >= 20
    assert len({row[0] for row in BAD}) == len(BAD)


@pytest.mark.parametrize(
    ("preset", "overrides", "message"),
    [row[1:] for row in BAD],
    ids=[row[0] for row in BAD],
)
def test_bad_config_cannot_be_built(preset, overrides, message):
    with pytest.raises(ConfigError, match=message):
        RunConfig.from_preset(preset, **overrides)
    data = preset_dict(preset, overrides)
    # Every other way of building one fails too (pydantic's own error type).
    with pytest.raises(ValidationError):
        RunConfig.model_validate(data)
    with pytest.raises(ValidationError):
        RunConfig(**data)
    with pytest.raises(ValidationError):
        RunConfig.model_validate_json(json.dumps(data))


def test_all_cross_field_problems_are_reported_together():
    with pytest.raises(ConfigError) as info:
        RunConfig.from_preset(
            "hyperpod-6gpu",
            placement={"num_engines": 5},
            storage={"shared": False},
            lora={"rank": 48},
        )
    text = str(info.value)
    assert "must equal rollout GPUs" in text and "storage.shared=true" in text and "lora.rank=48" in text
    assert text.startswith("invalid run config:\n  ")


def test_unknown_preset_names_the_choices():
    with pytest.raises(
        ConfigError,
        match="unknown run preset 'hyperpod-8gpu': use one of hyperpod-6gpu, hyperpod-6gpu-sft, single-node-8gpu, single-gpu",
    ):
        RunConfig.from_preset("hyperpod-8gpu")


def test_dotted_override_through_a_value_fails():
    with pytest.raises(ConfigError, match="'run_id' is not a section"):
        RunConfig.from_preset("single-gpu", **{"run_id.x": 1})


def test_good_overrides_apply():
    cfg = RunConfig.from_preset("hyperpod-6gpu", run_id="exp-7", lora={"rank": 16}, **{"grpo.lr": 1e-5})
    assert (cfg.run_id, cfg.lora.rank, cfg.lora.alpha, cfg.grpo.lr) == (
        "exp-7",
        16,
        32.0,
        1e-5,
    )
    assert cfg.placement.nodes == 3  # untouched preset values survive a partial section override
