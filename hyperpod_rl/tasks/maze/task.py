"""The maze as a :class:`hyperpod_rl.tasks.Task` plug-in (entry point ``maze`` of ``hyperpod_rl.tasks``).

A thin adapter: every member delegates to the maze modules that already existed (generate, grid,
strata, render, messages, answer, reward, env, audit, dataset), so the maze behaves exactly as
before. Options are :class:`~hyperpod_rl.tasks.maze.dataset.DatasetSpec` (errors: :class:`MazeError`).
States (``state`` arguments) are ``{"agent": [row, col]}``; the mode comes from the row's ``mode``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, cast

from hyperpod_rl.errors import MazeError
from hyperpod_rl.tasks.maze.answer import parse_answer
from hyperpod_rl.tasks.maze.audit import AUDIT_CASES, AUDIT_MAZES
from hyperpod_rl.tasks.maze.dataset import DatasetSpec, build_dataset
from hyperpod_rl.tasks.maze.grid import DIRECTIONS, Cell, Maze, default_max_turns
from hyperpod_rl.tasks.maze.messages import Mode, build_prompt
from hyperpod_rl.tasks.maze.registry import ENTRY_POINT, ENV_CLASS
from hyperpod_rl.tasks.maze.render import RenderStyle, render_maze
from hyperpod_rl.tasks.maze.reward import REWARD_VERSION, aggregate_metrics, score_completion
from hyperpod_rl.tasks.protocol import AuditCase, Row, RowObject, TaskBase, parse_model

if TYPE_CHECKING:
    from PIL import Image

__all__ = ["TASK", "MazeTask"]


#: The :class:`Maze` of a dataset row (its ``maze`` column: JSON text or dict); call it with the row.
maze_of: Final[RowObject[Maze]] = RowObject("maze", Maze.from_json, "maze")


def _style(row: Mapping[str, Any]) -> RenderStyle:
    return parse_model(row.get("render_style"), RenderStyle, name="render_style", error=MazeError)


def _agent(maze: Maze, state: Mapping[str, Any] | None) -> Cell:
    if state is None or state.get("agent") is None:
        return maze.start
    r, c = state["agent"]
    return (int(r), int(c))


class MazeTask(TaskBase):
    """The visual maze: step mode (one move per turn, multi-turn) or plan mode (one answer)."""

    name = "maze"
    title = "Visual maze: reach the goal square, one move per turn (or a whole plan)"
    env_class = ENV_CLASS
    env_entry_point = ENTRY_POINT
    multi_turn = True
    reward_version = REWARD_VERSION
    options_model = DatasetSpec
    hash_column = "layout_hash"
    primary_metric = "solve_rate"
    answer_words = DIRECTIONS
    reported_metrics = {
        "solve_rate": "solved",
        "optimal_move_rate": "optimal_move_rate",
        "invalid_move_rate": "invalid_move_rate",
        "steps_over_optimal": "steps_over_optimal",
    }
    lower_is_better = ("invalid_move_rate", "steps_over_optimal")
    guard_metrics = ("optimal_move_rate", "invalid_move_rate")
    turn_columns = ("move", "agent", "violation")
    item_names = ("maze", "mazes")
    invalid_metric = "invalid_move_rate"

    def build_dataset(self, options: Any) -> dict[str, list[Row]]:
        """:func:`hyperpod_rl.tasks.maze.dataset.build_dataset` (``options``: a :class:`DatasetSpec` or its dict)."""
        return cast("dict[str, list[Row]]", build_dataset(self.options_of(options)))

    def render(self, row: Mapping[str, Any], state: Mapping[str, Any] | None = None) -> Image.Image:
        """:func:`hyperpod_rl.tasks.maze.render.render_maze` with the row's style and the agent at ``state``."""
        maze = maze_of(row)
        return render_maze(maze, _agent(maze, state), _style(row))

    def build_prompt(self, row: Mapping[str, Any], *, prompt_style: str | None = None, observation: str = "image") -> list[dict[str, Any]]:
        """:func:`hyperpod_rl.tasks.maze.messages.build_prompt` with the row's mode, turn limit and style."""
        maze = maze_of(row)
        mode = str(row.get("mode") or "step")
        max_turns = 1 if mode == "plan" else int(row.get("max_turns") or default_max_turns(maze))
        return build_prompt(
            maze,
            mode=cast(Mode, mode),
            max_turns=max_turns,
            style=_style(row),
            **self.prompt_view(row, prompt_style, observation),
        )

    def parse_answer(self, text: str) -> Any:
        """:func:`hyperpod_rl.tasks.maze.answer.parse_answer` (``.moves``, ``.violation``)."""
        return parse_answer(text)

    def score(self, row: Mapping[str, Any], completion: str, state: Mapping[str, Any] | None = None) -> float:
        """:func:`hyperpod_rl.tasks.maze.reward.score_completion` in the row's mode from the agent cell of ``state``."""
        maze = maze_of(row)
        mode = str((state or {}).get("mode") or row.get("mode") or "step")
        return score_completion(completion, maze, mode=mode, agent=_agent(maze, state))

    def aggregate_metrics(self, metrics: Sequence[Mapping[str, Any]]) -> dict[str, float]:
        """:func:`hyperpod_rl.tasks.maze.reward.aggregate_metrics` (``solve_rate``, ``optimal_move_rate``, ...)."""
        return aggregate_metrics(metrics)

    def audit_cases(self) -> Sequence[AuditCase]:
        """The maze audit table (:data:`hyperpod_rl.tasks.maze.audit.AUDIT_CASES`) in the generic form."""
        return _AUDIT

    def demonstration(self, row: Mapping[str, Any]) -> list[str] | None:
        """The shortest path as completions, one move per turn (:func:`hyperpod_rl.tasks.maze.demos.maze_demonstration`)."""
        from hyperpod_rl.tasks.maze.demos import maze_demonstration

        return maze_demonstration(maze_of(row), str(row.get("mode") or "step"))

    def text_twin(self, row: Mapping[str, Any], state: Mapping[str, Any] | None = None) -> str | None:
        """The text grid (``#`` wall, ``.`` open, ``A`` agent, ``G`` goal): :meth:`Maze.to_text`."""
        maze = maze_of(row)
        return maze.to_text(_agent(maze, state))


_AUDIT: Final[tuple[AuditCase, ...]] = tuple(
    AuditCase(
        case_id=c.case_id,
        row={"maze": AUDIT_MAZES[c.maze].to_json(), "mode": c.mode},
        completion=c.completion,
        expected=c.expected,
        state=None if c.agent is None else {"agent": list(c.agent), "mode": c.mode},
        note=c.note,
    )
    for c in AUDIT_CASES
)

#: The entry-point object (``hyperpod_rl.tasks.maze.task:TASK``).
TASK: Final[MazeTask] = MazeTask()
