"""The reward audit table, run as tests, and the `hyperpod-rl maze audit` command."""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hyperpod_rl.errors import TaskError
from hyperpod_rl.tasks.maze import Maze, score_completion
from hyperpod_rl.tasks.maze.audit import AUDIT_CASES, AUDIT_MAZES, load_reward_fn, run_audit

ROOT = Path(__file__).resolve().parents[3]


def _cli_app():
    """Load hyperpod_rl/cli/maze.py by path, so these tests do not depend on the rest of the CLI package."""
    spec = importlib.util.spec_from_file_location("_maze_cli_under_test", ROOT / "hyperpod_rl" / "cli" / "maze.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.app


def test_table_is_large_and_unique() -> None:
    assert len(AUDIT_CASES) >= 40
    assert len({c.case_id for c in AUDIT_CASES}) == len(AUDIT_CASES)
    assert {c.mode for c in AUDIT_CASES} == {"step", "plan"}


@pytest.mark.parametrize("case", AUDIT_CASES, ids=[c.case_id for c in AUDIT_CASES])
def test_builtin_reward_matches_table(case) -> None:
    maze = AUDIT_MAZES[case.maze]
    got = score_completion(case.completion, maze, mode=case.mode, agent=case.agent)
    assert got == pytest.approx(case.expected, abs=1e-9)


def test_run_audit_passes_for_builtin_reward() -> None:
    report = run_audit()
    assert report.passed and report.total == len(AUDIT_CASES)


def _lenient(completion: str, maze: Maze, *, mode: str, agent: tuple[int, int]) -> float:
    """A plausible but wrong reward: accepts any text containing a direction word."""
    for word in ("up", "down", "left", "right"):
        if word in completion.lower():
            return score_completion(f"<answer>{word}</answer>", maze, mode="step", agent=agent)
    return 0.0


def _raises(completion: str, maze: Maze, *, mode: str, agent: tuple[int, int]) -> float:
    raise RuntimeError("boom")


def test_run_audit_reports_every_disagreement() -> None:
    report = run_audit(_lenient)
    bad = {d.case.case_id for d in report.disagreements}
    assert {"homoglyph-cyrillic", "image-pad", "bare-word", "only-in-think", "plan-optimal"} <= bad
    assert "ok" not in bad
    errors = run_audit(_raises)
    assert len(errors.disagreements) == len(AUDIT_CASES)
    assert errors.disagreements[0].error == "RuntimeError: boom" and errors.disagreements[0].got is None


def test_load_reward_fn_errors() -> None:
    assert load_reward_fn("hyperpod_rl.tasks.maze.reward:score_completion") is score_completion
    with pytest.raises(TaskError, match="must look like 'package.module:function'"):
        load_reward_fn("no_colon")
    with pytest.raises(TaskError, match="cannot be imported"):
        load_reward_fn("not_a_module_xyz:fn")
    with pytest.raises(TaskError, match="has no callable 'nope'"):
        load_reward_fn("hyperpod_rl.tasks.maze.reward:nope")


def test_cli_audit_builtin_and_user_function(monkeypatch: pytest.MonkeyPatch) -> None:
    app = _cli_app()
    runner = CliRunner()
    ok = runner.invoke(app, ["audit"])
    assert ok.exit_code == 0, ok.output
    assert f"{len(AUDIT_CASES)}/{len(AUDIT_CASES)} cases agree" in ok.output
    module = types.ModuleType("user_rewards_for_audit")
    module.lenient = _lenient
    monkeypatch.setitem(sys.modules, "user_rewards_for_audit", module)
    bad = runner.invoke(app, ["audit", "--reward-fn", "user_rewards_for_audit:lenient"], terminal_width=200)
    assert bad.exit_code == 1
    assert "homoglyph-cyrillic" in bad.output and "disagree" in bad.output
    missing = runner.invoke(app, ["audit", "--reward-fn", "nope"])
    assert missing.exit_code == 2 and "package.module:function" in missing.output


def test_cli_build_and_show(tmp_path: Path) -> None:
    app = _cli_app()
    runner = CliRunner()
    res = runner.invoke(app, ["build", "--out", str(tmp_path), "--train", "8", "--heldout", "4", "--size", "4x4"])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "train.parquet").is_file() and (tmp_path / "heldout.parquet").is_file()
    assert (tmp_path / "spec.json").is_file()
    bad = runner.invoke(app, ["build", "--out", str(tmp_path), "--size", "1x4"])
    assert bad.exit_code == 2 and "DatasetSpec.sizes" in bad.output
    shown = runner.invoke(app, ["show", "--rows", "3", "--cols", "4", "--png", str(tmp_path / "m.png")])
    assert shown.exit_code == 0 and "layout hash" in shown.output and (tmp_path / "m.png").is_file()


def test_the_maze_audit_uses_the_shared_runner_and_report() -> None:
    """One audit runner and report for every task (hyperpod_rl.tasks.audit), none of the maze's own."""
    import hyperpod_rl.tasks.audit as shared
    import hyperpod_rl.tasks.maze.audit as maze_audit

    assert maze_audit.AuditReport is shared.AuditReport and maze_audit.Disagreement is shared.Disagreement
    report = run_audit(lambda *a, **k: 0.0)
    assert isinstance(report, shared.AuditReport) and report.task == "maze" and not report.passed
