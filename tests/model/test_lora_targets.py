"""Issue 14 item 4: LoRA target_modules entries that match nothing are refused, with the valid names."""

from __future__ import annotations

import pytest
import torch

from hyperpod_rl.config.run import RunConfig
from hyperpod_rl.config.sections import LoRAConfig
from hyperpod_rl.config.validate import QWEN3_VL_LANGUAGE_LINEARS, QWEN3_VL_VISION_LINEARS
from hyperpod_rl.errors import ConfigError
from hyperpod_rl.model.lora import canonicalize_adapter_config, count_from_weight_names, count_targets, linear_module_names, wrap_lora
from hyperpod_rl.model.tiny import build_tiny_qwen3vl

DATA = {"train_path": "t.parquet", "heldout_path": "h.parquet"}


def test_known_linear_names_match_the_qwen3_vl_architecture():
    model, _ = build_tiny_qwen3vl()
    leaves = {n.rsplit(".", 1)[-1] for n in linear_module_names(model)}
    assert leaves == set(QWEN3_VL_LANGUAGE_LINEARS) | set(QWEN3_VL_VISION_LINEARS)
    vision = {n.rsplit(".", 1)[-1] for n in linear_module_names(model) if ".visual." in n}
    assert vision == set(QWEN3_VL_VISION_LINEARS)


@pytest.mark.parametrize(
    ("targets", "message"),
    [
        (["q_proj", "v_prj"], r"lora.target_modules entries v_prj match no Qwen3-VL module"),
        (["self_attn.q_projection"], r"entries self_attn.q_projection match"),
        (["qkv"], r"entries qkv match no Qwen3-VL module outside lora.exclude_modules"),
    ],
)
def test_config_time_check_lists_the_valid_names(targets, message):
    with pytest.raises(ConfigError, match=message) as err:
        RunConfig.build({"run_id": "lora-check", "data": DATA, "lora": {"target_modules": targets}})
    assert "valid names are down_proj, gate_proj, k_proj, lm_head, o_proj, q_proj, up_proj, v_proj (or 'all-linear')" in str(err.value)


def test_config_time_check_accepts_real_names():
    cfg = RunConfig.build({"run_id": "lora-ok", "data": DATA, "lora": {"target_modules": ["q_proj", "self_attn.v_proj", "down_proj"]}})
    assert cfg.lora.target_modules == ["q_proj", "self_attn.v_proj", "down_proj"]
    with_vision = {"target_modules": ["qkv", "q_proj"], "exclude_modules": None}
    assert RunConfig.build({"run_id": "lora-ok", "data": DATA, "lora": with_vision}).lora.target_modules == ["qkv", "q_proj"]


def test_after_wrapping_counts_go_to_provenance_and_misses_fail():
    model, _ = build_tiny_qwen3vl()
    _, counts = wrap_lora(model, LoRAConfig(target_modules=["v_proj", "q_proj"]))
    assert counts == {"q_proj": 2, "v_proj": 2}  # two decoder layers
    bypass = LoRAConfig.model_construct(**{**LoRAConfig().model_dump(), "target_modules": ["q_proj", "v_prj"]})  # skips validation
    model, _ = build_tiny_qwen3vl()
    with pytest.raises(ConfigError, match=r"entries v_prj match no module of the model .*valid names are [a-z_, ]*q_proj"):
        wrap_lora(model, bypass)


def test_after_wrapping_works_for_any_model():
    """Any architecture: the check runs on the wrapped model, not on a list of known names."""
    model = torch.nn.Sequential()
    model.add_module("encoder", torch.nn.Linear(4, 4))
    model.add_module("head", torch.nn.Linear(4, 2))
    lora = LoRAConfig.model_construct(**{**LoRAConfig().model_dump(), "target_modules": ["encoder", "decoder"], "exclude_modules": None})
    with pytest.raises(
        ConfigError, match=r"entries decoder match no module of the model: valid names are encoder, head \(or 'all-linear'\)"
    ):
        wrap_lora(model, lora)


def test_counts_from_adapter_weight_names():
    keys = [
        "base_model.model.model.language_model.layers.0.self_attn.q_proj.lora_A.weight",
        "base_model.model.model.language_model.layers.0.self_attn.q_proj.lora_B.weight",
        "base_model.model.model.language_model.layers.1.self_attn.q_proj.lora_A.weight",
    ]
    assert count_from_weight_names(keys, ["q_proj", "v_prj"]) == {"q_proj": 2, "v_prj": 0}
    assert count_from_weight_names(keys, "all-linear") == {"q_proj": 2}
    assert count_targets(["a.q_proj", "a.xq_proj"], ["q_proj"]) == {"q_proj": 1}  # peft's suffix rule, not substrings


def test_export_refuses_an_adapter_whose_entry_wrapped_nothing(tmp_path):
    """SkyRL backend: the check runs on the exported adapter's weight names."""
    import json

    from safetensors.torch import save_file

    from hyperpod_rl.errors import CheckpointError
    from hyperpod_rl.train.skyrl_backend import export_adapter

    (tmp_path / "t.parquet").write_bytes(b"x")
    (tmp_path / "h.parquet").write_bytes(b"x")
    cfg = RunConfig.from_preset(
        "single-gpu", run_id="sky-lora", data={"train_path": str(tmp_path / "t.parquet"), "heldout_path": str(tmp_path / "h.parquet")}
    )
    cfg = cfg.model_copy(update={"lora": cfg.lora.model_copy(update={"target_modules": ["q_proj", "v_prj"]})})
    adapter = tmp_path / "run" / "checkpoints" / "global_step_1" / "policy" / "lora_adapter"
    adapter.mkdir(parents=True)
    save_file(
        {"base_model.model.model.language_model.layers.0.self_attn.q_proj.lora_A.weight": torch.ones(2, 2)},
        str(adapter / "adapter_model.safetensors"),
    )
    (adapter / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA", "target_modules": ["v_prj", "q_proj"]}))
    (tmp_path / "run" / "checkpoints" / "latest_ckpt_global_step.txt").write_text("1")
    with pytest.raises(CheckpointError, match=r"wraps no module for lora.target_modules entries v_prj \(it wraps q_proj\)"):
        export_adapter(cfg, tmp_path / "run", base_revision="rev")


def test_canonical_adapter_config_sorts(tmp_path):
    path = tmp_path / "adapter_config.json"
    path.write_text('{"target_modules": ["v_proj", "q_proj", "k_proj"], "r": 8, "peft_type": "LORA"}')
    canonicalize_adapter_config(path)
    assert (
        path.read_text()
        == '{\n  "peft_type": "LORA",\n  "r": 8,\n  "target_modules": [\n    "k_proj",\n    "q_proj",\n    "v_proj"\n  ]\n}\n'
    )
