"""Cross-field rules of :class:`~hyperpod_rl.config.run.RunConfig`, checked when it is built.

Each rule returns one line that starts with the dotted field(s) at fault and ends with the fix.
The SkyRL rules mirror checks SkyRL 0.3.0 makes later, at job start on the cluster
(``skyrl.train.utils.utils.validate_cfg`` / ``validate_batch_sizes``), so they fail on the
laptop before anything is submitted, with this package's field names, and add the rules SkyRL
does not make (shared storage across nodes, LoRA rank the server can take, vision-tower LoRA).
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath
from typing import Protocol

from hyperpod_rl.base import listed
from hyperpod_rl.config.sections import (
    CheckpointConfig,
    DataConfig,
    GRPOConfig,
    LoRAConfig,
    ModelConfig,
    PlacementConfig,
    RolloutConfig,
    StorageConfig,
    TaskConfig,
    TrainerConfig,
)


class RunConfig(Protocol):
    """The parts of :class:`hyperpod_rl.config.run.RunConfig` the rules read (this module sits below it)."""

    @property
    def run_id(self) -> str: ...
    @property
    def backend(self) -> str: ...
    @property
    def task(self) -> TaskConfig: ...
    @property
    def model(self) -> ModelConfig: ...
    @property
    def lora(self) -> LoRAConfig: ...
    @property
    def grpo(self) -> GRPOConfig: ...
    @property
    def rollout(self) -> RolloutConfig: ...
    @property
    def data(self) -> DataConfig: ...
    @property
    def trainer(self) -> TrainerConfig: ...
    @property
    def checkpoint(self) -> CheckpointConfig: ...
    @property
    def placement(self) -> PlacementConfig: ...
    @property
    def storage(self) -> StorageConfig: ...


__all__ = [
    "HUB_ID",
    "QWEN3_VL_LANGUAGE_LINEARS",
    "QWEN3_VL_VISION_LINEARS",
    "VISION_MODULE_EXAMPLES",
    "VLLM_LORA_RANKS",
    "cross_field_problems",
    "is_hub_id",
]

#: Ranks vLLM accepts for ``max_lora_rank`` (``vllm/config/lora.py``: ``MaxLoRARanks``). SkyRL
#: starts its engines with ``max_lora_rank = lora.rank``, so any other rank fails at engine start.
VLLM_LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)

#: Qwen3-VL vision-tower module names (transformers 5 ``Qwen3VLForConditionalGeneration``); the
#: LoRA ``exclude_modules`` regex must match all of them (peft matches with ``re.fullmatch``).
VISION_MODULE_EXAMPLES = (
    "model.visual.blocks.0.attn.qkv",
    "model.visual.blocks.0.mlp.linear_fc1",
    "model.visual.merger.linear_fc2",
)

#: Leaf names of the ``nn.Linear`` modules of a Qwen3-VL language model and output head
#: (transformers 5 ``Qwen3VLForConditionalGeneration``: ``model.language_model.layers.N.self_attn.*``,
#: ``.mlp.*``, ``lm_head``); ``tests/model`` checks them against the tiny model's modules.
QWEN3_VL_LANGUAGE_LINEARS = ("down_proj", "gate_proj", "k_proj", "lm_head", "o_proj", "q_proj", "up_proj", "v_proj")
#: Leaf names of the vision tower's linears (``model.visual.blocks.N.attn.{qkv, proj}``,
#: ``.mlp.linear_fc{1,2}``, ``model.visual.merger.linear_fc{1,2}``).
QWEN3_VL_VISION_LINEARS = ("linear_fc1", "linear_fc2", "proj", "qkv")

#: A Hugging Face hub model id (``org/name``).
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")

_NODE_LOCAL_PREFIXES = ("/tmp", "/var/tmp", "/dev/shm", "/root", "/home")


def is_hub_id(path: str) -> bool:
    """True when ``path`` reads as a hub id (``Qwen/Qwen3-VL-8B-Instruct``) rather than a path."""
    return bool(HUB_ID.fullmatch(path)) and not path.startswith((".", "~"))


def cross_field_problems(cfg: RunConfig) -> list[str]:
    """Every cross-field problem of ``cfg``, one line each (empty when valid)."""
    problems = (
        _model_path(cfg)
        + _task(cfg)
        + _lora_targets(cfg)
        + _prompt_budget(cfg)
        + _workers(cfg)
        + _update_layers(cfg)
        + _decode(cfg)
        + _engine(cfg)
    )
    if cfg.backend == "skyrl":
        problems += _skyrl(cfg)
    return problems


def _task(cfg: RunConfig) -> list[str]:
    from hyperpod_rl.tasks import get_task

    problems = cfg.task.option_problems()
    task = get_task(cfg.task.name)
    if cfg.rollout.action_constraint == "directions" and not task.answer_words:
        problems.append(
            f"rollout.action_constraint='directions' decodes one of the task's answer words, but task {task.name!r} "
            "has none (free-form answers): use rollout.action_constraint='none'"
        )
    return problems


def _model_path(cfg: RunConfig) -> list[str]:
    path = cfg.model.path
    if cfg.backend == "reference":
        if path != "tiny" and not Path(path).expanduser().is_dir():
            return [
                (
                    f"model.path={path!r} is not a directory: pass a local Qwen3-VL checkpoint "
                    "directory (config.json + weights + processor files), or 'tiny'"
                )
            ]
        return []
    if path == "tiny":
        return [
            "model.path='tiny' is the embedded CPU model, which vLLM cannot serve: use a Qwen3-VL Instruct hub id or a checkpoint directory on the cluster"
        ]
    if not (is_hub_id(path) or path.startswith("/")):
        return [
            f"model.path={path!r} is neither a hub id (org/name) nor an absolute path on the cluster: pass e.g. Qwen/Qwen3-VL-8B-Instruct or /fsx/models/Qwen3-VL-8B-Instruct"
        ]
    return []


def _update_layers(cfg: RunConfig) -> list[str]:
    """``trainer.checkpoint_layers`` / ``checkpoint_policy`` / ``compile_layers``: the reference backend's update knobs."""
    tr = cfg.trainer
    changed = [
        f"trainer.{name}={value!r}"
        for name, value, default in (
            ("checkpoint_layers", tr.checkpoint_layers, 1.0),
            ("checkpoint_policy", tr.checkpoint_policy, "full"),
            ("compile_layers", tr.compile_layers, False),
        )
        if value != default
    ]
    if not changed:
        return []
    if cfg.backend != "reference":
        these, them = ("these set", "them") if len(changed) > 1 else ("this sets", "it")
        return [f"{', '.join(changed)}: {these} the reference backend's policy update; SkyRL's FSDP2 workers ignore {them}: remove {them}"]
    if not tr.gradient_checkpointing and any("checkpoint_" in c for c in changed):
        return [
            f"{', '.join(c for c in changed if 'checkpoint_' in c)} shape gradient checkpointing, which is off: set trainer.gradient_checkpointing=true or remove them"
        ]
    return []


def _engine(cfg: RunConfig) -> list[str]:
    """``rollout.engine`` picks the reference backend's rollout engine; SkyRL always rolls out with vLLM."""
    ro = cfg.rollout
    problems = []
    if ro.engine != "auto" and cfg.backend == "skyrl":
        problems.append(f"rollout.engine={ro.engine!r} picks the reference backend's rollout engine; SkyRL rolls out with vLLM: remove it")
    if not ro.engine_sleep and (cfg.backend == "skyrl" or ro.engine == "hf"):
        who = "SkyRL's colocated engines always sleep" if cfg.backend == "skyrl" else "rollout.engine='hf' runs no vLLM engine"
        problems.append(f"rollout.engine_sleep=false keeps the reference backend's vLLM engine awake, but {who}: remove it")
    if ro.engine == "vllm" and ro.action_constraint != "none":
        problems.append(
            "rollout.engine='vllm' decodes free text, but rollout.action_constraint='directions' samples one answer word from a "
            "single forward pass: set action_constraint='none' or rollout.engine='auto'"
        )
    return problems


def _decode(cfg: RunConfig) -> list[str]:
    """``rollout.decode`` picks how the reference backend decodes free generation; it has nothing else to apply to."""
    ro = cfg.rollout
    if ro.decode == "auto":
        return []
    if cfg.backend != "reference":
        return [f"rollout.decode={ro.decode!r} sets the reference backend's decoding; SkyRL rolls out with vLLM: remove it"]
    if ro.action_constraint == "directions":
        return [
            f"rollout.decode={ro.decode!r} applies to free generation, but rollout.action_constraint='directions' samples one "
            "answer word from a single forward pass and decodes no tokens: remove rollout.decode or set action_constraint='none'"
        ]
    return []


def _workers(cfg: RunConfig) -> list[str]:
    """``trainer.workers``: the reference backend's data-parallel processes, each rolling out whole groups.

    GRPO advantages are relative within a group, so a group never crosses workers: every worker
    takes ``data.prompts_per_step / trainer.workers`` rows of each step's batch.
    """
    workers, mazes = cfg.trainer.workers, cfg.data.prompts_per_step
    if workers == 1:
        return []
    if cfg.backend != "reference":
        return [
            f"trainer.workers={workers} sets the reference backend's data-parallel processes; the SkyRL backend places its "
            "GPUs with placement.nodes and placement.gpus_per_node: set trainer.workers=1"
        ]
    if mazes % workers:
        lower = max(d for d in range(1, workers + 1) if mazes % d == 0)
        return [
            f"data.prompts_per_step={mazes} does not split into whole groups over trainer.workers={workers} (each worker rolls "
            f"out data.prompts_per_step / trainer.workers rows, grpo.group_size episodes each): set data.prompts_per_step to a "
            f"multiple of {workers} (e.g. {-(-mazes // workers) * workers}) or trainer.workers to a divisor of {mazes} (e.g. {lower})"
        ]
    return []


def _lora_targets(cfg: RunConfig) -> list[str]:
    """Every ``lora.target_modules`` entry must name a linear of Qwen3-VL (the one model family trained).

    peft matches an entry against a module name or its dotted suffix, so an entry's last component
    must be one of the known leaf names; a vision-tower name is useless while ``exclude_modules``
    keeps LoRA off the vision tower. After wrapping, :func:`hyperpod_rl.model.lora.wrap_lora`
    checks the real model again.
    """
    lo = cfg.lora
    if isinstance(lo.target_modules, str):
        return []
    known = set(QWEN3_VL_LANGUAGE_LINEARS) | set(QWEN3_VL_VISION_LINEARS)
    vision_excluded = lo.exclude_modules is not None and all(re.fullmatch(lo.exclude_modules, m) for m in VISION_MODULE_EXAMPLES)
    valid = sorted(QWEN3_VL_LANGUAGE_LINEARS) if vision_excluded else sorted(known)
    bad = [e for e in lo.target_modules if e.rsplit(".", 1)[-1] not in valid]
    if not bad:
        return []
    why = f" outside lora.exclude_modules={lo.exclude_modules!r}" if vision_excluded else ""
    return [
        f"lora.target_modules entries {listed(bad)} match no Qwen3-VL module{why}: valid names are {listed(valid)} (or 'all-linear'); "
        "peft would skip them silently"
    ]


def _prompt_budget(cfg: RunConfig) -> list[str]:
    """``rollout.max_prompt_tokens`` must hold the dataset's images (their token counts are in the rows).

    Checked when the dataset files are readable here (the ``image_tokens`` column); the real
    prompt lengths (text + image tokens) are filtered by the trainers
    (:func:`hyperpod_rl.model.prompts.filter_rows`), which report how many rows they drop.
    """
    limit = cfg.rollout.max_prompt_tokens
    out = []
    for field, path in (("data.train_path", cfg.data.train_path), ("data.heldout_path", cfg.data.heldout_path)):
        counts = _image_token_counts(path)
        if counts and limit < max(counts):
            out.append(
                f"rollout.max_prompt_tokens={limit} is below the image tokens of the prompts in {field} "
                f"({min(counts)}-{max(counts)} tokens per prompt image, before any text): raise it to at least "
                f"{max(counts)} plus the prompt text (e.g. {max(counts) + 256})"
            )
    return out


def _image_token_counts(path: str) -> list[int]:
    """The ``image_tokens`` column of a local parquet dataset; empty when unreadable here."""
    source = Path(path).expanduser()
    if not source.is_file():
        return []
    try:
        import pyarrow.parquet as pq

        column = pq.read_table(source, columns=["image_tokens"]).column("image_tokens").to_pylist()
    except Exception:  # noqa: BLE001 - not a maze parquet (or not parquet): the trainers' filter decides
        return []
    return [int(v) for v in column if v is not None]


def _skyrl(cfg: RunConfig) -> list[str]:
    out: list[str] = []
    pl, ro, tr, lo = cfg.placement, cfg.rollout, cfg.trainer, cfg.lora
    group = cfg.grpo.group_size

    # placement
    if pl.colocate_all and pl.policy_gpus != pl.rollout_gpus:
        out.append(
            f"placement: policy GPUs (nodes {pl.nodes} x gpus_per_node {pl.gpus_per_node} = {pl.policy_gpus}) must equal "
            f"rollout GPUs (num_engines {pl.num_engines} x tensor_parallel_size {pl.tensor_parallel_size} = {pl.rollout_gpus}) "
            "under colocate_all: change num_engines or tensor_parallel_size"
        )
    if pl.tensor_parallel_size > pl.gpus_per_node:
        out.append(
            f"placement.tensor_parallel_size={pl.tensor_parallel_size} exceeds gpus_per_node={pl.gpus_per_node}: "
            "a vLLM engine must fit on one node; lower tensor_parallel_size"
        )

    # storage across nodes
    if pl.nodes > 1:
        root = cfg.storage.root
        if not cfg.storage.shared or root is None:
            out.append(
                f"storage: a {pl.nodes}-node run writes ckpt_path, export_path and lora_sync_path under the storage root, "
                "and every node reads them (the adapter reaches the vLLM engines through lora_sync_path on disk): "
                "set storage.root to shared storage (e.g. /fsx/hyperpod-rl) and storage.shared=true"
            )
        elif any(PurePosixPath(root).is_relative_to(prefix) for prefix in _NODE_LOCAL_PREFIXES):
            out.append(
                f"storage.root={root!r} is node-local on a {pl.nodes}-node run: ckpt_path, export_path and lora_sync_path "
                "must be on shared storage; use the FSx mount (e.g. /fsx/hyperpod-rl)"
            )

    # LoRA
    if lo.rank not in VLLM_LORA_RANKS:
        out.append(
            f"lora.rank={lo.rank} is not a rank vLLM can serve (max_lora_rank must be one of {listed(VLLM_LORA_RANKS)}): pick one of those"
        )
    if lo.max_serving_rank not in VLLM_LORA_RANKS:
        up = next((r for r in VLLM_LORA_RANKS if r >= lo.max_serving_rank), VLLM_LORA_RANKS[-1])
        out.append(
            f"lora.max_serving_rank={lo.max_serving_rank} is not a --max-lora-rank vLLM starts with (one of {listed(VLLM_LORA_RANKS)}): use {up}"
        )
    if lo.rank > lo.max_serving_rank:
        out.append(
            f"lora.rank={lo.rank} is above the serving limit lora.max_serving_rank={lo.max_serving_rank} "
            "(vLLM --max-lora-rank): lower lora.rank or raise the server's limit"
        )
    if lo.target_modules == "all-linear":
        pattern = lo.exclude_modules
        missed = [m for m in VISION_MODULE_EXAMPLES if pattern is None or not re.fullmatch(pattern, m)]
        if missed:
            out.append(
                f"lora.exclude_modules={pattern!r} leaves LoRA on the vision tower ({missed[0]}), which vLLM does not serve, "
                "so rollout and training policies would differ: use '.*visual.*'"
            )
    else:
        vision = [m for m in lo.target_modules if "visual" in m]
        if vision:
            out.append(
                f"lora.target_modules names vision-tower modules {vision}, which vLLM does not serve: target language-model linears only"
            )

    # algorithm
    if cfg.grpo.advantage != "outcome":
        out.append(
            "grpo.advantage='process' is implemented by the reference backend only; SkyRL's grpo estimator "
            "uses outcome advantages: set grpo.advantage='outcome'"
        )
    # lengths
    if ro.max_input_tokens < ro.max_prompt_tokens:
        out.append(
            f"rollout.max_input_tokens={ro.max_input_tokens} is below rollout.max_prompt_tokens={ro.max_prompt_tokens}: "
            "a multi-turn conversation starts with the prompt, so raise max_input_tokens"
        )
    if ro.max_model_len is not None and ro.max_model_len < ro.max_input_tokens + ro.max_new_tokens:
        out.append(
            f"rollout.max_model_len={ro.max_model_len} is below max_input_tokens + max_new_tokens "
            f"({ro.max_input_tokens + ro.max_new_tokens}): raise max_model_len or lower those"
        )

    # batch sizes (SkyRL validate_batch_sizes, with this package's names)
    mazes = cfg.data.prompts_per_step
    mini = tr.mini_batch_size or mazes
    dp = pl.policy_gpus
    if mini > mazes:
        out.append(f"trainer.mini_batch_size={mini} exceeds data.prompts_per_step={mazes}: use at most {mazes}")
    elif mazes % mini:
        out.append(f"data.prompts_per_step={mazes} is not a multiple of trainer.mini_batch_size={mini}: make it one")
    elif (mini * group) % dp:
        out.append(
            f"trainer.mini_batch_size x grpo.group_size = {mini * group} episodes do not split evenly over {dp} policy GPUs: "
            "make it a multiple of the GPU count"
        )
    else:
        per_gpu = mini * group // dp
        if per_gpu % tr.micro_batch_size:
            out.append(
                f"trainer.micro_batch_size={tr.micro_batch_size} does not divide the {per_gpu} episodes each GPU gets per "
                f"optimizer step (mini_batch_size {mini} x group_size {group} / {dp} GPUs): pick a divisor of {per_gpu}"
            )

    # checkpoints: the adapter is exported from the last checkpoint
    if cfg.checkpoint.interval == 0:
        out.append(
            "checkpoint.interval=0 turns SkyRL checkpoints off, and the adapter is exported from the final checkpoint: "
            "set checkpoint.interval >= 1"
        )
    return out
