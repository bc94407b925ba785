"""The interface-navigation env's id in SkyRL's env registry, and the one place that builds env objects.

skyrl-gym is imported only inside these functions (as :mod:`hyperpod_rl.tasks.maze.registry`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

__all__ = ["ENTRY_POINT", "ENV_CLASS", "make_env", "register_env"]

#: Env id used in dataset rows' ``env_class`` and in the skyrl_gym registry.
ENV_CLASS: Final[str] = "hyperpod_rl.ui_nav"
#: String entry point, so registering does not import the env module.
ENTRY_POINT: Final[str] = "hyperpod_rl.tasks.ui_nav.env:UINavEnv"


def register_env() -> None:
    """Register :class:`~hyperpod_rl.tasks.ui_nav.env.UINavEnv` under :data:`ENV_CLASS`; safe to call repeatedly."""
    import skyrl_gym

    if ENV_CLASS not in skyrl_gym.registry:
        skyrl_gym.register(id=ENV_CLASS, entry_point=ENTRY_POINT)


def make_env(extras: Mapping[str, Any], env_config: Mapping[str, Any] | None = None) -> Any:
    """Build one env as SkyRL's generator does: ``skyrl_gym.make(ENV_CLASS, env_config=..., extras=row)``.

    Raises:
        TaskError: the row does not describe a valid app (raised by the env).
    """
    import skyrl_gym

    register_env()
    return skyrl_gym.make(ENV_CLASS, env_config=dict(env_config or {}), extras=dict(extras))
