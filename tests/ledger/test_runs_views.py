"""``runs list`` and ``runs show`` follow the run's task and its primary metric (issue 32 item 3).

Field report: for a ``doc_read`` run both showed the maze's columns, empty, although the
evaluation held the task's accuracy. One run per registered task, each with an evaluation in
its own metrics; the views must show every one of them by the task's names.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hyperpod_rl.cli import runs as runs_cli
from hyperpod_rl.cli.runs import app
from hyperpod_rl.runs import run_paths, update_provenance
from hyperpod_rl.tasks import get_task, metric_spec, task_sources

runner = CliRunner()
TASKS = sorted(task_sources())


def test_the_three_tasks_are_registered() -> None:
    assert {"maze", "ui_nav", "doc_read"} <= set(TASKS)


def _task_run(task: str) -> tuple[str, dict[str, float]]:
    """A finished run of ``task`` whose adapter evaluation holds the task's reported metrics."""
    spec = metric_spec(get_task(task))
    figures = {m: round(0.1 + 0.07 * i, 3) for i, m in enumerate(spec.reported)}
    run_id = f"view-{task.replace('_', '-')}"
    config = {"run_id": run_id} if task == "maze" else {"run_id": run_id, "task": {"name": task, "options": {}}}  # maze: the default
    record = {
        "run_id": run_id,
        "status": "succeeded",
        "config": config,
        "task": task,
        "eval": {
            "adapter": {
                "metrics": figures,
                "ci": {spec.primary: [figures[spec.primary] - 0.05, figures[spec.primary] + 0.05]},
                "num_mazes": 12,
            }
        },
    }
    update_provenance(run_paths(run_id).root, lambda _: record)
    return run_id, figures


@pytest.fixture
def task_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("HYPERPOD_RL_LEDGER", str(tmp_path / "ledger.sqlite"))
    monkeypatch.setattr(runs_cli.console, "width", 300)
    made = {task: _task_run(task) for task in TASKS}
    yield made
    for run_id, _ in made.values():
        shutil.rmtree(run_paths(run_id).root, ignore_errors=True)


def test_runs_list_shows_each_runs_task_and_primary_metric(task_runs) -> None:
    out = runner.invoke(app, ["list", "--address", "http://127.0.0.1:9"])
    assert out.exit_code == 0, out.output
    for task, (run_id, figures) in task_runs.items():
        primary = metric_spec(get_task(task)).primary
        row = next(line for line in out.output.splitlines() if run_id in line)
        low, high = figures[primary] - 0.05, figures[primary] + 0.05
        assert f" {task} " in row and f"{primary} {figures[primary]:.3f} [{low:.3f}, {high:.3f}]" in row, row


def test_runs_show_has_the_tasks_own_columns(task_runs) -> None:
    for task, (run_id, figures) in task_runs.items():
        spec = metric_spec(get_task(task))
        out = runner.invoke(app, ["show", run_id, "--address", "http://127.0.0.1:9"])
        assert out.exit_code == 0, out.output
        assert f"task: {task} (primary metric {spec.primary})" in out.output
        header = next(line for line in out.output.splitlines() if "label" in line)
        for metric in spec.reported:
            assert metric.replace("_", " ") in header, (task, metric, header)
        row = next(line for line in out.output.splitlines() if "adapter" in line and "│" in line)
        for metric in spec.reported:
            assert f"{figures[metric]:.3f}" in row, (task, metric, row)  # no empty maze columns
        others = {"solve rate", "optimal move rate"} - {m.replace("_", " ") for m in spec.reported}
        assert not any(o in header for o in others), (task, header)
