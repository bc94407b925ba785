"""A LoRA adapter directory, and loading a policy from a base model plus adapters.

An adapter directory (wherever it lives: a run's ``adapter/``, a copy on FSx or S3) holds
peft's ``adapter_model.safetensors`` and ``adapter_config.json``, plus this project's
``provenance.json`` (what it was trained from, and the action format it was trained with). This
module is the one reader of those files for loading; training, evaluation and serving all load
policies through :func:`load_policy`, so they decode the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, cast

from hyperpod_rl.base import load_user_data
from hyperpod_rl.errors import CheckpointError, ConfigError
from hyperpod_rl.model.loading import load_base_model
from hyperpod_rl.model.policy import MazePolicy
from hyperpod_rl.model.recovery import adapter_recovery

__all__ = [
    "ADAPTER_CONFIG",
    "ADAPTER_PROVENANCE",
    "ADAPTER_WEIGHTS",
    "ActionConstraint",
    "action_constraint_of",
    "load_policy",
    "read_adapter_provenance",
    "require_adapter_files",
    "task_of_adapters",
]

ADAPTER_WEIGHTS = "adapter_model.safetensors"
ADAPTER_CONFIG = "adapter_config.json"
ADAPTER_PROVENANCE = "provenance.json"
ActionConstraint = Literal["directions", "none"]
_DEFAULT_CONSTRAINT: ActionConstraint = "directions"


def require_adapter_files(adapter_dir: str | Path) -> Path:
    """The adapter directory, after checking that peft's two files are there.

    Raises:
        CheckpointError: ``adapter_config.json`` or ``adapter_model.safetensors`` is missing.
    """
    adir = Path(adapter_dir).expanduser()
    for name in (ADAPTER_CONFIG, ADAPTER_WEIGHTS):
        if not (adir / name).is_file():
            raise CheckpointError(f"adapter directory {adir} has no {name}: pass a run's adapter/ directory (or a copy of it)")
    return adir


def read_adapter_provenance(adapter_dir: str | Path) -> dict[str, Any]:
    """The adapter's ``provenance.json`` (``{}`` when it has none, e.g. an adapter from elsewhere).

    Raises:
        CheckpointError: the file exists but is not a JSON object.
    """
    path = Path(adapter_dir).expanduser() / ADAPTER_PROVENANCE
    if not path.is_file():
        return {}
    fix = adapter_recovery(path.parent)
    data = load_user_data(path, "adapter provenance", syntax="json", error=CheckpointError, repair=fix)
    if not isinstance(data, dict):
        raise CheckpointError(f"adapter provenance {str(path)!r} is not a JSON object: {fix}")
    return data


def action_constraint_of(adapters: Mapping[str, str | Path]) -> ActionConstraint:
    """The action format the adapters were trained with (provenance ``action_constraint``).

    Adapters without provenance count as ``"directions"`` (the reference trainer's default).

    Raises:
        ConfigError: the adapters were trained with different formats (one policy decodes one way),
            or a provenance names an unknown format.
    """
    modes: dict[str, str] = {}
    for name, path in adapters.items():
        modes[name] = str(read_adapter_provenance(path).get("action_constraint", _DEFAULT_CONSTRAINT))
    if len(set(modes.values())) > 1:
        raise ConfigError(f"the adapters were trained with different action formats {modes}: load (or serve) them separately")
    mode = next(iter(modes.values()), _DEFAULT_CONSTRAINT)
    if mode not in ("directions", "none"):
        raise ConfigError(f"adapter provenance names action_constraint={mode!r}; this version knows 'directions' and 'none'")
    return cast(ActionConstraint, mode)


def task_of_adapters(adapters: Mapping[str, str | Path]) -> str:
    """The task the adapters were trained on (provenance ``task``; adapters without it: ``"maze"``).

    Raises:
        ConfigError: the adapters were trained on different tasks (one policy has one answer vocabulary).
    """
    tasks = {name: str(read_adapter_provenance(path).get("task") or "maze") for name, path in adapters.items()}
    if len(set(tasks.values())) > 1:
        raise ConfigError(f"the adapters were trained on different tasks {tasks}: load (or serve) them separately")
    return next(iter(tasks.values()), "maze")


def load_policy(
    base: str | Path,
    adapters: str | Path | Mapping[str, str | Path] | None = None,
    *,
    action_constraint: ActionConstraint | None = None,
    max_new_tokens: int = 32,
    torch_dtype: Any = None,
    answer_words: Sequence[str] | None = None,
) -> MazePolicy:
    """Load a base model, optionally with LoRA adapters, as a :class:`MazePolicy`.

    Args:
        base: the base model directory (:func:`~hyperpod_rl.model.loading.load_base_model`).
        adapters: one adapter directory, or ``{name: directory}`` for several (the first is
            active; switch with ``policy.model.set_adapter(name)``), or ``None`` for the base model.
        action_constraint: the decoding mode; default: the one the adapters were trained with
            (:func:`action_constraint_of`), ``"directions"`` for a base model.
        max_new_tokens: response limit in tokens for free generation.
        torch_dtype: dtype of the base weights (default: fp32 on CPU).
        answer_words: the task's answer words for ``"directions"`` decoding (default: those of the
            task the adapters were trained on, :func:`task_of_adapters`; the maze's for a base model).

    Returns:
        The policy, in eval mode. With adapters, ``policy.model`` is a ``peft.PeftModel``.

    Raises:
        CheckpointError: an adapter directory lacks its peft files, or its provenance is corrupt.
        ConfigError: the base model is not a Qwen3-VL checkpoint, or the adapters disagree on
            the action format.
    """
    named: dict[str, str | Path] = {}
    if isinstance(adapters, (str, Path)):
        named = {"default": adapters}
    elif adapters is not None:
        named = dict(adapters)
    dirs = {name: require_adapter_files(path) for name, path in named.items()}
    constraint = action_constraint or action_constraint_of(dirs)
    model, processor, _ = load_base_model(base, torch_dtype=torch_dtype)
    if dirs:
        from peft import PeftModel

        (first, first_dir), *rest = dirs.items()
        model = PeftModel.from_pretrained(model, str(first_dir), adapter_name=first)
        for name, path in rest:
            model.load_adapter(str(path), adapter_name=name)
        model.eval()
    if answer_words is None and dirs:
        from hyperpod_rl.tasks import get_task

        answer_words = get_task(task_of_adapters(dirs)).answer_words
    words = {} if answer_words is None else {"answer_words": tuple(answer_words)}
    return MazePolicy(model, processor, action_constraint=constraint, max_new_tokens=max_new_tokens, **words)
