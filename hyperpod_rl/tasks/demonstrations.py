"""Demonstrations: a task's own solver, answer by answer, for supervised fine-tuning (SFT).

An optional part of the :class:`~hyperpod_rl.tasks.protocol.Task` protocol. A task that can solve
its own rows gives :meth:`Demonstrating.demonstration`: for one dataset row, the completions an
expert would answer, turn by turn, from the row's start, each in the task's answer envelope
(e.g. the maze's ``<answer>up</answer>``). The default (:class:`~hyperpod_rl.tasks.protocol.TaskBase`,
and any task object without the member) is ``None``: "no demonstrations", and an SFT run on such
a task is refused when its config is built.

The completions are replayed through the task's own skyrl-gym env by the SFT trainer
(:mod:`hyperpod_rl.train.sft`) with the same rollout code GRPO uses, so the SFT examples carry
exactly the chat format, the images (the env's observation after each answer) and the answer
envelope that GRPO rollouts see. A demonstration must therefore be *closed-loop correct*: each
completion is the right answer in the state the previous ones lead to; the trainer checks that a
replayed demonstration reaches the task's success (``solved``/``success`` metric of the env) and
refuses the row otherwise, naming it.

The shipped solvers: the maze's shortest path (:mod:`hyperpod_rl.tasks.maze.demos`), ui_nav's
breadth-first search over its app's state graph (:mod:`hyperpod_rl.tasks.ui_nav.demos`),
doc_read's ground-truth answer (:mod:`hyperpod_rl.tasks.doc_read.demos`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

__all__ = ["Demonstrating", "demonstration_of", "has_demonstrations"]


@runtime_checkable
class Demonstrating(Protocol):
    """The optional demonstration member of a task."""

    def demonstration(self, row: Mapping[str, Any]) -> Sequence[str] | None:
        """The expert's completions for ``row``, turn by turn from its start, or None (no demonstration).

        Args:
            row: a dataset row of the task (its columns, as :meth:`Task.build_dataset` wrote them).

        Returns:
            One completion per turn, each a full model answer (envelope included), whose replay
            through the task's env reaches success; None when the task has no demonstration for
            this row (the SFT trainer skips such rows, and refuses a dataset with none).
        """
        ...


def has_demonstrations(task: Any) -> bool:
    """True when ``task`` defines its own :meth:`Demonstrating.demonstration` (not the "none" default).

    A task object that is not a :class:`~hyperpod_rl.tasks.protocol.TaskBase` and has no
    ``demonstration`` member has none.
    """
    from hyperpod_rl.tasks.protocol import TaskBase

    member = getattr(type(task), "demonstration", None)
    return callable(member) and member is not TaskBase.demonstration


def demonstration_of(task: Any, row: Mapping[str, Any]) -> list[str] | None:
    """``task.demonstration(row)`` as a list of strings; None for a task without demonstrations.

    Raises:
        TaskError: the task returned something that is not a sequence of strings, or an empty one.
    """
    from hyperpod_rl.errors import TaskError

    member = getattr(task, "demonstration", None)
    if member is None:
        return None
    out = member(row)
    if out is None:
        return None
    if isinstance(out, str) or not all(isinstance(t, str) for t in out):
        raise TaskError(
            f"task {getattr(task, 'name', task)!r}: demonstration() must return a sequence of completion strings (one per turn) or None, "
            f"got {type(out).__name__}"
        )
    if not out:
        raise TaskError(f"task {getattr(task, 'name', task)!r}: demonstration() returned no completion; return None for no demonstration")
    return list(out)
