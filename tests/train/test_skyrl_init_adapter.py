"""GRPO from an adapter on the SkyRL backend (issue 39 item 3): SkyRL's own policy, sharded by FSDP2, starts
from ``model.init_adapter``.

SkyRL 0.3.0's ``HFModelWrapper`` builds the tiny Qwen3-VL policy with a fresh LoRA exactly as its FSDP
worker does; ``fully_shard`` shards it (gloo on the CPU, one rank); :func:`load_into_policy` loads an adapter
into it. Its logits must then be PEFT's own for the same base model and adapter
(``PeftModel.from_pretrained``): the first step's policy is the adapter. CPU only.
"""

from __future__ import annotations

import json
import socket

import pytest
import torch

from hyperpod_rl.errors import ConfigError
from hyperpod_rl.train.skyrl_init_adapter import CHECK_FILE, adapter_key, load_into_policy, read_check


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def gloo_group(monkeypatch):
    import torch.distributed as dist

    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", str(_free_port()))
    dist.init_process_group("gloo", rank=0, world_size=1)
    try:
        yield
    finally:
        dist.destroy_process_group()


@pytest.fixture
def flash_attn_standin(tmp_path_factory, monkeypatch):
    """The GPU kit's flash_attn stand-in on sys.path (benchmarks/gpu/kit.py): SkyRL 0.3.0's model_wrapper imports
    flash_attn.bert_padding at module level, and flash-attn (a CUDA build) is not installed here either."""
    import sys

    from benchmarks.gpu.kit import FLASH_ATTN_STANDIN

    root = tmp_path_factory.mktemp("standin")
    for rel, text in FLASH_ATTN_STANDIN.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    monkeypatch.syspath_prepend(str(root))
    yield
    for name in [
        m for m in sys.modules if m == "flash_attn" or m.startswith(("flash_attn.", "skyrl.backends.skyrl_train.workers.model_wrapper"))
    ]:
        del sys.modules[name]


def _skyrl_policy(model_dir):
    """The policy as SkyRL 0.3.0's FSDP worker builds it (fsdp_worker.FSDPPolicyWorkerBase.init_model), on the CPU."""
    from skyrl.backends.skyrl_train.workers.model_wrapper import HFModelWrapper

    return HFModelWrapper(
        str(model_dir),
        use_flash_attention_2=False,
        bf16=False,
        lora_rank=8,
        lora_alpha=16,
        lora_dropout=0.0,
        target_modules="all-linear",
        exclude_modules=r".*visual.*",
    )


def _adapter(tmp_path, model_dir):
    """A PEFT adapter of the tiny model whose B matrices are not zero (so it changes the logits)."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForImageTextToText

    torch.manual_seed(1)
    base = AutoModelForImageTextToText.from_pretrained(str(model_dir), torch_dtype=torch.float32)
    cfg = LoraConfig(r=8, lora_alpha=16, target_modules="all-linear", exclude_modules=r".*visual.*", init_lora_weights=False)
    peft = get_peft_model(base, cfg)
    out = tmp_path / "adapter"
    peft.save_pretrained(str(out))
    return out


def _logits(model, model_dir):
    from hyperpod_rl.model.loading import load_processor

    processor = load_processor(model_dir)
    ids = processor.tokenizer("<answer>up</answer> left down", return_tensors="pt")["input_ids"]
    with torch.no_grad():
        return model(input_ids=ids).logits.float()


def test_adapter_key_is_peft_saved_name():
    assert adapter_key("base_model.model.model.language_model.layers.3.self_attn.q_proj.lora_A.default.weight") == (
        "base_model.model.model.language_model.layers.3.self_attn.q_proj.lora_A.weight"
    )
    assert adapter_key("base_model.model.model.language_model.layers.3.self_attn.q_proj.base_layer.weight") is None
    assert adapter_key("base_model.model.model.embed_tokens.weight") is None


def test_sharded_skyrl_policy_starts_from_the_adapter(tiny_setup, tmp_path, gloo_group, flash_attn_standin):
    from peft import PeftModel
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from transformers import AutoModelForImageTextToText

    model_dir = tiny_setup["model_dir"]
    adapter = _adapter(tmp_path, model_dir)
    wrapped = _skyrl_policy(model_dir)
    fresh = _logits(wrapped.model, model_dir)
    fully_shard(wrapped.model, mesh=init_device_mesh("cpu", (1,)))
    assert any(hasattr(p, "full_tensor") for p in wrapped.model.parameters())  # really sharded (DTensor parameters)

    check = load_into_policy(wrapped.model, adapter, run_dir=tmp_path, rank=0)
    assert check["equal"] and check["max_abs_diff"] == 0.0
    assert check["tensors"] == check["lora_parameters"] > 0
    assert read_check(tmp_path) == check and json.loads((tmp_path / CHECK_FILE).read_text())["tensors"] == check["tensors"]

    reference = PeftModel.from_pretrained(
        AutoModelForImageTextToText.from_pretrained(str(model_dir), torch_dtype=torch.float32), str(adapter)
    )
    want = _logits(reference, model_dir)
    got = _logits(wrapped.model, model_dir)
    assert not torch.allclose(fresh, want, atol=1e-3)  # the adapter matters
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)


def test_adapter_of_other_modules_is_refused_naming_them(tiny_setup, tmp_path, flash_attn_standin):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForImageTextToText

    model_dir = tiny_setup["model_dir"]
    base = AutoModelForImageTextToText.from_pretrained(str(model_dir), torch_dtype=torch.float32)
    get_peft_model(base, LoraConfig(r=8, target_modules=["q_proj"], exclude_modules=r".*visual.*")).save_pretrained(str(tmp_path / "a"))
    with pytest.raises(ConfigError, match=r"LoRA parameters have no tensor .* use the lora.target_modules and lora.exclude_modules"):
        load_into_policy(_skyrl_policy(model_dir).model, tmp_path / "a")
    assert not (tmp_path / CHECK_FILE).exists()
