"""The app model: validation, transitions, breadth-first distances and the generator."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from hyperpod_rl.errors import TaskError
from hyperpod_rl.tasks.ui_nav import (
    AUDIT_APPS,
    Action,
    App,
    Goal,
    apply_action,
    distance_to_goal,
    generate_app,
    initial_state,
    is_solved,
    optimal_actions,
    visible_elements,
    vocabulary,
)
from hyperpod_rl.tasks.ui_nav.generate import VOCABULARIES

NOTELY = AUDIT_APPS["notely"]
FORMLY = AUDIT_APPS["formly"]


def test_shortest_paths_of_the_audit_apps() -> None:
    assert NOTELY.shortest_path_length == 5  # Settings, Display, Dark mode, Save, OK
    assert FORMLY.shortest_path_length == 4  # Profile, Name, type, Submit
    assert NOTELY.depth == 2 and FORMLY.depth == 1


def test_following_optimal_actions_reaches_the_goal_in_exactly_the_distance() -> None:
    for app in (NOTELY, FORMLY, generate_app(seed=5, depth=3, goal_kind="form", targets=2, controls=(2, 4))):
        state, taken = initial_state(app), 0
        while not is_solved(app, state):
            acts = optimal_actions(app, state)
            assert acts, f"no optimal action at {state}"
            step = apply_action(app, state, acts[0])
            assert step.error is None
            assert distance_to_goal(app, step.state) == distance_to_goal(app, state) - 1
            state, taken = step.state, taken + 1
        assert taken == app.shortest_path_length


def test_bfs_distance_matches_brute_force_search_on_full_states() -> None:
    """The projected search gives the same distances as a search over the unprojected states."""
    from collections import deque

    app = generate_app(seed=11, depth=2, goal_kind="settings", targets=2, controls=(2, 3))
    texts = [v for _, v in app.goal.targets if isinstance(v, str)]
    start = initial_state(app)
    seen = {start: 0}
    queue = deque([start])
    found = None
    while queue:
        s = queue.popleft()
        if is_solved(app, s):
            found = seen[s]
            break
        acts = [Action("click", el.label) for el in visible_elements(app, s)] + [Action("back")]
        acts += [Action("type", text=t) for t in texts]
        for a in acts:
            step = apply_action(app, s, a)
            if step.error is None and step.state not in seen:
                seen[step.state] = seen[s] + 1
                queue.append(step.state)
    assert found == distance_to_goal(app, start)


def test_transitions_follow_the_rules() -> None:
    s = initial_state(NOTELY)
    assert apply_action(NOTELY, s, Action("back")).error == "nothing_to_go_back_to"
    assert apply_action(NOTELY, s, Action("type", text="x")).error == "no_focused_field"
    assert apply_action(NOTELY, s, Action("click", label="Dark mode")).error == "no_such_element"
    for a in ("Settings", "Display", "Dark mode"):
        s = apply_action(NOTELY, s, Action("click", label=a)).state
    assert s.pending == (True, True) and s.saved[4] == (False, True)
    dialog = apply_action(NOTELY, s, Action("click", label="save")).state  # case-insensitive
    assert dialog.dialog and [e.label for e in visible_elements(NOTELY, dialog)] == ["OK", "Cancel"]
    assert apply_action(NOTELY, dialog, Action("back")).state == replace(dialog, dialog=False)
    done = apply_action(NOTELY, dialog, Action("click", label="OK")).state
    assert is_solved(NOTELY, done) and done.saved[4] == (True, True)
    back = apply_action(NOTELY, s, Action("back")).state  # unsaved edits are discarded
    assert back.screen == 1 and back.saved[4] == (False, True)
    reopened = apply_action(NOTELY, back, Action("click", label="Display")).state
    assert reopened.pending == (False, True)


def test_typing_replaces_the_focused_fields_text() -> None:
    s = initial_state(FORMLY)
    for a in (Action("click", label="Profile"), Action("click", label="Name"), Action("type", text="Bob"), Action("type", text="  Ada ")):
        s = apply_action(FORMLY, s, a).state
    assert s.pending == ("Ada", "") and s.focus == 0
    s = apply_action(FORMLY, s, Action("click", label="Submit")).state
    assert is_solved(FORMLY, s)


def test_json_round_trip_and_content_hash() -> None:
    app = generate_app(seed=3, depth=2, goal_kind="form")
    again = App.from_json(app.to_json())
    assert again == app and again.content_hash == app.content_hash and hash(again) == hash(app)
    other = generate_app(seed=4, depth=2, goal_kind="form")
    assert other.content_hash != app.content_hash


@pytest.mark.parametrize(
    ("mutate", "match"),
    [
        (lambda d: d["screens"][1].update(title="Set;tings"), "must not hold"),
        (lambda d: d["screens"][1].update(title="Go back"), "must not hold"),
        (lambda d: d["screens"][1].update(title="Play-back"), "must not hold the words"),
        (lambda d: d["screens"][1].update(title="Tab\there"), "printable ASCII"),
        (lambda d: d["screens"][1].update(title="12, 40"), "look like click coordinates"),
        (lambda d: d["screens"][5].update(title="Display"), "labels 'Display' and 'Display' are one label to a click"),
        (lambda d: d["screens"][0].update(kind="settings"), "home menu"),
        (lambda d: d["goal"].update(page=1), "must be a page"),
        (lambda d: d["goal"].update(targets=[[0, False]]), "already holds"),
        (lambda d: d["goal"].update(targets=[[0, "Ada"]]), "does not suit"),
        (lambda d: d["screens"][4].update(parent=0), "parent"),
        (lambda d: d.pop("goal"), "app JSON is invalid"),
    ],
)
def test_invalid_apps_are_refused_with_the_field(mutate, match: str) -> None:
    data = NOTELY.to_dict()
    mutate(data)
    with pytest.raises(TaskError, match=match):
        App.from_dict(data)


def test_from_json_refuses_non_json() -> None:
    with pytest.raises(TaskError, match="not valid JSON"):
        App.from_json("{nope")


def test_unreachable_state_is_reported() -> None:
    bogus = replace(initial_state(NOTELY), screen=4, focus=1, pending=(False, True))  # no field to focus on a settings page
    with pytest.raises(TaskError, match="not reachable"):
        distance_to_goal(NOTELY, bogus)


def test_generator_is_deterministic_and_valid_across_settings() -> None:
    rng = random.Random(0)
    for _ in range(60):
        kw = {
            "seed": rng.randrange(10**9),
            "depth": rng.randint(1, 4),
            "goal_kind": rng.choice(("settings", "form")),
            "targets": rng.randint(1, 2),
            "controls": (2, rng.randint(2, 4)),
            "branching": (2, rng.randint(2, 4)),
            "labels": rng.choice(("train", "heldout")),
        }
        app = generate_app(**kw)
        assert generate_app(**kw).content_hash == app.content_hash
        assert app.depth == kw["depth"]
        assert app.shortest_path_length >= app.depth + 2
        assert len(app.goal.targets) == kw["targets"]


def test_heldout_vocabulary_is_disjoint_from_train() -> None:
    for name in VOCABULARIES:
        train, held = set(vocabulary(name, "train")), set(vocabulary(name, "heldout"))
        assert train and held and not train & held
        assert train | held == set(VOCABULARIES[name])


def test_heldout_apps_show_no_train_label() -> None:
    train_words = {w for n in VOCABULARIES for w in vocabulary(n, "train")}
    for seed in range(20):
        app = generate_app(seed=seed, depth=2, labels="heldout", goal_kind="form" if seed % 2 else "settings")
        labels = {app.name} | {s.title for s in app.screens[1:]} | {c.label for s in app.screens for c in s.controls}
        labels |= {v for _, v in app.goal.targets if isinstance(v, str)}
        assert not labels & train_words


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"depth": 0}, "depth"),
        ({"branching": (1, 3)}, "branching"),
        ({"targets": 3, "controls": (2, 3)}, "targets"),
        ({"goal_kind": "dialog"}, "goal_kind"),
        ({"confirm": 1.5}, "confirm"),
        ({"labels": "secret"}, "label pool"),
    ],
)
def test_generator_rejects_bad_arguments(kwargs: dict, match: str) -> None:
    with pytest.raises(TaskError, match=match):
        generate_app(seed=0, **kwargs)


def test_goal_is_never_met_at_start() -> None:
    for seed in range(30):
        app = generate_app(seed=seed, depth=1, goal_kind="settings", targets=2)
        assert not is_solved(app, initial_state(app))
        assert isinstance(app.goal, Goal)


# ---------------------------------------------------------------- labels that collide after normalization (issue 42 item 6)
def _control(label: str) -> dict:
    return {"label": label, "kind": "toggle", "initial": False}


@pytest.mark.parametrize(
    ("mutate", "named"),
    [
        (lambda d: d["screens"][4]["controls"].append(_control("DARK MODE")), "'Dark mode' and 'DARK MODE'"),
        (lambda d: d["screens"][4]["controls"].append(_control("Dark  mode")), "'Dark mode' and 'Dark  mode'"),
        (lambda d: d["screens"][4]["controls"].append(_control("dark   MODE")), "'Dark mode' and 'dark   MODE'"),
        (lambda d: d["screens"][4]["controls"].append(_control("save")), "'save' and 'Save'"),  # a toggle beside the Save button
        (lambda d: d["screens"][5].update(title="display"), "'Display' and 'display'"),  # two buttons of the Settings menu
        (lambda d: d["screens"][5].update(title="Dis play"), None),  # one space inside a word is another label: accepted
    ],
    ids=["case", "spaces", "case-and-spaces", "control-and-button", "menu-buttons", "a-different-label"],
)
def test_a_user_built_app_whose_labels_collide_after_normalization_is_refused_naming_them(mutate, named) -> None:
    data = NOTELY.to_dict()
    mutate(data)
    if named is None:
        assert App.from_dict(data).screens[5].title == "Dis play"
        return
    with pytest.raises(TaskError, match="are one label to a click, which ignores case and runs of spaces") as info:
        App.from_dict(data)
    assert named in str(info.value), info.value


def test_the_generator_never_produces_labels_that_collide() -> None:
    from hyperpod_rl.tasks.ui_nav.app import fold_label
    from hyperpod_rl.tasks.ui_nav.generate import vocabulary_clashes

    assert vocabulary_clashes() == []  # every screen's labels are drawn from these, so they never collide
    for seed in range(120):
        for labels in ("train", "heldout"):
            app = generate_app(seed=seed, depth=1 + seed % 3, goal_kind=("settings", "form")[seed % 2], controls=(2, 4), labels=labels)
            state = initial_state(app)
            for i in range(len(app.screens)):
                shown = [el.label for el in visible_elements(app, replace(state, screen=i))]
                assert len({fold_label(x) for x in shown}) == len(shown), (seed, labels, i, shown)


def test_a_vocabulary_edit_that_would_collide_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    from hyperpod_rl.tasks.ui_nav import generate

    monkeypatch.setitem(generate.VOCABULARIES, "toggles", (*generate.VOCABULARIES["toggles"], "dark  MODE"))
    monkeypatch.setitem(generate.VOCABULARIES, "fields", (*generate.VOCABULARIES["fields"], "send"))
    assert generate.vocabulary_clashes() == [
        "the toggles vocabulary: 'Dark mode' and 'dark  MODE'",
        "the toggles vocabulary and the settings buttons: 'Dark mode' and 'dark  MODE'",
        "the fields vocabulary and the form buttons: 'send' and 'Send'",
    ]
