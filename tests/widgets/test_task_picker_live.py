"""A run of each non-maze task (the two built-in ones and the example plug-in "shapes") picked, generated and submitted from the RunPanel on the real local cluster."""

from __future__ import annotations

import json
import time

import pytest

from hyperpod_rl.quickstart import QuickstartOptions, prepare_base_model
from hyperpod_rl.tasks import read_rows
from hyperpod_rl.widgets import RunPanel

pytestmark = [pytest.mark.ray, pytest.mark.job]


COUNTS = {"train": 16, "heldout": 4}
#: task -> (its options set in the picker's form, run-form fields beyond the common ones)
CASES = {
    "shapes": ({"counts": COUNTS, "prompt_style": "terse"}, {}),
    "doc_read": ({"counts": COUNTS, "qtypes": ["field.kind"], "max_image_tokens": 64}, {}),
    # free-form answers (no answer words): free generation, short responses, two turns
    "ui_nav": (
        {"counts": COUNTS, "prompt_style": "terse"},
        {"rollout.action_constraint": "none", "rollout.max_new_tokens": 8, "rollout.max_turns": 2},
    ),
}


@pytest.mark.parametrize("task", sorted(CASES))
def test_run_panel_trains_the_picked_task_on_the_local_cluster(local_cluster, tmp_path, task):
    options, fields = CASES[task]
    run_id = f"panel-{task.replace('_', '-')}"
    run = RunPanel(
        {"run_id": run_id, "data": {"train_path": "-", "heldout_path": "-"}},
        cluster=local_cluster,
        run_dir_of=lambda rid: tmp_path / rid,
        poll_s=0.5,
    )
    run.tasks.task.value = task
    for name, value in options.items():
        widget = run.tasks.options_form.widget(name)
        widget.value = json.dumps(value) if isinstance(widget.value, str) and not isinstance(value, str) else value
    paths = run.generate_dataset(tmp_path)
    opts = QuickstartOptions.build(task=task, train_rows=16, heldout_rows=4)
    model_dir, revision = prepare_base_model(opts, tmp_path, read_rows(paths["train"]))
    for path, value in {
        "model.path": str(model_dir),
        "model.revision": revision,
        "trainer.steps": 2,
        "trainer.eval_rows": 4,
        "data.prompts_per_step": 2,
        "grpo.group_size": 2,
        "checkpoint.interval": 0,
        **fields,
    }.items():
        run.form.widget(path).value = value
    deadline = time.monotonic() + 60
    while True:  # a fresh head can answer "try again later" for its first seconds, as in test_panels_live
        run.errors.clear()
        run.submit_button.click()
        if not run.errors or "try again later" not in run.errors[-1] or time.monotonic() > deadline:
            break
        time.sleep(1.0)
    assert run.errors == [] and run.handle is not None
    deadline = time.monotonic() + 600
    while run.status not in ("SUCCEEDED", "FAILED", "STOPPED") and time.monotonic() < deadline:
        time.sleep(0.5)
    assert run.status == "SUCCEEDED", run.log_tail
    run_dir = tmp_path / run_id
    prov = json.loads((run_dir / "adapter" / "provenance.json").read_text())
    assert (prov["task"], prov["steps"]) == (task, 2)
    assert json.loads((run_dir / "manifest.json").read_text())["config"]["task"]["options"]["counts"] == COUNTS
