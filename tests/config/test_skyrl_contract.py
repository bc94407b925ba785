"""Contract: every RunConfig we produce loads and validates with SkyRL 0.3.0's own code.

``SkyRLTrainConfig.from_cli_overrides`` rejects unknown keys (a renamed SkyRL key fails here) and
``skyrl.train.utils.validate_cfg`` applies SkyRL's cross-field rules (placement, batch sizes,
lengths, LoRA). Both run on CPU; no GPU or vLLM is needed.
"""

from __future__ import annotations

import dataclasses
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

# skyrl==0.3.0 is a dev dependency: CI installs it, so a missing SkyRL fails here instead of skipping.
from skyrl.train.config import SkyRLTrainConfig
from skyrl.train.utils import validate_cfg

from hyperpod_rl.config.presets import preset_dict
from hyperpod_rl.config.run import RunConfig
from hyperpod_rl.config.skyrl import REQUIRED_VLM_KEYS, TIE_SAFE_ESTIMATOR, VISION_BAD_WORDS, require_vlm_keys, to_skyrl_overrides
from hyperpod_rl.errors import ConfigError
from hyperpod_rl.tasks.maze.registry import ENV_CLASS
from hyperpod_rl.train.skyrl_advantage import register_tie_safe_estimator

#: the GRPO presets (an SFT-stage preset translates to SkyRL's SFT trainer: tests/config/test_skyrl_sft_contract.py)
GRPO_PRESETS = [n for n in RunConfig.presets() if RunConfig.from_preset(n).stage == "grpo"]


@pytest.fixture(autouse=True, scope="module")
def _estimator():
    """The job registers the tie-safe estimator before validate_cfg; so do these tests."""
    register_tie_safe_estimator()


def _skyrl(cfg: RunConfig):
    loaded = SkyRLTrainConfig.from_cli_overrides(to_skyrl_overrides(cfg))
    validate_cfg(loaded)
    return loaded


@pytest.mark.parametrize("name", GRPO_PRESETS)
def test_preset_round_trips_through_skyrl_loader_and_validator(name):
    cfg = RunConfig.from_preset(name)
    loaded = _skyrl(cfg)
    pl = cfg.placement
    # Values arrive where SkyRL reads them (not just "no error").
    assert loaded.trainer.policy.model.path == "Qwen/Qwen3-VL-8B-Instruct"
    assert loaded.trainer.policy.model.lora.rank == cfg.lora.rank == 32
    assert loaded.trainer.policy.model.lora.exclude_modules == r".*visual.*"
    assert loaded.trainer.strategy == "fsdp"
    assert loaded.trainer.placement.colocate_all is True
    assert loaded.trainer.placement.policy_num_nodes * loaded.trainer.placement.policy_num_gpus_per_node == pl.policy_gpus
    assert loaded.generator.inference_engine.num_engines * loaded.generator.inference_engine.tensor_parallel_size == pl.policy_gpus
    assert loaded.generator.n_samples_per_prompt == cfg.grpo.group_size
    assert loaded.trainer.algorithm.advantage_estimator == TIE_SAFE_ESTIMATOR
    assert loaded.trainer.max_training_steps == cfg.trainer.steps
    assert loaded.trainer.train_batch_size == cfg.data.prompts_per_step
    assert loaded.environment.env_class == ENV_CLASS
    run_dir = f"{cfg.storage.root}/runs/{cfg.run_id}"
    assert loaded.trainer.ckpt_path == f"{run_dir}/checkpoints"
    assert loaded.trainer.export_path == f"{run_dir}/skyrl-export"
    assert loaded.trainer.policy.model.lora.lora_sync_path == f"{run_dir}/lora-sync"
    # The same config, loaded twice, is the same SkyRL config (the translation is deterministic).
    assert SkyRLTrainConfig.from_cli_overrides(to_skyrl_overrides(cfg)) == SkyRLTrainConfig.from_cli_overrides(to_skyrl_overrides(cfg))


def test_seed_preset_reaches_skyrl_as_the_walkthrough_quotes_it():
    """Issue 29 item 5: the walkthrough's settings (as the issue quotes them) arrive at SkyRL's own keys."""
    loaded = _skyrl(RunConfig.from_preset("hyperpod-6gpu"))
    t, g = loaded.trainer, loaded.generator
    assert (t.placement.policy_num_nodes, t.placement.policy_num_gpus_per_node, t.strategy) == (3, 2, "fsdp")
    assert (g.inference_engine.num_engines, g.inference_engine.tensor_parallel_size) == (6, 1)
    assert g.inference_engine.gpu_memory_utilization == 0.45 and t.placement.colocate_all is True
    assert g.n_samples_per_prompt == 8 and g.max_turns == 15
    assert (t.eval_interval, t.ckpt_interval, t.hf_save_interval, t.resume_mode) == (10, 20, 20, "latest")
    assert t.policy.model.lora.rank == 32 and t.policy.model.lora.lora_sync_path.startswith("/fsx/")
    # SkyRL 0.3.0 syncs a LoRA adapter to the engines only through files in lora_sync_path (on FSx here):
    # it has no other sync mode (0.4's lora.sync_mode), so the path on shared storage is what matters.
    assert "sync_mode" not in {f.name for f in dataclasses.fields(t.policy.model.lora)}
    # export off (the default elsewhere) is SkyRL's -1
    assert _skyrl(RunConfig.from_preset("single-gpu")).trainer.hf_save_interval == -1


def test_sft_stage_does_not_translate_to_the_ppo_trainer():
    with pytest.raises(ConfigError, match=r"stage='sft': to_skyrl_overrides translates GRPO runs .*skyrl_sft.to_skyrl_sft_overrides"):
        to_skyrl_overrides(RunConfig.from_preset("hyperpod-6gpu-sft"))


@pytest.mark.parametrize("name", GRPO_PRESETS)
def test_every_sampling_parameter_reaches_vllm_explicitly(name):
    """Issue 14 items 2 and 11: the request vLLM gets sets every sampling parameter from the run
    config (nothing left for a generation_config.json to fill) and bans the vision tokens."""
    from skyrl.backends.skyrl_train.inference_servers.engine_utils import get_sampling_params_for_backend

    cfg = RunConfig.from_preset(name)
    loaded = _skyrl(cfg)
    train = get_sampling_params_for_backend("vllm", loaded.generator.sampling_params)
    assert {k: train[k] for k in ("temperature", "top_p", "top_k", "min_p", "repetition_penalty", "max_tokens")} == {
        "temperature": cfg.rollout.temperature,
        "top_p": 1.0,
        "top_k": -1,
        "min_p": 0.0,
        "repetition_penalty": 1.0,
        "max_tokens": cfg.rollout.max_new_tokens,
    }
    assert train["bad_words"] == list(VISION_BAD_WORDS)
    assert "<|image_pad|>" in train["bad_words"]
    evaluation = get_sampling_params_for_backend("vllm", loaded.generator.eval_sampling_params)
    assert evaluation["temperature"] == 0.0 and evaluation["bad_words"] == list(VISION_BAD_WORDS)
    assert evaluation["top_k"] == -1 and evaluation["repetition_penalty"] == 1.0


@pytest.mark.parametrize("name", GRPO_PRESETS)
def test_vlm_keys_are_set_and_reach_skyrl(name):
    cfg = RunConfig.from_preset(name)
    overrides = to_skyrl_overrides(cfg)
    for key, value in REQUIRED_VLM_KEYS.items():
        assert overrides[key] is value, key
    loaded = _skyrl(cfg)
    assert loaded.generator.vision_language_generator is True
    assert loaded.generator.batched is False
    assert loaded.trainer.remove_microbatch_padding is False


def test_skyrl_defaults_are_wrong_for_vlms():
    """The VLM keys must be set explicitly: SkyRL's defaults are the text-only ones."""
    default = SkyRLTrainConfig.from_cli_overrides({})
    for key, value in REQUIRED_VLM_KEYS.items():
        section, *rest = key.split(".")
        node = getattr(default, section)
        for part in rest:
            node = getattr(node, part)
        assert value is not True or node is not True, key
    assert default.generator.vision_language_generator is False
    assert default.trainer.remove_microbatch_padding is True


@pytest.mark.parametrize("missing", sorted(REQUIRED_VLM_KEYS))
def test_missing_vlm_key_fails(missing):
    overrides = to_skyrl_overrides(RunConfig.from_preset("single-gpu"))
    del overrides[missing]
    with pytest.raises(ConfigError, match=rf"{missing}='<missing>'"):
        require_vlm_keys(overrides)


@pytest.mark.parametrize("key", sorted(REQUIRED_VLM_KEYS))
def test_wrong_vlm_value_fails(key):
    overrides = to_skyrl_overrides(RunConfig.from_preset("single-gpu"))
    overrides[key] = not overrides[key]
    with pytest.raises(ConfigError, match=rf"{key}=.*needs"):
        require_vlm_keys(overrides)


def test_every_override_key_is_a_skyrl_key():
    """SkyRL refuses a key it does not know; prove it still does, with one of ours renamed."""
    overrides = to_skyrl_overrides(RunConfig.from_preset("single-gpu"))
    overrides["trainer.policy.model.lora.rnk"] = overrides.pop("trainer.policy.model.lora.rank")
    with pytest.raises(ValueError, match="rnk"):
        SkyRLTrainConfig.from_cli_overrides(overrides)


def test_reference_config_does_not_translate():
    with pytest.raises(ConfigError, match="backend='reference'"):
        to_skyrl_overrides(RunConfig.build({"run_id": "ref-run", "data": {"train_path": "t", "heldout_path": "h"}}))


def test_skyrl_rejects_what_we_reject_for_placement():
    """Our colocation rule is SkyRL's: 6 policy GPUs against 5 engines fails in both."""
    data = preset_dict("hyperpod-6gpu", {"placement": {"num_engines": 5}})
    with pytest.raises(ConfigError, match="must equal rollout GPUs"):
        RunConfig.build(data)
    overrides = to_skyrl_overrides(RunConfig.from_preset("hyperpod-6gpu"))
    overrides["generator.inference_engine.num_engines"] = 5
    with pytest.raises(AssertionError, match="num_policy_gpus"):
        validate_cfg(SkyRLTrainConfig.from_cli_overrides(overrides))


_topologies = st.sampled_from([(1, 1), (1, 2), (1, 4), (1, 8), (2, 2), (2, 4), (3, 2), (2, 8), (4, 8)])


@st.composite
def _valid_overrides(draw):
    """Overrides built to be valid: engines x TP = GPUs, batch sizes that partition evenly."""
    nodes, gpus = draw(_topologies)
    tp = draw(st.sampled_from([t for t in (1, 2, 4) if gpus % t == 0]))
    dp = nodes * gpus
    group = draw(st.integers(2, 16))
    mini = dp // math.gcd(dp, group) * draw(st.integers(1, 3))
    per_gpu = mini * group // dp
    return {
        "run_id": "gen-run",
        "placement": {
            "nodes": nodes,
            "gpus_per_node": gpus,
            "num_engines": dp // tp,
            "tensor_parallel_size": tp,
        },
        "storage": {"root": "/fsx/hyperpod-rl", "shared": True},
        "data": {"prompts_per_step": mini * draw(st.integers(1, 4))},
        "trainer": {
            "mini_batch_size": mini,
            "micro_batch_size": draw(st.sampled_from([m for m in (1, 2, 4, 8) if per_gpu % m == 0])),
        },
        "grpo": {"group_size": group, "kl_coef": draw(st.sampled_from([0.0, 0.001]))},
        "lora": {"rank": draw(st.sampled_from([8, 16, 32, 64]))},
        "rollout": {"max_turns": draw(st.integers(1, 8))},
    }


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(overrides=_valid_overrides())
def test_generated_valid_configs_load_and_validate_in_skyrl(overrides):
    cfg = RunConfig.from_preset("single-node-8gpu", **overrides)
    loaded = _skyrl(cfg)
    assert loaded.trainer.placement.policy_num_gpus_per_node == overrides["placement"]["gpus_per_node"]
    assert loaded.trainer.policy_mini_batch_size == overrides["trainer"]["mini_batch_size"]


def _skyrl_accepts(cfg: RunConfig) -> bool:
    try:
        validate_cfg(SkyRLTrainConfig.from_cli_overrides(to_skyrl_overrides(cfg)))
    except (AssertionError, ValueError):
        return False
    return True


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    topo=_topologies,
    tp=st.sampled_from([1, 2, 4]),
    engines=st.integers(1, 16),
    mazes=st.integers(1, 64),
    mini=st.integers(1, 64),
    group=st.integers(2, 16),
    micro=st.sampled_from([1, 2, 3, 4, 8]),
    turns=st.integers(1, 8),
)
def test_we_reject_whatever_skyrl_rejects(topo, tp, engines, mazes, mini, group, micro, turns):
    """Over arbitrary placements and batch sizes: SkyRL rejects => we reject; we accept => SkyRL accepts.

    The candidate is made with ``model_copy`` (no validation) so SkyRL sees it even when we would not.
    """
    nodes, gpus = topo
    base = RunConfig.from_preset("single-node-8gpu", storage={"root": "/fsx/hyperpod-rl", "shared": True})
    candidate = base.model_copy(
        update={
            "placement": base.placement.model_copy(
                update={
                    "nodes": nodes,
                    "gpus_per_node": gpus,
                    "num_engines": engines,
                    "tensor_parallel_size": tp,
                }
            ),
            "data": base.data.model_copy(update={"prompts_per_step": mazes}),
            "trainer": base.trainer.model_copy(update={"mini_batch_size": mini, "micro_batch_size": micro}),
            "grpo": base.grpo.model_copy(update={"group_size": group}),
            "rollout": base.rollout.model_copy(update={"max_turns": turns}),
        }
    )
    try:
        candidate.validated()
        ours = True
    except ConfigError:
        ours = False
    theirs = _skyrl_accepts(candidate)
    assert theirs or not ours, "we accepted a config SkyRL rejects"


def test_validated_catches_model_copy_bypass():
    cfg = RunConfig.from_preset("hyperpod-6gpu")
    broken = cfg.model_copy(update={"placement": cfg.placement.model_copy(update={"num_engines": 5})})
    with pytest.raises(ConfigError, match="must equal rollout GPUs"):
        broken.validated()
