"""Answer parsing, the reward spec and its audit."""

from __future__ import annotations

import pytest

from hyperpod_rl.tasks import run_audit
from hyperpod_rl.tasks.ui_nav import AUDIT_APPS, AUDIT_CASES, REWARD_VERSION, initial_state, max_return, parse_action, score_step
from hyperpod_rl.tasks.ui_nav.answer import VIOLATIONS
from hyperpod_rl.tasks.ui_nav.reward import FORMAT_PENALTY, INAPPLICABLE_PENALTY, OUT_OF_SCREEN_PENALTY, aggregate_metrics
from hyperpod_rl.tasks.ui_nav.task import TASK


@pytest.mark.parametrize(
    ("text", "kind", "arg"),
    [
        ('<answer>click "Dark mode"</answer>', "click", "Dark mode"),
        ("<answer>click   Dark   mode</answer>", "click", "Dark mode"),
        ("<answer>Click (10, 20)</answer>", "click_xy", (10, 20)),
        ("<answer>click -5,7</answer>", "click_xy", (-5, 7)),
        ('<answer>TYPE "Ada Lovelace"</answer>', "type", "Ada Lovelace"),
        ("<think>x</think>\n<answer> back </answer><|im_end|>", "back", None),
    ],
)
def test_well_formed_actions(text: str, kind: str, arg: object) -> None:
    parsed = parse_action(text)
    assert parsed.ok and parsed.action is not None and parsed.action.kind == kind
    if kind == "click":
        assert parsed.action.label == arg
    elif kind == "click_xy":
        assert (parsed.action.x, parsed.action.y) == arg
    elif kind == "type":
        assert parsed.action.text == arg


@pytest.mark.parametrize(
    ("text", "code"),
    [
        (None, "not_text"),
        ("x" * 40_000, "too_long"),
        ("<|vision_start|><answer>back</answer>", "vision_token"),
        ("back", "no_answer"),
        ("</answer>back<answer>", "malformed_tags"),
        ("<answer>back", "unclosed_answer"),
        ("<answer><answer>back</answer></answer>", "nested_answer"),
        ("<answer>back</answer><answer>back</answer>", "multiple_answers"),
        ("<answer>back</answer> ok", "text_after_answer"),
        ("<answer>" + "a" * 300 + "</answer>", "answer_too_long"),
        ("<answer>  </answer>", "empty_answer"),
        ("<answer>click «OK»</answer>", "non_ascii"),
        ("<answer>back; back</answer>", "multiple_actions"),
        ("<answer>press OK</answer>", "unknown_action"),
        ("<answer>type OK</answer>", "bad_arguments"),
    ],
)
def test_every_violation_code(text: object, code: str) -> None:
    parsed = parse_action(text)
    assert parsed.violation == code and parsed.action is None
    assert code in VIOLATIONS


def test_the_audit_has_at_least_40_cases_and_the_reward_passes_it() -> None:
    assert len(AUDIT_CASES) >= 40
    assert len({c.case_id for c in AUDIT_CASES}) == len(AUDIT_CASES)
    report = run_audit(TASK)
    assert report.total == len(AUDIT_CASES) and report.passed, [(d.case.case_id, d.got, d.error) for d in report.disagreements]
    assert report.reward_version == REWARD_VERSION


def test_the_audit_catches_wrong_rewards() -> None:
    """A reward that forgets the out-of-screen penalty, or that trusts any click, fails the audit."""

    def no_out_of_screen(row, completion, state):
        r = TASK.score(row, completion, state)
        return -INAPPLICABLE_PENALTY if r == -OUT_OF_SCREEN_PENALTY else r

    def lenient(row, completion, state):
        r = TASK.score(row, completion, state)
        return 0.0 if r == -FORMAT_PENALTY else r

    def raising(row, completion, state):
        raise RuntimeError("boom")

    bad = {d.case.case_id for d in run_audit(TASK, no_out_of_screen).disagreements}
    assert bad == {"xy-right-edge", "xy-negative", "xy-bottom-edge", "xy-huge"}
    assert len(run_audit(TASK, lenient).disagreements) == sum(c.expected == -FORMAT_PENALTY for c in AUDIT_CASES)
    report = run_audit(TASK, raising)
    assert not report.passed and all(d.error == "RuntimeError: boom" for d in report.disagreements)


def test_optimal_episode_earns_exactly_max_return() -> None:
    from hyperpod_rl.tasks.ui_nav import apply_action, optimal_actions

    app = AUDIT_APPS["notely"]
    state, total = initial_state(app), 0.0
    while True:
        act = optimal_actions(app, state)[0]
        out = score_step(app, state, f"<answer>{act.describe()}</answer>")
        total += out.reward
        assert apply_action(app, state, act).state == out.state_after
        state = out.state_after
        if out.solved:
            break
    assert round(total, 9) == max_return(app) == 1.45


def test_score_never_raises_on_hostile_text() -> None:
    row = AUDIT_CASES[0].row
    for text in ["\x00" * 10, "<answer>click (999999999999, 1)</answer>", "<answer>" * 5000, '<answer>type """</answer>', "\ud800"]:
        assert TASK.score(row, text) in (-FORMAT_PENALTY, -INAPPLICABLE_PENALTY, -OUT_OF_SCREEN_PENALTY)


def test_aggregate_metrics() -> None:
    out = aggregate_metrics(
        [
            {
                "solved": 1.0,
                "turns": 5.0,
                "progress": 1.0,
                "optimal_action_rate": 1.0,
                "invalid_action_rate": 0.0,
                "inapplicable_action_rate": 0.0,
                "steps_over_optimal": 0.0,
            },
            {
                "solved": 0.0,
                "turns": 9.0,
                "progress": 0.5,
                "optimal_action_rate": 0.25,
                "invalid_action_rate": 0.5,
                "inapplicable_action_rate": 0.25,
            },
        ]
    )
    assert out == {
        "solve_rate": 0.5,
        "progress": 0.75,
        "optimal_action_rate": 0.625,
        "invalid_action_rate": 0.25,
        "inapplicable_action_rate": 0.125,
        "mean_turns": 7.0,
        "steps_over_optimal": 0.0,
    }
    assert aggregate_metrics([]) == {}
