"""Run ids are never wrapped: at an 80-column terminal (``COLUMNS=80``) every table that lists
runs keeps each run id on one line, whole, and no header or cell is broken inside a word.

New-user report: ``hyperpod-rl runs list`` at an 80-column terminal split run ids over several
lines, so they could not be copied into the commands that take them. The same column setting was
in ``job list`` (both with and without a cluster), ``runs search`` and ``runs compare``'s headers.
A second report: the other columns then folded inside words (headers "adapte r primar y metric",
"succe eded", and ``job list``'s submission ids over three lines). Now each table is fitted as
``kubectl get`` fits its columns (``hyperpod_rl.cli._common.fitted_table``): one line a row,
shorter cells (a date without its year, a metric without its interval, ``job list``'s submission
id as its job number) and then fewer columns where it is too wide, with a line under it saying
what was shortened or left out. Each command runs in a fresh interpreter with ``COLUMNS=80``, as
in a terminal of that width.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from hyperpod_rl.ledger import Ledger
from hyperpod_rl.runs import add_submission, record_final_status, run_paths, update_provenance
from tests.fakes import FakeHTTPServer, Response

REPO = Path(__file__).resolve().parents[2]

#: Run ids as the quickstart names them, and a longer one as a sweep might.
RUN_IDS = ("quickstart-20261207-141208", "quickstart-20261207-141208-sft", "grpo-sweep-lr-0005-rank-16-seed-2-of-3")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A data dir whose ledger and run directories hold :data:`RUN_IDS` (no cluster)."""
    home = tmp_path / "home"
    monkeypatch.setenv("HYPERPOD_RL_HOME", str(home))
    monkeypatch.delenv("HYPERPOD_RL_LEDGER", raising=False)
    monkeypatch.delenv("HYPERPOD_RL_STORAGE", raising=False)
    with Ledger() as led:
        for i, run_id in enumerate(RUN_IDS):
            paths = run_paths(run_id)
            add_submission(paths, f"hprl-{run_id}-1")
            config = {"run_id": run_id, "task": {"name": "maze"}, "grpo": {"lr": 0.0005 * (i + 1)}, "trainer": {"steps": 200}}
            update_provenance(paths.root, lambda _, rid=run_id, c=config: {"run_id": rid, "status": "succeeded", "config": c})
            led.record_run(run_id, status="succeeded", config=config, config_hash="ab3a3b1472f41d95", run_dir=paths.root)
            led.add_eval(run_id, "adapter", {"solve_rate": 0.42}, ci={"solve_rate": [0.355, 0.485]}, num_mazes=200)
            led.add_note(f"lr {config['grpo']['lr']} collapses the policy to one direction within forty steps of training", run_id=run_id)
    return home


def _cli(*args: str, home: Path, columns: int = 80) -> str:
    """``hyperpod-rl ARGS``'s standard output in a fresh interpreter at a terminal ``columns`` wide."""
    env = {**os.environ, "HYPERPOD_RL_HOME": str(home), "COLUMNS": str(columns)}
    for name in ("HYPERPOD_RL_ADDRESS", "HYPERPOD_RL_LEDGER", "HYPERPOD_RL_STORAGE", "LINES"):
        env.pop(name, None)
    proc = subprocess.run([sys.executable, "-m", "hyperpod_rl.cli", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def _assert_ids_whole(out: str, run_ids: tuple[str, ...] = RUN_IDS) -> None:
    assert all(len(line) <= 80 for line in out.splitlines()), out
    for run_id in run_ids:
        assert run_id in out, f"{run_id} is wrapped or cut:\n{out}"


@pytest.mark.parametrize(
    "args",
    [["runs", "list"], ["job", "list"], ["runs", "search", "collapses"], ["runs", "compare", *RUN_IDS[:2]]],
    ids=" ".join,
)
def test_run_ids_stay_whole_at_80_columns(args: list[str], home: Path) -> None:
    out = _cli(*args, home=home)
    _assert_ids_whole(out, RUN_IDS[:2] if args[1] == "compare" else RUN_IDS)


@pytest.fixture
def cluster(home: Path) -> Iterator[str]:
    """A dashboard whose jobs are the runs' (each one's job 1, SUCCEEDED), as ``job list`` asks it."""
    jobs = [
        {
            "type": "SUBMISSION",
            "submission_id": f"hprl-{run_id}-1",
            "status": "SUCCEEDED",
            "entrypoint": "x",
            "start_time": 1_796_000_000_000 + i,
            "metadata": {"hyperpod_rl_run_id": run_id},
        }
        for i, run_id in enumerate(RUN_IDS)
    ]
    with FakeHTTPServer() as server:
        server.route("GET", "/api/version", Response(200, {"version": "4", "ray_version": "2.56.0", "ray_commit": "x"}))
        server.route("GET", "/api/jobs/", Response(200, jobs))
        yield server.url


def _rows(out: str) -> list[str]:
    """The table's body lines (between its borders)."""
    return [line for line in out.splitlines() if line.startswith("│")]


def _assert_one_line_each(out: str, rows: int = len(RUN_IDS)) -> None:
    """One header line and one line a row: nothing wrapped, so nothing broken inside a word."""
    assert sum(line.startswith("┃") for line in out.splitlines()) == 1, out
    assert len(_rows(out)) == rows, out
    assert all(re.match(r"│ \S", line) for line in _rows(out)), out  # no continuation line
    assert "…" not in out, out  # nor a cell cut


@pytest.mark.parametrize("args", [["runs", "list"], ["job", "list"], ["runs", "compare", *RUN_IDS]], ids=" ".join)
def test_nothing_is_broken_inside_a_word_at_80_columns(args: list[str], home: Path) -> None:
    out = _cli(*args, home=home)
    _assert_ids_whole(out)
    _assert_one_line_each(out, rows=2 if args[1] == "compare" else len(RUN_IDS))
    header = next(line for line in out.splitlines() if line.startswith("┃"))
    if args == ["runs", "list"]:
        cells = [c.strip() for c in header.strip("┃").split("┃")]
        assert cells[0] == "run id" and "status" in cells and "adapter metric" in cells, header  # what matters most stays
        assert "solve_rate 0.420" in out and "adapter metric without its interval (runs show RUN has it)" in out, out
        assert "not shown at 80 columns: task, config hash, updated" in out, out
    elif args == ["job", "list"]:
        assert [c.strip() for c in header.strip("┃").split("┃")] == ["run id", "job", "status", "steps"], header
        assert "job N: submission id hprl-<run id>-N" in out and "200" in out, out
    else:  # compare: the runs numbered, each named whole under the table
        assert [c.strip() for c in header.strip("┃").split("┃")] == ["key", "1", "2", "3"], header
        for i, run_id in enumerate(RUN_IDS, 1):
            assert f"{i}: {run_id}" in out.splitlines(), out
        assert "eval adapter.solve_rate" in out and "grpo.lr" in out, out


def test_job_list_with_a_cluster_shows_the_job_number_not_a_folded_submission_id(home: Path, cluster: str) -> None:
    out = _cli("job", "list", "--address", cluster, home=home)
    _assert_ids_whole(out)
    _assert_one_line_each(out)
    header = next(line for line in out.splitlines() if line.startswith("┃"))
    assert [c.strip() for c in header.strip("┃").split("┃")] == ["run id", "job", "status", "started"], header
    assert "SUCCEEDED" in out and "hprl-" not in out.replace("hprl-<run id>-N", ""), out
    wide = _cli("job", "list", "--address", cluster, home=home, columns=200)
    for run_id in RUN_IDS:
        assert f"hprl-{run_id}-1" in wide, wide  # a wide terminal shows the whole submission id
    assert "job N" not in wide and "not shown" not in wide, wide


def test_a_wide_terminal_shows_every_column_in_full(home: Path) -> None:
    out = _cli("runs", "list", home=home, columns=200)
    header = next(line for line in out.splitlines() if line.startswith("┃"))
    assert [c.strip() for c in header.strip("┃").split("┃")] == [
        "run id",
        "task",
        "status",
        "config hash",
        "updated (UTC)",
        "adapter primary metric",
    ], header
    assert "solve_rate 0.420 [0.355, 0.485]" in out and "ab3a3b1472f41d95" in out and "not shown" not in out, out


def test_a_status_no_cluster_can_confirm_is_shortened_and_said_under_the_table(home: Path) -> None:
    run_id = "quickstart-20261207-150000"
    paths = run_paths(run_id)
    add_submission(paths, f"hprl-{run_id}-1")
    update_provenance(paths.root, lambda _: {"run_id": run_id, "status": "running", "config": {"run_id": run_id, "trainer": {"steps": 9}}})
    out = _cli("runs", "list", home=home)
    _assert_one_line_each(out, rows=len(RUN_IDS) + 1)
    line = next(line for line in _rows(out) if run_id in line)
    assert "│ unknown " in line and "unknown: the cluster is not reachable" in out, out
    record_final_status(paths, "stopped", submission_id=f"hprl-{run_id}-1", source="test")
    assert "unknown" not in _cli("runs", "list", home=home)


def test_free_text_wraps_between_words(home: Path) -> None:
    out = _cli("runs", "search", "collapses", home=home)
    _assert_ids_whole(out)
    words = set(" ".join(line.split("│")[3] for line in _rows(out)).split())
    assert {"[collapses]", "policy", "direction"} <= words, out


def test_runs_show_keeps_each_evaluation_on_one_line(home: Path) -> None:
    """Third report: at 80 columns, ``runs show``'s evaluation rows took three lines each (a
    figure and its interval folded). Its table is fitted now too: the intervals' bounds without
    their leading zero (said under the table), one line an evaluation; a wide terminal shows
    them whole."""
    run_id = RUN_IDS[0]
    metrics = ("solve_rate", "optimal_move_rate", "invalid_move_rate")
    with Ledger() as led:
        for label, value in (("base", 0.03), ("sft", 0.42), ("adapter", 0.485)):
            led.add_eval(run_id, label, dict.fromkeys(metrics, value), ci=dict.fromkeys(metrics, [0.355, 0.55]), num_mazes=200)
    out = _cli("runs", "show", run_id, home=home)
    _assert_one_line_each(out, rows=3)
    header = next(line for line in out.splitlines() if line.startswith("┃"))
    assert [c.strip() for c in header.strip("┃").split("┃")] == ["label", "mazes", "solve rate", "optimal move rate", "invalid move rate"]
    assert "0.485 [.355,.550]" in out and "[.355,.550]: the 95% interval 0.355 to 0.550" in out, out  # the table's own figures
    assert "not shown at 80 columns: steps over optimal" in out, out  # the maze's fourth metric
    wide = _cli("runs", "show", run_id, home=home, columns=200)
    assert "0.485 [0.355, 0.550]" in wide and "[.355,.485]" not in wide and "not shown" not in wide, wide


def test_tasks_list_keeps_each_task_on_one_line(home: Path) -> None:
    """Third report: at 80 columns ``tasks list`` wrapped a cell. Fitted as the other tables."""
    from hyperpod_rl.tasks import task_sources

    out = _cli("tasks", "list", home=home)
    _assert_one_line_each(out, rows=len(task_sources()))
    for name in task_sources():
        assert f"│ {name} " in out, out
    assert "│ Visual maze " in out and "title: up to its colon (hyperpod-rl tasks show TASK has it whole)" in out, out


def test_runs_show_says_its_interval_legend_and_seeds_in_words() -> None:
    """Fresh-user report: the legend under a narrow evaluation table quoted an interval that was
    in no row, and the code line printed the seeds as a Python dict."""
    from hyperpod_rl.cli.runs import _interval_legend, _seeds

    assert _interval_legend(["0.030", "0.420 [-.020,.485]"]) == "[-.020,.485]: the 95% interval -0.020 to 0.485"
    assert _interval_legend(["0.030", ""]) is None
    assert _seeds({"dataset": 0, "trainer": 7}) == "dataset 0, trainer 7"
