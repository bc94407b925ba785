"""Answer parsing, the reward spec and its audit; the answer grammar (docs/ui-nav-task.md) against the app's labels."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hyperpod_rl.tasks import run_audit
from hyperpod_rl.tasks.ui_nav import (
    AUDIT_APPS,
    AUDIT_CASES,
    REWARD_VERSION,
    App,
    generate_app,
    initial_state,
    max_return,
    parse_action,
    score_step,
)
from hyperpod_rl.tasks.ui_nav.answer import VIOLATIONS
from hyperpod_rl.tasks.ui_nav.app import LABEL_PATTERN, Control, Goal, Screen, apply_action, label_problem, visible_elements
from hyperpod_rl.tasks.ui_nav.generate import ACTION_LABELS, VOCABULARIES
from hyperpod_rl.tasks.ui_nav.reward import FORMAT_PENALTY, INAPPLICABLE_PENALTY, OUT_OF_SCREEN_PENALTY, aggregate_metrics, score_action
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


# ---------------------------------------------------------------- the answer grammar against the app's labels (issue 30)


def _app_with(label: str) -> App:
    """An app whose home menu has a button ``label`` and whose one page has a toggle ``label``."""
    page = Screen(title=label, kind="settings", parent=0, controls=(Control(label, "toggle", False),), action_label="Save")
    return App(name="Probe", screens=(Screen(title="Home", kind="menu", children=(1,)), page), goal=Goal(1, ((0, True),)))


#: Held-back adversarial labels of issue 30 and their kind: punctuation the app allows.
PUNCTUATED = [
    "Sync: photos",
    "Name, city",
    "Wi-Fi+",
    "C++",
    "Q&A",
    "50% off",
    "Re: Inbox",
    "A/B test",
    "Mail #2",
    "Hey!",
    "Why?",
    "x=1",
    "a_b",
    "[beta]",
    "~home",
    "Price $",
]


@pytest.mark.parametrize("label", PUNCTUATED)
def test_labels_with_the_punctuation_the_app_allows_are_clickable(label: str) -> None:
    app = _app_with(label)
    assert label_problem(label) is None
    for answer in (f'click "{label}"', f"click {label}", f"CLICK   {label}"):
        parsed = parse_action(f"<answer>{answer}</answer>")
        assert parsed.ok and parsed.action is not None and parsed.action.kind == "click", (answer, parsed.violation)
        out = score_action(app, initial_state(app), parsed.action)
        assert out.error is None and out.label == label, (answer, out.error)


@settings(max_examples=300, deadline=None)
@given(st.from_regex(LABEL_PATTERN, fullmatch=True).filter(lambda s: label_problem(s) is None and s.lower() not in ("home", "save")))
def test_every_label_the_app_can_hold_is_clickable_by_its_exact_text(label: str) -> None:
    """Property: any label the app accepts (its LABEL_PATTERN, minus reserved words and coordinate shapes)
    is clicked by ``click "<label>"`` and by ``click <label>``, on a menu button and on a toggle."""
    app = _app_with(label)
    state = initial_state(app)
    for answer in (f'click "{label}"', f"click {label}"):
        out = score_step(app, state, f"<answer>{answer}</answer>")
        assert out.violation is None and out.error is None and out.label == label, (answer, out.violation, out.error)
    on_page = apply_action(app, state, parse_action(f'<answer>click "{label}"</answer>').action).state  # type: ignore[arg-type]
    out = score_step(app, on_page, f"<answer>click {label}</answer>")
    assert out.error is None and out.state_after.pending == (True,)


def test_every_label_the_generator_draws_is_clickable() -> None:
    """Every vocabulary word, commit button and dialog button, in generated apps of every kind, by its exact text."""
    words = {w for vocab in VOCABULARIES.values() for w in vocab} | {w for ws in ACTION_LABELS.values() for w in ws} | {"OK", "Cancel"}
    assert all(label_problem(w) is None for w in words), sorted(w for w in words if label_problem(w))
    for seed in range(12):
        app = generate_app(
            seed=seed, depth=1 + seed % 3, goal_kind=("settings", "form")[seed % 2], confirm=1.0, labels=("train", "heldout")[seed % 2]
        )
        state = initial_state(app)
        for el in visible_elements(app, state):
            for answer in (f'click "{el.label}"', f"click {el.label}"):
                assert score_step(app, state, f"<answer>{answer}</answer>").label == el.label, answer


@pytest.mark.parametrize(
    "answer",
    ["click (99999999, 5)", "click (5, -123456789)", "click 1234567, 1", "click (-9999999999999999999999, 0)", "click(4000000,40)"],
)
def test_coordinates_far_outside_the_image_are_off_screen_not_malformed(answer: str) -> None:
    """Held-back cases of issue 30: any integer coordinates parse; outside the image they score -0.15 (off-screen)."""
    app = AUDIT_APPS["notely"]
    out = score_step(app, initial_state(app), f"<answer>{answer}</answer>")
    assert out.violation is None and out.error == "out_of_screen" and out.reward == -OUT_OF_SCREEN_PENALTY


@pytest.mark.parametrize(
    ("answer", "code"),
    [
        ('click "Dark mode" back', "multiple_actions"),
        ('click "Dark mode" now', "bad_arguments"),
        ("click Settings back", "multiple_actions"),
        ("click (100, 50", "bad_arguments"),
        ("click (100.5, 50)", "bad_arguments"),
        ('click "Say "hi""', "bad_arguments"),
        ("click x\x0by", "bad_arguments"),
    ],
)
def test_arguments_outside_the_grammar_are_violations(answer: str, code: str) -> None:
    assert parse_action(f"<answer>{answer}</answer>").violation == code
