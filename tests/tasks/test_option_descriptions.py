"""Every option of every built-in task (and the example plug-in) has a description.

``hyperpod-rl tasks show`` and the notebook task form show these texts; an empty one leaves the
user guessing (attribute docstrings become descriptions through ``hyperpod_rl.base.Model``).
"""

from __future__ import annotations

from typing import Any, get_args

import pytest
from pydantic import BaseModel
from typer.testing import CliRunner

from hyperpod_rl.cli import app
from hyperpod_rl.tasks import get_task

TASKS = ("maze", "ui_nav", "doc_read", "shapes")


def _models(model: type[BaseModel], seen: set[type[BaseModel]]) -> list[type[BaseModel]]:
    """The model and every model nested in its fields (their fields are options too)."""
    if model in seen:
        return []
    seen.add(model)
    out = [model]
    for info in model.model_fields.values():
        for t in (info.annotation, *get_args(info.annotation)):
            if isinstance(t, type) and issubclass(t, BaseModel):
                out += _models(t, seen)
    return out


@pytest.mark.parametrize("name", TASKS)
def test_every_option_field_has_a_description(name: str) -> None:
    missing: list[str] = []
    for model in _models(get_task(name).options_model, set()):
        missing += [f"{model.__name__}.{f}" for f, info in model.model_fields.items() if not (info.description or "").strip()]
    assert missing == [], f"{name}: options without a description: {missing}"


def test_tasks_show_prints_each_description() -> None:
    result = CliRunner().invoke(app, ["tasks", "show", "doc_read"], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    options: Any = get_task("doc_read").options_model
    for field in ("qtypes", "items", "observation"):
        first_words = " ".join(options.model_fields[field].description.split()[:3])
        assert first_words in result.output, f"{field}: {first_words!r} not shown"
