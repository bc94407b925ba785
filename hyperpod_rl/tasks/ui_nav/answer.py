"""Parse a model completion into one interface action. Pure; the spec is ``docs/ui-nav-task.md``.

Format: free reasoning, then exactly one ``<answer>...</answer>`` block holding one action, with
only whitespace and end-of-turn tokens (``<|im_end|>``, ``<|endoftext|>``) after it. Anything
inside ``<think>...</think>`` is reasoning and never counts. Actions (ASCII, verbs in any case):

* ``click "Dark mode"`` or ``click Dark mode``: click the visible element with that label
  (labels match case-insensitively, runs of spaces collapsed);
* ``click (120, 48)`` or ``click 120, 48``: click at pixel x=120, y=48 of the image shown
  (origin top-left; integers, a minus sign allowed, so that out-of-screen clicks parse);
* ``type "Ada"``: replace the focused text field's text (double quotes required, no quote inside);
* ``back``: go back one screen (closes an open dialog).

Every deviation is a *format violation*: :class:`ParsedAction` then has no action and a code from
:data:`VIOLATIONS`. Whether the action applies to the screen (a label that exists, a focused
field) is the reward's business, not the parser's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from hyperpod_rl.tasks.answer import END_TOKENS, ENVELOPE_VIOLATIONS, VISION_TOKENS
from hyperpod_rl.tasks.answer import extract_answer as _extract
from hyperpod_rl.tasks.ui_nav.app import Action

__all__ = [
    "END_TOKENS",
    "MAX_ANSWER_CHARS",
    "MAX_COMPLETION_CHARS",
    "VIOLATIONS",
    "VISION_TOKENS",
    "ParsedAction",
    "extract_answer",
    "parse_action",
]

#: Longest completion parsed, in characters ("too_long").
MAX_COMPLETION_CHARS: Final[int] = 32_768
#: Longest text inside the answer block, in characters ("answer_too_long").
MAX_ANSWER_CHARS: Final[int] = 256

#: Violation codes, in the order they are checked.
VIOLATIONS: Final[tuple[str, ...]] = (
    *ENVELOPE_VIOLATIONS,
    "non_ascii",
    "multiple_actions",
    "unknown_action",
    "bad_arguments",
)

_VERB = re.compile(r"^(click|type|back)\b\s*(.*)$", re.IGNORECASE | re.DOTALL)
_XY = re.compile(r"^\(?\s*(-?\d{1,6})\s*,\s*(-?\d{1,6})\s*\)?$")
_QUOTED = re.compile(r'^"([^"]*)"$')
_LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 '\-.&/]*$")
_SECOND_VERB = re.compile(r"\b(click|type|back)\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class ParsedAction:
    """The result of :func:`parse_action`.

    Attributes:
        action: The action, or None when ``violation`` is set.
        violation: None for a well-formed answer, else one code from :data:`VIOLATIONS`.
    """

    action: Action | None = None
    violation: str | None = None

    @property
    def ok(self) -> bool:
        """True when the answer is well formed."""
        return self.violation is None


def extract_answer(text: object) -> tuple[str | None, str | None]:
    """``(content of the one answer block, None)`` or ``(None, violation code)``. Never raises
    (:func:`hyperpod_rl.tasks.answer.extract_answer` with this task's limits)."""
    return _extract(text, max_completion_chars=MAX_COMPLETION_CHARS, max_answer_chars=MAX_ANSWER_CHARS)


def _fail(code: str) -> ParsedAction:
    return ParsedAction(None, code)


def parse_action(text: object) -> ParsedAction:
    """Extract the one action of a completion, or name the format violation (see module docstring).

    Returns:
        :class:`ParsedAction`; never raises on bad text.
    """
    content, violation = extract_answer(text)
    if violation is not None or content is None:
        return _fail(violation or "no_answer")
    content = content.strip()
    if not content:
        return _fail("empty_answer")
    if not content.isascii():
        return _fail("non_ascii")
    if any(ch in content for ch in ";\n\r\t"):
        return _fail("multiple_actions")
    m = _VERB.match(content)
    if m is None:
        return _fail("unknown_action")
    verb, rest = m.group(1).lower(), m.group(2).strip()
    if verb == "back":
        return ParsedAction(Action("back")) if not rest else _fail("multiple_actions" if _SECOND_VERB.search(rest) else "bad_arguments")
    quoted = _QUOTED.match(rest)
    if verb == "type":
        if quoted is None:
            return _fail("bad_arguments")
        typed = quoted.group(1).strip()
        return ParsedAction(Action("type", text=typed)) if typed else _fail("bad_arguments")
    # click
    xy = _XY.match(rest)
    if xy is not None:
        return ParsedAction(Action("click_xy", x=int(xy.group(1)), y=int(xy.group(2))))
    label = " ".join((quoted.group(1) if quoted else rest).split())
    if not label:
        return _fail("bad_arguments")
    if quoted is None and _SECOND_VERB.search(label):
        return _fail("multiple_actions")
    if '"' in label or not _LABEL.match(label):
        return _fail("bad_arguments")
    return ParsedAction(Action("click", label=label))
