"""The machinery the built-in tasks share (written once in the task API): option checks, row readers,
the answer format, the reward arithmetic and the episode means."""

from __future__ import annotations

import json
import math

import pytest

from hyperpod_rl.errors import TaskError
from hyperpod_rl.tasks import get_task
from hyperpod_rl.tasks.answer import ENVELOPE_VIOLATIONS, AnswerFormat
from hyperpod_rl.tasks.metrics import episode_means, multi_turn_means
from hyperpod_rl.tasks.protocol import RowObject
from hyperpod_rl.tasks.reward import ProgressShaping, round_reward

BUILT_IN = ("maze", "ui_nav", "doc_read")


@pytest.mark.parametrize("task", BUILT_IN)
@pytest.mark.parametrize("mix", [{"a": -1.0, "b": 2.0}, {"a": 0.0}, {}])
def test_every_task_refuses_a_stratum_mix_without_positive_weights(task: str, mix: dict[str, float]) -> None:
    # doc_read and ui_nav accepted these before the mix check was shared (quotas then divided by zero).
    with pytest.raises(TaskError, match="mix weights must be >= 0 with a positive sum"):
        get_task(task).options_of({"mix": mix})


@pytest.mark.parametrize("task", BUILT_IN)
def test_every_task_refuses_unknown_splits_in_counts(task: str) -> None:
    with pytest.raises(TaskError, match=r"unknown split\(s\) test; use train, heldout, ood, validation"):
        get_task(task).options_of({"counts": {"test": 3}})


def test_options_of_passes_an_instance_through_and_builds_a_mapping() -> None:
    task = get_task("maze")
    spec = task.options_of({"seed": 7})
    assert isinstance(spec, task.options_model) and spec.seed == 7
    assert task.options_of(spec) is spec


def test_row_object_parses_text_and_mappings_alike_and_names_a_missing_column() -> None:
    read = RowObject("thing", lambda text: tuple(sorted(json.loads(text).items())), "demo")
    assert read({"thing": '{"b": 2, "a": 1}'}) == read({"thing": {"a": 1, "b": 2}}) == (("a", 1), ("b", 2))
    with pytest.raises(TaskError, match=r"the row has no 'thing' column: build it with the demo task's build_dataset"):
        read({"other": 1})
    with pytest.raises(TaskError, match="'maze' column"):
        get_task("maze").render({"mode": "step"})


def test_answer_format_limits_codes_and_the_empty_block() -> None:
    fmt = AnswerFormat(64, 8, ("own",))
    assert fmt.violations == (*ENVELOPE_VIOLATIONS, "own")
    assert fmt.extract("<answer> up </answer>") == (" up ", None)
    assert fmt.extract("<answer> \n </answer>") == (None, "empty_answer")
    assert fmt.extract("<answer>123456789</answer>") == (None, "answer_too_long")
    assert fmt.extract("x" * 65) == (None, "too_long")


def test_progress_shaping_telescopes_to_its_max_return() -> None:
    shaping = ProgressShaping(success_bonus=1.0, progress=0.1, step_cost=0.01)
    path = [3, 2, 1, 0]
    total = sum(shaping.step(a, b, solved=b == 0) for a, b in zip(path, path[1:], strict=False))
    assert round_reward(total) == shaping.max_return(3) == 1.27
    assert shaping.max_return(0) == 0.0
    assert shaping.step(1, 2, solved=False) == -0.11
    assert shaping.best_step() == pytest.approx(shaping.step(1, 0, solved=True))


def test_episode_means_skip_missing_none_and_nan_and_report_optional_keys_only_when_present() -> None:
    episodes = [{"solved": 1.0, "steps": 2.0}, {"solved": 0.0, "steps": None}, {"solved": math.nan}]
    assert episode_means(episodes, {"solve_rate": "solved"}, when_present=("steps", "absent")) == {"solve_rate": 0.5, "steps": 2.0}
    assert episode_means([], {"solve_rate": "solved"}) == {}
    assert episode_means([{"x": 1.0}], {"rate": "missing"}) == {"rate": 0.0}


def test_multi_turn_means_report_solve_rate_rates_turns_then_steps_over_optimal_of_solved_episodes() -> None:
    episodes = [{"solved": 1.0, "turns": 4.0, "rate": 0.5, "steps_over_optimal": 1.0}, {"solved": 0.0, "turns": 8.0, "rate": 0.0}]
    out = multi_turn_means(episodes, ("rate",))
    assert list(out) == ["solve_rate", "rate", "mean_turns", "steps_over_optimal"]
    assert out == {"solve_rate": 0.5, "rate": 0.25, "mean_turns": 6.0, "steps_over_optimal": 1.0}
    assert "steps_over_optimal" not in multi_turn_means(episodes[1:], ("rate",))
