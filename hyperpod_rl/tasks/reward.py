"""Reward arithmetic shared by the tasks: rounding, and the progress-shaped reward of a multi-turn task.

Pure and deterministic; a task keeps its own values (its written spec) and versions them.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ProgressShaping", "round_reward"]


def round_reward(x: float) -> float:
    """``x`` rounded to 1e-9, so that sums of the same terms compare equal across paths."""
    return round(x, 9)


@dataclass(frozen=True, slots=True)
class ProgressShaping:
    """The reward of a turn that brings the agent closer to a goal (potential-based shaping).

    A turn that takes the agent from distance ``d_before`` to ``d_after`` (fewest actions left to
    the goal) gets ``progress * (d_before - d_after) - step_cost``, plus ``success_bonus`` on the
    turn after which the goal holds. Progress telescopes, so from distance ``d`` an episode's return
    is at most ``success_bonus + (progress - step_cost) * d`` (:meth:`max_return`), reached exactly
    by a shortest path.

    Attributes:
        success_bonus: Reward added on the turn that reaches the goal.
        progress: Reward per action of distance gained (lost, when negative).
        step_cost: Cost of every turn that applies an action.
    """

    success_bonus: float
    progress: float
    step_cost: float

    def step(self, d_before: int, d_after: int, *, solved: bool) -> float:
        """The reward of one applied action (rounded by :func:`round_reward`)."""
        return round_reward(self.progress * (d_before - d_after) - self.step_cost + (self.success_bonus if solved else 0.0))

    def max_return(self, distance: int) -> float:
        """The highest episode return from ``distance`` actions away (0.0 at the goal)."""
        return 0.0 if distance == 0 else round_reward(self.success_bonus + (self.progress - self.step_cost) * distance)

    def best_step(self) -> float:
        """The highest reward of one turn: the step onto the goal from one action away."""
        return self.success_bonus + self.progress - self.step_cost
