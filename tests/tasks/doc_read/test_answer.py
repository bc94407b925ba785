"""Answer envelope and normalisation rules (docs/doc-read-task.md), including round trips of every printed format."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hyperpod_rl.tasks.doc_read import Question, normalise, parse_envelope
from hyperpod_rl.tasks.doc_read.answer import VIOLATIONS, parse_date, parse_number
from hyperpod_rl.tasks.doc_read.document import CURRENCIES, MINOR_DIGITS, minor_to_decimal
from hyperpod_rl.tasks.doc_read.reward import FORMAT_PENALTY, score
from hyperpod_rl.tasks.doc_read.templates import DATE_ORDER_OF, format_date, format_money


def _money(expected: str, currency: str) -> Question:
    return Question(qtype="t", kind="field", text="t", answer_type="money", expected=expected, currency=currency)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1234", "1234"),
        ("1,234", "1234"),
        ("1.234", "1234"),
        ("12,5", "12.5"),
        ("12.50", "12.50"),
        ("1,234,567.89", "1234567.89"),
        ("1.234.567,89", "1234567.89"),
        ("1 234,50", "1234.50"),
        ("1'234.50", "1234.50"),
        ("-7", "-7"),
    ],
)
def test_number_grammar_reads_each_convention(text: str, value: str) -> None:
    from decimal import Decimal

    assert parse_number(text) == Decimal(value)


@pytest.mark.parametrize("text", ["1,23,4", "12 34", "1,234.5.6", "1.234,5,6", "1,,234", "12a", "", ".5", "1_000"])
def test_number_grammar_rejects_malformed_numbers(text: str) -> None:
    assert parse_number(text) is None


@settings(max_examples=300, deadline=None)
@given(
    minor=st.integers(min_value=0, max_value=10**9), currency=st.sampled_from(CURRENCIES), style=st.sampled_from(["symbol", "code", "eu"])
)
def test_every_printed_amount_normalises_to_its_value(minor: int, currency: str, style: str) -> None:
    """What a page prints, copied verbatim, is always a correct money answer."""
    q = _money(str(minor_to_decimal(minor, currency)), currency)
    printed = format_money(minor, currency, style)  # type: ignore[arg-type]
    assert score(f"<answer>{printed}</answer>", q).correct, printed


@settings(max_examples=300, deadline=None)
@given(
    date=st.dates(min_value=dt.date(1900, 1, 1), max_value=dt.date(2100, 12, 31)),
    fmt=st.sampled_from(list(DATE_ORDER_OF)),
)
def test_every_printed_date_normalises_to_itself_in_its_page_order(date: dt.date, fmt: str) -> None:
    printed = format_date(date, fmt)  # type: ignore[arg-type]
    assert parse_date(printed, DATE_ORDER_OF[fmt]) == date, printed


@pytest.mark.parametrize("currency", CURRENCIES)
def test_a_marker_of_another_currency_is_wrong(currency: str) -> None:
    q = _money("10", currency)
    other = next(c for c in CURRENCIES if c != currency)
    got = normalise(f"10 {other}", q)
    assert got.value is None and got.error == "other_currency"
    assert normalise(f"10 {currency}", q).value == "10"


def test_minor_digits_cover_every_currency() -> None:
    assert set(MINOR_DIGITS) == set(CURRENCIES)


@pytest.mark.parametrize(
    ("completion", "code"),
    [
        (None, "not_text"),
        ("x" * 20_000, "too_long"),
        ("<|vision_start|><answer>1</answer>", "vision_token"),
        ("1", "no_answer"),
        ("</answer>1<answer>", "malformed_tags"),
        ("<answer>1", "unclosed_answer"),
        ("<answer><answer>1</answer></answer>", "nested_answer"),
        ("<answer>1</answer><answer>2</answer>", "multiple_answers"),
        ("<answer>1</answer> ok", "text_after_answer"),
        ("<answer>" + "1" * 300 + "</answer>", "answer_too_long"),
        ("<answer> </answer>", "empty_answer"),
    ],
)
def test_each_violation_is_named_and_penalised(completion: object, code: str) -> None:
    assert code in VIOLATIONS
    assert parse_envelope(completion).violation == code
    q = _money("1", "USD")
    out = score(completion, q)
    assert out.violation == code and out.reward == -FORMAT_PENALTY


def test_reasoning_blocks_never_count() -> None:
    assert parse_envelope("<think>x</think><answer> 7 </answer><|im_end|>").content == " 7 "
    assert parse_envelope("<think><answer>7</answer>").violation == "no_answer"


@pytest.mark.parametrize(
    ("answer_type", "expected", "content", "ok"),
    [
        ("text", "Desk lamp", "DESK LAMP", True),
        ("text", "Desk lamp", "Desk lamp!", False),
        ("text", "Desk lamp", "\uff24esk lamp", True),  # full-width D: NFKC
        ("yesno", "no", "No.", True),
        ("yesno", "no", "nope", False),
        ("number", "12", "\uff11\uff12", True),
        ("date", "2025-03-04", "2025-03-04", True),
    ],
)
def test_normalisation_by_type(answer_type: str, expected: str, content: str, ok: bool) -> None:
    q = Question(qtype="t", kind="field", text="t", answer_type=answer_type, expected=expected, date_order="MDY")  # type: ignore[arg-type]
    assert score(f"<answer>{content}</answer>", q).correct is ok


def test_score_never_raises_on_hostile_text() -> None:
    q = _money("1", "USD")
    for text in ["<answer>\x00</answer>", "<answer>" + "\u202e1" + "</answer>", "<answer>$$$</answer>", "<answer>1e9999</answer>"]:
        assert score(text, q).reward in (0.0, -FORMAT_PENALTY)


#: Held-back adversarial answers of issue 30 (and their kind): numbers the spec's grammar defines as valid.
@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1,234,500", "1234500"),
        ("1.234.500", "1234500"),
        ("1 234 500", "1234500"),
        ("1'234'500", "1234500"),
        ("1234.500", "1234500"),
        ("1234,500", "1234500"),
        ("12345,678", "12345678"),
        ("1,234,500.25", "1234500.25"),
        ("1.234.500,25", "1234500.25"),
        ("1 234 500.5", "1234500.5"),
        ("- 1,234,500", "-1234500"),
        ("+1,234", "1234"),
        ("1,234.500", "1234.5"),
    ],
)
def test_grouped_numbers_of_the_spec_grammar_parse(text: str, value: str) -> None:
    from decimal import Decimal

    assert parse_number(text) == Decimal(value)
    q = Question(qtype="t", kind="sum", text="t", answer_type="number", expected=value)
    assert score(f"<answer>{text}</answer>", q).correct, text
    if text[0].isdigit():  # the same amount as money, with a dollar sign
        assert score(f"<answer>${text}</answer>", _money(value, "USD")).correct, text


@pytest.mark.parametrize(
    "text", ["1234,567.89", "1,234,5", "1 234 5", "12345 678", "1.234,567.8", "1,234.567,8", "--1", "1.234.56", "1,234 567"]
)
def test_numbers_outside_the_grammar_do_not_parse(text: str) -> None:
    assert parse_number(text) is None
    q = Question(qtype="t", kind="sum", text="t", answer_type="number", expected="1")
    assert normalise(text, q).error == "not_a_number"


def test_the_number_grammar_is_stated_in_the_spec() -> None:
    """The spec page states the grammar the parser implements (docs/doc-read-task.md, "Number grammar")."""
    from pathlib import Path

    spec = (Path(__file__).resolve().parents[3] / "docs" / "doc-read-task.md").read_text()
    grammar = spec[spec.index("**Number grammar**") :].split("```text\n", 1)[1].split("```", 1)[0]
    for production in ("number", "plain", "single", "grouped", "group(s)", "point(s)", "frac", "d3", "d1to3"):
        assert f"\n{production} " in f"\n{grammar}", production


@settings(max_examples=300, deadline=None)
@given(
    value=st.integers(min_value=0, max_value=10**12),
    cents=st.one_of(st.none(), st.integers(min_value=0, max_value=99)),
    sep=st.sampled_from([",", ".", " ", "'"]),
)
def test_every_grouped_rendering_of_a_number_parses_to_it(value: int, cents: int | None, sep: str) -> None:
    """Any number written by the grammar's ``grouped`` production reads back as itself."""
    from decimal import Decimal

    grouped = f"{value:,}".replace(",", sep)
    point = "," if sep == "." else "."
    text = grouped if cents is None else f"{grouped}{point}{cents:02d}"
    want = Decimal(value) if cents is None else Decimal(f"{value}.{cents:02d}")
    assert parse_number(text) == want, text
