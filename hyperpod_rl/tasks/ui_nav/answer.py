"""Parse a model completion into one interface action. Pure; the spec is ``docs/ui-nav-task.md``.

Format: free reasoning, then exactly one ``<answer>...</answer>`` block holding one action, with
only whitespace and end-of-turn tokens (``<|im_end|>``, ``<|endoftext|>``) after it. Anything
inside ``<think>...</think>`` is reasoning and never counts. Actions (ASCII, verbs in any case):

* ``click "Dark mode"`` or ``click Dark mode``: click the visible element with that label
  (labels match case-insensitively, runs of spaces collapsed; a label is what the app's
  :data:`~hyperpod_rl.tasks.ui_nav.app.LABEL_PATTERN` admits: printable ASCII but ``"`` ``;``
  ``(`` ``)``, so ``Sync: photos``, ``Name, city`` and ``Wi-Fi+`` are labels);
* ``click (120, 48)`` or ``click 120, 48``: click at pixel x=120, y=48 of the image shown
  (origin top-left; integers of any size, a minus sign allowed, so that every out-of-screen click
  parses and scores as off-screen);
* ``type "Ada"``: replace the focused text field's text (double quotes required, no quote inside);
* ``back``: go back one screen (closes an open dialog).

The grammar is written out in the spec ("Answer grammar"). Every deviation is a *format
violation*: :class:`ParsedAction` then has no action and a code from :data:`VIOLATIONS`. Whether the action applies to the screen (a label that exists, a focused
field) is the reward's business, not the parser's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from hyperpod_rl.tasks.answer import AnswerFormat, Verdict
from hyperpod_rl.tasks.ui_nav.app import LABEL_PATTERN, RESERVED_WORD_PATTERN, Action

__all__ = ["FORMAT", "MAX_ANSWER_CHARS", "MAX_COMPLETION_CHARS", "VIOLATIONS", "ParsedAction", "extract_answer", "parse_action"]

#: The envelope's limits (a completion of 32,768 characters, an answer block of 256) and the
#: task's own violation codes, checked after the envelope's.
FORMAT: Final[AnswerFormat] = AnswerFormat(32_768, 256, ("non_ascii", "multiple_actions", "unknown_action", "bad_arguments"))
#: Longest completion parsed, in characters ("too_long").
MAX_COMPLETION_CHARS: Final[int] = FORMAT.max_completion_chars
#: Longest text inside the answer block, in characters ("answer_too_long").
MAX_ANSWER_CHARS: Final[int] = FORMAT.max_answer_chars
#: Violation codes, in the order they are checked.
VIOLATIONS: Final[tuple[str, ...]] = FORMAT.violations

_VERB = re.compile(r"^(click|type|back)\b\s*(.*)$", re.IGNORECASE | re.DOTALL)
#: ``coords``: ``(x, y)`` or ``x, y``, integers of any length (the answer block bounds them), a minus sign allowed.
_INT = r"-?\d+"
_COORDS = re.compile(rf"\( *(?P<x1>{_INT}) *, *(?P<y1>{_INT}) *\)|(?P<x2>{_INT}) *, *(?P<y2>{_INT})")
#: ``quoted``: a double-quoted argument with no double quote inside.
_QUOTED = re.compile(r'"([^"]*)"')


@dataclass(frozen=True, slots=True)
class ParsedAction(Verdict):
    """The result of :func:`parse_action` (``ok``: no violation).

    Attributes:
        action: The action, or None when ``violation`` is set.
        violation: None for a well-formed answer, else one code from :data:`VIOLATIONS`.
    """

    action: Action | None = None
    violation: str | None = None


def extract_answer(text: object) -> tuple[str | None, str | None]:
    """``(content of the one answer block, None)`` or ``(None, violation code)``. Never raises
    (:meth:`hyperpod_rl.tasks.answer.AnswerFormat.extract` with this task's limits: a block of
    white space only is ``empty_answer``)."""
    return FORMAT.extract(text)


def _fail(code: str) -> ParsedAction:
    return ParsedAction(None, code)


def parse_action(text: object) -> ParsedAction:
    """Extract the one action of a completion, or name the format violation.

    The answer grammar of docs/ui-nav-task.md ("Answer grammar"), production by production: after
    the envelope, ``non_ascii``, and ``multiple_actions`` for ``;`` or a line break or tab, the
    verb (``unknown_action`` otherwise), then its argument: ``back`` takes none; ``type`` one
    quoted text; ``click`` coordinates (:data:`_COORDS`, integers of any size, so a click far
    outside the image is a click, scored off-screen), else a quoted or bare label read with the
    app's own :data:`~hyperpod_rl.tasks.ui_nav.app.LABEL_PATTERN` (``bad_arguments`` otherwise;
    ``multiple_actions`` for a second verb in a bare argument).

    Returns:
        :class:`ParsedAction`; never raises on bad text.
    """
    content, violation = extract_answer(text)
    if violation is not None or content is None:
        return _fail(violation or "no_answer")
    content = content.strip()
    if not content.isascii():
        return _fail("non_ascii")
    if any(ch in content for ch in ";\n\r\t"):
        return _fail("multiple_actions")
    m = _VERB.match(content)
    if m is None:
        return _fail("unknown_action")
    verb, rest = m.group(1).lower(), m.group(2).strip()
    if verb == "back":
        return (
            ParsedAction(Action("back"))
            if not rest
            else _fail("multiple_actions" if RESERVED_WORD_PATTERN.search(rest) else "bad_arguments")
        )
    quoted = _QUOTED.fullmatch(rest)
    if verb == "type":
        if quoted is None:
            return _fail("bad_arguments")
        typed = quoted.group(1).strip()
        return ParsedAction(Action("type", text=typed)) if typed else _fail("bad_arguments")
    # click
    if xy := _COORDS.fullmatch(rest):
        x, y = (int(v) for v in (xy.group("x1") or xy.group("x2"), xy.group("y1") or xy.group("y2")))
        return ParsedAction(Action("click_xy", x=x, y=y))
    if quoted is None and RESERVED_WORD_PATTERN.search(rest):
        return _fail("multiple_actions")
    label = re.sub(" {2,}", " ", (quoted.group(1) if quoted else rest).strip(" "))  # runs of spaces, not other whitespace
    if not LABEL_PATTERN.fullmatch(label):
        return _fail("bad_arguments")
    return ParsedAction(Action("click", label=label))
