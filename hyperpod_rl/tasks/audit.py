"""The generic reward audit: run a task's adversarial cases through a reward function.

Each :class:`~hyperpod_rl.tasks.protocol.AuditCase` holds a completion and the reward the task's
written spec says it must get; :func:`run_audit` reports every case where the function under test
(default: the task's own :meth:`~hyperpod_rl.tasks.protocol.Task.score`) disagrees, raises, or
returns a non-finite number. ``hyperpod-rl tasks audit <task> [--reward-fn module:function]``.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from hyperpod_rl.errors import TaskError
from hyperpod_rl.tasks.protocol import AuditCase, Task
from hyperpod_rl.tasks.registry import get_task

__all__ = ["AuditReport", "Disagreement", "ScoreFn", "audit_table", "load_reward_fn", "run_audit"]

#: ``fn(row, completion, state) -> float``: the signature of :meth:`Task.score` as a free function.
ScoreFn = Callable[[Mapping[str, Any], str, Mapping[str, Any] | None], float]


@dataclass(frozen=True, slots=True)
class Disagreement:
    """A case where the reward function under test differs from the spec.

    Attributes:
        case: The audit case (an :class:`AuditCase`, or a row of a task's own audit table).
        got: The reward returned, or None if the function raised.
        error: ``"ExceptionType: message"`` when the function raised, else None.
    """

    case: AuditCase | Any
    got: float | None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class AuditReport:
    """Outcome of :func:`run_audit`.

    Attributes:
        task: Task name.
        reward_version: Spec version the cases encode.
        total: Number of cases run.
        disagreements: Every case whose reward differs by more than the tolerance.
    """

    task: str
    reward_version: str
    total: int
    disagreements: tuple[Disagreement, ...] = field(default_factory=tuple)

    @property
    def passed(self) -> bool:
        """True when the function agrees with every case (and there was at least one)."""
        return self.total > 0 and not self.disagreements


def run_audit(task: str | Task | None = None, reward_fn: ScoreFn | None = None, *, tolerance: float = 1e-6) -> AuditReport:
    """Run every audit case of ``task`` through ``reward_fn`` (default: ``task.score``).

    Returns:
        An :class:`AuditReport`; exceptions raised by ``reward_fn`` and non-finite results are
        reported as disagreements, never re-raised.

    Raises:
        TaskError: unknown task.
    """
    t = get_task(task)
    fn: ScoreFn = reward_fn if reward_fn is not None else t.score
    return audit_table(t.name, t.reward_version, tuple(t.audit_cases()), lambda c: fn(c.row, c.completion, c.state), tolerance=tolerance)


def audit_table[C](
    task: str, reward_version: str, cases: Sequence[C], score: Callable[[C], Any], *, tolerance: float = 1e-6
) -> AuditReport:
    """The audit runner every task uses: score each case and collect the disagreements.

    Args:
        task: task name (in the report).
        reward_version: the spec version the cases encode.
        cases: the cases; each has an ``expected`` reward.
        score: ``score(case) -> reward`` (calls the function under test the task's way).
        tolerance: largest accepted absolute difference.

    Returns:
        An :class:`AuditReport`; exceptions raised by ``score`` and non-finite results are
        reported as disagreements, never re-raised.
    """
    bad: list[Disagreement] = []
    for case in cases:
        try:
            value = float(score(case))
        except Exception as e:  # noqa: BLE001 - a user function may raise anything; it is reported, not hidden
            bad.append(Disagreement(case, None, f"{type(e).__name__}: {e}"))
            continue
        if not math.isfinite(value) or abs(value - cast(Any, case).expected) > tolerance:
            bad.append(Disagreement(case, value))
    return AuditReport(task, reward_version, len(cases), tuple(bad))


def load_reward_fn(spec: str) -> Callable[..., float]:
    """Import ``"package.module:function"`` and return the function.

    Raises:
        TaskError: the spec has no ``:``, the module cannot be imported (or is not valid UTF-8 Python), or the attribute is
            missing or not callable.
    """
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise TaskError(f"reward_fn={spec!r} must look like 'package.module:function'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise TaskError(f"reward_fn module {module_name!r} cannot be imported: {e}") from e
    except SyntaxError as e:  # not Python, or not UTF-8 (PEP 3120) without a coding declaration
        raise TaskError(
            f"reward_fn module {module_name!r} cannot be imported: {e.msg} ({e.filename}, line {e.lineno}): fix its source"
        ) from None
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise TaskError(f"reward_fn: {module_name!r} has no callable {attr!r}")
    return fn
