"""The validation split (issue 29 item 4): settings are chosen on it, so held-out is reported once.

For every task: asking for validation rows leaves train, held-out and ood exactly as they were
(same content hashes), and the validation rows share no content with any other split.
"""

from __future__ import annotations

import pytest

from hyperpod_rl.tasks import SPLITS, get_task

COUNTS = {
    "maze": {"train": 24, "heldout": 8, "ood": 4},
    "ui_nav": {"train": 12, "heldout": 6, "ood": 3},
    "doc_read": {"train": 12, "heldout": 6},
}


def _hashes(task, rows):
    return [r[task.hash_column] for r in rows]


def test_validation_is_the_last_split():
    assert SPLITS[-1] == "validation" and SPLITS[:3] == ("train", "heldout", "ood")


@pytest.mark.parametrize("name", sorted(COUNTS))
def test_validation_rows_leave_the_other_splits_unchanged_and_share_no_content(name):
    task = get_task(name)
    without = task.build_dataset(task.options_model.build({"seed": 3, "counts": COUNTS[name]}))
    with_val = task.build_dataset(task.options_model.build({"seed": 3, "counts": {**COUNTS[name], "validation": 5}}))
    assert list(with_val) == [*without, "validation"]
    for split, rows in without.items():
        assert _hashes(task, with_val[split]) == _hashes(task, rows), f"{name}: {split} changed when validation rows were asked for"
    val = _hashes(task, with_val["validation"])
    others = {h for split, rows in without.items() for h in _hashes(task, rows)}
    assert len(val) == 5 and len(set(val)) == 5 and not set(val) & others
    assert {r["split"] for r in with_val["validation"]} == {"validation"}


def test_maze_validation_is_in_distribution():
    task = get_task("maze")
    spec = task.options_model.build({"seed": 1, "sizes": [[3, 3], [4, 4]], "counts": {"train": 16, "heldout": 4, "validation": 6}})
    rows = task.build_dataset(spec)["validation"]
    assert {(r["rows"], r["cols"]) for r in rows} <= {(3, 3), (4, 4)}


def test_quickstart_writes_validation_only_when_asked(tmp_path):
    from hyperpod_rl.quickstart import QuickstartOptions, prepare_dataset
    from hyperpod_rl.tasks.maze import read_rows

    plain = prepare_dataset(QuickstartOptions.build(train_rows=16, heldout_rows=4), tmp_path)
    assert plain.validation is None and not (plain.train.parent / "validation.parquet").exists()
    tuned = prepare_dataset(QuickstartOptions.build(train_rows=16, heldout_rows=4, validation_rows=6), tmp_path)
    assert tuned.validation is not None and len(read_rows(tuned.validation)) == 6
    assert {k: tuned.hashes[k] for k in ("train", "heldout")} == plain.hashes  # the same train and held-out files
    again = prepare_dataset(QuickstartOptions.build(train_rows=16, heldout_rows=4, validation_rows=6), tmp_path)
    assert again == tuned  # reused from dataset.json
