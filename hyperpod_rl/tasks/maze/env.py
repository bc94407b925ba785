"""The maze as a skyrl-gym ``BaseTextEnv``: sequences turns, delegates scoring to :mod:`.reward`.

Build envs with :func:`hyperpod_rl.tasks.maze.registry.make_env` (it registers the string entry point
first, as SkyRL's generator expects). This module imports skyrl-gym; nothing else in the task does
at import time.

Settings come from the dataset row (``extras``) first, then ``env_config``, then defaults:

* ``maze`` (required, extras): :meth:`Maze.to_json` text or the equivalent dict.
* ``mode``: ``"step"`` (one move per turn, a new image after each) or ``"plan"`` (the whole
  sequence in one answer, one turn).
* ``max_turns``: turn limit (>= 1) in step mode; plan mode always uses 1.
  Default ``2 * shortest_path_length + 4``.
* ``render_style``: :class:`RenderStyle` fields as a dict or JSON text.
* ``observation``: ``"image"`` (default), ``"text"`` (the text-grid twin) or ``"both"``.

Observation parts follow SkyRL's VLM format (see :mod:`hyperpod_rl.tasks.maze.messages`):
``{"type": "image_url", "image_url": {"url": "data:image/png;base64,..."}}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Final, cast

from skyrl_gym.envs.base_text_env import BaseTextEnvStepOutput, ConversationType

from hyperpod_rl.errors import MazeError
from hyperpod_rl.tasks.env import MultiTurnTaskEnv
from hyperpod_rl.tasks.maze.grid import Maze, default_max_turns
from hyperpod_rl.tasks.maze.messages import (
    Mode,
    Observation,
    PromptStyle,
    build_prompt,
    feedback_text,
    observation_message,
)
from hyperpod_rl.tasks.maze.render import RenderStyle
from hyperpod_rl.tasks.maze.reward import REWARD_VERSION, aggregate_metrics, score_plan, score_step

__all__ = ["MazeEnv"]
_MODES: Final[tuple[str, ...]] = ("step", "plan")


class MazeEnv(MultiTurnTaskEnv):
    """One maze episode.

    Args:
        env_config: SkyRL's per-env config (a mapping or OmegaConf node), may hold ``mode``,
            ``max_turns``, ``observation``, ``render_style`` defaults.
        extras: The dataset row's extra columns; must hold ``maze``.

    Raises:
        MazeError: naming the field when ``maze`` is missing or invalid, ``mode`` or
            ``observation`` is unknown, ``max_turns`` < 1, or ``render_style`` is invalid.
    """

    reward_version: ClassVar[str] = REWARD_VERSION
    error: ClassVar[type[MazeError]] = MazeError
    observation: Observation
    prompt_style: PromptStyle

    def __init__(self, env_config: Any = None, extras: Mapping[str, Any] | None = None) -> None:
        super().__init__(env_config, extras)
        self.maze: Maze = self.required("maze", Maze.from_json, "Maze.to_json()")
        self.mode = cast(Mode, self.settings.choice("mode", "step", _MODES))
        max_turns = self.settings.count("max_turns", default_max_turns(self.maze), why="zero turns leaves no move to make")
        self.max_turns = 1 if self.mode == "plan" else max_turns
        self.style = self.settings.model("render_style", RenderStyle)
        self.agent = self.maze.start
        self._moves = 0
        self._blocked = 0
        self._overshoot = 0

    # ----------------------------------------------------------------- episode
    def fresh_prompt(self, **view: Any) -> ConversationType:
        """:func:`~hyperpod_rl.tasks.maze.messages.build_prompt` of the row's maze in this env's mode, turn limit and style."""
        return build_prompt(self.maze, mode=self.mode, max_turns=self.max_turns, style=self.style, **view)

    def episode_info(self) -> dict[str, Any]:
        """``layout_hash`` of the maze."""
        return {"layout_hash": self.maze.layout_hash()}

    def step(self, action: str) -> BaseTextEnvStepOutput:
        """Play one turn.

        Returns:
            ``observations`` (one user message with the new image, empty when done),
            ``reward`` (see :mod:`hyperpod_rl.tasks.maze.reward`), ``done`` and ``metadata`` with
            ``move``, ``blocked``, ``invalid``, ``violation``, ``optimal``, ``distance_before``,
            ``distance_after``, ``solved``, ``agent``, ``turn`` and ``reward_version``.
        """
        self.turns += 1
        if self.mode == "plan":
            return self._step_plan(action)
        out = score_step(self.maze, self.agent, action)
        self.agent = out.cell_after
        self._blocked += out.blocked
        self._moves += not out.invalid
        done = self.end_turn(solved=out.solved, optimal=out.optimal, invalid=out.invalid)
        observations = []
        if not done:
            text = feedback_text(out.move, blocked=out.blocked, violation=out.violation, prompt_style=self.prompt_style)
            observations = [observation_message(self.maze, self.agent, text, style=self.style, observation=self.observation)]
        metadata = {
            "move": out.move,
            "blocked": out.blocked,
            "invalid": out.invalid,
            "violation": out.violation,
            "optimal": out.optimal,
            "distance_before": out.distance_before,
            "distance_after": out.distance_after,
            "solved": out.solved,
            "agent": list(self.agent),
        }
        return self.step_output(out.reward, done=done, metadata=metadata, observations=observations)

    def _step_plan(self, action: str) -> BaseTextEnvStepOutput:
        plan = score_plan(self.maze, action, cell=self.agent)
        moves = [m for m in plan.moves if not m.invalid]
        self._invalid += plan.violation is not None
        self._blocked += sum(m.blocked for m in moves)
        self._optimal += sum(m.optimal for m in moves)
        self._moves += len(moves)
        self._overshoot += plan.overshoot
        if plan.moves:
            self.agent = plan.moves[-1].cell_after
        self._solved = plan.solved
        first = plan.moves[0] if plan.moves else None
        metadata = {
            "move": None,
            "moves": [m.move for m in moves],
            "blocked": any(m.blocked for m in moves),
            "invalid": plan.violation is not None,
            "violation": plan.violation,
            "optimal": bool(moves) and all(m.optimal for m in moves),
            "distance_before": first.distance_before if first else self.maze.distance_to_goal(self.agent),
            "distance_after": self.maze.distance_to_goal(self.agent),
            "solved": plan.solved,
            "overshoot": plan.overshoot,
            "agent": list(self.agent),
        }
        return self.step_output(plan.reward, done=True, metadata=metadata)

    # ----------------------------------------------------------------- metrics
    def get_metrics(self) -> dict[str, Any]:
        """Episode metrics.

        Keys: ``solved`` (0/1), ``turns``, ``optimal_move_rate`` (optimal moves / moves made,
        or / turns in step mode), ``invalid_move_rate`` (violating turns / turns),
        ``blocked_move_rate`` (blocked / moves made), and, for solved episodes only,
        ``steps_over_optimal`` (turns used, or plan length incl. overshoot, minus the shortest path).
        """
        metrics: dict[str, Any] = self.episode_metrics("move")
        if self.mode == "plan":
            metrics["optimal_move_rate"] = self._optimal / max(self._moves, 1)
        metrics["blocked_move_rate"] = self._blocked / max(self._moves, 1)
        if self._solved:
            used = self.turns if self.mode == "step" else self._moves + self._overshoot
            metrics["steps_over_optimal"] = float(used - self.maze.shortest_path_length)
        return metrics

    @staticmethod
    def aggregate_metrics(metrics: list[dict[str, Any]]) -> dict[str, Any]:
        """Average episode metrics (SkyRL's env hook): :func:`hyperpod_rl.tasks.maze.reward.aggregate_metrics`."""
        return aggregate_metrics(metrics)
