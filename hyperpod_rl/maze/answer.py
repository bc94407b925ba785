"""Parse a model completion into maze moves. Pure; the written spec is ``docs/maze-task.md``.

Format: free reasoning, then exactly one ``<answer>...</answer>`` block holding direction
words (``up``, ``down``, ``left``, ``right``; ASCII, any case) separated by spaces or commas.
Only whitespace and end-of-turn tokens (``<|im_end|>``, ``<|endoftext|>``) may follow the
block. Anything inside ``<think>...</think>`` is reasoning and never counts as the answer.

Every deviation is a *format violation*: :class:`ParsedAnswer` then has no moves and a
``violation`` code from :data:`VIOLATIONS`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from hyperpod_rl.maze.grid import DIRECTIONS

__all__ = [
    "END_TOKENS",
    "MAX_ANSWER_CHARS",
    "MAX_COMPLETION_CHARS",
    "VIOLATIONS",
    "VISION_TOKENS",
    "ParsedAnswer",
    "parse_answer",
]

#: Qwen-VL vision special tokens. A completion that contains one would break the next
#: training forward pass (image-token count mismatch), so it is always a violation.
VISION_TOKENS: Final[tuple[str, ...]] = (
    "<|image_pad|>",
    "<|video_pad|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
)
#: End-of-turn tokens tolerated at the very end of a completion.
END_TOKENS: Final[tuple[str, ...]] = ("<|im_end|>", "<|endoftext|>")
#: Longest completion parsed, in characters; longer ones are a violation ("too_long").
MAX_COMPLETION_CHARS: Final[int] = 32_768
#: Longest text inside the answer block, in characters ("answer_too_long").
MAX_ANSWER_CHARS: Final[int] = 2_048

#: Violation codes, in the order they are checked.
VIOLATIONS: Final[tuple[str, ...]] = (
    "not_text",
    "too_long",
    "vision_token",
    "no_answer",
    "malformed_tags",
    "unclosed_answer",
    "nested_answer",
    "multiple_answers",
    "text_after_answer",
    "answer_too_long",
    "empty_answer",
    "non_ascii",
    "unknown_move",
    "too_many_moves",
)

_TAG = re.compile(r"</?answer>", re.IGNORECASE)
_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.IGNORECASE | re.DOTALL)
_THINK_OPEN = re.compile(r"<think>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</think>", re.IGNORECASE)
_SEP = re.compile(r"[\s,]+")
_DIRECTION_SET: Final[frozenset[str]] = frozenset(DIRECTIONS)


@dataclass(frozen=True, slots=True)
class ParsedAnswer:
    """The result of :func:`parse_answer`.

    Attributes:
        moves: Direction words in order (lower case); empty when ``violation`` is set.
        violation: None for a well-formed answer, else one code from :data:`VIOLATIONS`.
    """

    moves: tuple[str, ...] = ()
    violation: str | None = None

    @property
    def ok(self) -> bool:
        """True when the answer is well formed."""
        return self.violation is None


def _fail(code: str) -> ParsedAnswer:
    return ParsedAnswer(moves=(), violation=code)


def _strip_reasoning(text: str) -> str:
    # A completion may start inside a reasoning block opened by the chat template: drop
    # everything up to a leading unmatched </think>.
    first_close = _THINK_CLOSE.search(text)
    first_open = _THINK_OPEN.search(text)
    if first_close and (first_open is None or first_close.start() < first_open.start()):
        text = text[first_close.end() :]
    text = _THINK_BLOCK.sub(" ", text)
    unclosed = _THINK_OPEN.search(text)
    if unclosed:  # reasoning never closed: nothing after it counts
        text = text[: unclosed.start()]
    return text


def parse_answer(text: object, *, max_moves: int | None = None) -> ParsedAnswer:
    """Extract the moves from a completion, or name the format violation.

    Args:
        text: The model completion (decoded text, special tokens included).
        max_moves: Most moves allowed in the answer (1 in step mode); None for no limit.

    Returns:
        ParsedAnswer with ``moves`` or a ``violation`` code. Never raises on bad text.
    """
    if not isinstance(text, str):
        return _fail("not_text")
    if len(text) > MAX_COMPLETION_CHARS:
        return _fail("too_long")
    if any(tok in text for tok in VISION_TOKENS):
        return _fail("vision_token")
    body = text.rstrip()
    stripped = True
    while stripped:
        stripped = False
        for tok in END_TOKENS:
            if body.endswith(tok):
                body = body[: -len(tok)].rstrip()
                stripped = True
    body = _strip_reasoning(body)
    tags = list(_TAG.finditer(body))
    if not tags:
        return _fail("no_answer")
    opens = sum(1 for t in tags if not t.group(0).startswith("</"))
    closes = len(tags) - opens
    depth, max_depth = 0, 0
    for t in tags:
        depth += -1 if t.group(0).startswith("</") else 1
        max_depth = max(max_depth, depth)
        if depth < 0:
            return _fail("malformed_tags")
    if max_depth > 1:
        return _fail("nested_answer")
    if opens > closes:
        return _fail("unclosed_answer")
    if opens > 1:
        return _fail("multiple_answers")
    open_tag, close_tag = tags[0], tags[1]
    if body[close_tag.end() :].strip():
        return _fail("text_after_answer")
    content = body[open_tag.end() : close_tag.start()]
    if len(content) > MAX_ANSWER_CHARS:
        return _fail("answer_too_long")
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
