"""Seeded generation of documents and of questions about them.

All randomness flows from ``random.Random`` seeded with a string that names the generator, so
the same arguments give the same :meth:`Document.content_hash` on every platform.

Question types (:data:`QTYPES`), with their kind and answer type:

================== ========= ======== =========================================================
``field.kind``     field     text     what kind of document this is (invoice/receipt/form/table)
``field.number``   field     text     the document number
``field.date``     field     date     the document date
``field.total``    field     money    the total (as printed under the template's total label)
``field.qty``      field     number   the quantity of one named item
``sum.quantity``   sum       number   the quantities of all items added up
``sum.pair``       sum       money    the amounts of two named items added up
``compare.max``    compare   text     the item with the highest amount (unique by construction)
``compare.pair``   compare   yesno    whether one named item's amount exceeds another's
``compare.total``  compare   yesno    whether the total exceeds a threshold
================== ========= ======== =========================================================
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Sequence
from decimal import Decimal
from typing import Final

from hyperpod_rl.base import listed
from hyperpod_rl.errors import TaskError
from hyperpod_rl.tasks.doc_read.document import CURRENCIES, MINOR_DIGITS, Document, LineItem, Question, minor_to_decimal
from hyperpod_rl.tasks.doc_read.templates import format_money, template

__all__ = ["QTYPES", "QTYPE_KIND", "generate_document", "generate_question"]

#: Question type -> question kind.
QTYPE_KIND: Final[dict[str, str]] = {
    "field.kind": "field",
    "field.number": "field",
    "field.date": "field",
    "field.total": "field",
    "field.qty": "field",
    "sum.quantity": "sum",
    "sum.pair": "sum",
    "compare.max": "compare",
    "compare.pair": "compare",
    "compare.total": "compare",
}
QTYPES: Final[tuple[str, ...]] = tuple(QTYPE_KIND)

_ADJ = ("Blue", "North", "Silver", "Oak", "Summit", "River", "Cedar", "Bright", "Harbor", "Maple", "Granite", "Sun")
_NOUN = ("Supply", "Traders", "Works", "Partners", "Office", "Labs", "Goods", "Studio", "Systems", "Market", "Foods", "Print")
_SUFFIX = ("Ltd", "Inc", "Co", "GmbH", "LLC", "")
_PRODUCTS = (
    "Paper A4",
    "Stapler",
    "Desk lamp",
    "USB cable",
    "Notebook",
    "Ink cartridge",
    "Coffee beans",
    "Green tea",
    "Water 1L",
    "Sandwich",
    "Bagel",
    "Apples 1kg",
    "Rice 5kg",
    "Olive oil",
    "Batteries",
    "Light bulb",
    "Chair mat",
    "Monitor arm",
    "Keyboard",
    "Mouse pad",
    "Web hosting",
    "Consulting",
    "Design work",
    "Repairs",
    "Delivery",
    "Setup fee",
    "Permit fee",
    "Filing fee",
    "Stamp duty",
    "Cleaning",
    "Paint 5L",
    "Brushes",
    "Cement bag",
    "Screws box",
    "Cable ties",
    "Toner",
    "Envelopes",
    "Folders",
    "Markers",
    "Tape roll",
)
_FORM_FIELDS = (
    ("Name", ("J. Smith", "A. Garcia", "M. Chen", "L. Novak", "R. Okafor", "S. Dubois", "K. Tanaka")),
    ("City", ("Leeds", "Austin", "Lyon", "Osaka", "Graz", "Porto", "Tulsa")),
    ("Phone", None),
)
_PREFIX: Final[dict[str, str]] = {"invoice": "INV", "receipt": "R", "form": "F", "table": "T"}
#: Unit prices in minor units (JPY: in units of 10 yen, see ``scale``).
_PRICE_RANGE: Final[dict[str, tuple[int, int]]] = {"USD": (50, 50_000), "EUR": (50, 50_000), "GBP": (50, 40_000), "JPY": (5, 5_000)}


def _issuer(rng: random.Random) -> str:
    suffix = rng.choice(_SUFFIX)
    return " ".join(p for p in (rng.choice(_ADJ), rng.choice(_NOUN), suffix) if p)


def generate_document(template_id: str, *, seed: int, n_items: int) -> Document:
    """One seeded document of the template's kind.

    Args:
        template_id: Key of :data:`~hyperpod_rl.tasks.doc_read.templates.TEMPLATES`.
        seed: Any int; the same arguments give the same content hash.
        n_items: Table rows (1..40); descriptions are distinct.

    Returns:
        A :class:`Document` whose item amounts are pairwise distinct (so "highest amount" has one answer).

    Raises:
        TaskError: unknown template or ``n_items`` out of range.
    """
    tpl = template(template_id)
    if not 1 <= n_items <= len(_PRODUCTS):
        raise TaskError(f"n_items={n_items} must be in 1..{len(_PRODUCTS)}")
    rng = random.Random(f"hyperpod_rl.doc_read:{template_id}:{n_items}:{seed}")
    currency = rng.choice(CURRENCIES)
    lo, hi = _PRICE_RANGE[currency]
    scale = 10 if MINOR_DIGITS[currency] == 0 else 1  # yen: 50..50,000 yen in steps of 10
    names = rng.sample(_PRODUCTS, n_items)
    items: list[LineItem] = []
    amounts: set[int] = set()
    for name in names:
        while True:
            quantity = rng.choice((1, 1, 1, 2, 2, 3, 4, 5, 6, 10, 12, 24))
            item = LineItem(description=name, quantity=quantity, unit_minor=rng.randint(lo, hi) * scale)
            if item.amount_minor not in amounts:
                break
        amounts.add(item.amount_minor)
        items.append(item)
    fields: tuple[tuple[str, str], ...] = ()
    if tpl.kind == "form":
        out = []
        for label, values in _FORM_FIELDS:
            out.append((label, rng.choice(values) if values else f"{rng.randint(200, 999)}-{rng.randint(1000, 9999)}"))
        fields = tuple(out)
    date = dt.date(2019, 1, 1) + dt.timedelta(days=rng.randrange(365 * 7))
    return Document(
        kind=tpl.kind,
        template=template_id,
        issuer=_issuer(rng),
        number=f"{_PREFIX[tpl.kind]}-{rng.randint(1000, 99999)}",
        date=date,
        currency=currency,
        fields=fields,
        items=tuple(items),
        tax_pct=rng.choice((0, 5, 7, 10, 19, 20)) if tpl.kind in ("invoice", "receipt") else 0,
    )


def _plain(minor: int, currency: str) -> str:
    return str(minor_to_decimal(minor, currency))


def generate_question(doc: Document, qtype: str, *, seed: int) -> Question:
    """One question of type ``qtype`` about ``doc`` (see the module docstring).

    Raises:
        TaskError: unknown ``qtype``, or one the document cannot support (``sum.pair``,
            ``compare.pair`` need two items).
    """
    if qtype not in QTYPE_KIND:
        raise TaskError(f"qtype={qtype!r} is unknown; use one of {listed(QTYPES)}")
    tpl = template(doc.template)
    rng = random.Random(f"hyperpod_rl.doc_read.q:{doc.content_hash()}:{qtype}:{seed}")
    common = {"qtype": qtype, "kind": QTYPE_KIND[qtype], "date_order": tpl.date_order}
    items = doc.items
    if qtype in ("sum.pair", "compare.pair") and len(items) < 2:
        raise TaskError(f"qtype={qtype!r} needs a document with at least two items (this one has {len(items)})")
    if qtype == "field.kind":
        return Question(
            **common, text="What kind of document is this: invoice, receipt, form or table?", answer_type="text", expected=doc.kind
        )
    if qtype == "field.number":
        return Question(**common, text=f"What is the {tpl.number_label} of this document?", answer_type="text", expected=doc.number)
    if qtype == "field.date":
        return Question(**common, text=f"Which date is given as {tpl.date_label}?", answer_type="date", expected=doc.date.isoformat())
    if qtype == "field.total":
        return Question(
            **common,
            text=f"Which amount is given as {tpl.total_label}?",
            answer_type="money",
            expected=_plain(doc.total_minor, doc.currency),
            currency=doc.currency,
        )
    if qtype == "field.qty":
        it = rng.choice(items)
        return Question(**common, text=f"What is the quantity of {it.description}?", answer_type="number", expected=str(it.quantity))
    if qtype == "sum.quantity":
        return Question(
            **common, text="What is the total quantity of all items?", answer_type="number", expected=str(sum(i.quantity for i in items))
        )
    if qtype == "sum.pair":
        a, b = rng.sample(list(items), 2)
        return Question(
            **common,
            text=f"What is the amount of {a.description} plus the amount of {b.description}?",
            answer_type="money",
            expected=_plain(a.amount_minor + b.amount_minor, doc.currency),
            currency=doc.currency,
        )
    if qtype == "compare.max":
        best = max(items, key=lambda i: i.amount_minor)
        return Question(**common, text="Which item has the highest amount?", answer_type="text", expected=best.description)
    if qtype == "compare.pair":
        a, b = rng.sample(list(items), 2)
        return Question(
            **common,
            text=f"Is the amount of {a.description} greater than the amount of {b.description}? Answer yes or no.",
            answer_type="yesno",
            expected="yes" if a.amount_minor > b.amount_minor else "no",
        )
    # compare.total: a round threshold within 40 % of the total, either side.
    total = doc.total_minor
    factor = Decimal(rng.choice((60, 75, 90, 110, 125, 140))) / 100
    unit = 10 ** MINOR_DIGITS[doc.currency]
    threshold = max(unit, int(Decimal(total) * factor) // unit * unit)
    if threshold == total:
        threshold += unit
    shown = format_money(threshold, doc.currency, tpl.money_style)
    return Question(
        **common,
        text=f"Is the amount given as {tpl.total_label} more than {shown}? Answer yes or no.",
        answer_type="yesno",
        expected="yes" if total > threshold else "no",
    )


def question_types_for(doc: Document, allowed: Sequence[str]) -> list[str]:
    """The question types of ``allowed`` that ``doc`` supports (pair questions need two items)."""
    return [q for q in allowed if not (q in ("sum.pair", "compare.pair") and len(doc.items) < 2)]
