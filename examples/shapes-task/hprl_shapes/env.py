"""The skyrl-gym env of the shapes task: the generic single-turn env, bound to the task's name."""

from __future__ import annotations

from hyperpod_rl.tasks.env import SingleTurnTaskEnv

__all__ = ["ShapesEnv"]


class ShapesEnv(SingleTurnTaskEnv):
    """One shapes episode: the row's prompt, one answer, the task's reward (success: reward 1)."""

    task_name = "shapes"
