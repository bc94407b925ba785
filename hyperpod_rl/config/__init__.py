"""Run configuration (pydantic), the only layer below the front-ends that knows run options."""

from hyperpod_rl.config.run import RunConfig

__all__ = ["RunConfig"]
