"""A SkyRL run that starts from an existing LoRA adapter (``model.init_adapter``): GRPO from an SFT warm start.

SkyRL 0.3.0's FSDP policy worker builds a fresh LoRA (``HFModelWrapper``: ``get_peft_model`` with
PEFT's default init) and has no key for a starting adapter. The SkyRL backend therefore hands
SkyRL's trainer its own policy worker class (:func:`policy_worker_class`), SkyRL's
``FSDPPolicyWorkerBase`` with one addition: once ``init_model`` has built and sharded the policy,
the adapter's tensors are copied into its LoRA parameters (:func:`load_into_policy`). SkyRL then
syncs the policy's LoRA to its vLLM engines before the first rollout (``RayPPOTrainer.train`` ->
``save_weights_for_sampler``), so the first step's rollouts and update both start from the adapter.
A resumed run loads its checkpoint after this, so the checkpoint's LoRA wins, as it must.

Each rank checks what it loaded: every LoRA parameter of the policy got a tensor of the adapter,
every tensor of the adapter found a parameter, and the parameter read back (gathered from its
FSDP2 shards) equals the file's tensor. Rank 0 writes the check to ``<run dir>/init_adapter_check.json``
(:data:`CHECK_FILE`), which the GPU end-to-end record reads; a mismatch raises, so a run never trains
silently from a fresh LoRA under a lineage that names its start.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from hyperpod_rl.errors import CheckpointError, ConfigError

__all__ = ["CHECK_FILE", "adapter_key", "load_into_policy", "policy_worker_class"]

#: Written by rank 0 into the run directory: what was loaded and how it compared.
CHECK_FILE = "init_adapter_check.json"

_ADAPTER_NAME = re.compile(r"\.(lora_[AB]|lora_embedding_[AB]|lora_magnitude_vector)\.default(\.|$)")


def adapter_key(param_name: str) -> str | None:
    """The key a saved PEFT adapter uses for the live parameter ``param_name``, or None if it is not a LoRA parameter.

    PEFT saves ``...q_proj.lora_A.weight`` for the live ``...q_proj.lora_A.default.weight``: it drops the
    adapter name (``peft/utils/save_and_load.py``, ``get_peft_model_state_dict``), and SkyRL's LoRA sync and
    checkpoints (``fsdp_utils.collect_lora_params``) save the same keys.

    Example:
        >>> adapter_key("base_model.model.model.language_model.layers.0.mlp.up_proj.lora_B.default.weight")
        'base_model.model.model.language_model.layers.0.mlp.up_proj.lora_B.weight'
        >>> adapter_key("base_model.model.model.language_model.layers.0.mlp.up_proj.base_layer.weight") is None
        True
    """
    if not _ADAPTER_NAME.search(param_name):
        return None
    return _ADAPTER_NAME.sub(lambda m: f".{m.group(1)}{m.group(2)}", param_name)


def _full(tensor: Any) -> Any:
    """A parameter's full value on this rank: FSDP2 shards (DTensor) gathered, plain tensors as they are."""
    full_tensor = getattr(tensor, "full_tensor", None)
    return full_tensor() if callable(full_tensor) else tensor


def load_into_policy(model: Any, adapter_dir: str | Path, *, run_dir: str | Path | None = None, rank: int = 0) -> dict[str, Any]:
    """Copy the adapter's LoRA tensors into the PEFT ``model`` (sharded by FSDP2 or not), then read them back.

    Args:
        model: SkyRL's policy model (``HFModelWrapper.model``: a ``PeftModel``, its modules possibly
            ``fully_shard``-ed); every rank calls this with the same adapter.
        adapter_dir: a PEFT adapter directory (``adapter_model.safetensors`` + ``adapter_config.json``),
            already checked against the run (:func:`hyperpod_rl.train.init_adapter.check_init_adapter`).
        run_dir: where rank 0 writes :data:`CHECK_FILE`; None writes nothing.
        rank: this process's rank (rank 0 writes the check).

    Returns:
        ``{"adapter", "tensors", "lora_parameters", "max_abs_diff", "equal"}``: the tensors loaded,
        the policy's LoRA parameters, and the largest absolute difference between a parameter read
        back and its file tensor (in the parameter's dtype).

    Raises:
        ConfigError: the adapter's tensors and the policy's LoRA parameters do not match one to one
            (another ``lora.target_modules`` / ``exclude_modules``) or differ in shape.
        CheckpointError: a parameter read back differs from its tensor.
    """
    import torch
    from safetensors.torch import load_file
    from torch.distributed.checkpoint.state_dict import StateDictOptions, set_model_state_dict

    adapter = Path(adapter_dir).expanduser()
    weights = load_file(str(adapter / "adapter_model.safetensors"))
    params = {name: p for name, p in model.named_parameters() if adapter_key(name) is not None}
    by_key = {adapter_key(name): name for name in params}
    missing = sorted(set(by_key) - set(weights))
    extra = sorted(set(weights) - set(by_key))
    if missing or extra:
        raise ConfigError(
            f"model.init_adapter {adapter}: {len(extra)} of its tensors have no LoRA parameter in the policy"
            f"{f' (e.g. {extra[0]})' if extra else ''} and {len(missing)} LoRA parameters have no tensor"
            f"{f' (e.g. {missing[0]})' if missing else ''}: use the lora.target_modules and lora.exclude_modules "
            "the adapter was trained with"
        )
    wrong = [k for k, name in by_key.items() if tuple(weights[k].shape) != tuple(params[name].shape)]
    if wrong:
        k = wrong[0]
        raise ConfigError(
            f"model.init_adapter {adapter}: {len(wrong)} tensors differ in shape from the policy's LoRA parameters "
            f"(e.g. {k}: {tuple(weights[k].shape)} vs {tuple(params[by_key[k]].shape)}): was it trained with another lora.rank?"
        )
    expected = {name: weights[k].to(dtype=params[name].dtype) for k, name in by_key.items()}
    # torch's distributed state-dict API scatters full tensors onto FSDP2 shards (and loads plain modules as
    # they are); it replaces the dict's values with the shards it made, so it gets a copy of the dict.
    set_model_state_dict(model, dict(expected), options=StateDictOptions(full_state_dict=True, strict=False))
    worst = 0.0
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name in expected:
                got = _full(p.detach()).to("cpu", torch.float32)
                worst = max(worst, float((got - expected[name].to(torch.float32)).abs().max()))
    check = {
        "adapter": str(adapter),
        "tensors": len(weights),
        "lora_parameters": len(params),
        "max_abs_diff": worst,
        "equal": worst == 0.0,
    }
    if run_dir is not None and rank == 0:
        from hyperpod_rl.runs.files import write_json_atomic

        write_json_atomic(Path(run_dir) / CHECK_FILE, check)
    if worst != 0.0:
        raise CheckpointError(
            f"model.init_adapter {adapter}: the policy's LoRA parameters read back differ from the adapter by up to {worst}"
        )
    return check


def policy_worker_class(adapter_dir: str, run_dir: str) -> Any:
    """SkyRL's FSDP policy worker as a Ray actor class that loads ``adapter_dir`` after building the policy.

    The class is made here, inside a function, so Ray ships it with the adapter path bound (by
    value); it is what :meth:`skyrl.train.trainer.RayPPOTrainer.build_models` receives as
    ``PolicyWorker``. SkyRL 0.3.0's own is ``ray.remote(num_gpus=1)(FSDPPolicyWorkerBase)``
    (``skyrl/backends/skyrl_train/workers/fsdp/fsdp_worker.py``); this one differs only in ``init_model``.
    """
    import ray
    import torch.distributed as dist
    from skyrl.backends.skyrl_train.workers.fsdp.fsdp_worker import FSDPPolicyWorkerBase

    class InitAdapterPolicyWorker(FSDPPolicyWorkerBase):  # type: ignore[misc, valid-type]
        def init_model(self, model_path: str, num_training_steps: int | None = None) -> None:
            super().init_model(model_path, num_training_steps)
            check = load_into_policy(self.model.model, adapter_dir, run_dir=run_dir, rank=dist.get_rank() if dist.is_initialized() else 0)
            print(
                f"policy LoRA initialised from {adapter_dir}: {check['tensors']} tensors, read back equal (max |diff| {check['max_abs_diff']})",
                flush=True,
            )

    return ray.remote(num_gpus=1)(InitAdapterPolicyWorker)


def read_check(run_dir: str | Path) -> dict[str, Any] | None:
    """The run's :data:`CHECK_FILE`, or None when it started from a fresh LoRA (or the file is unreadable)."""
    try:
        data = json.loads((Path(run_dir) / CHECK_FILE).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
