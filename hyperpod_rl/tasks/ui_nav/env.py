"""Interface navigation as a multi-turn skyrl-gym ``BaseTextEnv``: applies one action per turn, renders the next screen.

Build envs with :func:`hyperpod_rl.tasks.ui_nav.registry.make_env`. This module imports skyrl-gym;
nothing else in the task does at import time.

Settings come from the dataset row (``extras``) first, then ``env_config``, then defaults:

* ``app`` (required, extras): :meth:`App.to_json` text or the equivalent dict.
* ``max_turns``: turn limit (>= 1). Default ``2 * shortest_path_length + 4``.
* ``render_style``: :class:`RenderStyle` fields as a dict or JSON text.
* ``observation``: ``"image"`` (default), ``"text"`` (the text twin) or ``"both"``.
* ``prompt_style``: ``"full"`` (default) or ``"terse"``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from skyrl_gym.envs.base_text_env import BaseTextEnvStepOutput, ConversationType

from hyperpod_rl.tasks.env import MultiTurnTaskEnv, parse_model
from hyperpod_rl.tasks.ui_nav.app import App, default_max_turns, initial_state
from hyperpod_rl.tasks.ui_nav.messages import Observation, PromptStyle, build_prompt, feedback_text, observation_message
from hyperpod_rl.tasks.ui_nav.render import RenderStyle
from hyperpod_rl.tasks.ui_nav.reward import REWARD_VERSION, aggregate_metrics, score_step

__all__ = ["UINavEnv", "parse_style"]


def parse_style(raw: Any) -> RenderStyle:
    """A :class:`RenderStyle` from None, JSON text or a dict.

    Raises:
        TaskError: the style is invalid (names the field).
    """
    return parse_model(raw, RenderStyle, name="render_style")


class UINavEnv(MultiTurnTaskEnv):
    """One interface-navigation episode.

    Args:
        env_config: SkyRL's per-env config (mapping or OmegaConf node): defaults for
            ``max_turns``, ``observation``, ``prompt_style``, ``render_style``.
        extras: The dataset row's extra columns; must hold ``app``.

    Raises:
        TaskError: naming the field when ``app`` is missing or invalid, ``observation`` or
            ``prompt_style`` is unknown, ``max_turns`` < 1, or ``render_style`` is invalid.
    """

    reward_version: ClassVar[str] = REWARD_VERSION
    observation: Observation
    prompt_style: PromptStyle

    def __init__(self, env_config: Any = None, extras: Mapping[str, Any] | None = None) -> None:
        super().__init__(env_config, extras)
        self.app: App = self.required("app", App.from_json, "App.to_json()")
        self.max_turns = self.settings.count("max_turns", default_max_turns(self.app))
        self.style = self.settings.model("render_style", RenderStyle)
        self.state = initial_state(self.app)
        self._d0 = self.app.shortest_path_length
        self._d = self._d0
        self._inapplicable = 0

    def fresh_prompt(self, **view: Any) -> ConversationType:
        """:func:`~hyperpod_rl.tasks.ui_nav.messages.build_prompt` of the row's app at its start, with this env's turn limit and style."""
        return build_prompt(self.app, self.state, max_turns=self.max_turns, style=self.style, **view)

    def episode_info(self) -> dict[str, Any]:
        """``content_hash`` of the app."""
        return {"content_hash": self.app.content_hash}

    def step(self, action: str) -> BaseTextEnvStepOutput:
        """Apply one action.

        Returns:
            ``observations`` (one user message with the new screen; empty when done), ``reward``,
            ``done`` (goal reached or turns used up) and ``metadata`` (``action``, ``label``,
            ``error``, ``violation``, ``optimal``, ``distance_before``, ``distance_after``,
            ``solved``, ``screen``, ``turn``, ``reward_version``).
        """
        self.turns += 1
        out = score_step(self.app, self.state, action, self.style)
        self.state = out.state_after
        self._d = out.distance_after
        self._inapplicable += out.error is not None and not out.invalid
        done = self.end_turn(solved=out.solved, optimal=out.optimal, invalid=out.invalid)
        observations = []
        if not done:
            text = feedback_text(
                error=out.error,
                violation=out.violation,
                label=out.label,
                action_text=out.action.describe() if out.action else "",
                prompt_style=self.prompt_style,
            )
            observations = [observation_message(self.app, self.state, text, style=self.style, observation=self.observation)]
        metadata = {
            "action": out.action.describe() if out.action else None,
            "label": out.label,
            "error": out.error,
            "violation": out.violation,
            "optimal": out.optimal,
            "distance_before": out.distance_before,
            "distance_after": out.distance_after,
            "solved": out.solved,
            "screen": self.state.screen,
        }
        return self.step_output(out.reward, done=done, metadata=metadata, observations=observations)

    def get_metrics(self) -> dict[str, Any]:
        """Episode metrics: ``solved`` (0/1), ``turns``, ``progress`` (share of the start distance covered),
        ``optimal_action_rate``, ``invalid_action_rate`` (format violations / turns),
        ``inapplicable_action_rate`` (well-formed but not applicable / turns) and, when solved,
        ``steps_over_optimal``."""
        metrics: dict[str, Any] = {
            **self.episode_metrics("action"),
            "progress": (self._d0 - self._d) / self._d0,
            "inapplicable_action_rate": self._inapplicable / max(self.turns, 1),
        }
        if self._solved:
            metrics["steps_over_optimal"] = float(self.turns - self._d0)
        return metrics

    @staticmethod
    def aggregate_metrics(metrics: list[dict[str, Any]]) -> dict[str, Any]:
        """Average episode metrics (SkyRL's env hook)."""
        return aggregate_metrics(metrics)
