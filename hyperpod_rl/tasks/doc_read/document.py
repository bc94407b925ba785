"""The document and question records: what a page says, and what is asked about it.

A :class:`Document` holds *values* (amounts in minor currency units, dates as ``datetime.date``);
how they are printed (date format, money format, labels, fonts) belongs to its template
(:mod:`.templates`). A :class:`Question` carries everything the reward needs: the expected
answer in canonical form, its type and the reading conventions of the page it was asked about, so
scoring never needs the image or the template.

Both are frozen pydantic models with a stable JSON form; :meth:`Document.content_hash` and
:meth:`Question.content_hash` are sha256 digests of that JSON and key the split-disjointness checks.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from decimal import Decimal
from typing import Final, Literal, get_args

from pydantic import Field, model_validator

from hyperpod_rl.tasks.doc_read._model import DocModel

__all__ = [
    "ANSWER_TYPES",
    "CURRENCIES",
    "DATE_ORDERS",
    "KINDS",
    "MINOR_DIGITS",
    "QUESTION_KINDS",
    "AnswerType",
    "Currency",
    "DateOrder",
    "Document",
    "Kind",
    "LineItem",
    "Question",
    "QuestionKind",
    "minor_to_decimal",
]

Kind = Literal["invoice", "receipt", "form", "table"]
KINDS: Final[tuple[str, ...]] = get_args(Kind)
Currency = Literal["USD", "EUR", "GBP", "JPY"]
CURRENCIES: Final[tuple[str, ...]] = get_args(Currency)
#: Digits after the decimal point per currency (ISO 4217 minor units).
MINOR_DIGITS: Final[dict[str, int]] = {"USD": 2, "EUR": 2, "GBP": 2, "JPY": 0}
#: How numeric dates on a page are ordered: year-month-day, month/day/year, day.month.year.
DateOrder = Literal["YMD", "MDY", "DMY"]
DATE_ORDERS: Final[tuple[str, ...]] = get_args(DateOrder)
AnswerType = Literal["text", "number", "money", "date", "yesno"]
ANSWER_TYPES: Final[tuple[str, ...]] = get_args(AnswerType)
QuestionKind = Literal["field", "sum", "compare"]
QUESTION_KINDS: Final[tuple[str, ...]] = get_args(QuestionKind)


def minor_to_decimal(minor: int, currency: str) -> Decimal:
    """An amount in minor units as a Decimal in major units (``123450, "USD"`` -> ``1234.50``)."""
    digits = MINOR_DIGITS[currency]
    return Decimal(minor).scaleb(-digits)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:32]


class LineItem(DocModel):
    """One row of a document's table.

    Attributes:
        description: Item name as printed (ASCII).
        quantity: Count (1..999).
        unit_minor: Unit price in minor currency units (cents; yen for JPY).
    """

    description: str = Field(min_length=1, max_length=40)
    quantity: int = Field(ge=1, le=999)
    unit_minor: int = Field(ge=1, le=10_000_000)

    @property
    def amount_minor(self) -> int:
        """``quantity * unit_minor``, in minor units."""
        return self.quantity * self.unit_minor


class Document(DocModel):
    """One synthetic document.

    Attributes:
        kind: ``invoice``, ``receipt``, ``form`` or ``table``.
        template: Id of the layout template it is drawn with (:data:`.templates.TEMPLATES`).
        issuer: Company or office named at the top.
        number: Document number (e.g. ``INV-20431``).
        date: Issue date.
        currency: ISO 4217 code of every amount.
        fields: Extra header fields ``(label, value)`` as printed (forms: the filled-in fields).
        items: Table rows (descriptions unique).
        tax_pct: Tax rate in percent (0 for tables and forms).
    """

    kind: Kind
    template: str = Field(min_length=1)
    issuer: str = Field(min_length=1, max_length=40)
    number: str = Field(min_length=1, max_length=20)
    date: dt.date
    currency: Currency
    fields: tuple[tuple[str, str], ...] = ()
    items: tuple[LineItem, ...] = Field(min_length=1, max_length=40)
    tax_pct: int = Field(default=0, ge=0, le=30)

    @model_validator(mode="after")
    def _unique_items(self) -> Document:
        names = [i.description for i in self.items]
        if len(set(names)) != len(names):
            raise ValueError("item descriptions must be unique within a document")
        return self

    @property
    def subtotal_minor(self) -> int:
        """Sum of the item amounts, in minor units."""
        return sum(i.amount_minor for i in self.items)

    @property
    def tax_minor(self) -> int:
        """Tax on the subtotal, rounded half up to a minor unit."""
        return (self.subtotal_minor * self.tax_pct + 50) // 100

    @property
    def total_minor(self) -> int:
        """Subtotal plus tax, in minor units."""
        return self.subtotal_minor + self.tax_minor

    def content_hash(self) -> str:
        """sha256 (32 hex chars) of the document's JSON: same content, same hash."""
        return _digest(self.model_dump_json())

    def to_text(self) -> str:
        """The text twin: every value on the page, one per line, in canonical formats (ISO dates, major units)."""
        lines = [f"{self.kind.upper()} {self.number}", f"Issuer: {self.issuer}", f"Date: {self.date.isoformat()}"]
        lines += [f"{label}: {value}" for label, value in self.fields]
        lines.append(f"Items (currency {self.currency}): description | qty | unit | amount")
        for it in self.items:
            unit = minor_to_decimal(it.unit_minor, self.currency)
            amount = minor_to_decimal(it.amount_minor, self.currency)
            lines.append(f"{it.description} | {it.quantity} | {unit} | {amount}")
        if self.tax_pct:
            lines.append(f"Subtotal: {minor_to_decimal(self.subtotal_minor, self.currency)}")
            lines.append(f"Tax {self.tax_pct}%: {minor_to_decimal(self.tax_minor, self.currency)}")
        lines.append(f"Total: {minor_to_decimal(self.total_minor, self.currency)}")
        return "\n".join(lines)


class Question(DocModel):
    """A question about one document, with its expected answer in canonical form.

    Attributes:
        qtype: Question template id, e.g. ``field.total``, ``sum.quantity``, ``compare.max``.
        kind: ``field`` (read one value), ``sum`` (add values) or ``compare`` (compare values).
        text: The question as shown to the model.
        answer_type: How answers are normalised (``docs/doc-read-task.md``): ``text``,
            ``number``, ``money``, ``date`` or ``yesno``.
        expected: Canonical answer: text as printed; numbers and money as plain decimals in major
            units (``1234.50``); dates ISO (``2025-03-14``); ``yes`` / ``no``.
        currency: ISO code of a money answer (an answer naming another currency is wrong).
        date_order: Order of numeric dates on the page (``MDY`` page: ``03/04/2025`` is 4 March).
    """

    qtype: str = Field(min_length=1)
    kind: QuestionKind
    text: str = Field(min_length=1)
    answer_type: AnswerType
    expected: str = Field(min_length=1)
    currency: Currency | None = None
    date_order: DateOrder = "YMD"

    @model_validator(mode="after")
    def _check(self) -> Question:
        if self.answer_type == "money" and self.currency is None:
            raise ValueError("a money question needs its currency")
        if self.answer_type in ("number", "money"):
            try:
                Decimal(self.expected)
            except ArithmeticError:
                raise ValueError(f"expected={self.expected!r} must be a plain decimal for a {self.answer_type} answer") from None
        if self.answer_type == "date":
            dt.date.fromisoformat(self.expected)
        if self.answer_type == "yesno" and self.expected not in ("yes", "no"):
            raise ValueError("a yes/no question expects 'yes' or 'no'")
        return self

    def content_hash(self) -> str:
        """sha256 (32 hex chars) of the question's JSON."""
        return _digest(self.model_dump_json())
