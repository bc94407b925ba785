"""Document reading as a single-turn skyrl-gym ``BaseTextEnv``; scoring is :mod:`.reward`'s.

Build envs with :func:`hyperpod_rl.tasks.doc_read.registry.make_env`. This module imports
skyrl-gym; nothing else in the task does at import time.

The dataset row (``extras``) must hold ``document`` and ``question`` (JSON); ``page_style``,
``max_image_tokens``, ``observation`` and ``prompt_style`` come from the row, then ``env_config``,
then defaults. The first prompt is the row's own (cleaned of parquet ``None`` keys) or, without
one, a fresh render.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from skyrl_gym.envs.base_text_env import BaseTextEnvStepOutput, ConversationType

from hyperpod_rl.tasks.doc_read.dataset import sample_from_row
from hyperpod_rl.tasks.doc_read.messages import Observation, PromptStyle, build_prompt
from hyperpod_rl.tasks.doc_read.reward import REWARD_VERSION, aggregate_metrics, score
from hyperpod_rl.tasks.env import TaskEnv

__all__ = ["DocReadEnv"]


class DocReadEnv(TaskEnv):
    """One question about one page; the episode ends after the first answer.

    Args:
        env_config: SkyRL's per-env config (mapping or OmegaConf node).
        extras: The dataset row; must hold ``document`` and ``question``.

    Raises:
        TaskError: naming the field when the row is missing or invalid, or a setting is unknown.
    """

    reward_version: ClassVar[str] = REWARD_VERSION
    observation: Observation
    prompt_style: PromptStyle

    def __init__(self, env_config: Any = None, extras: Mapping[str, Any] | None = None) -> None:
        document, question, style = sample_from_row({} if extras is None else extras)
        super().__init__(env_config, extras)
        self.document, self.question, self.style = document, question, style
        self.max_image_tokens = self.settings.count("max_image_tokens", 512, minimum=4)
        self.max_turns = 1
        self._metrics: dict[str, Any] = {}

    def fresh_prompt(self, **view: Any) -> ConversationType:
        """:func:`~hyperpod_rl.tasks.doc_read.messages.build_prompt`: a fresh render of the row's page with its question."""
        return build_prompt(self.document, self.question, style=self.style, max_image_tokens=self.max_image_tokens, **view)

    def episode_info(self) -> dict[str, Any]:
        """``doc_hash`` of the page."""
        return {"doc_hash": self.document.content_hash()}

    def step(self, action: str) -> BaseTextEnvStepOutput:
        """Score the answer; always ends the episode.

        Returns:
            ``reward`` (:mod:`.reward`), ``done=True``, no observations, and ``metadata`` with
            ``correct``, ``invalid``, ``violation``, ``answer`` (normalised), ``expected``,
            ``error``, ``qtype``, ``question_kind`` and ``reward_version``.
        """
        self.turns += 1
        out = score(action, self.question)
        self._metrics = {
            "correct": float(out.correct),
            "invalid": float(out.violation is not None),
            "unparseable": float(out.violation is None and out.answer is None),
            "question_kind": self.question.kind,
        }
        metadata = {
            "correct": out.correct,
            "invalid": out.violation is not None,
            "violation": out.violation,
            "answer": out.answer,
            "expected": out.expected,
            "error": out.error,
            "qtype": self.question.qtype,
            "question_kind": self.question.kind,
        }
        return self.step_output(out.reward, done=True, metadata=metadata)

    def get_metrics(self) -> dict[str, Any]:
        """Episode metrics: ``correct``, ``invalid``, ``unparseable`` (0/1) and ``question_kind``."""
        return dict(self._metrics) or {"correct": 0.0, "invalid": 0.0, "unparseable": 0.0, "question_kind": self.question.kind}

    @staticmethod
    def aggregate_metrics(metrics: list[dict[str, Any]]) -> dict[str, Any]:
        """Average episode metrics (SkyRL's env hook): :func:`hyperpod_rl.tasks.doc_read.reward.aggregate_metrics`."""
        return aggregate_metrics(metrics)
