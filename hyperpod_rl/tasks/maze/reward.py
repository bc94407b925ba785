"""The maze reward: pure, deterministic functions with a version number.

The written spec is ``docs/maze-task.md``; change :data:`REWARD_VERSION` with any change
here. Terms (per move, both modes):

* valid move:   ``PROGRESS_PER_CELL * (d_before - d_after) - STEP_COST``, plus
  ``SUCCESS_BONUS`` on the move that reaches the goal (:data:`SHAPING`, the progress shaping
  :class:`hyperpod_rl.tasks.reward.ProgressShaping`). ``d`` is the BFS distance to the goal.
* blocked move (into a wall): ``-BLOCKED_PENALTY``; the agent stays.
* format violation (see :mod:`hyperpod_rl.tasks.maze.answer`): ``-FORMAT_PENALTY``; the agent stays.
* plan mode only: each move after the goal was reached costs ``-OVERSHOOT_PENALTY`` (the
  agent stays on the goal); a plan's total is floored at ``PLAN_REWARD_FLOOR``.

Since progress telescopes and every move costs at least ``STEP_COST``, an episode's return
is at most ``SUCCESS_BONUS + (PROGRESS_PER_CELL - STEP_COST) * shortest_path_length``
(:func:`max_return`), reached exactly by following a shortest path.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from hyperpod_rl.errors import MazeError
from hyperpod_rl.tasks.maze.answer import parse_answer
from hyperpod_rl.tasks.maze.grid import Cell, Maze
from hyperpod_rl.tasks.metrics import multi_turn_means
from hyperpod_rl.tasks.reward import ProgressShaping, round_reward

__all__ = [
    "aggregate_metrics",
    "BLOCKED_PENALTY",
    "FORMAT_PENALTY",
    "OVERSHOOT_PENALTY",
    "PLAN_REWARD_FLOOR",
    "PROGRESS_PER_CELL",
    "REWARD_VERSION",
    "SHAPING",
    "STEP_COST",
    "SUCCESS_BONUS",
    "MoveOutcome",
    "PlanOutcome",
    "max_return",
    "score_completion",
    "score_move",
    "score_plan",
    "score_step",
    "step_reward_bounds",
]

#: Version of the reward spec; recorded in every run's provenance.
REWARD_VERSION: Final[str] = "1.0"
SUCCESS_BONUS: Final[float] = 1.0
PROGRESS_PER_CELL: Final[float] = 0.1
STEP_COST: Final[float] = 0.01
BLOCKED_PENALTY: Final[float] = 0.1
FORMAT_PENALTY: Final[float] = 0.2
OVERSHOOT_PENALTY: Final[float] = 0.1
PLAN_REWARD_FLOOR: Final[float] = -1.0
#: The reward of a valid move: progress-shaped by the first three values.
SHAPING: Final[ProgressShaping] = ProgressShaping(SUCCESS_BONUS, PROGRESS_PER_CELL, STEP_COST)


@dataclass(frozen=True, slots=True)
class MoveOutcome:
    """One scored turn (step mode) or one move of a plan.

    Attributes:
        reward: Reward of this move.
        move: The direction word, or None on a format violation.
        cell_before, cell_after: Agent cell ``(row, col)`` before and after.
        blocked: A wall blocked the move (agent stayed).
        invalid: Format violation (agent stayed); ``violation`` holds the code.
        optimal: The move is in ``maze.optimal_moves(cell_before)``.
        distance_before, distance_after: BFS distances to the goal, in moves.
        solved: The agent is on the goal after this move.
        violation: Violation code from :data:`hyperpod_rl.tasks.maze.answer.VIOLATIONS`, or None.
    """

    reward: float
    move: str | None
    cell_before: Cell
    cell_after: Cell
    blocked: bool
    invalid: bool
    optimal: bool
    distance_before: int
    distance_after: int
    solved: bool
    violation: str | None = None


def score_move(maze: Maze, cell: Cell, move: str) -> MoveOutcome:
    """Score one well-formed move from ``cell`` (pure).

    Raises:
        MazeError: on an unknown direction or a cell outside the grid.
    """
    d0 = maze.distance_to_goal(cell)
    new, blocked = maze.move(cell, move)
    if blocked:
        return MoveOutcome(-BLOCKED_PENALTY, move, cell, new, True, False, False, d0, d0, d0 == 0)
    d1 = maze.distance_to_goal(new)
    reward = SHAPING.step(d0, d1, solved=d1 == 0)
    return MoveOutcome(reward, move, cell, new, False, False, move in maze.optimal_moves(cell), d0, d1, d1 == 0)


def _violation(maze: Maze, cell: Cell, code: str) -> MoveOutcome:
    d0 = maze.distance_to_goal(cell)
    return MoveOutcome(-FORMAT_PENALTY, None, cell, cell, False, True, False, d0, d0, d0 == 0, code)


def score_step(maze: Maze, cell: Cell, completion: str) -> MoveOutcome:
    """Step mode: parse exactly one move from ``completion`` and score it from ``cell``."""
    parsed = parse_answer(completion, max_moves=1)
    if parsed.violation is not None:
        return _violation(maze, cell, parsed.violation)
    return score_move(maze, cell, parsed.moves[0])


@dataclass(frozen=True, slots=True)
class PlanOutcome:
    """A scored plan (the whole move sequence in one answer).

    Attributes:
        reward: Total reward, floored at :data:`PLAN_REWARD_FLOOR`.
        moves: Per-move outcomes in order (one invalid outcome on a format violation).
        solved: The plan reached the goal.
        overshoot: Moves listed after the goal was reached.
        violation: Format violation code, or None.
    """

    reward: float
    moves: tuple[MoveOutcome, ...]
    solved: bool
    overshoot: int
    violation: str | None


def score_plan(maze: Maze, completion: str, *, max_moves: int | None = None, cell: Cell | None = None) -> PlanOutcome:
    """Plan mode: parse a move sequence and play it from ``cell`` (default ``maze.start``).

    Args:
        maze: The maze.
        completion: Model output.
        max_moves: Longest plan accepted (default ``4 * rows * cols``); longer is a violation.
        cell: Start cell of the plan.
    """
    here = maze.start if cell is None else cell
    limit = 4 * maze.rows * maze.cols if max_moves is None else max_moves
    parsed = parse_answer(completion, max_moves=limit)
    if parsed.violation is not None:
        bad = _violation(maze, here, parsed.violation)
        return PlanOutcome(bad.reward, (bad,), False, 0, parsed.violation)
    outcomes: list[MoveOutcome] = []
    total, overshoot, solved = 0.0, 0, maze.distance_to_goal(here) == 0
    for move in parsed.moves:
        if solved:
            overshoot += 1
            total -= OVERSHOOT_PENALTY
            continue
        out = score_move(maze, here, move)
        outcomes.append(out)
        total += out.reward
        here, solved = out.cell_after, out.solved
    return PlanOutcome(max(PLAN_REWARD_FLOOR, round_reward(total)), tuple(outcomes), solved, overshoot, None)


def max_return(maze: Maze, cell: Cell | None = None) -> float:
    """Highest possible episode return from ``cell`` (default start): a shortest path, played exactly."""
    return SHAPING.max_return(maze.distance_to_goal(maze.start if cell is None else cell))


def step_reward_bounds() -> tuple[float, float]:
    """``(min, max)`` reward of any single step-mode turn."""
    return (-FORMAT_PENALTY, SHAPING.best_step())


def score_completion(completion: str, maze: Maze, *, mode: str = "step", agent: Cell | None = None) -> float:
    """Reward of one completion: a step-mode turn or a whole plan, from ``agent`` (default start).

    This is the reference reward function of the audit (:func:`hyperpod_rl.tasks.maze.audit.run_audit`);
    a user-supplied function must have the same signature.

    Raises:
        MazeError: if ``mode`` is not ``"step"`` or ``"plan"``.
    """
    here = maze.start if agent is None else (int(agent[0]), int(agent[1]))
    if mode == "step":
        return score_step(maze, here, completion).reward
    if mode == "plan":
        return score_plan(maze, completion, cell=here).reward
    raise MazeError(f"mode={mode!r} is not supported; use 'step' or 'plan'")


def aggregate_metrics(metrics: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Average episode metrics.

    Returns ``solve_rate``, ``optimal_move_rate``, ``invalid_move_rate``,
    ``blocked_move_rate``, ``mean_turns`` and ``steps_over_optimal`` (mean over solved
    episodes; absent when none was solved). Empty input gives ``{}``.
    """
    return multi_turn_means(metrics, ("optimal_move_rate", "invalid_move_rate", "blocked_move_rate"))
