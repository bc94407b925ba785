"""The env's id in SkyRL's env registry, and the one place that builds env objects.

skyrl-gym is imported only inside these functions, so the rest of the task imports without it.
SkyRL's registry is per process: register inside the process that plays episodes.
"""

from __future__ import annotations

from typing import Final

from hyperpod_rl.tasks.registry import env_functions

__all__ = ["ENTRY_POINT", "ENV_CLASS", "make_env", "register_env"]

#: Env id used in dataset rows' ``env_class`` and in the skyrl_gym registry.
ENV_CLASS: Final[str] = "hyperpod_rl.doc_read"
#: String entry point, so registering does not import the env module.
ENTRY_POINT: Final[str] = "hyperpod_rl.tasks.doc_read.env:DocReadEnv"


register_env, make_env = env_functions(ENV_CLASS, ENTRY_POINT)
