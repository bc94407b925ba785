"""The generic trainer and evaluation run the doc_read plug-in end to end (reference backend, in process, no Ray)."""

from __future__ import annotations

import json

import pytest


@pytest.mark.slow
def test_doc_read_trains_a_few_steps_and_evaluates(tmp_path) -> None:
    """Slow: a few real training steps and an evaluation of the doc_read task."""
    from hyperpod_rl.eval import compare, evaluate
    from hyperpod_rl.quickstart import QuickstartOptions, make_run_config, prepare_base_model, prepare_dataset
    from hyperpod_rl.tasks import read_rows
    from hyperpod_rl.tasks.doc_read import REWARD_VERSION
    from hyperpod_rl.train.reference import ReferenceTrainer

    opts = QuickstartOptions.build(
        task="doc_read",
        task_options={"qtypes": ["field.kind"], "max_image_tokens": 64},
        train_rows=24,
        heldout_rows=8,
        steps=2,
        group_size=4,
        prompts_per_step=4,
    )
    data = prepare_dataset(opts, tmp_path)
    assert data.spec["task"] == "doc_read"
    train_rows = read_rows(data.train)
    assert {r["prompt_style"] for r in train_rows} == {"terse"}  # the tiny model gets terse prompts
    model_dir, revision = prepare_base_model(opts, tmp_path, train_rows)
    cfg = make_run_config(opts, run_id="docread-ci", model_path=model_dir, revision=revision, data=data)
    assert cfg.task.name == "doc_read"
    run_dir = tmp_path / "runs" / "docread-ci"
    adapter = ReferenceTrainer(cfg, run_dir).train()
    prov = json.loads((adapter / "provenance.json").read_text())
    assert (prov["task"], prov["reward_version"], prov["steps"]) == ("doc_read", REWARD_VERSION, 2)

    heldout = read_rows(data.heldout)
    base = evaluate(model_dir, heldout, label="base")
    tuned = evaluate(model_dir, heldout, adapter_path=adapter, label="adapter")
    assert base.task == tuned.task == "doc_read" and "accuracy" in base.metrics
    words = {f"<answer>{w}</answer>" for w in ("invoice", "receipt", "form", "table", "yes", "no")}
    assert all(ans in words for m in tuned.per_maze for ans in m["moves"])
    assert compare(base, tuned).primary == "accuracy"
