"""The maze env's id in SkyRL's env registry, and the one place that builds env objects.

skyrl-gym is imported here only inside the functions that build an env, so the task's data,
rendering and reward code (and the GPU planner, which uses the renderer's sizing rules) import
without it. SkyRL's registry is per process: register inside the process that plays episodes
(the trainer task on a cluster; docs/references.md §1: skyrl-gym's visgym ``entrypoint.py`` pattern).
"""

from __future__ import annotations

from typing import Final

from hyperpod_rl.tasks.registry import env_functions

__all__ = ["ENTRY_POINT", "ENV_CLASS", "make_env", "register_env"]

#: Env id used in dataset rows' ``env_class`` and in the skyrl_gym registry.
ENV_CLASS: Final[str] = "hyperpod_rl.maze"
#: String entry point, so registering does not import the env module.
ENTRY_POINT: Final[str] = "hyperpod_rl.tasks.maze.env:MazeEnv"


register_env, make_env = env_functions(ENV_CLASS, ENTRY_POINT)
