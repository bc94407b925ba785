"""Parse a completion's answer and normalise it for exact match. Pure; the spec is ``docs/doc-read-task.md``.

**Envelope.** Free reasoning, then exactly one ``<answer>...</answer>`` block; only whitespace and
end-of-turn tokens may follow it; anything inside ``<think>...</think>`` never counts. Every
deviation is a *format violation* (:data:`VIOLATIONS`).

**Normalisation** (:func:`normalise`), by the question's answer type. First, for every type
(rule N0): Unicode NFKC (full-width digits and letters become ASCII, no-break spaces become
spaces), surrounding whitespace removed, one pair of matching surrounding quotes removed, one
trailing ``.`` removed; if any non-ASCII character is left (a Cyrillic homoglyph, a zero-width
space), the answer matches nothing. Then:

* ``text``: case-folded, inner whitespace runs collapsed to one space; equal to the expected text
  normalised the same way.
* ``yesno``: case-folded, exactly ``yes`` or ``no``.
* ``number``: the EBNF grammar of the spec's "Number grammar" (:func:`parse_number`): an optional
  sign and digits, with thousands grouped by one kind of separator (``,`` ``.`` space or ``'``;
  groups of exactly three digits) and an optional decimal part after the other of ``.`` / ``,``.
  A single ``,`` or ``.`` followed by exactly three digits groups thousands, whatever precedes it
  (``1,234``, ``1.234`` are 1234; ``1234.500`` is 1234500); followed by any other number of digits
  it is the decimal point (``12,5`` is 12.5). Compared as decimals (``1234.5`` = ``1234.50``).
* ``money``: as ``number``, with at most one currency marker before or after the amount
  (``$`` ``US$`` ``€`` ``£`` ``¥`` or an ISO code, any case); a marker of another currency than
  the document's makes the answer wrong.
* ``date``: ``YYYY-MM-DD`` (also with ``/`` or ``.``); ``A/B/YYYY`` (also ``.`` or ``-``) read in
  the page's numeric order (``MDY`` or ``DMY``; on an ISO page only when one reading alone is a
  valid date, or both readings agree); ``14 Mar 2025``, ``14 March 2025``, ``Mar 14, 2025``,
  ``March 14 2025`` (English month names or three-letter abbreviations). Two-digit years and
  impossible dates (``2025-02-30``) match nothing.

An answer that does not fit its type's grammar is *wrong* (reward 0), not a format violation.
"""

from __future__ import annotations

import datetime as dt
import re
import unicodedata
from dataclasses import dataclass
from decimal import Decimal
from typing import Final

from hyperpod_rl.tasks.answer import AnswerFormat, Verdict
from hyperpod_rl.tasks.doc_read.document import Question

__all__ = [
    "FORMAT",
    "MAX_ANSWER_CHARS",
    "MAX_COMPLETION_CHARS",
    "VIOLATIONS",
    "Envelope",
    "Normalised",
    "is_correct",
    "normalise",
    "parse_envelope",
]

#: The envelope's limits: a completion of 16,384 characters, an answer block of 256 (the
#: envelope's violation codes only; a badly typed answer is wrong, not a violation).
FORMAT: Final[AnswerFormat] = AnswerFormat(16_384, 256)
#: Longest completion parsed, in characters ("too_long").
MAX_COMPLETION_CHARS: Final[int] = FORMAT.max_completion_chars
#: Longest text inside the answer block, in characters ("answer_too_long").
MAX_ANSWER_CHARS: Final[int] = FORMAT.max_answer_chars
#: Violation codes, in the order they are checked.
VIOLATIONS: Final[tuple[str, ...]] = FORMAT.violations

_QUOTES: Final[tuple[tuple[str, str], ...]] = (('"', '"'), ("'", "'"), ("`", "`"))


@dataclass(frozen=True, slots=True)
class Envelope(Verdict):
    """The answer block of a completion (``ok``: no violation).

    Attributes:
        content: Text inside the answer tags (raw), or None on a violation.
        violation: None when well formed, else a code from :data:`VIOLATIONS`.
    """

    content: str | None
    violation: str | None = None


def parse_envelope(text: object) -> Envelope:
    """Extract the answer block, or name the format violation. Never raises
    (:meth:`hyperpod_rl.tasks.answer.AnswerFormat.extract` with this task's limits)."""
    return Envelope(*FORMAT.extract(text))


@dataclass(frozen=True, slots=True)
class Normalised:
    """An answer in canonical form.

    Attributes:
        value: Canonical text (``text``: folded text; ``number`` / ``money``: a plain decimal;
            ``date``: ISO; ``yesno``: ``yes``/``no``), or None when the answer does not parse.
        error: Why it does not parse (``non_ascii``, ``not_a_number``, ``other_currency``,
            ``not_a_date``, ``not_yes_no``), else None.
    """

    value: str | None
    error: str | None = None


def _n0(text: str) -> str | None:
    s = unicodedata.normalize("NFKC", text).strip()
    for left, right in _QUOTES:
        if len(s) >= 2 and s.startswith(left) and s.endswith(right):
            s = s[1:-1].strip()
            break
    if s.endswith("."):
        s = s[:-1].rstrip()
    return s if s.isascii() else None


# The ``number`` grammar of docs/doc-read-task.md ("Number grammar"), one regular expression per
# production; parse_number tries them in the order the spec lists them.
_SIGN = r"(?P<sign>[+-]) *"
_PLAIN = re.compile(r"(?P<int>\d+)(?:(?P<point>[,.])(?P<frac>\d{1,2}|\d{4,}))?")
_SINGLE = re.compile(r"(?P<int>\d+)(?P<sep>[,.])(?P<group>\d{3})")
_GROUPED = tuple(
    re.compile(rf"(?P<int>\d{{1,3}}(?:{re.escape(sep)}\d{{3}})+)(?:(?P<point>{point})(?P<frac>\d+))?")
    for sep, point in ((",", r"\."), (".", ","), (" ", "[,.]"), ("'", "[,.]"))
)


def parse_number(text: str) -> Decimal | None:
    """The value of ``text`` under the ``number`` grammar of docs/doc-read-task.md, or None when it does not fit.

    ``number = [sign] (plain | single | grouped)``: ``plain`` is digits with an optional decimal part
    after ``,`` or ``.`` of other than three digits (``12,5``); ``single`` is digits, one ``,`` or
    ``.``, then exactly three digits, which groups thousands (``1,234``, ``1234.500`` is 1234500);
    ``grouped`` is one to three digits, then one or more groups of three after one kind of
    separator (``,`` ``.`` space ``'``), then an optional decimal part after the other of ``.``/``,``
    (``1,234,500``, ``1.234.567,89``, ``1 234.5``). Pure; never raises.
    """
    s = text.strip()
    sign = ""
    if m := re.match(_SIGN, s):
        sign, s = m.group("sign"), s[m.end() :]
    if m := _PLAIN.fullmatch(s):
        integer, fraction = m.group("int"), m.group("frac") or ""
    elif m := _SINGLE.fullmatch(s):
        integer, fraction = m.group("int") + m.group("group"), ""
    elif m := next((g.fullmatch(s) for g in _GROUPED if g.fullmatch(s)), None):
        integer, fraction = re.sub(r"\D", "", m.group("int")), m.group("frac") or ""
    else:
        return None
    return Decimal(f"{sign}{integer}.{fraction}" if fraction else f"{sign}{integer}")


#: Currency markers: text -> ISO code (matched case-insensitively, longest first).
_MARKERS: Final[dict[str, str]] = {
    "US$": "USD",
    "$": "USD",
    "€": "EUR",
    "£": "GBP",
    "¥": "JPY",
    "USD": "USD",
    "EUR": "EUR",
    "GBP": "GBP",
    "JPY": "JPY",
}
_MARKER_RE = "|".join(re.escape(m) for m in sorted(_MARKERS, key=len, reverse=True))
_MONEY = re.compile(rf"^(?P<s1>[+-]?)\s*(?P<pre>{_MARKER_RE})?\s*(?P<num>[+-]?[\d][\d,. ']*)\s*(?P<post>{_MARKER_RE})?$", re.IGNORECASE)


def _money(text: str, currency: str | None) -> Normalised:
    # ``text`` has passed N0 with the euro, pound and yen signs already spelt as ISO codes.
    m = _MONEY.match(text)
    if not m or (m.group("pre") and m.group("post")) or (m.group("s1") and m.group("num")[:1] in "+-"):
        return Normalised(None, "not_a_number")
    marker = m.group("pre") or m.group("post")
    if marker and _MARKERS[marker.upper()] != currency:
        return Normalised(None, "other_currency")
    value = parse_number(m.group("s1") + m.group("num").strip())
    return Normalised(None, "not_a_number") if value is None else Normalised(_canonical_decimal(value))


def _canonical_decimal(value: Decimal) -> str:
    text = format(value.normalize(), "f")
    return "0" if text in ("-0", "+0") else text


_MONTH_NAMES: Final[dict[str, int]] = {}
for _i, _name in enumerate(
    ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"), 1
):
    _MONTH_NAMES[_name] = _i
    _MONTH_NAMES[_name[:3]] = _i
_MONTH_RE = "|".join(sorted(_MONTH_NAMES, key=len, reverse=True))
_DATE_YMD = re.compile(r"(\d{4})([-/.])(\d{1,2})\2(\d{1,2})")
_DATE_NUM = re.compile(r"(\d{1,2})([-/.])(\d{1,2})\2(\d{4})")
_DATE_DMY_NAME = re.compile(rf"(\d{{1,2}})[ -]({_MONTH_RE})[ -],?\s*(\d{{4}})", re.IGNORECASE)
_DATE_MDY_NAME = re.compile(rf"({_MONTH_RE})\s+(\d{{1,2}}),?\s+(\d{{4}})", re.IGNORECASE)


def _valid(year: int, month: int, day: int) -> dt.date | None:
    try:
        return dt.date(year, month, day)
    except ValueError:
        return None


def parse_date(text: str, date_order: str) -> dt.date | None:
    """The date written by the ``date`` rules of the module docstring (page order ``date_order``), or None."""
    s = re.sub(r"\s+", " ", text.strip())
    if m := _DATE_YMD.fullmatch(s):
        return _valid(int(m.group(1)), int(m.group(3)), int(m.group(4)))
    if m := _DATE_NUM.fullmatch(s):
        a, b, year = int(m.group(1)), int(m.group(3)), int(m.group(4))
        if date_order == "MDY":
            return _valid(year, a, b)
        if date_order == "DMY":
            return _valid(year, b, a)
        readings = {d for d in (_valid(year, a, b), _valid(year, b, a)) if d is not None}
        return readings.pop() if len(readings) == 1 else None
    if m := _DATE_DMY_NAME.fullmatch(s):
        return _valid(int(m.group(3)), _MONTH_NAMES[m.group(2).lower()], int(m.group(1)))
    if m := _DATE_MDY_NAME.fullmatch(s):
        return _valid(int(m.group(3)), _MONTH_NAMES[m.group(1).lower()], int(m.group(2)))
    return None


def normalise(content: str, question: Question) -> Normalised:
    """The canonical form of an answer to ``question`` (rules in the module docstring). Pure; never raises."""
    raw = unicodedata.normalize("NFKC", content).strip()
    if question.answer_type == "money":  # the euro, pound and yen signs are not ASCII: spell them first
        s = _n0(raw.replace("€", "EUR").replace("£", "GBP").replace("¥", "JPY"))
        if s is None:
            return Normalised(None, "non_ascii")
        return _money(s, question.currency)
    s = _n0(raw)
    if s is None:
        return Normalised(None, "non_ascii")
    if question.answer_type == "text":
        return Normalised(" ".join(s.casefold().split()))
    if question.answer_type == "yesno":
        folded = s.casefold()
        return Normalised(folded) if folded in ("yes", "no") else Normalised(None, "not_yes_no")
    if question.answer_type == "number":
        value = parse_number(s)
        return Normalised(None, "not_a_number") if value is None else Normalised(_canonical_decimal(value))
    date = parse_date(s, question.date_order)
    return Normalised(None, "not_a_date") if date is None else Normalised(date.isoformat())


def expected_value(question: Question) -> str:
    """The expected answer in the same canonical form as :func:`normalise` gives."""
    if question.answer_type == "text":
        return " ".join(unicodedata.normalize("NFKC", question.expected).casefold().split())
    if question.answer_type in ("number", "money"):
        return _canonical_decimal(Decimal(question.expected))
    return question.expected


def is_correct(content: str, question: Question) -> bool:
    """True when ``content`` (the text inside the answer tags) normalises to the expected answer."""
    got = normalise(content, question)
    return got.value is not None and got.value == expected_value(question)
