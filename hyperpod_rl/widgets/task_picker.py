"""TaskPicker: choose a registered task and fill in its own options (a form generated from its options model).

The options form is :class:`~hyperpod_rl.widgets._form.ModelForm` over the task's
:attr:`~hyperpod_rl.tasks.Task.options_model` (the field docstrings are the tooltips), rebuilt when
another task is picked. :meth:`TaskPicker.to_dict` is ``RunConfig.task``'s JSON form: only options
that differ from the model's defaults are kept, so a maze with default options stays the default
task section (and keeps its config hash). :meth:`TaskPicker.generate` writes the task's dataset with
:func:`hyperpod_rl.tasks.write_dataset`.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import ipywidgets as w

from hyperpod_rl.tasks import get_task, task_names, write_dataset
from hyperpod_rl.widgets._form import ModelForm

__all__ = ["TaskPicker"]


def _changed(options: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    return {
        k: v
        for k, v in options.items()
        if json.dumps(v, sort_keys=True, default=str) != json.dumps(defaults.get(k), sort_keys=True, default=str)
    }


class TaskPicker(w.VBox):
    """A task dropdown (every registered task) above the picked task's options form.

    Args:
        value: ``RunConfig.task`` as a dict (``{"name", "options"}``) or a ``TaskConfig``;
            default: the maze with its defaults.

    Attributes:
        task: the task dropdown.
        options_form: the options form of the picked task.
        info: one line about the picked task (turns, reward spec, metrics).
    """

    def __init__(self, value: Any = None) -> None:
        super().__init__()
        data = value.model_dump(mode="json") if hasattr(value, "model_dump") else dict(value or {})
        name = str(data.get("name") or "maze")
        names = task_names()
        self.task = w.Dropdown(options=names if name in names else [*names, name], value=name, description="task")
        self.info = w.HTML("")
        self.options_form = self._form(name, data.get("options") or {})
        self.task.observe(self._picked, names="value")
        self.children = (self.task, self.info, self.options_form)

    def _form(self, name: str, options: dict[str, Any]) -> ModelForm:
        task = get_task(name)
        defaults = task.options_model().model_dump(mode="json")
        self.info.value = (
            f"<small>{task.title} · {'multi' if task.multi_turn else 'single'}-turn · reward spec {task.reward_version}"
            f" · primary metric <code>{task.primary_metric}</code></small>"
        )
        return ModelForm(task.options_model, {**defaults, **options})

    def _picked(self, change: dict[str, Any]) -> None:
        self.options_form = self._form(change["new"], {})
        self.children = (self.task, self.info, self.options_form)

    @property
    def name(self) -> str:
        """The picked task's name."""
        return str(self.task.value)

    def options(self) -> dict[str, Any]:
        """Every option as the form shows it (no validation here)."""
        return self.options_form.to_dict()

    def to_dict(self) -> dict[str, Any]:
        """``RunConfig.task`` as a dict: the task name and the options that differ from the defaults."""
        defaults = get_task(self.name).options_model().model_dump(mode="json")
        return {"name": self.name, "options": _changed(self.options(), defaults)}

    def generate(self, storage: str | Path) -> dict[str, Path]:
        """Validate the options and write the task's dataset under ``<storage>/datasets/<hash>/``.

        Returns:
            ``{split: parquet path}`` (:func:`hyperpod_rl.tasks.write_dataset`).

        Raises:
            TaskError (or the task's own error): invalid options, listing every bad field.
        """
        task = get_task(self.name)
        options = task.options_model.build(self.options())
        key = hashlib.sha256(
            json.dumps({"task": task.name, "options": options.model_dump(mode="json")}, sort_keys=True).encode()
        ).hexdigest()[:12]
        return write_dataset(task, options, Path(storage) / "datasets" / key)
