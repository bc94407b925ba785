"""Contract (issue 29 item 1): an SFT-stage SkyRL config loads and validates with SkyRL 0.3.0's own SFT
config code, and the demonstration dataset passes SkyRL's own SFT tokenizer with its images. CPU only."""

from __future__ import annotations

import pytest

# skyrl==0.3.0 is a dev dependency: CI installs it, so a missing SkyRL fails here instead of skipping.
from skyrl.train.config.sft_config import SFTConfig, build_skyrl_config_for_sft, validate_sft_cfg
from skyrl.train.sft_trainer import tokenize_chat_example

from hyperpod_rl.config.run import RunConfig
from hyperpod_rl.config.skyrl_sft import to_skyrl_sft_overrides
from hyperpod_rl.errors import ConfigError


def _sft_preset(**overrides) -> RunConfig:
    return RunConfig.from_preset("hyperpod-6gpu-sft", **overrides)


def test_sft_overrides_load_and_validate_with_skyrl(tmp_path):
    cfg = _sft_preset()
    sft = SFTConfig.from_cli_overrides(to_skyrl_sft_overrides(cfg, tmp_path))
    validate_sft_cfg(sft)
    skyrl = build_skyrl_config_for_sft(sft)
    # values arrive where SkyRL reads them
    assert sft.model.path == cfg.model.path and sft.model.lora.rank == cfg.lora.rank == 32
    assert sft.model.lora.exclude_modules == r".*visual.*"
    assert sft.optimizer_config.lr == cfg.sft.lr and sft.num_steps == cfg.trainer.steps
    assert sft.batch_size == 48 and sft.micro_train_batch_size_per_gpu == cfg.trainer.micro_batch_size
    assert sft.placement.num_nodes * sft.placement.num_gpus_per_node == cfg.placement.policy_gpus == 6
    assert (sft.dataset_name, sft.dataset_split) == (str(tmp_path / "sft-data"), "train") and sft.messages_key == "messages"
    assert sft.train_on_what.value == "last_assistant_message" and sft.remove_microbatch_padding is False
    assert sft.resume_from == "latest" and sft.ckpt_path == str(tmp_path / "checkpoints")
    assert skyrl.trainer.strategy == "fsdp" and skyrl.trainer.placement.policy_num_gpus_per_node == 2
    assert sft.placement.num_nodes == 3 and sft.optimizer_config.lr == 1e-4  # the preset's own: the seed cluster, its SFT rate
    assert sft.ckpt_interval == 20 and sft.max_length == cfg.rollout.max_prompt_tokens + cfg.rollout.max_new_tokens


def test_sft_preset_is_the_stage_the_grpo_preset_names():
    """The hyperpod-6gpu-sft preset is hyperpod-6gpu with stage='sft' and its SFT batch: a config built either way is one config."""
    by_hand = RunConfig.from_preset("hyperpod-6gpu", run_id="hyperpod-6gpu-sft", stage="sft", **{"sft.rows_per_step": 48, "sft.lr": 1e-4})
    assert by_hand == _sft_preset()


def test_sft_batch_that_skyrl_would_refuse_is_refused_when_built():
    with pytest.raises(ConfigError, match=r"sft.rows_per_step=16 must split into 6 policy GPUs .* use a multiple of 12"):
        _sft_preset(**{"sft.rows_per_step": 16})


def test_grpo_configs_do_not_translate_to_sft(tmp_path):
    with pytest.raises(ConfigError, match="only backend='skyrl', stage='sft'"):
        to_skyrl_sft_overrides(RunConfig.from_preset("hyperpod-6gpu"), tmp_path)


def test_demonstration_dataset_passes_skyrls_own_tokenizer(tiny_setup, tmp_path):
    import datasets

    from hyperpod_rl.model.loading import load_base_model
    from hyperpod_rl.tasks import read_rows
    from hyperpod_rl.train.skyrl_sft import write_sft_dataset

    rows = list(read_rows(tiny_setup["data"].train))[:12]
    stats = write_sft_dataset("maze", rows, tmp_path / "sft-data", max_turns=6)
    assert stats["rows"] + stats["skipped"] == 12 and stats["examples"] >= stats["rows"]
    loaded = datasets.load_dataset(str(tmp_path / "sft-data"), split="train")  # as SkyRL 0.3.0 loads dataset_name / dataset_split
    assert len(loaded) == stats["examples"]
    _, processor, _ = load_base_model(tiny_setup["model_dir"])
    for example in loaded.select(range(3)):
        out = tokenize_chat_example(example, processor.tokenizer, None, processor=processor)
        assert out is not None and len(out["image_grid_thw"]) == 1  # exactly one image per example
        target = processor.tokenizer.decode(out["input_ids"][-out["num_actions"] :])
        assert target.startswith("<answer>") and "</answer>" in target
