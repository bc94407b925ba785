"""What a served model's turns show comes from the task: ``turn_columns`` name keys of the real
env's step metadata, and ``never_valid`` spots episodes where no answer was well-formed."""

from __future__ import annotations

from typing import Any

import pytest

from hyperpod_rl.tasks import get_task, make_env, metric_spec, never_valid, no_valid_answer_note, turn_columns

TASKS = ("maze", "ui_nav", "doc_read", "shapes")


def _row(name: str) -> dict[str, Any]:
    task = get_task(name)
    options = task.options_model.build({"seed": 3, "counts": {"train": 2, "heldout": 1}})
    return task.build_dataset(options)["heldout"][0]


def _episode(row: dict[str, Any], answer: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    env = make_env(None, dict(row))
    env.init(list(row["prompt"]))
    steps = []
    try:
        while True:
            out = env.step(answer)
            steps.append(dict(out.get("metadata") or {}))
            if out["done"]:
                break
        return steps, env.get_metrics()
    finally:
        env.close()


@pytest.mark.parametrize("name", TASKS)
def test_turn_columns_are_keys_of_the_envs_step_metadata(name: str) -> None:
    columns = turn_columns(get_task(name))
    assert columns, name
    steps, _ = _episode(_row(name), "<answer>nonsense</answer>")
    missing = [c for c in columns if c not in steps[0]]
    assert missing == [], f"{name}: turn columns missing from the step metadata: {missing} (keys {sorted(steps[0])})"


def test_doc_read_turns_show_the_answer_not_maze_moves() -> None:
    columns = turn_columns(get_task("doc_read"))
    assert "move" not in columns and "agent" not in columns
    assert {"answer", "expected", "correct"} <= set(columns)


@pytest.mark.parametrize("name", ["ui_nav", "doc_read", "maze"])
def test_never_valid_when_every_answer_breaks_the_format(name: str) -> None:
    task = get_task(name)
    row = _row(name)
    _, metrics = _episode(row, "I think the answer is obvious")  # no <answer> tag at all
    aggregate = task.aggregate_metrics([metrics])
    assert never_valid(task, [aggregate]), aggregate
    assert never_valid(task, [{f"environment/{k}": v for k, v in aggregate.items()}], prefix="environment/")
    note = no_valid_answer_note(task, "3 training step(s)", floor=-1.0)
    assert f"valid {'free-form ' if not task.answer_words else ''}{name} answer in 3 training step(s)" in note
    assert "(-1.000)" in note and "maze task" in note


def test_never_valid_is_false_when_one_answer_was_well_formed() -> None:
    task = get_task("maze")
    spec = metric_spec(task)
    assert spec.invalid == "invalid_move_rate"
    assert not never_valid(task, [{"invalid_move_rate": 1.0}, {"invalid_move_rate": 0.75}])
    assert not never_valid(task, [])  # nothing to judge
    assert not never_valid(task, [{"solve_rate": 0.0}])  # the share is not there
