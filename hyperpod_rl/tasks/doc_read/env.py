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
from typing import Any, Final, cast

from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput, ConversationType

from hyperpod_rl.errors import TaskError
from hyperpod_rl.tasks.dataset import clean_messages
from hyperpod_rl.tasks.doc_read.dataset import sample_from_row
from hyperpod_rl.tasks.doc_read.messages import Observation, PromptStyle, build_prompt
from hyperpod_rl.tasks.doc_read.reward import REWARD_VERSION, aggregate_metrics, score

__all__ = ["DocReadEnv"]
_OBSERVATIONS: Final[tuple[str, ...]] = ("image", "text", "both")


def _setting(name: str, extras: Mapping[str, Any], env_config: Any, default: Any) -> Any:
    value = extras.get(name)
    if value is None and env_config is not None:
        value = env_config.get(name) if hasattr(env_config, "get") else getattr(env_config, name, None)
    return default if value is None else value


class DocReadEnv(BaseTextEnv):
    """One question about one page; the episode ends after the first answer.

    Args:
        env_config: SkyRL's per-env config (mapping or OmegaConf node).
        extras: The dataset row; must hold ``document`` and ``question``.

    Raises:
        TaskError: naming the field when the row is missing or invalid, or a setting is unknown.
    """

    def __init__(self, env_config: Any = None, extras: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        extras = {} if extras is None else extras
        self.document, self.question, self.style = sample_from_row(extras)
        observation = str(_setting("observation", extras, env_config, "image"))
        if observation not in _OBSERVATIONS:
            raise TaskError(f"observation={observation!r} is not supported; use one of {_OBSERVATIONS}")
        self.observation = cast(Observation, observation)
        prompt_style = str(_setting("prompt_style", extras, env_config, "full"))
        if prompt_style not in ("full", "terse"):
            raise TaskError(f"prompt_style={prompt_style!r} is not supported; use 'full' or 'terse'")
        self.prompt_style = cast(PromptStyle, prompt_style)
        max_tokens = _setting("max_image_tokens", extras, env_config, 512)
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 4:
            raise TaskError(f"max_image_tokens={max_tokens!r} must be an int >= 4")
        self.max_image_tokens = int(max_tokens)
        self.max_turns = 1
        self._metrics: dict[str, Any] = {}

    def init(self, prompt: ConversationType | None) -> tuple[ConversationType, dict[str, Any]]:
        """The first prompt (the row's, cleaned, or a fresh render) and ``{"reward_version", "doc_hash"}``."""
        if prompt:
            conversation = clean_messages(prompt)
        else:
            conversation = build_prompt(
                self.document,
                self.question,
                style=self.style,
                max_image_tokens=self.max_image_tokens,
                observation=self.observation,
                prompt_style=self.prompt_style,
            )
        return conversation, {"reward_version": REWARD_VERSION, "doc_hash": self.document.content_hash()}

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
            "turn": self.turns,
            "reward_version": REWARD_VERSION,
        }
        return BaseTextEnvStepOutput(observations=[], reward=out.reward, done=True, metadata=metadata)

    def get_metrics(self) -> dict[str, Any]:
        """Episode metrics: ``correct``, ``invalid``, ``unparseable`` (0/1) and ``question_kind``."""
        return dict(self._metrics) or {"correct": 0.0, "invalid": 0.0, "unparseable": 0.0, "question_kind": self.question.kind}

    @staticmethod
    def aggregate_metrics(metrics: list[dict[str, Any]]) -> dict[str, Any]:
        """Average episode metrics (SkyRL's env hook): :func:`hyperpod_rl.tasks.doc_read.reward.aggregate_metrics`."""
        return aggregate_metrics(metrics)
