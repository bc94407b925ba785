"""A ready skyrl-gym env for single-turn tasks: show the row's prompt, score one answer, done.

A single-turn task points :attr:`~hyperpod_rl.tasks.protocol.Task.env_entry_point` at a subclass
that names the task::

    class ReceiptEnv(SingleTurnTaskEnv):
        task_name = "receipts"

Multi-turn tasks write their own ``BaseTextEnv`` (the maze's :class:`hyperpod_rl.tasks.maze.env.MazeEnv`
is the worked example) and read their settings with :class:`EnvSettings` (row, then SkyRL's env
config, then a default; a bad value raises the task's error naming the setting), so no task
repeats that bookkeeping. This module imports skyrl-gym; the rest of :mod:`hyperpod_rl.tasks` does not.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import BaseModel, ValidationError
from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput, ConversationType

from hyperpod_rl.base import format_validation_error
from hyperpod_rl.errors import TaskError
from hyperpod_rl.tasks.dataset import clean_messages
from hyperpod_rl.tasks.protocol import Task
from hyperpod_rl.tasks.registry import get_task

__all__ = ["OBSERVATIONS", "PROMPT_STYLES", "EnvSettings", "SingleTurnTaskEnv"]

#: What a visual task's observation may be: the image, its text twin, or both.
OBSERVATIONS: tuple[str, ...] = ("image", "text", "both")
#: The prompt styles of the built-in tasks.
PROMPT_STYLES: tuple[str, ...] = ("full", "terse")


class EnvSettings:
    """An env's settings: the dataset row's column first, then SkyRL's ``env_config``, then the default.

    Args:
        extras: the dataset row (SkyRL's ``extras``).
        env_config: SkyRL's per-env config (a mapping or an OmegaConf node), or None.
        error: the task's :class:`TaskError` subclass raised for a bad value.
    """

    def __init__(self, extras: Mapping[str, Any], env_config: Any = None, error: type[TaskError] = TaskError) -> None:
        self.extras, self.env_config, self.error = extras, env_config, error

    def get(self, name: str, default: Any) -> Any:
        """The raw value of ``name`` (None in the row or config counts as unset)."""
        value = self.extras.get(name)
        if value is None and self.env_config is not None:
            cfg = self.env_config
            value = cfg.get(name) if hasattr(cfg, "get") else getattr(cfg, name, None)
        return default if value is None else value

    def choice(self, name: str, default: str, choices: tuple[str, ...]) -> str:
        """``name`` as one of ``choices``.

        Raises:
            TaskError: (``error``) another value, naming the choices.
        """
        value = str(self.get(name, default))
        if value not in choices:
            raise self.error(f"{name}={value!r} is not supported; use one of {choices}")
        return value

    def count(self, name: str, default: Any, *, minimum: int = 1, why: str = "") -> int:
        """``name`` as an int >= ``minimum`` (an int-valued float is accepted, a bool is not).

        Raises:
            TaskError: (``error``) not an int, or below ``minimum`` (``why`` says why, if given).
        """
        value = self.get(name, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or int(value) != value:
            raise self.error(f"{name}={value!r} must be an int >= {minimum}")
        if value < minimum:
            raise self.error(f"{name}={value!r} must be an int >= {minimum}{f' ({why})' if why else ''}")
        return int(value)

    def model[M: BaseModel](self, name: str, model: type[M]) -> M:
        """``name`` (None, JSON text or a mapping) validated as ``model``; None gives the model's defaults.

        Raises:
            TaskError: (``error``) the value is invalid (names each bad field as ``<name>.<field>``).
        """
        return parse_model(self.get(name, None), model, name=name, error=self.error)


def parse_model[M: BaseModel](raw: Any, model: type[M], *, name: str, error: type[TaskError] = TaskError) -> M:
    """``raw`` (None, JSON text or a mapping) validated as ``model`` (None: its defaults).

    Raises:
        TaskError: (``error``) the value is invalid, naming each bad field as ``<name>.<field>``.
    """
    try:
        if raw is None:
            return model()
        if isinstance(raw, (str, bytes)):
            return model.model_validate_json(raw)
        return model.model_validate(dict(raw))
    except ValidationError as e:
        raise error(format_validation_error(e, what=name, prefix=f"{name}.", model=model)) from None


class SingleTurnTaskEnv(BaseTextEnv):
    """One single-turn episode of the task named :attr:`task_name`.

    Episode metrics (``get_metrics()``): ``success`` (1.0 when the reward reaches
    :attr:`success_reward`), ``reward``, ``invalid`` (1.0 when the answer did not parse), ``turns``.

    Args:
        env_config: SkyRL's per-env config (unused; settings come from the row).
        extras: the dataset row.

    Raises:
        TaskError: :attr:`task_name` is not a registered task.
    """

    #: Registered task name this env plays.
    task_name: ClassVar[str] = ""
    #: Reward at or above which an episode counts as a success.
    success_reward: ClassVar[float] = 1.0

    def __init__(self, env_config: Any = None, extras: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        if not self.task_name:
            raise TaskError(f"{type(self).__name__}.task_name is empty: set it to the task's registered name")
        self.task: Task = get_task(self.task_name)
        self.row: dict[str, Any] = dict(extras or {})
        self.max_turns = 1
        self._reward = 0.0
        self._invalid = False

    def init(self, prompt: ConversationType | None) -> tuple[ConversationType, dict[str, Any]]:
        """The row's prompt (cleaned of parquet ``None`` keys), or the task's prompt for the row."""
        conversation = clean_messages(prompt) if prompt else self.task.build_prompt(self.row)
        return conversation, {"reward_version": self.task.reward_version}

    def step(self, action: str) -> BaseTextEnvStepOutput:
        """Score the answer with the task's pure reward; the episode ends."""
        self.turns += 1
        parsed = self.task.parse_answer(action)
        self._invalid = getattr(parsed, "violation", None) is not None
        self._reward = float(self.task.score(self.row, action, None))
        metadata = {
            "violation": getattr(parsed, "violation", None),
            "invalid": self._invalid,
            "turn": self.turns,
            "reward_version": self.task.reward_version,
        }
        return BaseTextEnvStepOutput(observations=[], reward=self._reward, done=True, metadata=metadata)

    def get_metrics(self) -> dict[str, Any]:
        """``success``, ``reward``, ``invalid`` and ``turns`` of the episode."""
        return {
            "success": float(self._reward >= self.success_reward),
            "reward": self._reward,
            "invalid": float(self._invalid),
            "turns": float(self.turns),
        }
