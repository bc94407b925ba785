"""A ready skyrl-gym env for single-turn tasks: show the row's prompt, score one answer, done.

A single-turn task points :attr:`~hyperpod_rl.tasks.protocol.Task.env_entry_point` at a subclass
that names the task::

    class ReceiptEnv(SingleTurnTaskEnv):
        task_name = "receipts"

A task that writes its own env derives from :class:`TaskEnv` (the settings, the first prompt,
the step output) or, when an episode has several turns, :class:`MultiTurnTaskEnv` (turn limit,
solved / optimal / invalid turn accounting); the maze's :class:`hyperpod_rl.tasks.maze.env.MazeEnv`
is the worked example. Settings are read with :class:`EnvSettings` (row, then SkyRL's env config,
then a default; a bad value raises the task's error naming the setting), so no task repeats that
bookkeeping. This module imports skyrl-gym; the rest of :mod:`hyperpod_rl.tasks` does not.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from pydantic import BaseModel
from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput, ConversationType

from hyperpod_rl.base import listed
from hyperpod_rl.errors import TaskError
from hyperpod_rl.tasks.dataset import clean_messages
from hyperpod_rl.tasks.protocol import Task, parse_model
from hyperpod_rl.tasks.registry import get_task

__all__ = ["OBSERVATIONS", "PROMPT_STYLES", "EnvSettings", "MultiTurnTaskEnv", "SingleTurnTaskEnv", "TaskEnv", "parse_model"]

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
            raise self.error(f"{name}={value!r} is not supported; use one of {listed(choices)}")
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


class TaskEnv(BaseTextEnv):
    """Base of a task's own skyrl-gym env: its settings, the first prompt, the step output.

    A subclass sets :attr:`reward_version` (and :attr:`error`), reads its own settings from
    :attr:`settings` after ``super().__init__``, and gives :meth:`fresh_prompt` (and
    :meth:`episode_info`). Read here: ``observation`` (one of :data:`OBSERVATIONS`, default
    ``"image"``) and ``prompt_style`` (one of :data:`PROMPT_STYLES`, default ``"full"``).

    Args:
        env_config: SkyRL's per-env config (a mapping or an OmegaConf node), or None.
        extras: The dataset row (SkyRL's ``extras``), or None for an empty one.

    Raises:
        TaskError: (:attr:`error`) ``observation`` or ``prompt_style`` is unknown.
    """

    #: Version of the task's reward spec, put in the first prompt's info and every step's metadata.
    reward_version: ClassVar[str] = ""
    #: The task's :class:`TaskError` subclass, raised for a bad setting.
    error: ClassVar[type[TaskError]] = TaskError

    def __init__(self, env_config: Any = None, extras: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        self.extras: Mapping[str, Any] = {} if extras is None else extras
        self.settings = EnvSettings(self.extras, env_config, self.error)
        self.observation: str = self.settings.choice("observation", "image", OBSERVATIONS)
        self.prompt_style: str = self.settings.choice("prompt_style", "full", PROMPT_STYLES)

    def required[T](self, column: str, parse: Callable[[str | bytes], T], what: str) -> T:
        """The row's required ``column`` (JSON text or the equivalent mapping), parsed by ``parse``.

        Args:
            column: The row's column.
            parse: Builds the value from JSON text (e.g. ``Maze.from_json``).
            what: What the column holds, for the error (e.g. ``"Maze.to_json()"``).

        Raises:
            TaskError: (:attr:`error`) the column is missing; ``parse``'s own error on bad content.
        """
        raw = self.extras.get(column)
        if raw is None:
            raise self.error(f"extras[{column!r}] is required: put {what} in the dataset row's {column!r} column")
        return parse(raw if isinstance(raw, (str, bytes)) else json.dumps(dict(raw)))

    def init(self, prompt: ConversationType | None) -> tuple[ConversationType, dict[str, Any]]:
        """The first prompt (the row's, cleaned of parquet ``None`` keys, or :meth:`fresh_prompt`)
        and ``{"reward_version": ..., **episode_info()}``."""
        conversation = clean_messages(prompt) if prompt else self.fresh_prompt(observation=self.observation, prompt_style=self.prompt_style)
        return conversation, {"reward_version": self.reward_version, **self.episode_info()}

    def fresh_prompt(self, **view: Any) -> ConversationType:  # pragma: no cover - abstract
        """The first prompt built from the row, for a row without one; ``view`` holds the
        ``observation`` and ``prompt_style`` this env resolved, for the task's ``build_prompt``."""
        raise NotImplementedError(f"{type(self).__name__} does not implement fresh_prompt")

    def episode_info(self) -> dict[str, Any]:
        """What the first prompt's info holds besides ``reward_version`` (default: nothing)."""
        return {}

    def step_output(
        self, reward: float, *, done: bool, metadata: Mapping[str, Any], observations: ConversationType | None = None
    ) -> BaseTextEnvStepOutput:
        """One step's output: ``metadata`` followed by ``turn`` (turns so far) and ``reward_version``."""
        full = {**metadata, "turn": self.turns, "reward_version": self.reward_version}
        return BaseTextEnvStepOutput(observations=observations or [], reward=reward, done=done, metadata=full)


class MultiTurnTaskEnv(TaskEnv):
    """A :class:`TaskEnv` whose episode has up to :attr:`max_turns` turns (the subclass sets it).

    :meth:`end_turn` counts each turn's outcome; :meth:`episode_metrics` gives the metrics every
    multi-turn task reports (``solved`` 0/1, ``turns``, optimal and invalid turns per turn).
    """

    def __init__(self, env_config: Any = None, extras: Mapping[str, Any] | None = None) -> None:
        super().__init__(env_config, extras)
        self._solved = False
        self._optimal = 0
        self._invalid = 0

    def end_turn(self, *, solved: bool, optimal: bool, invalid: bool) -> bool:
        """Count one turn (``turns`` already counts it): the goal holds after it (``solved``), it was
        a shortest-path step (``optimal``), a format violation (``invalid``).

        Returns:
            True when the episode is over: solved, or :attr:`max_turns` turns used.
        """
        self._solved = solved
        self._optimal += optimal
        self._invalid += invalid
        return solved or self.turns >= self.max_turns

    def episode_metrics(self, name: str) -> dict[str, float]:
        """``solved`` (0/1), ``turns``, ``optimal_<name>_rate`` and ``invalid_<name>_rate`` (per
        turn; an episode of no turns counts as one turn), e.g. ``name="move"``."""
        turns = max(self.turns, 1)
        return {
            "solved": float(self._solved),
            "turns": float(self.turns),
            f"optimal_{name}_rate": self._optimal / turns,
            f"invalid_{name}_rate": self._invalid / turns,
        }


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
