"""Parse a model completion into maze moves. Pure; the written spec is ``docs/maze-task.md``.

Format: free reasoning, then exactly one ``<answer>...</answer>`` block holding direction
words (``up``, ``down``, ``left``, ``right``; ASCII, any case) separated by spaces or commas.
Only whitespace and end-of-turn tokens (``<|im_end|>``, ``<|endoftext|>``) may follow the
block. Anything inside ``<think>...</think>`` is reasoning and never counts as the answer.

Every deviation is a *format violation*: :class:`ParsedAnswer` then has no moves and a
``violation`` code from :data:`VIOLATIONS`. ``END_TOKENS`` and ``VISION_TOKENS`` are
:mod:`hyperpod_rl.tasks.answer`'s, re-exported for the old ``hyperpod_rl.maze.answer`` path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from hyperpod_rl.tasks.answer import END_TOKENS, VISION_TOKENS, AnswerFormat, Verdict
from hyperpod_rl.tasks.maze.grid import DIRECTIONS

__all__ = [
    "END_TOKENS",
    "FORMAT",
    "MAX_ANSWER_CHARS",
    "MAX_COMPLETION_CHARS",
    "VIOLATIONS",
    "VISION_TOKENS",
    "ParsedAnswer",
    "parse_answer",
]

#: The envelope's limits (a completion of 32,768 characters, an answer block of 2,048) and the
#: maze's own violation codes, checked after the envelope's.
FORMAT: Final[AnswerFormat] = AnswerFormat(32_768, 2_048, ("non_ascii", "unknown_move", "too_many_moves"))
#: Longest completion parsed, in characters; longer ones are a violation ("too_long").
MAX_COMPLETION_CHARS: Final[int] = FORMAT.max_completion_chars
#: Longest text inside the answer block, in characters ("answer_too_long").
MAX_ANSWER_CHARS: Final[int] = FORMAT.max_answer_chars
#: Violation codes, in the order they are checked.
VIOLATIONS: Final[tuple[str, ...]] = FORMAT.violations

_SEP = re.compile(r"[\s,]+")
_DIRECTION_SET: Final[frozenset[str]] = frozenset(DIRECTIONS)


@dataclass(frozen=True, slots=True)
class ParsedAnswer(Verdict):
    """The result of :func:`parse_answer` (``ok``: no violation).

    Attributes:
        moves: Direction words in order (lower case); empty when ``violation`` is set.
        violation: None for a well-formed answer, else one code from :data:`VIOLATIONS`.
    """

    moves: tuple[str, ...] = ()
    violation: str | None = None


def _fail(code: str) -> ParsedAnswer:
    return ParsedAnswer(moves=(), violation=code)


def parse_answer(text: object, *, max_moves: int | None = None) -> ParsedAnswer:
    """Extract the moves from a completion, or name the format violation.

    Args:
        text: The model completion (decoded text, special tokens included).
        max_moves: Most moves allowed in the answer (1 in step mode); None for no limit.

    Returns:
        ParsedAnswer with ``moves`` or a ``violation`` code. Never raises on bad text.
    """
    content, violation = FORMAT.extract(text)
    if content is None:
        assert violation is not None  # extract returns exactly one of the two
        return _fail(violation)
    words = [w for w in _SEP.split(content) if w]
    if not words:
        return _fail("empty_answer")
    if not content.isascii():
        return _fail("non_ascii")
    moves = tuple(w.lower() for w in words)
    if any(m not in _DIRECTION_SET for m in moves):
        return _fail("unknown_move")
    if max_moves is not None and len(moves) > max_moves:
        return _fail("too_many_moves")
    return ParsedAnswer(moves=moves, violation=None)
