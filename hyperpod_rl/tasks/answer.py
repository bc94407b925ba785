"""The ``<answer>...</answer>`` envelope every task's completions use: one parser, the task adds
only what goes inside.

A completion is decoded text (special tokens included). It may carry reasoning in ``<think>``
blocks (dropped, including a leading unmatched ``</think>`` from a chat template that opened the
block, and everything after a ``<think>`` that never closes), end with end-of-turn tokens
(tolerated), and must hold exactly one answer block with nothing after it. Violation codes, in
the order they are checked: ``not_text``, ``too_long``, ``vision_token``, ``no_answer``,
``malformed_tags``, ``nested_answer``, ``unclosed_answer``, ``multiple_answers``,
``text_after_answer``, ``answer_too_long``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

__all__ = ["END_TOKENS", "ENVELOPE_VIOLATIONS", "VISION_TOKENS", "AnswerFormat", "Verdict", "extract_answer", "strip_reasoning"]

#: The envelope's violation codes (those :func:`extract_answer` returns, as the task specs list
#: them) and ``empty_answer`` (a blank block), which every task checks next; a task appends its own.
ENVELOPE_VIOLATIONS: Final[tuple[str, ...]] = (
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
)

#: Qwen-VL vision special tokens: a completion holding one breaks the next forward pass.
VISION_TOKENS: Final[tuple[str, ...]] = ("<|image_pad|>", "<|video_pad|>", "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>")
#: End-of-turn tokens tolerated at the very end of a completion.
END_TOKENS: Final[tuple[str, ...]] = ("<|im_end|>", "<|endoftext|>")

_TAG = re.compile(r"</?answer>", re.IGNORECASE)
_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.IGNORECASE | re.DOTALL)
_THINK_OPEN = re.compile(r"<think>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</think>", re.IGNORECASE)


def strip_reasoning(text: str) -> str:
    """``text`` without its ``<think>`` blocks (see the module docstring)."""
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


def extract_answer(text: object, *, max_completion_chars: int, max_answer_chars: int) -> tuple[str | None, str | None]:
    """``(content of the one answer block, None)`` or ``(None, violation code)``. Never raises.

    Args:
        text: the completion.
        max_completion_chars: longest completion parsed, in characters (``too_long``).
        max_answer_chars: longest content of the answer block, in characters (``answer_too_long``).
    """
    if not isinstance(text, str):
        return None, "not_text"
    if len(text) > max_completion_chars:
        return None, "too_long"
    if any(tok in text for tok in VISION_TOKENS):
        return None, "vision_token"
    body = text.rstrip()
    stripped = True
    while stripped:
        stripped = False
        for tok in END_TOKENS:
            if body.endswith(tok):
                body, stripped = body[: -len(tok)].rstrip(), True
    body = strip_reasoning(body)
    tags = list(_TAG.finditer(body))
    if not tags:
        return None, "no_answer"
    depth, max_depth = 0, 0
    for t in tags:
        depth += -1 if t.group(0).startswith("</") else 1
        max_depth = max(max_depth, depth)
        if depth < 0:
            return None, "malformed_tags"
    opens = sum(1 for t in tags if not t.group(0).startswith("</"))
    if max_depth > 1:
        return None, "nested_answer"
    if opens > len(tags) - opens:
        return None, "unclosed_answer"
    if opens > 1:
        return None, "multiple_answers"
    if body[tags[1].end() :].strip():
        return None, "text_after_answer"
    content = body[tags[0].end() : tags[1].start()]
    if len(content) > max_answer_chars:
        return None, "answer_too_long"
    return content, None


@dataclass(frozen=True, slots=True)
class AnswerFormat:
    """One task's answer envelope: its limits and its violation codes.

    Attributes:
        max_completion_chars: Longest completion parsed, in characters (``too_long``).
        max_answer_chars: Longest content of the answer block, in characters (``answer_too_long``).
        task_violations: The task's own violation codes, checked after the envelope's, in order.
    """

    max_completion_chars: int
    max_answer_chars: int
    task_violations: tuple[str, ...] = ()

    @property
    def violations(self) -> tuple[str, ...]:
        """Every violation code, in the order they are checked: :data:`ENVELOPE_VIOLATIONS`, then the task's."""
        return (*ENVELOPE_VIOLATIONS, *self.task_violations)

    def extract(self, text: object) -> tuple[str | None, str | None]:
        """:func:`extract_answer` with these limits, then ``empty_answer`` for a block of white space only.

        Returns:
            ``(content, None)`` (raw, unstripped) or ``(None, violation code)``. Never raises.
        """
        content, violation = extract_answer(text, max_completion_chars=self.max_completion_chars, max_answer_chars=self.max_answer_chars)
        if content is None:
            return None, violation
        if not content.strip():
            return None, "empty_answer"
        return content, None


class Verdict:
    """Mixin of a parsed answer that has a ``violation`` (None when well formed): gives :attr:`ok`."""

    __slots__ = ()
    violation: str | None

    @property
    def ok(self) -> bool:
        """True when the answer is well formed."""
        return self.violation is None
