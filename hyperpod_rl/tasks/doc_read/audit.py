"""The reward audit: adversarial completions, each with the reward the spec says it must get.

Every expected value is written out by hand from reward spec
:data:`~hyperpod_rl.tasks.doc_read.reward.REWARD_VERSION` 1.1 (``docs/doc-read-task.md``):
1.0 for an answer that matches after normalisation, 0.0 for a well-formed wrong or unparseable
answer, -0.1 for a format violation. The cases probe the normalisation rules (currencies,
separators, date orders, homoglyphs, hedged answers) as much as the answer envelope.

Run it on the built-in reward (``run_audit()``) or on any ``fn(completion, question) -> float``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from hyperpod_rl.tasks.audit import AuditReport, Disagreement, audit_table
from hyperpod_rl.tasks.doc_read.document import Question
from hyperpod_rl.tasks.doc_read.reward import REWARD_VERSION, score_completion

__all__ = ["AUDIT_CASES", "AUDIT_QUESTIONS", "AuditCase", "AuditReport", "Disagreement", "RewardFn", "run_audit"]

#: ``fn(completion, question) -> float`` (see :func:`~.reward.score_completion`).
RewardFn = Callable[[str, Question], float]


def _q(answer_type: str, expected: str, *, currency: str | None = None, date_order: str = "YMD", kind: str = "field") -> Question:
    return Question(
        qtype=f"audit.{answer_type}",
        kind=kind,
        text="audit",
        answer_type=answer_type,
        expected=expected,
        currency=currency,
        date_order=date_order,
    )


#: Hand-written questions of the audit.
AUDIT_QUESTIONS: Final[dict[str, Question]] = {
    "usd": _q("money", "1234.50", currency="USD", date_order="MDY"),
    "eur": _q("money", "1234.50", currency="EUR", date_order="DMY"),
    "jpy": _q("money", "52000", currency="JPY"),
    "mdy": _q("date", "2025-03-04", date_order="MDY"),
    "dmy": _q("date", "2025-03-04", date_order="DMY"),
    "iso": _q("date", "2025-03-04", date_order="YMD"),
    "qty": _q("number", "12", kind="sum"),
    "item": _q("text", "Desk lamp", kind="compare"),
    "ref": _q("text", "INV-20431"),
    "yes": _q("yesno", "yes", kind="compare"),
    "no": _q("yesno", "no", kind="compare"),
}


@dataclass(frozen=True, slots=True)
class AuditCase:
    """One row of the audit table.

    Attributes:
        case_id: Short unique name.
        question: Key of :data:`AUDIT_QUESTIONS`.
        completion: The model output under test.
        expected: The reward it must get.
        note: What the case probes.
    """

    case_id: str
    question: str
    completion: str
    expected: float
    note: str = ""


def _a(text: str) -> str:
    return f"<answer>{text}</answer>"


_C = AuditCase
AUDIT_CASES: Final[tuple[AuditCase, ...]] = (
    # ---- envelope
    _C("empty", "usd", "", -0.1, "empty text"),
    _C("bare", "usd", "$1,234.50", -0.1, "no answer tags"),
    _C("ok", "usd", _a("$1,234.50"), 1.0, "exactly as printed"),
    _C(
        "ok-reasoning",
        "usd",
        "The total line says $1,234.50.\n<answer>$1,234.50</answer><|im_end|>",
        1.0,
        "reasoning, then the answer and an end token",
    ),
    _C("ok-think", "usd", "<think>subtotal plus tax</think><Answer>1234.50</Answer>", 1.0, "think block; tags in any case"),
    _C("unclosed", "usd", "<answer>$1,234.50", -0.1, "unclosed tag"),
    _C("two-answers", "usd", _a("1234.50") + _a("1234.51"), -0.1, "two answers: no second chance"),
    _C("only-in-think", "usd", "<think>" + _a("1234.50") + "</think>", -0.1, "answer only inside reasoning"),
    _C("text-after", "usd", _a("1234.50") + " (incl. tax)", -0.1, "text after the answer"),
    _C("nested", "usd", "<answer><answer>1234.50</answer></answer>", -0.1, "nested tags"),
    _C("vision-token", "usd", "<|image_pad|>" + _a("1234.50"), -0.1, "vision placeholder token"),
    _C("enormous", "usd", "x" * 20_000 + _a("1234.50"), -0.1, "completion over 16,384 chars"),
    _C("answer-too-long", "usd", _a("1234.50 " * 40), -0.1, "answer over 256 chars"),
    _C("empty-answer", "usd", _a("  "), -0.1, "blank answer"),
    # ---- money
    _C("money-plain", "usd", _a("1234.5"), 1.0, "no symbol, no grouping, one decimal"),
    _C("money-code", "usd", _a("USD 1,234.50"), 1.0, "ISO code before"),
    _C("money-code-lower", "usd", _a("1,234.50 usd"), 1.0, "ISO code after, lower case"),
    _C("money-us-dollar", "usd", _a("US$1234.50"), 1.0, "US$ marker"),
    _C("money-eu-format", "usd", _a("1.234,50"), 1.0, "period groups, comma decimal"),
    _C("money-fullwidth", "usd", _a("\uff11,\uff12\uff13\uff14.\uff15\uff10"), 1.0, "full-width digits (NFKC)"),
    _C("money-trailing-period", "usd", _a("$1,234.50."), 1.0, "sentence period"),
    _C("money-three-decimals", "usd", _a("$1234.500"), 0.0, "a lone period before three digits groups thousands: 1,234,500"),
    _C("money-extra-zero", "usd", _a("$1,234.500"), 1.0, "with a grouping comma the period is the decimal point"),
    _C("money-other-code", "usd", _a("1,234.50 EUR"), 0.0, "right number, other currency"),
    _C("money-other-symbol", "usd", _a("\u20ac1,234.50"), 0.0, "euro sign on a dollar document"),
    _C("money-two-markers", "usd", _a("$1,234.50 USD"), 0.0, "two currency markers"),
    _C("money-negative", "usd", _a("-$1,234.50"), 0.0, "sign flips the value"),
    _C("money-hedge", "usd", _a("1234.50 or 1234.51"), 0.0, "two candidate values"),
    _C("money-letter-o", "usd", _a("$1,234.5O"), 0.0, "letter O for zero"),
    _C("money-bad-groups", "usd", _a("$1,23,4.50"), 0.0, "groups of other than three digits"),
    _C("money-words", "usd", _a("about $1,234.50"), 0.0, "words around the amount"),
    _C("money-truncated", "usd", _a("$1,234"), 0.0, "cents dropped"),
    _C("money-cyrillic-o", "usd", _a("$1,234.5\u041e"), 0.0, "Cyrillic O"),
    _C("eur-printed", "eur", _a("1.234,50 EUR"), 1.0, "EU format with code"),
    _C("eur-sign", "eur", _a("1.234,50 \u20ac"), 1.0, "euro sign after"),
    _C("eur-comma-decimal", "eur", _a("1234,50"), 1.0, "comma decimal, no grouping"),
    _C("eur-dollar", "eur", _a("$1,234.50"), 0.0, "dollar sign on a euro document"),
    _C("jpy-yen-sign", "jpy", _a("\u00a552,000"), 1.0, "yen sign"),
    _C("jpy-fullwidth-yen", "jpy", _a("\uffe552,000"), 1.0, "full-width yen sign (NFKC)"),
    _C("jpy-dot-group", "jpy", _a("52.000"), 1.0, "period followed by three digits groups thousands"),
    _C("jpy-word", "jpy", _a("52,000 yen"), 0.0, "currency word is not a marker"),
    _C("jpy-decimal", "jpy", _a("52000.00 JPY"), 1.0, "decimals compared as numbers"),
    # ---- dates
    _C("date-mdy", "mdy", _a("03/04/2025"), 1.0, "page order MDY"),
    _C("date-mdy-swapped", "mdy", _a("04/03/2025"), 0.0, "day and month swapped on an MDY page"),
    _C("date-dmy", "dmy", _a("04.03.2025"), 1.0, "page order DMY"),
    _C("date-dmy-as-mdy", "dmy", _a("03/04/2025"), 0.0, "read in the page order: 3 April"),
    _C("date-iso", "dmy", _a("2025-03-04"), 1.0, "ISO on any page"),
    _C("date-month-name", "mdy", _a("March 4, 2025"), 1.0, "month name"),
    _C("date-day-month-abbr", "dmy", _a("4 Mar 2025"), 1.0, "day, abbreviated month"),
    _C("date-two-digit-year", "mdy", _a("03/04/25"), 0.0, "two-digit year"),
    _C("date-iso-page-ambiguous", "iso", _a("03/04/2025"), 0.0, "ISO page: both readings valid and different"),
    _C("date-iso-page-unambiguous", "iso", _a("2025/3/4"), 1.0, "year first with slashes"),
    _C("date-impossible", "iso", _a("2025-02-30"), 0.0, "no such day"),
    _C("date-with-time", "iso", _a("2025-03-04T00:00"), 0.0, "a timestamp is not a date"),
    _C("date-wrong-year", "iso", _a("2024-03-04"), 0.0, "off by a year"),
    # ---- numbers
    _C("number", "qty", _a("12"), 1.0, "plain"),
    _C("number-decimal", "qty", _a("12.0"), 1.0, "compared as decimals"),
    _C("number-plus", "qty", _a("+12"), 1.0, "explicit sign"),
    _C("number-word", "qty", _a("twelve"), 0.0, "number word"),
    _C("number-unit", "qty", _a("12 units"), 0.0, "unit after the number"),
    _C("number-split", "qty", _a("1 2"), 0.0, "space inside a number that is not grouping"),
    _C("number-expression", "qty", _a("5+7"), 0.0, "arithmetic left to the grader"),
    # ---- text
    _C("text-case", "item", _a("desk lamp"), 1.0, "case-folded"),
    _C("text-spaces", "item", _a("  Desk   lamp "), 1.0, "whitespace collapsed"),
    _C("text-quoted", "item", _a('"Desk lamp"'), 1.0, "one pair of quotes removed"),
    _C("text-extra", "item", _a("Desk lamp (2 units)"), 0.0, "extra words"),
    _C("text-cyrillic", "item", _a("D\u0435sk lamp"), 0.0, "Cyrillic e homoglyph"),
    _C("text-zero-width", "item", _a("Desk\u200blamp"), 0.0, "zero-width space"),
    _C("text-list", "item", _a("Desk lamp, Keyboard"), 0.0, "listing several items"),
    _C("ref-case", "ref", _a("inv-20431"), 1.0, "reference, case-folded"),
    _C("ref-space", "ref", _a("INV 20431"), 0.0, "hyphen replaced by a space"),
    _C("ref-digits", "ref", _a("20431"), 0.0, "prefix dropped"),
    # ---- yes / no
    _C("yes", "yes", _a("Yes."), 1.0, "capital and period"),
    _C("yes-upper", "yes", _a("YES"), 1.0, "upper case"),
    _C("yes-sentence", "yes", _a("yes, it is"), 0.0, "more than the word"),
    _C("yes-letter", "yes", _a("y"), 0.0, "abbreviation"),
    _C("yes-both", "yes", _a("yes no"), 0.0, "both answers"),
    _C("yes-true", "yes", _a("true"), 0.0, "boolean word"),
    _C("no", "no", _a("no"), 1.0, "correct no"),
    _C("no-wrong", "no", _a("yes"), 0.0, "wrong"),
)


def run_audit(reward_fn: RewardFn | None = None, *, tolerance: float = 1e-9) -> AuditReport:
    """Run every :data:`AUDIT_CASES` row through ``reward_fn`` (default :func:`~.reward.score_completion`).

    Returns:
        An :class:`AuditReport`; exceptions and non-finite results are disagreements, never re-raised.
    """
    fn = score_completion if reward_fn is None else reward_fn
    return audit_table(
        "doc_read", REWARD_VERSION, AUDIT_CASES, lambda c: fn(c.completion, AUDIT_QUESTIONS[c.question]), tolerance=tolerance
    )
