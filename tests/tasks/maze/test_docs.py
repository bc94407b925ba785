"""docs/maze-task.md and the code agree on version, constants and violation codes."""

from __future__ import annotations

from pathlib import Path

import pytest

from hyperpod_rl.tasks.maze import AUDIT_CASES, REWARD_VERSION, VIOLATIONS, answer, reward

DOC = (Path(__file__).resolve().parents[3] / "docs" / "maze-task.md").read_text()


def test_version_is_stated() -> None:
    assert f"Reward version: {REWARD_VERSION}" in DOC
    assert f"## 4. Reward (version {REWARD_VERSION})" in DOC


@pytest.mark.parametrize(
    "name",
    [
        "SUCCESS_BONUS",
        "PROGRESS_PER_CELL",
        "STEP_COST",
        "BLOCKED_PENALTY",
        "FORMAT_PENALTY",
        "OVERSHOOT_PENALTY",
        "PLAN_REWARD_FLOOR",
    ],
)
def test_reward_constants_match(name: str) -> None:
    assert f"| `{name}` | {getattr(reward, name)} |" in DOC


def test_every_violation_code_is_documented() -> None:
    for code in VIOLATIONS:
        assert f"| `{code}` |" in DOC, code


def test_limits_and_audit_size_match() -> None:
    assert f"{answer.MAX_COMPLETION_CHARS:,} characters" in DOC
    assert f"{answer.MAX_ANSWER_CHARS:,} characters" in DOC
    assert f"`AUDIT_CASES` ({len(AUDIT_CASES)} cases)" in DOC
