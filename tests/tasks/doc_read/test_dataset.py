"""Datasets: disjoint splits by content hash, unseen templates held out, denser out-of-distribution pages, strata."""

from __future__ import annotations

from collections import Counter

import pytest

from hyperpod_rl.errors import TaskError
from hyperpod_rl.tasks import get_task
from hyperpod_rl.tasks.dataset import check_splits
from hyperpod_rl.tasks.doc_read import (
    HELDOUT_TEMPLATES,
    QTYPES,
    DatasetSpec,
    build_dataset,
    generate_document,
    generate_question,
    read_rows,
    sample_from_row,
    write_parquet,
)
from hyperpod_rl.tasks.doc_read.document import minor_to_decimal
from hyperpod_rl.tasks.vision import decode_image_part, image_token_count

SPEC = DatasetSpec(seed=1, counts={"train": 48, "heldout": 16, "ood": 12}, max_image_tokens=256)


@pytest.fixture(scope="module")
def splits() -> dict:
    return build_dataset(SPEC)


def test_splits_are_disjoint_and_held_out_templates_are_unseen(splits: dict) -> None:
    check_splits(get_task("doc_read"), splits)
    docs = [r["doc_hash"] for rows in splits.values() for r in rows]
    assert len(docs) == len(set(docs)) == 76
    train_templates = {r["template"] for r in splits["train"]} | {r["template"] for r in splits["ood"]}
    assert {r["template"] for r in splits["heldout"]} <= set(HELDOUT_TEMPLATES)
    assert not train_templates & set(HELDOUT_TEMPLATES)


def test_ood_pages_are_denser(splits: dict) -> None:
    assert min(r["n_items"] for r in splits["ood"]) > max(r["n_items"] for r in splits["train"] + splits["heldout"])
    assert all('"font_scale":0.8' in r["page_style"] for r in splits["ood"])


def test_rows_carry_their_image_and_its_token_count(splits: dict) -> None:
    for row in splits["train"][:8] + splits["ood"][:4]:
        img = decode_image_part(row["prompt"][-1]["content"][0])
        assert img.size == (row["width_px"], row["height_px"])
        assert row["image_tokens"] == image_token_count(*img.size) <= SPEC.max_image_tokens
        doc, question, _ = sample_from_row(row)
        assert row["stratum"] == f"{doc.kind}|{question.kind}|" + row["stratum"].split("|")[2]


def test_same_spec_same_bytes(splits: dict) -> None:
    again = build_dataset(SPEC)
    assert [r["prompt"] for r in again["heldout"]] == [r["prompt"] for r in splits["heldout"]]


def test_mix_fills_requested_strata() -> None:
    spec = DatasetSpec(seed=0, counts={"train": 20}, mix={"sum": 1, "compare": 1})
    kinds = Counter(r["question_kind"] for r in build_dataset(spec)["train"])
    assert kinds == {"sum": 10, "compare": 10}


def test_parquet_round_trip(tmp_path, splits: dict) -> None:
    path = tmp_path / "d.parquet"
    digest = write_parquet(splits["heldout"], path)
    assert len(digest) == 64
    rows = read_rows(path)
    assert [r["prompt"] for r in rows] == [r["prompt"] for r in splits["heldout"]]
    with pytest.raises(TaskError, match="does not exist"):
        read_rows(tmp_path / "missing.parquet")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"counts": {"dev": 3}}, "unknown split"),
        ({"kinds": {"letter": 1}}, "unknown kind"),
        ({"qtypes": ("field.colour",)}, "unknown or no question type"),
        ({"items": (5, 2)}, "DatasetSpec.items"),
        ({"ood_items": (3, 8), "counts": {"ood": 1}}, "must start above"),
    ],
)
def test_bad_specs_name_the_field(fields: dict, message: str) -> None:
    with pytest.raises(TaskError, match=message):
        DatasetSpec(**fields)


def test_unfillable_mix_names_the_split() -> None:
    with pytest.raises(TaskError, match="counts.train=5 cannot be filled"):
        build_dataset(DatasetSpec(counts={"train": 5}, qtypes=("field.kind",), mix={"sum": 1}))


def test_questions_agree_with_their_document() -> None:
    doc = generate_document("invoice-ledger", seed=7, n_items=6)
    answers = {q: generate_question(doc, q, seed=0) for q in QTYPES}
    assert answers["sum.quantity"].expected == str(sum(i.quantity for i in doc.items))
    top = max(doc.items, key=lambda i: i.amount_minor)
    assert answers["compare.max"].expected == top.description
    assert sum(i.amount_minor == top.amount_minor for i in doc.items) == 1
    assert answers["field.total"].expected == str(minor_to_decimal(doc.total_minor, doc.currency))
    assert answers["field.date"].expected == doc.date.isoformat() and answers["field.date"].date_order == "DMY"
    with pytest.raises(TaskError, match="at least two items"):
        generate_question(generate_document("invoice-ledger", seed=7, n_items=1), "sum.pair", seed=0)
