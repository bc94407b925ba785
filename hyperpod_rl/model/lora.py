"""LoRA targets: which modules each ``lora.target_modules`` entry wrapped, and canonical adapter files.

peft wraps a module when its name equals a ``target_modules`` entry or ends with ``"." + entry``
(``peft.tuners.tuners_utils.check_target_module_exists``) and silently skips entries that match
nothing, as long as one entry matches something; the saved ``adapter_config.json`` still lists
every entry. :func:`wrap_lora` therefore counts the modules each entry wrapped and refuses an
entry that wrapped none (the error lists the valid names), and the counts go into the adapter's
provenance (``lora_matched_modules``). The SkyRL backend counts the same way from the adapter's
weight names (:func:`count_from_weight_names`).

peft also writes ``target_modules`` in set order, which changes with Python's string hashing
from one process to the next; :func:`canonicalize_adapter_config` rewrites the file with sorted
lists and keys, so identical runs write identical bytes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from hyperpod_rl.base import listed
from hyperpod_rl.config.sections import LoRAConfig
from hyperpod_rl.errors import ConfigError

__all__ = [
    "canonicalize_adapter_config",
    "count_from_weight_names",
    "count_targets",
    "linear_module_names",
    "wrap_lora",
]

_LORA_WEIGHT = re.compile(r"^(?:base_model\.model\.)?(?P<module>.+?)\.lora_(?:A|B|embedding_A|embedding_B)(?:\.[^.]+)?(?:\.weight)?$")


def _matches(name: str, entry: str) -> bool:
    return name == entry or name.endswith("." + entry)


def count_targets(module_names: Iterable[str], target_modules: Sequence[str] | str) -> dict[str, int]:
    """How many of ``module_names`` each target entry matches (peft's rule for a list of names).

    Args:
        module_names: dotted names of the wrapped modules.
        target_modules: the entries, or ``"all-linear"`` (then: counts per leaf name).

    Returns:
        ``{entry: count}`` in sorted entry order.
    """
    names = sorted(set(module_names))
    if isinstance(target_modules, str):
        counts: dict[str, int] = {}
        for name in names:
            leaf = name.rsplit(".", 1)[-1]
            counts[leaf] = counts.get(leaf, 0) + 1
        return dict(sorted(counts.items()))
    return {entry: sum(_matches(n, entry) for n in names) for entry in sorted(set(target_modules))}


def count_from_weight_names(weight_names: Iterable[str], target_modules: Sequence[str] | str) -> dict[str, int]:
    """:func:`count_targets` over the modules named by a PEFT adapter's LoRA weight keys."""
    modules = {m.group("module") for key in weight_names if (m := _LORA_WEIGHT.match(key))}
    return count_targets(modules, target_modules)


def linear_module_names(model: Any, exclude_modules: str | None = None) -> list[str]:
    """Dotted names of the ``torch.nn.Linear`` modules of ``model`` not matched by ``exclude_modules``."""
    import torch

    out = []
    for name, module in model.named_modules():
        if isinstance(module, torch.nn.Linear) and not (exclude_modules and re.fullmatch(exclude_modules, name)):
            out.append(name)
    return out


def wrap_lora(model: Any, lora: LoRAConfig) -> tuple[Any, dict[str, int]]:
    """Wrap ``model`` with LoRA (peft) and check that every ``target_modules`` entry wrapped something.

    Args:
        model: the base model (``Qwen3VLForConditionalGeneration``).
        lora: the run's ``lora`` section.

    Returns:
        ``(peft_model, counts)``: counts are :func:`count_targets` over the wrapped modules.

    Raises:
        ConfigError: an entry matched no module; the message lists the entries and the linear
            module names (leaf names) it could have matched.
    """
    from peft import LoraConfig, get_peft_model

    candidates = linear_module_names(model, lora.exclude_modules)
    config = LoraConfig(
        r=lora.rank,
        lora_alpha=lora.alpha,
        lora_dropout=lora.dropout,
        target_modules=lora.target_modules if isinstance(lora.target_modules, str) else sorted(set(lora.target_modules)),
        exclude_modules=lora.exclude_modules,
        bias="none",
    )
    try:
        peft_model = get_peft_model(model, config)
    except ValueError as err:  # peft: no entry matched anything
        raise ConfigError(_no_match_message(lora, list(lora.target_modules), candidates) + f" (peft: {err})") from None
    wrapped = [
        name.removeprefix("base_model.model.")
        for name, module in peft_model.named_modules()
        if hasattr(module, "lora_A") and hasattr(module, "base_layer")
    ]
    counts = count_targets(wrapped, lora.target_modules)
    missing = [entry for entry, n in counts.items() if n == 0]
    if missing:
        raise ConfigError(_no_match_message(lora, missing, candidates))
    return peft_model, counts


def _no_match_message(lora: LoRAConfig, missing: Sequence[str], candidates: Sequence[str]) -> str:
    leaves = sorted({n.rsplit(".", 1)[-1] for n in candidates})
    return (
        f"lora.target_modules entries {listed(missing)} match no module of the model"
        + (f" outside lora.exclude_modules={lora.exclude_modules!r}" if lora.exclude_modules else "")
        + f": valid names are {listed(leaves)} (or 'all-linear')"
    )


def canonicalize_adapter_config(path: str | Path) -> Path:
    """Rewrite a PEFT ``adapter_config.json`` with sorted keys and sorted ``target_modules`` /
    ``modules_to_save`` / ``layers_to_transform`` lists, so identical adapters have identical bytes.

    Returns:
        The path.
    """
    target = Path(path)
    data = json.loads(target.read_text())
    for key in ("target_modules", "modules_to_save", "layers_to_transform", "trainable_token_indices"):
        if isinstance(data.get(key), list):
            data[key] = sorted(data[key], key=str)
    target.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    return target
