"""``RunConfig`` -> SkyRL 0.3.0 dotted overrides. The only module that knows SkyRL's key names.

The result is the input of ``skyrl.train.config.SkyRLTrainConfig.from_cli_overrides`` (a dict of
``key.path -> value``; SkyRL serialises dict values as JSON, so bools, lists and dicts keep their
types). Key names are those of SkyRL 0.3.0's typed config (``skyrl/train/config/config.py``);
``tests/config`` loads every preset through SkyRL's own loader and ``validate_cfg``, so a renamed
key fails CI.

Run files (all under the run directory, which must be shared storage on a multi-node run):

=======================================  ==================================
``trainer.ckpt_path``                    ``<run dir>/checkpoints``
``trainer.export_path``                  ``<run dir>/skyrl-export``
``trainer.policy.model.lora.lora_sync_path``  ``<run dir>/lora-sync``
``trainer.log_path``                     ``<run dir>/skyrl-logs``
=======================================  ==================================
"""

from __future__ import annotations

from pathlib import Path

from hyperpod_rl.config.run import RunConfig
from hyperpod_rl.errors import ConfigError
from hyperpod_rl.tasks.answer import VISION_TOKENS

__all__ = [
    "REQUIRED_VLM_KEYS",
    "RUN_SUBDIRS",
    "TIE_SAFE_ESTIMATOR",
    "VISION_BAD_WORDS",
    "require_vlm_keys",
    "run_dir_of",
    "to_skyrl_overrides",
]

#: Keys SkyRL 0.3.0 needs for a vision-language policy, with their required values: the VLM gym
#: generator (``SkyRLVLMGymGenerator``), non-batched (multi-turn) generation, and padded micro
#: batches (the THD packing path does not carry ``pixel_values`` / ``image_grid_thw``).
REQUIRED_VLM_KEYS: dict[str, object] = {
    "generator.vision_language_generator": True,
    "generator.batched": False,
    "trainer.remove_microbatch_padding": False,
}

#: Name of the tie-safe GRPO advantage estimator the SkyRL backend registers in SkyRL's
#: ``AdvantageEstimatorRegistry`` (:mod:`hyperpod_rl.train.skyrl_advantage`): SkyRL's ``grpo``
#: turns the float32 residue of a tied group's mean into full-size advantages.
TIE_SAFE_ESTIMATOR = "hprl_grpo_tie_safe"

#: Qwen-VL vision special tokens (:data:`hyperpod_rl.tasks.answer.VISION_TOKENS`), passed to vLLM as
#: ``bad_words`` through ``generator.sampling_params.additional_kwargs`` (SkyRL 0.3.0
#: ``get_vllm_sampling_params`` forwards the extra keys; vLLM ``SamplingParams.bad_words``) so
#: sampled responses never contain one.
VISION_BAD_WORDS: tuple[str, ...] = tuple(VISION_TOKENS)

#: Sub-directories of the run directory that SkyRL writes.
RUN_SUBDIRS = {
    "ckpt_path": "checkpoints",
    "export_path": "skyrl-export",
    "lora_sync_path": "lora-sync",
    "log_path": "skyrl-logs",
}


def run_dir_of(cfg: RunConfig) -> Path:
    """The run directory as the cluster sees it: ``<storage.root>/runs/<run_id>``.

    With ``storage.root`` unset it is this environment's :func:`hyperpod_rl.paths.run_dir`.
    """
    if cfg.storage.root is not None:
        return Path(cfg.storage.root) / "runs" / cfg.run_id
    from hyperpod_rl.paths import run_dir

    return run_dir(cfg.run_id)


def require_vlm_keys(overrides: dict[str, object]) -> None:
    """Check that every key of :data:`REQUIRED_VLM_KEYS` is present with its required value.

    Raises:
        ConfigError: names each missing or wrong key.
    """
    bad = [
        f"{k}={overrides.get(k, '<missing>')!r} (needs {v!r})"
        for k, v in REQUIRED_VLM_KEYS.items()
        if k not in overrides or overrides[k] is not v
    ]
    if bad:
        raise ConfigError("SkyRL overrides miss keys a vision-language policy needs: " + "; ".join(bad))


def _alpha(value: float) -> int | float:
    # SkyRL types lora.alpha as int; keep integral alphas integral.
    return int(value) if float(value).is_integer() else value


def to_skyrl_overrides(cfg: RunConfig, run_dir: str | Path | None = None) -> dict[str, object]:
    """Translate ``cfg`` into SkyRL 0.3.0 dotted overrides.

    Args:
        cfg: a validated config with ``backend='skyrl'``.
        run_dir: the run directory on the cluster; default :func:`run_dir_of`.

    Returns:
        ``{dotted SkyRL key: value}``, including :data:`REQUIRED_VLM_KEYS`.

    Raises:
        ConfigError: ``cfg.backend`` is not ``'skyrl'``, or ``cfg.stage`` is not ``'grpo'``.
    """
    if cfg.backend != "skyrl":
        raise ConfigError(f"backend={cfg.backend!r}: only backend='skyrl' configs translate to SkyRL overrides; set backend='skyrl'")
    if cfg.stage != "grpo":
        raise ConfigError(
            f"stage={cfg.stage!r}: to_skyrl_overrides translates GRPO runs for SkyRL's PPO trainer; an SFT stage translates to "
            "SkyRL's SFT trainer with hyperpod_rl.config.skyrl_sft.to_skyrl_sft_overrides"
        )
    from hyperpod_rl.tasks import get_task

    env_class = get_task(cfg.task.name).env_class
    rd = Path(run_dir) if run_dir is not None else run_dir_of(cfg)
    pl, ro, tr, lo, g, ck = (
        cfg.placement,
        cfg.rollout,
        cfg.trainer,
        cfg.lora,
        cfg.grpo,
        cfg.checkpoint,
    )
    engine_kwargs: dict[str, object] = {}
    if ro.max_model_len is not None:
        engine_kwargs["max_model_len"] = ro.max_model_len
    # repetition_penalty travels only through additional_kwargs (SkyRL SamplingParams docstring);
    # bad_words keeps the vision special tokens out of sampled responses.
    sampling_extras: dict[str, object] = {"repetition_penalty": 1.0, "bad_words": list(VISION_BAD_WORDS)}
    # Single-turn generation: SkyRL requires max_input_length == max_prompt_length.
    max_input = ro.max_input_tokens if ro.max_turns > 1 else ro.max_prompt_tokens
    out: dict[str, object] = {
        # data
        "data.train_data": [cfg.data.train_path],
        "data.val_data": [cfg.data.heldout_path],
        "environment.env_class": env_class,
        # model + LoRA
        "trainer.policy.model.path": cfg.model.path,
        "trainer.policy.model.lora.rank": lo.rank,
        "trainer.policy.model.lora.alpha": _alpha(lo.alpha),
        "trainer.policy.model.lora.dropout": lo.dropout,
        "trainer.policy.model.lora.target_modules": lo.target_modules if isinstance(lo.target_modules, str) else list(lo.target_modules),
        "trainer.policy.model.lora.exclude_modules": lo.exclude_modules,
        "trainer.policy.model.lora.lora_sync_path": str(rd / RUN_SUBDIRS["lora_sync_path"]),
        # algorithm
        "trainer.algorithm.advantage_estimator": TIE_SAFE_ESTIMATOR,
        "trainer.algorithm.grpo_norm_by_std": g.normalize_std,
        "trainer.algorithm.eps_clip_low": g.clip_eps,
        "trainer.algorithm.eps_clip_high": g.clip_eps,
        "trainer.algorithm.use_kl_loss": g.kl_coef > 0,
        "trainer.algorithm.use_kl_in_reward": False,
        "trainer.algorithm.kl_loss_coef": g.kl_coef,
        "trainer.algorithm.use_entropy_loss": g.entropy_coef > 0,
        "trainer.algorithm.entropy_loss_coef": g.entropy_coef,
        "trainer.algorithm.loss_reduction": g.loss_reduction,
        "trainer.policy.optimizer_config.lr": g.lr,
        "trainer.policy.optimizer_config.weight_decay": g.weight_decay,
        "trainer.policy.optimizer_config.max_grad_norm": g.max_grad_norm,
        # generator (rollouts)
        "generator.n_samples_per_prompt": g.group_size,
        "generator.max_turns": ro.max_turns,
        "generator.max_input_length": max_input,
        # every sampling parameter explicit (SkyRL's servers also run with --generation-config vllm)
        "generator.sampling_params.temperature": ro.temperature,
        "generator.sampling_params.max_generate_length": ro.max_new_tokens,
        "generator.sampling_params.top_p": 1.0,
        "generator.sampling_params.top_k": -1,
        "generator.sampling_params.min_p": 0.0,
        "generator.sampling_params.additional_kwargs": sampling_extras,
        "generator.eval_sampling_params.temperature": 0.0,
        "generator.eval_sampling_params.max_generate_length": ro.max_new_tokens,
        "generator.eval_sampling_params.top_p": 1.0,
        "generator.eval_sampling_params.top_k": -1,
        "generator.eval_sampling_params.min_p": 0.0,
        "generator.eval_sampling_params.additional_kwargs": sampling_extras,
        "generator.inference_engine.backend": "vllm",
        "generator.inference_engine.num_engines": pl.num_engines,
        "generator.inference_engine.tensor_parallel_size": pl.tensor_parallel_size,
        "generator.inference_engine.gpu_memory_utilization": ro.gpu_memory_utilization,
        "generator.inference_engine.max_num_seqs": ro.max_num_seqs,
        "generator.inference_engine.engine_init_kwargs": engine_kwargs,
        # placement
        "trainer.strategy": pl.strategy,
        "trainer.placement.colocate_all": pl.colocate_all,
        "trainer.placement.policy_num_nodes": pl.nodes,
        "trainer.placement.policy_num_gpus_per_node": pl.gpus_per_node,
        "trainer.placement.ref_num_nodes": pl.nodes,
        "trainer.placement.ref_num_gpus_per_node": pl.gpus_per_node,
        "trainer.policy.fsdp_config.cpu_offload": pl.cpu_offload,
        # batches and schedule
        "trainer.train_batch_size": cfg.data.prompts_per_step,
        "trainer.policy_mini_batch_size": tr.mini_batch_size or cfg.data.prompts_per_step,
        "trainer.micro_train_batch_size_per_gpu": tr.micro_batch_size,
        "trainer.micro_forward_batch_size_per_gpu": tr.micro_batch_size,
        "trainer.max_prompt_length": ro.max_prompt_tokens,
        "trainer.epochs": tr.epochs,
        "trainer.max_training_steps": tr.steps,
        "trainer.seed": tr.seed,
        "trainer.gradient_checkpointing": tr.gradient_checkpointing,
        "trainer.eval_interval": tr.eval_interval if tr.eval_interval > 0 else -1,
        "trainer.eval_before_train": tr.eval_interval > 0,
        # checkpoints and export
        "trainer.ckpt_path": str(rd / RUN_SUBDIRS["ckpt_path"]),
        "trainer.ckpt_interval": ck.interval,
        "trainer.max_ckpts_to_keep": ck.keep,
        "trainer.resume_mode": ck.resume,
        "trainer.export_path": str(rd / RUN_SUBDIRS["export_path"]),
        "trainer.hf_save_interval": ck.export_interval if ck.export_interval > 0 else -1,
        # logging
        "trainer.logger": cfg.logging.logger,
        "trainer.project_name": cfg.logging.project_name,
        "trainer.run_name": cfg.run_id,
        "trainer.log_path": str(rd / RUN_SUBDIRS["log_path"]),
        **REQUIRED_VLM_KEYS,
    }
    require_vlm_keys(out)
    return out
