"""Layout templates: how a document's values are printed and placed.

A template fixes the title, the labels, the date and money formats, the font, the header layout
and the table style of one kind of document. Four templates per kind are *train* templates; one
per kind is *held out* (:data:`HELDOUT_TEMPLATES`): it never appears in the train split, so the
held-out split measures reading of unseen layouts, labels and formats.
"""

from __future__ import annotations

import datetime as dt
from typing import Final, Literal

from pydantic import Field

from hyperpod_rl.base import listed
from hyperpod_rl.errors import TaskError
from hyperpod_rl.tasks.doc_read._model import DocModel
from hyperpod_rl.tasks.doc_read.document import MINOR_DIGITS, DateOrder, Kind, minor_to_decimal

__all__ = [
    "HELDOUT_TEMPLATES",
    "TEMPLATES",
    "TRAIN_TEMPLATES",
    "FontName",
    "Template",
    "format_date",
    "format_money",
    "template",
]

FontName = Literal["sans", "bold", "condensed", "pixel"]
DateFormat = Literal["iso", "us", "eu", "day-month", "month-day"]
MoneyStyle = Literal["symbol", "code", "eu"]

_MONTHS: Final[tuple[str, ...]] = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
#: Numeric order of each date format (what a reader must assume for numeric dates on the page).
DATE_ORDER_OF: Final[dict[str, DateOrder]] = {"iso": "YMD", "us": "MDY", "eu": "DMY", "day-month": "DMY", "month-day": "MDY"}


class Template(DocModel):
    """One layout.

    Attributes:
        id: Unique id, ``<kind>-<name>``.
        kind: Document kind it draws.
        title: Title printed at the top.
        number_label, date_label, total_label: Labels of the number, date and total fields.
        columns: Table headings (item, quantity, unit price, amount).
        date_format: ``iso`` (2025-03-14), ``us`` (03/14/2025), ``eu`` (14.03.2025),
            ``day-month`` (14 Mar 2025), ``month-day`` (Mar 14, 2025).
        money_style: ``symbol`` ($1,234.50), ``code`` (1,234.50 USD), ``eu`` (1.234,50 EUR); see :func:`format_money`.
        font: ``sans`` (Pillow's embedded Aileron), ``bold`` (stroked), ``condensed`` (squeezed
            to 85 % width) or ``pixel`` (Pillow's Latin-1 bitmap font, scaled up).
        font_px: Body text height in pixels at the dense-page scale of 1.
        header: ``left`` (fields stacked under the title), ``right`` (fields in a right column)
            or ``grid`` (two columns of fields).
        table: ``grid`` (all cell borders), ``lines`` (a rule under each row), ``stripes``
            (shaded alternate rows) or ``plain``.
        width_px: Page width in pixels before sizing for the model.
    """

    id: str
    kind: Kind
    title: str
    number_label: str
    date_label: str
    total_label: str
    columns: tuple[str, str, str, str]
    date_format: DateFormat
    money_style: MoneyStyle
    font: FontName
    font_px: int = Field(ge=8, le=40)
    header: Literal["left", "right", "grid"]
    table: Literal["grid", "lines", "stripes", "plain"]
    width_px: int = Field(ge=256, le=2048)

    @property
    def date_order(self) -> DateOrder:
        """Numeric date order of this template's date format."""
        return DATE_ORDER_OF[self.date_format]


def _t(id_: str, kind: Kind, title: str, labels: tuple[str, str, str], columns: tuple[str, str, str, str], **kw: object) -> Template:
    return Template.model_validate(
        {
            "id": id_,
            "kind": kind,
            "title": title,
            "number_label": labels[0],
            "date_label": labels[1],
            "total_label": labels[2],
            "columns": columns,
            **kw,
        }
    )


_ITEM_COLS = ("Description", "Qty", "Unit price", "Amount")
#: Every template; the last of each kind is held out.
TEMPLATES: Final[dict[str, Template]] = {
    t.id: t
    for t in (
        # invoices
        _t(
            "invoice-classic",
            "invoice",
            "INVOICE",
            ("Invoice No.", "Date", "Total"),
            _ITEM_COLS,
            date_format="iso",
            money_style="symbol",
            font="sans",
            font_px=15,
            header="right",
            table="grid",
            width_px=640,
        ),
        _t(
            "invoice-modern",
            "invoice",
            "Invoice",
            ("Invoice #", "Issued", "Amount due"),
            ("Item", "Quantity", "Price", "Line total"),
            date_format="month-day",
            money_style="symbol",
            font="bold",
            font_px=14,
            header="left",
            table="lines",
            width_px=600,
        ),
        _t(
            "invoice-ledger",
            "invoice",
            "TAX INVOICE",
            ("Number", "Invoice date", "Total due"),
            ("Article", "Qty", "Rate", "Amount"),
            date_format="eu",
            money_style="eu",
            font="condensed",
            font_px=15,
            header="grid",
            table="stripes",
            width_px=640,
        ),
        _t(
            "invoice-mono",
            "invoice",
            "INVOICE",
            ("Ref", "Dated", "TOTAL"),
            ("ITEM", "QTY", "EACH", "SUM"),
            date_format="us",
            money_style="code",
            font="pixel",
            font_px=16,
            header="left",
            table="plain",
            width_px=576,
        ),
        _t(
            "invoice-studio",
            "invoice",
            "Bill",
            ("Bill no.", "Billing date", "Balance"),
            ("Service", "Units", "Unit cost", "Cost"),
            date_format="day-month",
            money_style="code",
            font="sans",
            font_px=14,
            header="grid",
            table="lines",
            width_px=608,
        ),
        # receipts
        _t(
            "receipt-till",
            "receipt",
            "RECEIPT",
            ("Receipt", "Date", "TOTAL"),
            ("Item", "Qty", "Price", "Amt"),
            date_format="us",
            money_style="code",
            font="pixel",
            font_px=14,
            header="left",
            table="plain",
            width_px=384,
        ),
        _t(
            "receipt-cafe",
            "receipt",
            "Thank you!",
            ("Order", "Time of sale", "Total"),
            ("Item", "#", "Each", "Sum"),
            date_format="month-day",
            money_style="symbol",
            font="sans",
            font_px=14,
            header="left",
            table="lines",
            width_px=416,
        ),
        _t(
            "receipt-market",
            "receipt",
            "SALES RECEIPT",
            ("Receipt no.", "Date", "Grand total"),
            ("Product", "Qty", "Price", "Total"),
            date_format="eu",
            money_style="eu",
            font="condensed",
            font_px=15,
            header="right",
            table="stripes",
            width_px=448,
        ),
        _t(
            "receipt-kiosk",
            "receipt",
            "Receipt",
            ("Txn", "Date", "Paid"),
            ("Article", "Qty", "Unit", "Amount"),
            date_format="iso",
            money_style="code",
            font="bold",
            font_px=13,
            header="left",
            table="plain",
            width_px=384,
        ),
        _t(
            "receipt-fuel",
            "receipt",
            "CUSTOMER COPY",
            ("Slip", "Sale date", "Amount paid"),
            ("Product", "Vol", "Price", "Value"),
            date_format="day-month",
            money_style="symbol",
            font="sans",
            font_px=14,
            header="right",
            table="grid",
            width_px=416,
        ),
        # forms
        _t(
            "form-boxed",
            "form",
            "PAYMENT FORM",
            ("Reference", "Date", "Amount due"),
            ("Fee", "Qty", "Rate", "Amount"),
            date_format="eu",
            money_style="code",
            font="sans",
            font_px=15,
            header="grid",
            table="grid",
            width_px=576,
        ),
        _t(
            "form-lined",
            "form",
            "Application Form",
            ("Application no.", "Date of application", "Total fee"),
            ("Fee", "Count", "Each", "Fee total"),
            date_format="us",
            money_style="symbol",
            font="bold",
            font_px=14,
            header="left",
            table="lines",
            width_px=576,
        ),
        _t(
            "form-office",
            "form",
            "REQUEST FORM",
            ("Form ID", "Submitted", "Total"),
            ("Charge", "No.", "Price", "Charge total"),
            date_format="iso",
            money_style="symbol",
            font="condensed",
            font_px=15,
            header="right",
            table="plain",
            width_px=544,
        ),
        _t(
            "form-permit",
            "form",
            "Permit Request",
            ("Case", "Filed", "Sum due"),
            ("Item", "Qty", "Fee", "Subtotal"),
            date_format="month-day",
            money_style="code",
            font="pixel",
            font_px=16,
            header="grid",
            table="stripes",
            width_px=576,
        ),
        _t(
            "form-claim",
            "form",
            "CLAIM FORM",
            ("Claim no.", "Claim date", "Claimed"),
            ("Expense", "Qty", "Cost", "Amount"),
            date_format="day-month",
            money_style="code",
            font="sans",
            font_px=14,
            header="left",
            table="grid",
            width_px=544,
        ),
        # tables
        _t(
            "table-stock",
            "table",
            "Stock Report",
            ("Report", "As of", "Total value"),
            ("Item", "Stock", "Unit cost", "Value"),
            date_format="iso",
            money_style="symbol",
            font="sans",
            font_px=14,
            header="left",
            table="grid",
            width_px=576,
        ),
        _t(
            "table-orders",
            "table",
            "ORDER SUMMARY",
            ("Batch", "Date", "Total"),
            ("Product", "Ordered", "Price", "Amount"),
            date_format="us",
            money_style="code",
            font="condensed",
            font_px=15,
            header="right",
            table="stripes",
            width_px=608,
        ),
        _t(
            "table-sales",
            "table",
            "Sales by Item",
            ("Sheet", "Period end", "Revenue"),
            ("Item", "Sold", "Price", "Revenue"),
            date_format="eu",
            money_style="eu",
            font="bold",
            font_px=14,
            header="grid",
            table="lines",
            width_px=608,
        ),
        _t(
            "table-print",
            "table",
            "INVENTORY",
            ("List", "Printed", "Sum"),
            ("NAME", "COUNT", "COST", "TOTAL"),
            date_format="month-day",
            money_style="code",
            font="pixel",
            font_px=16,
            header="left",
            table="plain",
            width_px=576,
        ),
        _t(
            "table-audit",
            "table",
            "Audit Sheet",
            ("Audit no.", "Audit date", "Total"),
            ("Asset", "Units", "Cost", "Book value"),
            date_format="day-month",
            money_style="code",
            font="sans",
            font_px=14,
            header="right",
            table="lines",
            width_px=608,
        ),
    )
}
#: One unseen template per kind: used only by the held-out split.
HELDOUT_TEMPLATES: Final[tuple[str, ...]] = ("invoice-studio", "receipt-fuel", "form-claim", "table-audit")
#: The templates of the train (and out-of-distribution) splits.
TRAIN_TEMPLATES: Final[tuple[str, ...]] = tuple(t for t in TEMPLATES if t not in HELDOUT_TEMPLATES)


def template(template_id: str) -> Template:
    """The template with this id.

    Raises:
        TaskError: unknown id (the message lists the known ones).
    """
    try:
        return TEMPLATES[template_id]
    except KeyError:
        raise TaskError(f"template={template_id!r} is unknown; use one of {listed(sorted(TEMPLATES))}") from None


def format_date(date: dt.date, fmt: DateFormat) -> str:
    """``date`` as the template prints it (``iso``: 2025-03-14, ``us``: 03/14/2025, ...)."""
    if fmt == "iso":
        return date.isoformat()
    if fmt == "us":
        return f"{date.month:02d}/{date.day:02d}/{date.year}"
    if fmt == "eu":
        return f"{date.day:02d}.{date.month:02d}.{date.year}"
    if fmt == "day-month":
        return f"{date.day} {_MONTHS[date.month - 1]} {date.year}"
    return f"{_MONTHS[date.month - 1]} {date.day}, {date.year}"


def format_money(minor: int, currency: str, style: MoneyStyle) -> str:
    """An amount as the template prints it.

    ``symbol``: ``$1,234.50`` for USD, ``GBP 1,234.50`` otherwise (Pillow's embedded font has a
    dollar sign but no pound, euro or yen sign); ``code``: ``1,234.50 USD``; ``eu``: ``1.234,50 EUR``
    (period groups thousands, comma before the cents).
    """
    digits = MINOR_DIGITS[currency]
    plain = f"{minor_to_decimal(minor, currency):,.{digits}f}"
    if style == "symbol":
        return f"${plain}" if currency == "USD" else f"{currency} {plain}"
    if style == "code":
        return f"{plain} {currency}"
    swapped = plain.replace(",", "\x00").replace(".", ",").replace("\x00", ".")
    return f"{swapped} {currency}"
