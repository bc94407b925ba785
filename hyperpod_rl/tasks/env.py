"""A ready skyrl-gym env for single-turn tasks: show the row's prompt, score one answer, done.

A single-turn task points :attr:`~hyperpod_rl.tasks.protocol.Task.env_entry_point` at a subclass
that names the task::

    class ReceiptEnv(SingleTurnTaskEnv):
        task_name = "receipts"

Multi-turn tasks write their own ``BaseTextEnv`` (the maze's :class:`hyperpod_rl.tasks.maze.env.MazeEnv`
is the worked example). This module imports skyrl-gym; the rest of :mod:`hyperpod_rl.tasks` does not.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput, ConversationType

from hyperpod_rl.errors import TaskError
from hyperpod_rl.tasks.dataset import clean_messages
from hyperpod_rl.tasks.protocol import Task
from hyperpod_rl.tasks.registry import get_task

__all__ = ["SingleTurnTaskEnv"]


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
