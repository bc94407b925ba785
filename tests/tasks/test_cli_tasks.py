"""``hyperpod-rl tasks list|show|audit|sample`` through typer's runner (the real app)."""

from __future__ import annotations

import json

from PIL import Image
from typer.testing import CliRunner

from hyperpod_rl.cli import app
from hyperpod_rl.tasks import image_token_count, read_rows

runner = CliRunner()


def test_list_shows_every_registered_task() -> None:
    result = runner.invoke(app, ["tasks", "list", "--json"])
    assert result.exit_code == 0, result.output
    rows = {row["name"]: row for row in json.loads(result.output)}
    assert {"maze", "ui_nav", "doc_read", "shapes"} <= set(rows), rows
    assert rows["shapes"]["source"].endswith("hprl_shapes.task:TASK") and rows["ui_nav"]["turns"] == "multi"
    assert rows["doc_read"]["turns"] == "single" and "error" not in rows["maze"]
    table = runner.invoke(app, ["tasks", "list"])  # the human table lists the same names
    assert table.exit_code == 0 and all(name in table.output for name in ("maze", "ui_nav", "doc_read", "shapes"))


def test_show_lists_the_options_and_metrics() -> None:
    result = runner.invoke(app, ["tasks", "show", "maze"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "DatasetSpec" in result.output and "primary solve_rate" in result.output and "max_image_tokens" in result.output
    schema = runner.invoke(app, ["tasks", "show", "shapes", "--schema"])
    assert json.loads(schema.output)["properties"]["fill"]["description"] == "Probability that a cell holds a square."


def test_unknown_task_exits_2_naming_the_registered_ones() -> None:
    result = runner.invoke(app, ["tasks", "show", "nope"])
    assert result.exit_code == 2 and "registered tasks: doc_read, maze" in result.output


def test_audit_passes_the_task_reward_and_fails_a_wrong_one() -> None:
    ok = runner.invoke(app, ["tasks", "audit", "shapes"])
    assert ok.exit_code == 0 and "18/18 cases agree" in ok.output
    bad = runner.invoke(app, ["tasks", "audit", "shapes", "--reward-fn", "hprl_shapes.task:majority"], env={"COLUMNS": "200"})
    assert bad.exit_code == 1 and "18 of 18 cases disagree" in bad.output
    missing = runner.invoke(app, ["tasks", "audit", "maze", "--reward-fn", "no_such_module:fn"])
    assert missing.exit_code == 2 and "cannot be imported" in missing.output


def test_sample_writes_rendered_examples_with_their_token_counts(tmp_path) -> None:
    out = tmp_path / "samples"
    result = runner.invoke(app, ["tasks", "sample", "shapes", "--out", str(out), "--count", "3", "--split", "train", "--split", "ood"])
    assert result.exit_code == 0, result.output
    for split in ("train", "ood"):
        rows = read_rows(out / f"{split}.parquet")
        assert len(rows) == 3
        for i, row in enumerate(rows):
            info = json.loads((out / f"{split}-{i}.json").read_text())
            with Image.open(out / f"{split}-{i}.png") as img:
                assert image_token_count(*img.size) == info["image_tokens"] == row["image_tokens"]
            assert info["stratum"] == row["stratum"] and info["text_twin"].count("\n") == len(row["grid"]) - 1
    bad = runner.invoke(app, ["tasks", "sample", "maze", "--out", str(out), "--options", '{"braid": 5}'])
    assert bad.exit_code == 2 and "braid" in bad.output
