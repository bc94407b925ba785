"""The sections of a :class:`~hyperpod_rl.config.run.RunConfig`, one per SkyRL 0.3.0 config group.

Each field states its unit and what its default means (attribute docstrings or ``description``,
which the notebook forms show as tooltips).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from hyperpod_rl.base import Model, Seed

__all__ = [
    "MAX_TEMPERATURE",
    "MIN_TEMPERATURE",
    "CheckpointConfig",
    "DataConfig",
    "GRPOConfig",
    "LoRAConfig",
    "LoggingConfig",
    "ModelConfig",
    "PlacementConfig",
    "RolloutConfig",
    "StorageConfig",
    "TaskConfig",
    "TrainerConfig",
]


#: Lowest positive sampling temperature. Logits are divided by it in float32: below it the
#: quotient overflows for large logits, and a subnormal temperature (1e-320) is zero to torch, so
#: sampling gets inf and nan. vLLM raises smaller temperatures to the same 0.01
#: (``vllm/sampling_params.py``, ``_MAX_TEMP``); here they are refused where they are given.
MIN_TEMPERATURE = 0.01
#: Highest sampling temperature a request may ask for (OpenAI's chat-completions limit).
MAX_TEMPERATURE = 2.0


class _Section(Model):
    # a number field takes no inf or nan (reported: --lr inf was accepted and the job crashed in torch)
    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True, use_attribute_docstrings=True, allow_inf_nan=False)


class ModelConfig(_Section):
    """The base model (SkyRL: ``trainer.policy.model.path``)."""

    path: str = Field(
        "tiny",
        description="'tiny' builds the embedded random-init Qwen3-VL; otherwise a local Qwen3-VL checkpoint directory",
    )
    model_id: str | None = Field(
        None,
        description="id recorded in provenance; defaults to the path or the tiny model id",
    )
    revision: str | None = Field(
        None,
        description="base model revision; filled with the directory's content hash when the run starts",
    )
    init_adapter: str | None = Field(
        None,
        description="LoRA adapter directory the run starts from (e.g. an SFT run's adapter/; --from-run RUN_ID fills it); "
        "None: a fresh adapter. It must have been trained on the same base model revision and LoRA rank",
    )
    tiny_hidden_size: int = Field(128, gt=0, description="text hidden size of the tiny model (multiple of 32)")
    tiny_layers: int = Field(2, gt=0, description="decoder layers of the tiny model")

    @model_validator(mode="after")
    def _check(self) -> ModelConfig:
        if self.tiny_hidden_size % 32:
            raise ValueError(f"model.tiny_hidden_size must be a multiple of 32, got {self.tiny_hidden_size}")
        for name, value in (("path", self.path), ("model_id", self.model_id)):
            if value and "thinking" in value.lower():
                raise ValueError(
                    f"model.{name} names a Thinking variant ({value!r}): use an Instruct model (multi-turn "
                    "image-token mismatch, SkyRL issue #2075)"
                )
        return self


class LoRAConfig(_Section):
    """LoRA adapter (SkyRL: ``trainer.policy.model.lora.*``; peft ``LoraConfig``)."""

    rank: int = Field(16, gt=0, le=256, description="LoRA rank r")
    alpha: float = Field(32.0, gt=0, description="LoRA alpha (scaling = alpha / rank)")
    dropout: float = Field(0.0, ge=0, lt=1, description="LoRA dropout probability")
    target_modules: list[str] | Literal["all-linear"] = Field(
        "all-linear", description="peft target_modules; 'all-linear' as SkyRL's default"
    )
    exclude_modules: str | None = Field(
        r".*visual.*",
        description="regex of modules left without LoRA; the vision tower by default so rollout "
        "(vLLM: LoRA on the language model only) and training policies match",
    )
    max_serving_rank: int = Field(
        64,
        gt=0,
        description="vLLM --max-lora-rank of the deployment that will serve the adapter; a higher rank "
        "cannot be served, so training it is refused",
    )


class GRPOConfig(_Section):
    """GRPO (Shao et al. 2024, DeepSeekMath, arXiv:2402.03300) with a PPO-clipped loss.

    SkyRL keys: ``trainer.algorithm.{advantage_estimator=grpo, use_kl_loss, kl_loss_coef,
    eps_clip_low, eps_clip_high}``, ``generator.n_samples_per_prompt``.
    """

    group_size: int = Field(
        8,
        description="samples per maze (the group), SkyRL generator.n_samples_per_prompt",
    )
    clip_eps: float = Field(0.2, gt=0, lt=1, description="PPO ratio clip epsilon")
    kl_coef: float = Field(
        0.0,
        ge=0,
        description="KL-to-reference-model loss coefficient; 0 turns the reference model off",
    )
    entropy_coef: float = Field(
        0.01,
        ge=0,
        description="entropy bonus coefficient (keeps a tiny policy from collapsing)",
    )
    normalize_std: bool = Field(True, description="divide group-relative advantages by the group std")
    advantage: Literal["outcome", "process"] = Field(
        "outcome",
        description="'outcome': every turn gets its episode's group-normalised return (SkyRL's grpo); "
        "'process': step rewards normalised over the group, advantage = sum of later normalised rewards "
        "(DeepSeekMath §4.1.3 process supervision)",
    )
    gamma: float = Field(1.0, ge=0, le=1, description="discount over turns for advantage='process'")
    lr: float = Field(
        5e-4,
        gt=0,
        description="AdamW learning rate (3e-3 made the tiny policy collapse to one answer)",
    )
    weight_decay: float = Field(0.0, ge=0)
    max_grad_norm: float = Field(1.0, gt=0, description="gradient clipping (L2 norm)")
    loss_reduction: Literal["token_mean", "sequence_mean", "prompt_mean"] = Field(
        "token_mean",
        description="SkyRL trainer.algorithm.loss_reduction (the reference backend always uses token_mean)",
    )
    is_correction: Literal["token_truncate", "none"] = Field(
        "token_truncate",
        description="off-policy correction when a separate engine (vLLM) sampled the rollouts: 'token_truncate' weights "
        "each token's policy-gradient term by min(pi_train / pi_engine, is_cap) (truncated importance sampling, "
        "Yao et al. 2025; SkyRL/verl 'tis'); 'none' trusts the engine's samples as on-policy",
    )
    is_cap: float = Field(2.0, ge=1.0, description="upper bound C of the truncated importance weight min(ratio, C)")

    @field_validator("group_size")
    @classmethod
    def _group_size(cls, value: int) -> int:
        if value < 2:
            raise ValueError("group_size must be >= 2 (group-relative advantages need at least two samples per maze)")
        return value


class RolloutConfig(_Section):
    """Multi-turn rollouts through the maze env."""

    max_turns: int = Field(6, gt=0, description="turn limit per episode")
    temperature: float = Field(1.0, ge=MIN_TEMPERATURE, description="sampling temperature during training rollouts")
    action_constraint: Literal["directions", "none"] = Field(
        "directions",
        description="'directions': the answer is <answer>DIR</answer> with DIR sampled from the four "
        "direction tokens (constrained decoding, needed for tiny random models; on the SkyRL backend vLLM samples only "
        "the answer words, the answer tags and end-of-turn, and the policy learns the structure); 'none': free generation",
    )
    max_new_tokens: int = Field(
        32,
        gt=0,
        description="response token limit per turn (SkyRL generator.sampling_params.max_generate_length)",
    )
    engine: Literal["auto", "hf", "vllm"] = Field(
        "auto",
        description="the reference backend's rollout engine: 'vllm' one colocated vLLM engine on the training GPU "
        "(sleeps during the update; the adapter reloaded every step), 'hf' transformers generate in the trainer; "
        "'auto': vLLM on a CUDA GPU where vllm imports and action_constraint='none', else hf",
    )
    engine_sleep: bool = Field(
        True,
        description="the reference backend's vLLM engine sleeps during the policy update (weights to CPU, KV cache "
        "dropped) and wakes for the next rollout; false keeps it awake beside the update (no sleep/wake each step, "
        "the engine's memory and the update's held at once: `hyperpod-rl plan` adds them up). SkyRL's colocated "
        "engines always sleep",
    )
    decode: Literal["auto", "eager", "compiled"] = Field(
        "auto",
        description="free generation on the reference backend: 'compiled' decodes with a static KV cache and a "
        "torch.compile'd step (CUDA graphs on a GPU; batch and length padded to buckets so shapes repeat), "
        "'eager' with the dynamic cache; 'auto': compiled on CUDA, eager on the CPU",
    )
    max_prompt_tokens: int = Field(
        2048,
        gt=0,
        description="longest first prompt, image tokens included (SkyRL trainer.max_prompt_length; longer rows are dropped)",
    )
    max_input_tokens: int = Field(
        8192,
        gt=0,
        description="longest conversation fed back at any turn (SkyRL generator.max_input_length)",
    )
    gpu_memory_utilization: float = Field(
        0.8,
        gt=0,
        le=0.95,
        description="fraction of each GPU vLLM may take for weights + KV cache while awake",
    )
    max_model_len: int | None = Field(
        None,
        gt=0,
        description="vLLM max_model_len (engine_init_kwargs); None lets vLLM use the model's limit",
    )
    max_num_seqs: int = Field(
        256,
        gt=0,
        description="vLLM max_num_seqs: sequences decoded together per engine",
    )


class TaskConfig(_Section):
    """The task the run trains on: a registered task plug-in (:mod:`hyperpod_rl.tasks`) and its options.

    ``options`` is the JSON form of the task's options model (for the maze:
    :class:`~hyperpod_rl.tasks.maze.DatasetSpec`), the settings its dataset was generated with; it is
    validated against that model, and every bad option is named as ``task.options.<field>``.
    """

    name: str = Field("maze", description="registered task name (hyperpod-rl tasks list)")
    options: dict[str, Any] = Field(
        default_factory=dict,
        description="the task's options (its options model as JSON); empty: the task's defaults",
    )

    @model_validator(mode="before")
    @classmethod
    def _name_alone(cls, value: Any) -> Any:
        """``task: maze`` is short for ``task: {name: maze}`` (the task's default options); the same config and hash."""
        return {"name": value} if isinstance(value, str) else value

    @field_validator("name")
    @classmethod
    def _known(cls, value: str) -> str:
        from hyperpod_rl.errors import HyperpodRLError
        from hyperpod_rl.tasks import get_task

        try:
            get_task(value)
        except HyperpodRLError as err:
            raise ValueError(str(err)) from None
        return value

    def option_problems(self) -> list[str]:
        """One line per invalid option, as ``task.options.<field>: <problem> (got <value>)``."""
        from hyperpod_rl.errors import HyperpodRLError
        from hyperpod_rl.tasks import get_task

        model = get_task(self.name).options_model
        try:
            model.build(self.options)
        except HyperpodRLError as err:
            lines = [line.strip().removeprefix(f"{model.__name__}.") for line in str(err).splitlines()]
            lines = [line for line in lines if line and not line.startswith("invalid ")]
            return [f"task.options.{line}" for line in lines] or [f"task.options: {err}"]
        return []

    @property
    def is_default(self) -> bool:
        """The maze with its default options (left out of :meth:`RunConfig.config_hash`)."""
        return self.name == "maze" and not self.options

    def resolved_options(self) -> Any:
        """The options as the task's options model (defaults filled in)."""
        from hyperpod_rl.tasks import get_task

        return get_task(self.name).options_model.build(self.options)


class DataConfig(_Section):
    """Dataset paths and the batch (SkyRL: ``data.train_data`` / ``data.val_data``, ``trainer.train_batch_size``).

    A row is one prompt of the task's dataset (one maze, one screen, one document); each is played
    ``grpo.group_size`` times. ``mazes_per_step`` is the deprecated name of ``prompts_per_step``.
    """

    renamed_fields: ClassVar[Mapping[str, str]] = {"mazes_per_step": "prompts_per_step"}
    renamed_prefix: ClassVar[str] = "data."

    train_path: str = Field(..., description="parquet of train rows (SkyRL dataset format)")
    heldout_path: str = Field(..., description="parquet of held-out rows")
    prompts_per_step: int = Field(
        8,
        gt=0,
        description="dataset rows (prompts) per GRPO step (train batch = prompts_per_step * group_size episodes)",
    )


class TrainerConfig(_Section):
    """Optimisation schedule. ``eval_mazes`` is the deprecated name of ``eval_rows``."""

    renamed_fields: ClassVar[Mapping[str, str]] = {"eval_mazes": "eval_rows"}
    renamed_prefix: ClassVar[str] = "trainer."

    steps: int = Field(120, gt=0, description="GRPO steps (SkyRL trainer.max_training_steps)")
    seed: Seed = Field(0, description="seed for Python, NumPy and torch (a signed 64-bit integer)")
    eval_rows: int = Field(200, gt=0, description="held-out rows evaluated before and after training")
    micro_batch_size: int = Field(
        64,
        gt=0,
        description="samples per forward/backward chunk (per GPU under SkyRL: micro_train_batch_size_per_gpu "
        "and micro_forward_batch_size_per_gpu)",
    )
    torch_threads: int | None = Field(
        None,
        description="torch intra-op threads of the job (OMP_NUM_THREADS); unset: the submitting shell's OMP_NUM_THREADS, "
        "else its CPU count",
    )
    device: Literal["auto", "cpu", "cuda"] = Field(
        "auto",
        description="reference backend: where the policy runs; 'auto' takes the first CUDA GPU the process sees, else the CPU; "
        "'cuda' makes a Ray job reserve one GPU (entrypoint_num_gpus=1)",
    )
    dtype: Literal["auto", "float32", "bfloat16"] = Field(
        "auto",
        description="reference backend: base-model weight dtype; 'auto' is bfloat16 on GPUs that support it, float32 "
        "elsewhere (LoRA weights and AdamW state stay float32)",
    )
    mini_batch_size: int | None = Field(
        None,
        gt=0,
        description="rows (prompts) per optimizer step (SkyRL trainer.policy_mini_batch_size); None = data.prompts_per_step, one update per step",
    )
    epochs: int = Field(
        100,
        gt=0,
        description="upper bound on passes over the train set (SkyRL trainer.epochs); training stops at `steps`",
    )
    gradient_checkpointing: bool = Field(
        True,
        description="recompute activations in backward (SkyRL trainer.gradient_checkpointing)",
    )
    checkpoint_layers: float = Field(
        1.0,
        ge=0,
        le=1,
        allow_inf_nan=False,
        description="reference backend on a GPU, with gradient_checkpointing: share of the language decoder layers (the first "
        "ones) whose activations are recomputed in backward; the others keep theirs (faster, more memory)",
    )
    checkpoint_policy: Literal["full", "save_matmuls"] = Field(
        "full",
        description="reference backend on a GPU, with gradient_checkpointing: 'full' recomputes each checkpointed layer; "
        "'save_matmuls' keeps the outputs of matrix multiplies and attention and recomputes only element-wise work "
        "(selective activation checkpointing: on one H200 with compile_layers, the 8B update at 16 x 807 tokens ran at "
        "47% instead of 36% MFU, peak 87 instead of 25 GiB; docs/gpu.md)",
    )
    compile_layers: bool = Field(
        False,
        description="reference backend: torch.compile each language decoder layer, used by the policy update only (the "
        "rollout's prefill and scoring passes stay eager: their shapes change on every call; docs/gpu.md)",
    )
    eval_interval: int = Field(
        0,
        ge=0,
        description="steps between SkyRL evaluations on the held-out set; 0 turns them off",
    )
    workers: int = Field(
        1,
        ge=1,
        description="reference backend: data-parallel training processes on one node (Ray Train TorchTrainer, DDP); each "
        "rolls out data.prompts_per_step / workers whole groups and takes one GPU when device='cuda'; 1 trains in the job's "
        "own process",
    )


class CheckpointConfig(_Section):
    """Checkpoints (SkyRL: ``trainer.ckpt_interval``, ``trainer.ckpt_path``, ``trainer.hf_save_interval``)."""

    interval: int = Field(40, ge=0, description="steps between checkpoints; 0 turns them off")
    export_interval: int = Field(
        0,
        ge=0,
        description="SkyRL backend: steps between Hugging Face-format exports of the policy (its LoRA adapter) to "
        "<run dir>/skyrl-export (SkyRL trainer.hf_save_interval); 0: none, the adapter is exported once from the final "
        "checkpoint (to <run dir>/adapter, as always); the reference backend ignores it",
    )
    keep: int = Field(2, gt=0, description="checkpoints kept on disk")
    resume: Literal["latest", "none"] = Field(
        "latest",
        description="'latest': a resubmitted run continues from its newest checkpoint (SkyRL resume_mode=latest); "
        "'none': always start at step 0",
    )


class PlacementConfig(_Section):
    """Where the policy and the rollout engines run (SkyRL ``trainer.placement.*``,
    ``generator.inference_engine.{num_engines, tensor_parallel_size}``, ``trainer.strategy``).

    With ``colocate_all`` every GPU holds one FSDP2 policy shard and one (sleeping while training)
    vLLM engine shard, so ``nodes * gpus_per_node`` must equal ``num_engines * tensor_parallel_size``.
    """

    nodes: int = Field(
        1,
        gt=0,
        description="GPU worker nodes holding policy shards (SkyRL policy_num_nodes)",
    )
    gpus_per_node: int = Field(
        1,
        gt=0,
        description="GPUs per node used by the policy (SkyRL policy_num_gpus_per_node)",
    )
    colocate_all: bool = Field(True, description="policy, reference model and vLLM engines share the same GPUs")
    num_engines: int = Field(1, gt=0, description="vLLM rollout engines")
    tensor_parallel_size: int = Field(1, gt=0, description="GPUs per vLLM engine (tensor parallel)")
    strategy: Literal["fsdp"] = Field("fsdp", description="policy sharding: FSDP2 (SkyRL trainer.strategy=fsdp)")
    cpu_offload: bool = Field(False, description="FSDP2 CPU offload of policy parameters and optimizer state")

    @property
    def policy_gpus(self) -> int:
        """GPUs holding policy shards (the FSDP world size)."""
        return self.nodes * self.gpus_per_node

    @property
    def rollout_gpus(self) -> int:
        """GPUs taken by the vLLM engines."""
        return self.num_engines * self.tensor_parallel_size


class StorageConfig(_Section):
    """Where a run's files live, as the cluster sees them.

    A run's directory is ``<root>/runs/<run_id>``; the SkyRL backend puts ``ckpt_path``
    (``checkpoints/``), ``export_path`` (``skyrl-export/``) and ``lora_sync_path`` (``lora-sync/``)
    inside it. Across nodes the adapter reaches the vLLM engines through ``lora_sync_path`` on disk,
    so a multi-node run needs ``root`` on shared storage (FSx for Lustre at ``/fsx`` on HyperPod).
    """

    root: str | None = Field(
        None,
        description="storage root on the cluster (e.g. /fsx/hyperpod-rl); None: the job's HYPERPOD_RL_STORAGE "
        "or the default data directory",
    )
    shared: bool = Field(
        False,
        description="True when root is on storage every node mounts (FSx, EFS, NFS)",
    )

    @field_validator("root")
    @classmethod
    def _absolute(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith("/"):
            raise ValueError(f"storage.root must be an absolute path on the cluster (e.g. /fsx/hyperpod-rl), got {value!r}")
        return value


class LoggingConfig(_Section):
    """Metric sinks besides ``metrics.jsonl`` (always written). SkyRL ``trainer.{logger, project_name}``."""

    logger: Literal["console", "tensorboard", "wandb", "mlflow"] = Field(
        "console",
        description="SkyRL tracker backend; 'wandb' needs WANDB_API_KEY in the job's environment",
    )
    project_name: str = Field("hyperpod-rl", min_length=1, description="project name in wandb / mlflow")
