"""The example plug-in in examples/shapes-task: registered by entry point, audited, trained for a few steps.

CI installs it (``make venv`` runs ``pip install -e examples/shapes-task``); the test fails, not
skips, when it is missing, because proving that a fourth task plugs in is the point.
"""

from __future__ import annotations

import json
from importlib.metadata import entry_points

import pytest

from hyperpod_rl.errors import ConfigError
from hyperpod_rl.tasks import ENTRY_POINT_GROUP, check_splits, get_task, make_env, run_audit, task_names


def test_example_is_registered_by_its_own_entry_point() -> None:
    eps = {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}
    assert eps.get("shapes") == "hprl_shapes.task:TASK", "install the example: pip install -e examples/shapes-task"
    assert {"maze", "shapes"} <= set(task_names())
    task = get_task("shapes")
    assert (task.multi_turn, task.answer_words, task.primary_metric) == (False, ("red", "green", "blue"), "success")


def test_example_reward_audit_and_splits() -> None:
    report = run_audit("shapes")
    assert report.passed and report.total >= 15
    wrong = run_audit("shapes", lambda row, completion, state: 1.0)
    assert len(wrong.disagreements) == report.total - 4  # only the four right answers expect 1.0
    task = get_task("shapes")
    splits = task.build_dataset(task.options_model(counts={"train": 20, "heldout": 10, "ood": 5}))
    check_splits(task, splits)
    assert {len(r["grid"]) for r in splits["ood"]} == {6} and {len(r["grid"]) for r in splits["train"]} <= {3, 4}


def test_example_env_scores_through_skyrl_gym() -> None:
    task = get_task("shapes")
    row = task.build_dataset(task.options_model(counts={"train": 1}))["train"][0]
    env = make_env(None, row)
    prompt, info = env.init(row["prompt"])
    assert prompt == row["prompt"] and info["reward_version"] == "1.0"
    out = env.step(f"<answer>{row['answer']}</answer>")
    assert out["done"] and out["reward"] == 1.0 and env.get_metrics()["success"] == 1.0


def test_a_free_form_constraint_is_required_for_tasks_without_answer_words(tmp_path) -> None:
    from hyperpod_rl.config.run import RunConfig
    from hyperpod_rl.tasks import TaskBase, register_task, unregister_task

    class Free(TaskBase):
        name = "free-test"
        title = "free-form answers"
        env_class = "tests.free"
        env_entry_point = "tests.free:Env"
        reward_version = "0"

    register_task(Free())
    try:
        data = {"run_id": "free", "task": {"name": "free-test"}, "data": {"train_path": "a", "heldout_path": "b"}}
        with pytest.raises(ConfigError, match="rollout.action_constraint='directions' .* task 'free-test' has none"):
            RunConfig.build(data)
        assert RunConfig.build({**data, "rollout": {"action_constraint": "none"}}).task.name == "free-test"
    finally:
        unregister_task("free-test")


@pytest.mark.slow
def test_example_trains_a_few_steps_and_evaluates(tmp_path) -> None:
    """Slow: a few real training steps and an evaluation of the example plug-in task."""
    from hyperpod_rl.eval import compare, evaluate
    from hyperpod_rl.quickstart import QuickstartOptions, make_run_config, prepare_base_model, prepare_dataset
    from hyperpod_rl.tasks import read_rows
    from hyperpod_rl.train.reference import ReferenceTrainer

    opts = QuickstartOptions.build(task="shapes", train_rows=32, heldout_rows=12, steps=3, group_size=4, prompts_per_step=4)
    data = prepare_dataset(opts, tmp_path)
    assert data.spec["task"] == "shapes"
    train_rows = read_rows(data.train)
    model_dir, revision = prepare_base_model(opts, tmp_path, train_rows)
    cfg = make_run_config(opts, run_id="shapes-ci", model_path=model_dir, revision=revision, data=data)
    assert cfg.task.name == "shapes" and cfg.task.options["counts"] == {"train": 32, "heldout": 12}
    run_dir = tmp_path / "runs" / "shapes-ci"
    adapter = ReferenceTrainer(cfg, run_dir).train()
    prov = json.loads((adapter / "provenance.json").read_text())
    assert (prov["task"], prov["reward_version"], prov["steps"]) == ("shapes", "1.0", 3)
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in records if "environment/success" in (r.get("values") or r)]
    assert len(steps) == 3
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["task"] == "shapes" and manifest["config"]["task"]["name"] == "shapes"
    base_eval = json.loads((run_dir / "eval" / "base.json").read_text())
    assert base_eval["task"] == "shapes" and base_eval["num_mazes"] == 12

    heldout = read_rows(data.heldout)
    base = evaluate(model_dir, heldout, label="base")
    tuned = evaluate(model_dir, heldout, adapter_path=adapter, label="adapter")
    assert base.task == tuned.task == "shapes" and set(base.metrics) >= {"success", "reward", "invalid"}
    assert set(base.breakdown) == {"stratum"} and all(k.startswith("n") for k in base.breakdown["stratum"])
    assert all(ans.startswith("<answer>") for m in tuned.per_maze for ans in m["moves"])
    comparison = compare(base, tuned)
    assert comparison.primary == "success" and comparison.num_mazes == 12

    from hyperpod_rl.model.adapter import load_policy, task_of_adapters

    assert task_of_adapters({"shapes": adapter}) == "shapes"
    served = load_policy(model_dir, {"shapes": adapter})  # what the local server loads: the adapter's task's words
    assert served.answer_words == ("red", "green", "blue") and served.action_constraint == "directions"


def test_example_metadata_builds_without_setuptools_warnings() -> None:
    """Field report (new-user trial): ``pip install -e examples/shapes-task`` warned that
    ``project.license`` as a TOML table is deprecated; it is the SPDX string form now."""
    import warnings
    from pathlib import Path

    from setuptools.config.pyprojecttoml import apply_configuration
    from setuptools.dist import Distribution

    pyproject = Path(__file__).resolve().parents[2] / "examples" / "shapes-task" / "pyproject.toml"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dist = apply_configuration(Distribution(), pyproject)
    assert [str(w.message) for w in caught] == []
    assert dist.metadata.license_expression == "Apache-2.0"
