"""How the language decoder layers of a Qwen3-VL policy run: activation checkpointing and ``torch.compile``.

Two knobs of the reference trainer's policy update (``trainer.gradient_checkpointing``,
``trainer.checkpoint_layers``, ``trainer.compile_layers``):

* :func:`checkpoint_decoder_layers` recomputes activations in backward inside each layer's
  ``forward`` (``torch.utils.checkpoint``, non-reentrant), for all layers or a leading fraction of
  them, keeping everything (``"full"``) or keeping the outputs of matrix multiplies and attention
  (``"save_matmuls"``, selective activation checkpointing). Placing the checkpoint inside
  ``forward``, not around ``__call__`` as transformers' ``gradient_checkpointing_enable`` does,
  lets a compiled layer trace the checkpoint and its recompute as one graph.
* :func:`compile_decoder_layers` compiles each layer (``nn.Module.compile``) and returns a
  :class:`CompiledLayers` switch, so the compiled layers serve only the update, whose shapes repeat,
  and not the rollout's prefill and scoring passes, whose shapes change on every call.

Measured on one H200 (``python -m benchmarks.gpu.policy_update --suite ckpt``, docs/gpu.md).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from typing import Any, Literal

import torch

from hyperpod_rl.errors import ConfigError

__all__ = [
    "RECOMPILE_LIMIT",
    "CheckpointPolicy",
    "CompiledLayers",
    "checkpoint_decoder_layers",
    "compile_decoder_layers",
    "decoder_layers",
    "raise_recompile_limit",
]

#: torch._dynamo's per-function recompile limit while compiling the policy: its decoder layers and decode
#: step see several shapes (batch and length buckets, micro batches), and torch's default (8) would
#: silently fall back to eager for the rest.
RECOMPILE_LIMIT = 64

CheckpointPolicy = Literal["full", "save_matmuls"]


def raise_recompile_limit() -> None:
    """Raise ``torch._dynamo.config.recompile_limit`` to at least :data:`RECOMPILE_LIMIT` (process-wide)."""
    import torch._dynamo

    torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, RECOMPILE_LIMIT)


def decoder_layers(model: Any, *, option: str = "trainer.compile_layers") -> torch.nn.ModuleList:
    """The language decoder layers of a Qwen3-VL model (``model.language_model.layers``), through a peft wrapper.

    Raises:
        ConfigError: the model has no such layers (not a Qwen3-VL layout); ``option`` names the setting to turn off.
    """
    inner = model.get_base_model() if hasattr(model, "get_base_model") else model
    layers = getattr(getattr(getattr(inner, "model", None), "language_model", None), "layers", None)
    if layers is None:
        raise ConfigError(f"{type(inner).__name__} has no model.language_model.layers: {option} needs a Qwen3-VL model; turn it off")
    return layers


def _save_matmuls_context() -> Any:
    """``context_fn`` of selective activation checkpointing: keep matmul and attention outputs, recompute the rest."""
    from torch.utils.checkpoint import create_selective_checkpoint_contexts

    aten = torch.ops.aten
    keep = [aten.mm.default, aten.addmm.default, aten.bmm.default]
    for name in ("_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention", "_scaled_dot_product_cudnn_attention"):
        if hasattr(aten, name):
            keep.append(getattr(aten, name).default)
    return create_selective_checkpoint_contexts(keep)


def _checkpointed_forward(forward: Any, policy: CheckpointPolicy, layer: torch.nn.Module, *args: Any, **kwargs: Any) -> Any:
    if not (layer.training and torch.is_grad_enabled()):
        return forward(*args, **kwargs)
    from torch.utils.checkpoint import checkpoint

    # as transformers' checkpointing does: no KV cache is written in a pass that runs twice
    kwargs = {**kwargs, "use_cache": False, **({"past_key_values": None} if "past_key_values" in kwargs else {})}
    extra = {"context_fn": _save_matmuls_context} if policy == "save_matmuls" else {}
    return checkpoint(forward, *args, use_reentrant=False, **extra, **kwargs)


def checkpoint_decoder_layers(model: Any, *, fraction: float = 1.0, policy: CheckpointPolicy = "full") -> int:
    """Activation checkpointing inside the forward of the first ``round(fraction x layers)`` decoder layers.

    Replaces transformers' own checkpointing of those layers (``gradient_checkpointing`` is turned
    off on every layer). It applies only in training mode with gradients on; inference passes run the
    layer as it is. Calling it again replaces the previous setting; ``fraction=0`` undoes it.

    Args:
        model: ``Qwen3VLForConditionalGeneration`` or a peft model around one.
        fraction: share of the layers to checkpoint, 0 to 1 (the first layers of the stack).
        policy: ``"full"`` recomputes the whole layer in backward; ``"save_matmuls"`` keeps the
            outputs of matrix multiplies and attention and recomputes only norms, activations and
            other element-wise work (``torch.utils.checkpoint.create_selective_checkpoint_contexts``).

    Returns:
        The number of layers checkpointed.

    Raises:
        ConfigError: ``fraction`` outside [0, 1], or the model is not a Qwen3-VL layout.
    """
    if not 0.0 <= fraction <= 1.0:
        raise ConfigError(f"checkpointed share of decoder layers must be within [0, 1] (got {fraction})")
    layers = decoder_layers(model, option="trainer.checkpoint_layers")
    count = round(fraction * len(layers))
    for i, layer in enumerate(layers):
        layer.__dict__.pop("forward", None)  # undo an earlier call: the class's forward again
        if hasattr(layer, "gradient_checkpointing"):
            layer.gradient_checkpointing = False
        if i < count:
            layer.forward = functools.partial(_checkpointed_forward, layer.forward, policy, layer)
    return count


class CompiledLayers:
    """Compiled decoder layers that run compiled only inside :meth:`active` (compiled code is kept between uses).

    Attributes:
        count: number of layers compiled.
    """

    def __init__(self, layers: torch.nn.ModuleList) -> None:
        self._layers = list(layers)
        self._compiled = [layer._compiled_call_impl for layer in self._layers]
        self.count = len(self._layers)
        self._set(False)

    def _set(self, on: bool) -> None:
        for layer, compiled in zip(self._layers, self._compiled, strict=True):
            layer._compiled_call_impl = compiled if on else None

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        """Within the block every layer calls its compiled forward; outside, the eager one."""
        self._set(True)
        try:
            yield
        finally:
            self._set(False)


def compile_decoder_layers(model: Any) -> CompiledLayers:
    """``torch.compile`` every language decoder layer (``nn.Module.compile``); they run compiled inside ``.active()``.

    Works through a peft wrapper (LoRA layers are compiled with the layer) and traces a checkpoint
    placed by :func:`checkpoint_decoder_layers`. Shapes may vary from call to call: torch marks a
    changing dimension dynamic after its first recompile (the recompile limit is raised to
    :data:`RECOMPILE_LIMIT`).

    Args:
        model: ``Qwen3VLForConditionalGeneration`` or a peft model around one.

    Returns:
        The switch of the compiled layers, off (eager) until its ``active()`` block.

    Raises:
        ConfigError: the model has no ``model.language_model.layers`` (not a Qwen3-VL layout).
    """
    layers = decoder_layers(model)
    raise_recompile_limit()
    for layer in layers:
        layer.compile()
    return CompiledLayers(layers)
