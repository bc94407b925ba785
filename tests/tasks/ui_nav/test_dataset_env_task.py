"""Dataset splits, the skyrl-gym env (multi-turn), and the Task plug-in through the registry."""

from __future__ import annotations

from pathlib import Path

import pytest

from hyperpod_rl.errors import TaskError
from hyperpod_rl.tasks import check_splits, get_task, task_names, write_parquet
from hyperpod_rl.tasks.ui_nav import (
    AUDIT_APPS,
    ENV_CLASS,
    App,
    DatasetSpec,
    UINavEnv,
    build_dataset,
    image_tokens,
    make_env,
    max_return,
    optimal_actions,
    read_rows,
)
from hyperpod_rl.tasks.ui_nav.generate import VOCABULARIES, vocabulary
from hyperpod_rl.tasks.ui_nav.render import RenderStyle

SPEC = DatasetSpec(seed=1, counts={"train": 40, "heldout": 16, "ood": 12}, sizes=("small", "medium"))


@pytest.fixture(scope="module")
def splits() -> dict:
    return build_dataset(SPEC)


def test_splits_are_disjoint_by_content_hash_and_well_formed(splits: dict) -> None:
    assert {k: len(v) for k, v in splits.items()} == {"train": 40, "heldout": 16, "ood": 12}
    check_splits(get_task("ui_nav"), splits)
    hashes = [r["content_hash"] for rows in splits.values() for r in rows]
    assert len(hashes) == len(set(hashes))
    for rows in splits.values():
        for r in rows:
            assert App.from_json(r["app"]).content_hash == r["content_hash"]
            assert r["image_tokens"] == image_tokens(RenderStyle.model_validate_json(r["render_style"]))


def test_heldout_uses_unseen_labels_and_ood_is_deeper(splits: dict) -> None:
    train_labels = set()
    for r in splits["train"]:
        app = App.from_json(r["app"])
        train_labels |= {s.title for s in app.screens[1:]} | {c.label for s in app.screens for c in s.controls} | {app.name}
    held_words = {w for n in VOCABULARIES for w in vocabulary(n, "heldout")}
    for r in splits["heldout"]:
        app = App.from_json(r["app"])
        labels = {s.title for s in app.screens[1:]} | {c.label for s in app.screens for c in s.controls} | {app.name}
        assert labels <= held_words and not labels & train_labels
    assert max(r["depth"] for r in splits["train"] + splits["heldout"]) < min(r["depth"] for r in splits["ood"])
    assert {r["stratum"].split("|")[2] for r in splits["train"]} == {"small", "medium"}


def test_same_spec_same_rows_and_parquet_round_trip(splits: dict, tmp_path: Path) -> None:
    again = build_dataset(SPEC)
    assert again == splits
    digest = write_parquet(splits["train"], tmp_path / "train.parquet")
    assert len(digest) == 64
    assert read_rows(tmp_path / "train.parquet") == splits["train"]


def test_mix_fills_the_requested_strata() -> None:
    rows = build_dataset(DatasetSpec(counts={"train": 12}, mix={"depth1": 1, "depth2|form": 1}))["train"]
    assert sum(r["depth"] == 1 for r in rows) == 6
    assert sum(r["depth"] == 2 and r["goal_kind"] == "form" for r in rows) == 6


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ({"counts": {"test": 3}}, "unknown split"),
        ({"ood_depths": (2,), "depths": (1, 2), "counts": {"ood": 2}}, "deeper"),
        ({"sizes": ("huge",)}, "sizes"),
        ({"sizes": ("large",), "max_image_tokens": 100}, "vision tokens"),
        ({"targets": (3,)}, "targets"),
        ({"goal_kinds": {"wizard": 1}}, "goal_kinds"),
    ],
)
def test_bad_specs_name_the_field(data: dict, match: str) -> None:
    with pytest.raises(TaskError, match=match):
        DatasetSpec.build(data)


def test_unfillable_split_says_what_to_change() -> None:
    with pytest.raises(TaskError, match=r"counts.train=.* cannot be filled"):
        build_dataset(DatasetSpec(counts={"train": 5}, mix={"depth3": 1}))


def test_env_plays_a_multi_turn_episode_to_the_goal(splits: dict) -> None:
    row = splits["heldout"][0]
    env = make_env({k: v for k, v in row.items() if k != "prompt"})
    assert isinstance(env, UINavEnv)
    prompt, info = env.init(row["prompt"])
    assert prompt == row["prompt"] and info["content_hash"] == row["content_hash"]
    total, turns = 0.0, 0
    while True:
        act = optimal_actions(env.app, env.state)[0]
        out = env.step(f"<answer>{act.describe()}</answer>")
        total, turns = total + out["reward"], turns + 1
        if out["done"]:
            assert out["observations"] == [] and out["metadata"]["solved"]
            break
        (msg,) = out["observations"]
        assert msg["role"] == "user" and msg["content"][0]["type"] == "image_url"
    assert turns == row["shortest_path_length"]
    assert round(total, 9) == max_return(env.app)
    m = env.get_metrics()
    assert m["solved"] == 1.0 and m["progress"] == 1.0 and m["optimal_action_rate"] == 1.0 and m["steps_over_optimal"] == 0.0


def test_env_ends_at_the_turn_limit_and_counts_bad_actions(splits: dict) -> None:
    row = {**splits["train"][0], "max_turns": 3, "observation": "both"}
    env = make_env({k: v for k, v in row.items() if k != "prompt"})
    first = env.step("nonsense")
    assert first["reward"] == -0.2 and first["metadata"]["violation"] == "no_answer" and not first["done"]
    assert "Invalid answer" in first["observations"][0]["content"][-1]["text"]
    second = env.step("<answer>click (-3, 4)</answer>")
    assert second["reward"] == -0.15 and second["metadata"]["error"] == "out_of_screen"
    third = env.step("<answer>back</answer>")
    assert third["done"] and third["reward"] == -0.1
    m = env.get_metrics()
    assert m["turns"] == 3 and m["solved"] == 0.0 and m["invalid_action_rate"] == pytest.approx(1 / 3)
    assert m["inapplicable_action_rate"] == pytest.approx(2 / 3) and "steps_over_optimal" not in m


@pytest.mark.parametrize(
    ("extras", "match"),
    [
        ({}, "extras\\['app'\\] is required"),
        ({"app": AUDIT_APPS["notely"].to_json(), "max_turns": 0}, "max_turns"),
        ({"app": AUDIT_APPS["notely"].to_json(), "observation": "audio"}, "observation"),
        ({"app": AUDIT_APPS["notely"].to_json(), "render_style": {"theme": "neon"}}, "render_style"),
    ],
)
def test_env_refuses_bad_rows(extras: dict, match: str) -> None:
    with pytest.raises(TaskError, match=match):
        UINavEnv(env_config=None, extras=extras)


def test_task_is_registered_by_entry_point_and_implements_the_protocol(splits: dict) -> None:
    assert "ui_nav" in task_names()
    task = get_task("ui_nav")
    assert task.env_class == ENV_CLASS and task.multi_turn and task.hash_column == "content_hash"
    row = splits["train"][1]
    assert task.build_prompt(row) == row["prompt"]
    app = App.from_json(row["app"])
    first = app.screens[app.path_to(app.goal.page)[0]].title
    state = {"history": [f'click "{first}"']}
    img = task.render(row, state)
    style = RenderStyle.model_validate_json(row["render_style"])
    assert img.size == (style.width_px, style.height_px)
    twin = task.text_twin(row, state)
    assert twin.startswith(f"Window: {app.name} - {first}")
    assert task.score(row, f'<answer>click "{first}"</answer>') == 0.09
    assert task.parse_answer("<answer>back</answer>").violation is None
    agg = task.aggregate_metrics([{"solved": 1.0, "progress": 1.0}])
    assert agg[task.primary_metric] == 1.0
    with pytest.raises(TaskError, match="does not apply"):
        task.render(row, {"history": ["back"]})


def test_text_twin_observation_lists_the_screen() -> None:
    task = get_task("ui_nav")
    row = {"app": AUDIT_APPS["notely"].to_json()}
    prompt = task.build_prompt(row, observation="text")
    assert all(p["type"] == "text" for m in prompt for p in m["content"])
    assert "[button] Settings" in prompt[-1]["content"][-1]["text"]
    twin = task.text_twin(row, {"history": ['click "Settings"', 'click "Display"', 'click "Dark mode"', 'click "Save"']})
    assert "[toggle on] Dark mode" in twin and "[dialog] Save changes?" in twin


def test_metric_spec_reports_the_env_metrics() -> None:
    from hyperpod_rl.tasks.metrics import metric_spec

    spec = metric_spec(get_task("ui_nav"))
    assert spec.reported[0] == "solve_rate" and not spec.higher_is_better["invalid_action_rate"]
    env = UINavEnv(env_config=None, extras={"app": AUDIT_APPS["formly"].to_json()})
    env.step('<answer>click "Profile"</answer>')
    episode = env.get_metrics()
    for metric, key in spec.episode_key.items():
        assert key in episode or metric == "steps_over_optimal"
