"""The document-reading reward: pure, deterministic, versioned. The spec is ``docs/doc-read-task.md``.

One turn, one answer:

* a well-formed answer that normalises to the expected answer (:mod:`.answer`): ``CORRECT`` (1.0);
* a well-formed answer that does not (wrong value, wrong currency, unparseable): ``WRONG`` (0.0);
* a format violation (:data:`~hyperpod_rl.tasks.doc_read.answer.VIOLATIONS`): ``-FORMAT_PENALTY`` (-0.1).

Change :data:`REWARD_VERSION` with any change to these values or to the normalisation rules.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from hyperpod_rl.tasks.doc_read.answer import expected_value, normalise, parse_envelope
from hyperpod_rl.tasks.doc_read.document import Question
from hyperpod_rl.tasks.metrics import episode_means

__all__ = [
    "CORRECT",
    "FORMAT_PENALTY",
    "REWARD_VERSION",
    "WRONG",
    "Outcome",
    "aggregate_metrics",
    "reward_bounds",
    "score",
    "score_completion",
]

#: Version of the reward and normalisation spec; recorded in every row and run.
REWARD_VERSION: Final[str] = "1.1"
CORRECT: Final[float] = 1.0
WRONG: Final[float] = 0.0
FORMAT_PENALTY: Final[float] = 0.1


@dataclass(frozen=True, slots=True)
class Outcome:
    """One scored answer.

    Attributes:
        reward: :data:`CORRECT`, :data:`WRONG` or ``-FORMAT_PENALTY``.
        correct: The answer matches after normalisation.
        answer: The normalised answer, or None (violation or unparseable).
        expected: The expected answer in canonical form.
        violation: Format violation code, or None.
        error: Why a well-formed answer did not parse (see :class:`~.answer.Normalised`), or None.
    """

    reward: float
    correct: bool
    answer: str | None
    expected: str
    violation: str | None = None
    error: str | None = None


def score(completion: object, question: Question) -> Outcome:
    """Score one completion against ``question`` (pure; never raises on bad text)."""
    want = expected_value(question)
    env = parse_envelope(completion)
    if env.content is None:
        return Outcome(-FORMAT_PENALTY, False, None, want, violation=env.violation)
    got = normalise(env.content, question)
    correct = got.value is not None and got.value == want
    return Outcome(CORRECT if correct else WRONG, correct, got.value, want, error=got.error)


def score_completion(completion: object, question: Question) -> float:
    """The reward of one completion (the reference function of the audit; a user's must have this signature)."""
    return score(completion, question).reward


def reward_bounds() -> tuple[float, float]:
    """``(min, max)`` reward of one answer."""
    return (-FORMAT_PENALTY, CORRECT)


def aggregate_metrics(metrics: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Average episode metrics: ``accuracy``, ``invalid_rate``, ``unparseable_rate`` and ``accuracy/<qkind>`` per question kind.

    Empty input gives ``{}``.
    """
    out: dict[str, Any] = episode_means(metrics, {"accuracy": "correct", "invalid_rate": "invalid", "unparseable_rate": "unparseable"})
    by_kind: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for m in metrics:
        if m.get("question_kind"):
            by_kind[str(m["question_kind"])].append(m)
    for kind, rows in sorted(by_kind.items()):
        out[f"accuracy/{kind}"] = episode_means(rows, {"accuracy": "correct"})["accuracy"]
    return out
