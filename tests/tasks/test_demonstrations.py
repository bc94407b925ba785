"""Task.demonstration (issue 29 item 1): each shipped task's solver reaches success through its own env;
a task without one says "no demonstrations" and an SFT run on it is refused."""

from __future__ import annotations

import pytest

from hyperpod_rl.errors import ConfigError, TaskError
from hyperpod_rl.tasks import TaskBase, get_task, make_env, register_task, unregister_task
from hyperpod_rl.tasks.demonstrations import demonstration_of, has_demonstrations
from hyperpod_rl.tasks.metrics import metric_spec


def _replay(row: dict, completions: list[str]) -> tuple[dict, list[float]]:
    env = make_env(None, row)
    env.init(list(row["prompt"]))
    rewards = []
    for k, text in enumerate(completions):
        out = env.step(text)
        rewards.append(float(out["reward"]))
        if out["done"]:
            assert k == len(completions) - 1, f"the env ended at turn {k + 1} of {len(completions)}"
            break
    return env.get_metrics(), rewards


@pytest.mark.parametrize(
    ("name", "options"),
    [
        ("maze", {"counts": {"train": 24}, "sizes": [[3, 3], [4, 4], [5, 5]], "max_turns": 20}),
        ("ui_nav", {"counts": {"train": 12}}),
        ("doc_read", {"counts": {"train": 12}}),
    ],
)
def test_every_shipped_demonstration_solves_its_row_through_the_env(name: str, options: dict) -> None:
    task = get_task(name)
    assert has_demonstrations(task)
    rows = task.build_dataset(task.options_model.build(options))["train"]
    primary = metric_spec(task).primary
    for row in rows:
        completions = demonstration_of(task, row)
        assert completions, f"{name}: no demonstration for a row"
        assert all(task.parse_answer(c).violation is None for c in completions)
        metrics, rewards = _replay(row, completions)
        assert task.aggregate_metrics([metrics])[primary] == 1.0, (name, completions, metrics)
        assert rewards[-1] > 0


def test_maze_demonstration_is_the_shortest_path_one_move_per_turn() -> None:
    from hyperpod_rl.tasks.maze.task import maze_of

    task = get_task("maze")
    row = task.build_dataset(task.options_model.build({"counts": {"train": 4}, "sizes": [[4, 4]], "max_turns": 20}))["train"][0]
    maze = maze_of(row)
    assert demonstration_of(task, row) == [f"<answer>{m}</answer>" for m in maze.shortest_path()]
    assert len(demonstration_of(task, {**row, "mode": "plan"}) or []) == 1


def test_a_task_without_demonstrations_has_none_and_sft_on_it_is_refused() -> None:
    from hyperpod_rl.config.run import RunConfig

    class NoDemo(TaskBase):
        name = "nodemo-test"
        title = "no demonstrations"
        env_class = "tests.nodemo"
        env_entry_point = "tests.nodemo:Env"
        reward_version = "0"
        answer_words = ("a", "b")

    task = register_task(NoDemo())
    try:
        assert not has_demonstrations(task)
        assert demonstration_of(task, {}) is None
        data = {"run_id": "nodemo", "task": {"name": "nodemo-test"}, "data": {"train_path": "a", "heldout_path": "b"}}
        assert RunConfig.build(data).stage == "grpo"
        with pytest.raises(ConfigError, match=r"stage='sft' .* task 'nodemo-test' has none .* use stage='grpo'"):
            RunConfig.build({**data, "stage": "sft"})
    finally:
        unregister_task("nodemo-test")


def test_a_malformed_demonstration_is_one_clear_error() -> None:
    class Bad(TaskBase):
        name = "bad"

        def demonstration(self, row):  # type: ignore[override]
            return "<answer>up</answer>"  # a string, not a list of completions

    with pytest.raises(TaskError, match="sequence of completion strings"):
        demonstration_of(Bad(), {})
