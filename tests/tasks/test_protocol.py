"""The task plug-in API: registry, protocol checks, generic audit, split checks, sizing, metrics."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from hyperpod_rl.errors import MazeError, TaskError
from hyperpod_rl.tasks import (
    BUILTIN_TASKS,
    ENTRY_POINT_GROUP,
    SPLITS,
    Task,
    TaskBase,
    TaskOptions,
    check_splits,
    check_task,
    content_hash,
    get_task,
    image_token_count,
    quotas,
    register_task,
    run_audit,
    stratum_breakdown,
    task_names,
    task_of_row,
    unregister_task,
)
from hyperpod_rl.tasks.maze.render import image_token_count as maze_tokens


class _Tiny(TaskBase):
    name = "tiny-test"
    title = "a test task"
    env_class = "tests.tiny"
    env_entry_point = "tests.tiny:Env"
    reward_version = "0.1"


def test_maze_is_registered_through_the_entry_point_group() -> None:
    # pyproject declares the built-in tasks as entry points, exactly as BUILTIN_TASKS lists them
    # (the installed metadata may be older than the checkout: BUILTIN_TASKS wins for these names)
    declared = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    assert declared["project"]["entry-points"][ENTRY_POINT_GROUP] == BUILTIN_TASKS
    assert BUILTIN_TASKS["maze"] == "hyperpod_rl.tasks.maze.task:TASK"
    task = get_task("maze")
    assert isinstance(task, Task)
    assert (task.env_class, task.primary_metric, task.multi_turn) == ("hyperpod_rl.maze", "solve_rate", True)
    assert get_task() is task and get_task(task) is task


def test_unknown_task_names_the_registered_ones() -> None:
    with pytest.raises(TaskError, match=r"unknown task 'nope'; registered tasks: .*maze"):
        get_task("nope")


def test_check_task_lists_missing_members_and_bad_fields() -> None:
    with pytest.raises(TaskError, match=r"lacks [a-z_, ]*\bbuild_dataset\b[a-z_, ]*: implement"):
        check_task(object())

    class Bad(_Tiny):
        name = "Bad Name"
        env_entry_point = "no-colon"
        primary_metric = ""

    with pytest.raises(TaskError, match=r"(?s)name='Bad Name' must match.*env_entry_point='no-colon'.*primary_metric"):
        check_task(Bad())


def test_register_task_in_process_and_refuse_a_taken_name() -> None:
    try:
        task = register_task(_Tiny)  # a class is instantiated
        assert "tiny-test" in task_names() and get_task("tiny-test") is task
        with pytest.raises(TaskError, match="already registered"):
            register_task(_Tiny())
    finally:
        unregister_task("tiny-test")
    assert "tiny-test" not in task_names()


def test_a_rows_task_is_found_once_and_found_again_after_a_registration(monkeypatch: pytest.MonkeyPatch) -> None:
    """A rollout builds one env per episode: the entry points are read once per env class, and a task
    registered or unregistered later is seen."""
    from hyperpod_rl.tasks import registry

    maze = get_task("maze")
    assert task_of_row({"env_class": maze.env_class}) is maze
    reads = []
    real = registry._entry_points
    monkeypatch.setattr(registry, "_entry_points", lambda: reads.append(1) or real())
    for _ in range(3):
        assert task_of_row({"env_class": maze.env_class}) is maze
    assert reads == []
    with pytest.raises(TaskError, match="no registered task has env_class 'tests.tiny'"):
        task_of_row({"env_class": "tests.tiny"})
    try:
        task = register_task(_Tiny)
        assert task_of_row({"env_class": "tests.tiny"}) is task
    finally:
        unregister_task("tiny-test")
    with pytest.raises(TaskError, match="no registered task has env_class 'tests.tiny'"):
        task_of_row({"env_class": "tests.tiny"})
    assert task_of_row({"env_class": maze.env_class}) is maze


def test_task_options_raise_task_error_naming_every_field() -> None:
    with pytest.raises(TaskError, match=r"(?s)counts: .*unknown split.*max_image_tokens"):
        TaskOptions.build({"counts": {"test": 3}, "max_image_tokens": 1})


def test_generic_audit_passes_the_maze_reward_and_catches_a_wrong_one() -> None:
    report = run_audit("maze")
    assert report.passed and report.total >= 40 and report.task == "maze"
    always_zero = run_audit("maze", lambda row, completion, state: 0.0)
    assert not always_zero.passed and len(always_zero.disagreements) > 20

    def raises(row, completion, state):  # noqa: ANN001, ANN202
        raise RuntimeError("boom")

    broken = run_audit("maze", raises)
    assert broken.disagreements[0].error == "RuntimeError: boom"


def test_maze_dataset_passes_split_checks_and_a_repeated_hash_fails() -> None:
    task = get_task("maze")
    splits = task.build_dataset(task.options_model(counts={"train": 6, "heldout": 3, "ood": 2, "validation": 2}))
    assert list(splits) == list(SPLITS)
    check_splits(task, splits)
    assert task_of_row(splits["train"][0]) is task
    bad = {"train": splits["train"], "heldout": [*splits["heldout"], splits["train"][0] | {"split": "heldout"}]}
    with pytest.raises(TaskError, match=r"heldout row 3 repeats content hash .* of a train row"):
        check_splits(task, bad)


def test_maze_task_render_matches_row_token_count_and_prompt() -> None:
    task = get_task("maze")
    row = task.build_dataset(task.options_model(counts={"train": 2}))["train"][0]
    w, h = task.render(row).size
    assert image_token_count(w, h) == row["image_tokens"] > 0
    assert task.build_prompt(row) == row["prompt"]
    assert "A" in (task.text_twin(row) or "")


@pytest.mark.parametrize(("w", "h"), [(160, 160), (480, 480), (33, 1000), (5000, 4000), (1, 100)])
def test_generic_token_count_equals_the_maze_one(w: int, h: int) -> None:
    assert image_token_count(w, h) == maze_tokens(w, h)


def test_token_count_errors_are_task_errors() -> None:
    with pytest.raises(TaskError, match="aspect ratio"):
        image_token_count(1, 500)
    assert maze_tokens is image_token_count  # the maze re-exports the one implementation: no converting wrapper


def test_every_task_error_is_a_task_error() -> None:
    """One error tree: a task's own error is a TaskError, so ``except TaskError`` catches every task."""
    assert issubclass(MazeError, TaskError)
    from hyperpod_rl.tasks.maze import DatasetSpec

    with pytest.raises(TaskError, match="rows"):
        DatasetSpec(rows=1)


def test_quotas_and_content_hash_are_deterministic() -> None:
    assert quotas(10, {"a": 1, "b": 2}) == {"a": 3, "b": 7}
    assert quotas(5, None) == {"": 5}
    assert content_hash({"b": 1, "a": [1, 2]}) == content_hash({"a": [1, 2], "b": 1}) != content_hash({"a": [2, 1], "b": 1})


def test_stratum_breakdown_groups_episodes() -> None:
    out = stratum_breakdown(["x", "y", "x"], [{"success": 1.0}, {"success": 0.0}, {"success": 0.0}])
    assert out == {"x": {"success": 0.5, "episodes": 2.0}, "y": {"success": 0.0, "episodes": 1.0}}
    with pytest.raises(ValueError, match="2 strata for 1 episodes"):
        stratum_breakdown(["x", "y"], [{}])


def test_maze_metric_spec_is_the_evaluation_constants() -> None:
    from hyperpod_rl.eval.stats import GUARDS, HIGHER_IS_BETTER, PER_MAZE_KEY, REPORTED
    from hyperpod_rl.tasks import metric_spec

    spec = metric_spec(get_task("maze"))
    assert (spec.primary, spec.reported, spec.episode_key, spec.higher_is_better, spec.guards) == (
        "solve_rate",
        REPORTED,
        PER_MAZE_KEY,
        HIGHER_IS_BETTER,
        GUARDS,
    )
