"""Validation errors say once what is wrong and what to write instead, in plain words.

``hyperpod_rl.base.format_validation_error`` builds every model's message: no header twice (a
nested model's error is folded under its path), none of pydantic's wording ("Input should
be ..."), and the fix from the field's type, description and example or default.
"""

from __future__ import annotations

from typing import Any

import pytest

from hyperpod_rl.cluster.spec import ClusterSpec
from hyperpod_rl.config.run import RunConfig
from hyperpod_rl.errors import HyperpodRLError
from hyperpod_rl.plan.inputs import PlanInput
from hyperpod_rl.tasks import get_task

PYDANTIC_WORDING = ("Input should", "Extra inputs", "validation error", "For further information", "errors.pydantic.dev")


def _options(task: str) -> Any:
    """A task's options builder, looked up when the test runs (a plug-in that is not installed
    fails its own cases, not the collection of this module)."""

    def build(data: dict[str, Any]) -> Any:
        return get_task(task).options_model.build(data)

    build.__name__ = f"{task}_options"
    return build


def _message(build: Any, data: dict[str, Any]) -> str:
    with pytest.raises(HyperpodRLError) as info:
        build(data)
    text = str(info.value)
    for phrase in PYDANTIC_WORDING:
        assert phrase not in text, text
    head = text.splitlines()[0]
    assert head.startswith("invalid ") and text.count(head) == 1, text  # the header once
    return text


@pytest.mark.parametrize(
    ("build", "data", "expected"),
    [
        (
            PlanInput.build,
            {"image_px": "big"},
            "image_px: give two integers ((height, width) of each image, pixels), e.g. [448, 448] (got 'big')",
        ),
        (
            PlanInput.build,
            {"image_px": [448, "wide"]},
            "image_px: item 1 is not an integer; give two integers, e.g. [448, 448] (got 'wide')",
        ),
        (PlanInput.build, {"image_px": [1, 2, 3]}, "image_px: has 3 item(s); give two integers"),
        (
            _options("doc_read"),
            {"items": "many"},
            "items: give two integers (Table rows per train and held-out page: inclusive (min, max)), e.g. [2, 6]",
        ),
        (_options("doc_read"), {"counts": {"train": "lots"}}, "counts.train: give an integer (got 'lots')"),
        (_options("doc_read"), {"observation": "smell"}, "observation: use 'image', 'text' or 'both' (got 'smell')"),
        (_options("shapes"), {"fill": 2}, "fill: must be <= 1.0 (got 2)"),
        (
            _options("shapes"),
            {"grid_sizes": "3"},
            "grid_sizes: give a list of integers (In-distribution grid sides, in cells (2..12)), e.g. [3, 4]",
        ),
        (_options("shapes"), {"colour": "red"}, "colour: not a known field: remove it or check its spelling"),
        (_options("maze"), {"render_style": {"cell_px": 4}}, "render_style.cell_px: must be >= 8 (got 4)"),
        (_options("ui_nav"), {"seed": "a"}, "seed: give an integer (Master seed), e.g. 0 (got 'a')"),
    ],
)
def test_field_messages_say_what_to_write(build: Any, data: dict[str, Any], expected: str) -> None:
    text = _message(build, data)
    assert expected in text, text


def test_run_config_names_the_nested_path() -> None:
    text = _message(RunConfig.build, {"run_id": "abc", "trainer": {"steps": "many"}})
    assert "trainer.steps: give an integer (GRPO steps (SkyRL trainer.max_training_steps)), e.g. 120 (got 'many')" in text
    assert "data: required" in text


def test_cluster_spec_hint_is_one_clause() -> None:
    with pytest.raises(HyperpodRLError) as info:
        ClusterSpec.from_preset("seed", name="x", namespace=5)
    text = str(info.value)
    assert 'namespace: give text (Kubernetes namespace), e.g. "default" (got 5)' in text, text
    assert "\n" not in text.split("namespace:")[1].split("(got")[0]  # the hint stays on one line


def test_a_nested_model_error_is_folded_not_repeated() -> None:
    """A nested model that raises its own project error (RaisesOnInit) contributes its lines
    under the parent's path, without its own ``invalid <Model>:`` header."""
    from hyperpod_rl.tasks.maze import DatasetSpec, RenderStyle

    with pytest.raises(HyperpodRLError) as info:
        DatasetSpec(render_style=RenderStyle.model_construct(cell_px=4), seed=1)  # validated again by the parent
    text = str(info.value)
    assert text.count("invalid ") == 1, text


def test_cli_lists_known_presets_as_words_not_a_python_list() -> None:
    """Reported: ``hyperpod-rl cluster render --preset nosuch`` printed ``choose one of ['seed', 'single-gpu']``."""
    from typer.testing import CliRunner

    from hyperpod_rl.cli import app

    result = CliRunner().invoke(app, ["cluster", "render", "--preset", "nosuch"], env={"COLUMNS": "200"})
    assert result.exit_code == 2, result.output
    assert result.output.strip() == "error: unknown cluster preset 'nosuch'; known presets: seed, single-gpu"


def test_listed_writes_names_as_a_person_does() -> None:
    from hyperpod_rl.base import listed

    assert listed(["seed", "single-gpu"]) == "seed, single-gpu"
    assert listed((8, 16)) == "8, 16"
    assert listed([]) == "none"


def _list_reprs_in_messages() -> list[str]:
    """``{sorted(...)}``, ``{list(...)}``, ``{tuple(...)}`` or ``{set(...)}`` put straight into an
    f-string of a ``raise`` (or a ``problems``/``return`` message): a Python list repr a user sees."""
    import ast
    from pathlib import Path

    import hyperpod_rl

    found = []
    for path in sorted(Path(hyperpod_rl.__file__).parent.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Raise) or node.exc is None:
                continue
            for part in ast.walk(node.exc):
                if (
                    isinstance(part, ast.FormattedValue)
                    and isinstance(part.value, ast.Call)
                    and isinstance(part.value.func, ast.Name)
                    and part.value.func.id in ("sorted", "list", "set")
                ):
                    found.append(f"{path.relative_to(Path(hyperpod_rl.__file__).parents[1])}:{part.lineno}")
    return found


def test_no_error_message_shows_a_python_list() -> None:
    """The kind of the preset report, everywhere: an error names its choices with ``listed``."""
    assert _list_reprs_in_messages() == []
