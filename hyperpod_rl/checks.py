"""One result type for every readiness check: ``ok`` / ``warn`` / ``fail`` / ``skip`` with the fix.

Access checks (:mod:`hyperpod_rl.aws.access`), version guardrails
(:mod:`hyperpod_rl.cluster.versions`) and ``hyperpod-rl doctor`` (:mod:`hyperpod_rl.readiness`) all
return :class:`Check` values, so the CLI, the HTML repr and ``--json`` print them one way.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, model_validator

__all__ = ["Check", "CheckStatus", "worst"]

CheckStatus = Literal["ok", "warn", "fail", "skip"]
_RANK: dict[str, int] = {"skip": 0, "ok": 1, "warn": 2, "fail": 3}


class Check(BaseModel):
    """The outcome of one check: what was checked, what was found and what to do about it."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    name: str
    """Short name of the check, e.g. ``"EKS access entry"``."""
    status: CheckStatus
    """``ok``; ``warn`` (works, but something will bite); ``fail`` (will not work); ``skip`` (not applicable here)."""
    detail: str = ""
    """What was found, in one line."""
    fix: str = ""
    """What to do, in one line (empty when ``ok``; never empty for ``warn`` and ``fail``)."""

    @model_validator(mode="after")
    def _fix_for_problems(self) -> Check:
        if self.status in ("warn", "fail") and not self.fix.strip():
            raise ValueError(f"check {self.name!r} is {self.status} without a fix: every warn/fail says what to do")
        return self

    def line(self) -> str:
        """``"[warn] name: detail -> fix"``, one line."""
        fix = f" -> {self.fix}" if self.fix else ""
        return f"[{self.status}] {self.name}: {self.detail}{fix}"


def worst(checks: list[Check]) -> CheckStatus:
    """The most severe status in ``checks`` (``skip`` when empty)."""
    return max((c.status for c in checks), key=lambda s: _RANK[s], default="skip")
