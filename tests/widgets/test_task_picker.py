"""The task picker of the RunPanel: every registered task, its own options form, dataset generation."""

from __future__ import annotations

import pytest

from hyperpod_rl.errors import ConfigError
from hyperpod_rl.tasks import read_rows
from hyperpod_rl.widgets import RunPanel
from hyperpod_rl.widgets.task_picker import TaskPicker


def test_picker_lists_tasks_and_builds_the_options_form_from_the_model() -> None:
    picker = TaskPicker()
    assert {"maze", "shapes"} <= set(picker.task.options) and picker.name == "maze"
    assert picker.to_dict() == {"name": "maze", "options": {}}  # defaults stay out: the default task section
    assert "render_style" in picker.options_form.sections  # nested option model -> sub-form
    picker.options_form.widget("braid").value = 0.25
    assert picker.to_dict() == {"name": "maze", "options": {"braid": 0.25}}
    picker.task.value = "shapes"
    fill = picker.options_form.widget("fill")
    assert fill.tooltip == "Probability that a cell holds a square." and fill.value == 0.6
    assert "single-turn" in picker.info.value and "success" in picker.info.value
    fill.value = 0.5
    assert picker.to_dict() == {"name": "shapes", "options": {"fill": 0.5}}


def test_run_panel_trains_any_task_from_its_picker(tmp_path) -> None:
    panel = RunPanel({"run_id": "picked", "data": {"train_path": "x", "heldout_path": "y"}})
    panel.tasks.task.value = "shapes"
    panel.tasks.options_form.widget("counts").value = '{"train": 6, "heldout": 3}'
    panel.tasks.options_form.widget("grid_sizes").value = "[3]"
    paths = panel.generate_dataset(tmp_path)
    assert [len(read_rows(paths[s])) for s in ("train", "heldout")] == [6, 3]
    panel.form.widget("rollout.action_constraint").value = "directions"
    config = panel.validate()
    assert config.task.name == "shapes" and config.task.options == {"counts": {"train": 6, "heldout": 3}, "grid_sizes": [3]}
    assert config.data.train_path == str(paths["train"])
    panel.tasks.options_form.widget("fill").value = 3.0
    with pytest.raises(ConfigError, match=r"task\.options\.fill: must be <= 1"):
        panel.validate()
    assert "task.options.fill" in panel.validation.value
