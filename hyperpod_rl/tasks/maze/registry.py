"""The maze env's id in SkyRL's env registry, and the one place that builds env objects.

skyrl-gym is imported here only inside the functions that build an env, so the task's data,
rendering and reward code (and the GPU planner, which uses the renderer's sizing rules) import
without it. SkyRL's registry is per process: register inside the process that plays episodes
(the trainer task on a cluster; docs/references.md §1: skyrl-gym's visgym ``entrypoint.py`` pattern).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

__all__ = ["ENTRY_POINT", "ENV_CLASS", "make_env", "register_env"]

#: Env id used in dataset rows' ``env_class`` and in the skyrl_gym registry.
ENV_CLASS: Final[str] = "hyperpod_rl.maze"
#: String entry point, so registering does not import the env module.
ENTRY_POINT: Final[str] = "hyperpod_rl.tasks.maze.env:MazeEnv"


def register_env() -> None:
    """Register :class:`~hyperpod_rl.tasks.maze.env.MazeEnv` with skyrl_gym under :data:`ENV_CLASS`; safe to call repeatedly."""
    import skyrl_gym

    if ENV_CLASS not in skyrl_gym.registry:
        skyrl_gym.register(id=ENV_CLASS, entry_point=ENTRY_POINT)


def make_env(extras: Mapping[str, Any], env_config: Mapping[str, Any] | None = None) -> Any:
    """Build one maze env exactly as SkyRL's generator does: ``skyrl_gym.make(ENV_CLASS, ...)``.

    Args:
        extras: the dataset row (its non-``prompt`` columns reach the env as extras).
        env_config: env settings that the row does not carry.

    Returns:
        A :class:`~hyperpod_rl.tasks.maze.env.MazeEnv`.

    Raises:
        MazeError: the row does not describe a valid maze (raised by the env).
    """
    import skyrl_gym

    register_env()
    return skyrl_gym.make(ENV_CLASS, env_config=dict(env_config or {}), extras=dict(extras))
