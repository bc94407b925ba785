"""``RunConfig`` (``stage='sft'``) -> SkyRL 0.3.0's own SFT trainer overrides (the only module with its key names).

SkyRL 0.3.0 ships a supervised trainer, ``skyrl.train.sft_trainer.SFTTrainer``, configured by
``skyrl.train.config.sft_config.SFTConfig`` (``SFTConfig.from_cli_overrides(dict)``, then
``validate_sft_cfg`` and ``build_skyrl_config_for_sft``; entry point ``skyrl.train.main_sft``).
The SkyRL backend's SFT stage (:mod:`hyperpod_rl.train.skyrl_sft`) writes the demonstrations as a
chat-format parquet dataset (column ``messages``, one example per demonstration turn, the loss on
the last assistant message: SkyRL's only mode for images) and hands SkyRL these overrides;
``tests/config/test_skyrl_sft_contract.py`` loads them through SkyRL's own loader and validator.

=====================================  ======================================
``dataset_name``                       ``<run dir>/sft-data`` (``train.parquet``; split ``train``)
``ckpt_path``                          ``<run dir>/checkpoints``
``export_path``                        ``<run dir>/skyrl-export``
``cache_dir``                          ``<run dir>/sft-cache`` (tokenized dataset)
=====================================  ======================================
"""

from __future__ import annotations

from pathlib import Path

from hyperpod_rl.config.run import RunConfig
from hyperpod_rl.errors import ConfigError

__all__ = ["SFT_DATA_DIR", "to_skyrl_sft_overrides"]

#: Sub-directory of the run directory holding the demonstration dataset SkyRL's SFT trainer reads.
SFT_DATA_DIR = "sft-data"


def to_skyrl_sft_overrides(cfg: RunConfig, run_dir: str | Path) -> dict[str, object]:
    """Translate an SFT-stage SkyRL config into ``skyrl.train.config.sft_config.SFTConfig`` overrides.

    Args:
        cfg: a validated config with ``backend='skyrl'`` and ``stage='sft'``.
        run_dir: the run directory on the cluster.

    Returns:
        ``{dotted SFTConfig key: value}``. ``batch_size`` counts SkyRL examples, here demonstration
        turns: ``sft.rows_per_step`` of them per step.

    Raises:
        ConfigError: not a SkyRL SFT config.
    """
    if cfg.backend != "skyrl" or cfg.stage != "sft":
        raise ConfigError(
            f"backend={cfg.backend!r}, stage={cfg.stage!r}: only backend='skyrl', stage='sft' configs translate to SkyRL's SFT trainer"
        )
    rd = Path(run_dir)
    lo, pl, tr, ck, sft = cfg.lora, cfg.placement, cfg.trainer, cfg.checkpoint, cfg.sft
    return {
        "strategy": pl.strategy,
        "model.path": cfg.model.path,
        "model.lora.rank": lo.rank,
        "model.lora.alpha": int(lo.alpha) if float(lo.alpha).is_integer() else lo.alpha,
        "model.lora.dropout": lo.dropout,
        "model.lora.target_modules": lo.target_modules if isinstance(lo.target_modules, str) else list(lo.target_modules),
        "model.lora.exclude_modules": lo.exclude_modules,
        "optimizer_config.lr": sft.lr,
        "optimizer_config.weight_decay": sft.weight_decay,
        "optimizer_config.max_grad_norm": sft.max_grad_norm,
        "placement.num_nodes": pl.nodes,
        "placement.num_gpus_per_node": pl.gpus_per_node,
        "fsdp_config.cpu_offload": pl.cpu_offload,
        # SkyRL 0.3.0 reads one dataset with datasets.load_dataset(dataset_name, split=dataset_split):
        # a local folder of parquet files loads as the split "train".
        "dataset_name": str(rd / SFT_DATA_DIR),
        "dataset_split": "train",
        "messages_key": "messages",
        "train_on_what": "last_assistant_message",
        # images: padded micro batches (the THD packing path needs flash_attn and drops nothing for VLMs)
        "remove_microbatch_padding": False,
        "max_length": cfg.rollout.max_prompt_tokens + cfg.rollout.max_new_tokens,
        "num_steps": tr.steps,
        "batch_size": sft.rows_per_step,
        "micro_train_batch_size_per_gpu": tr.micro_batch_size,
        "seed": tr.seed,
        "num_workers": 0,
        "cache_dir": str(rd / "sft-cache"),
        "ckpt_path": str(rd / "checkpoints"),
        "ckpt_interval": ck.interval,
        "max_ckpts_to_keep": ck.keep,
        "resume_from": "latest" if ck.resume == "latest" else "",
        "export_path": str(rd / "skyrl-export"),
        "hf_save_interval": tr.steps,
        "logger": cfg.logging.logger,
        "project_name": cfg.logging.project_name,
        "run_name": cfg.run_id,
    }
