"""Example hyperpod-rl task plug-in: which colour has the most squares? (``docs/tasks.md``)."""

from hprl_shapes.task import COLOURS, REWARD_VERSION, TASK, ShapesOptions, ShapesTask

__all__ = ["COLOURS", "REWARD_VERSION", "TASK", "ShapesOptions", "ShapesTask"]
