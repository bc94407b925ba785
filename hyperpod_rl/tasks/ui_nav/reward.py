"""The interface-navigation reward: pure, deterministic, versioned.

The written spec is ``docs/ui-nav-task.md``; change :data:`REWARD_VERSION` with any change here.
Per turn (one action):

* applied action: ``progress * (d_before - d_after) - step_cost``, plus ``success_bonus`` on
  the action after which the goal holds (:data:`SHAPING`: 0.1, 0.01 and 1.0). ``d`` is the fewest actions left to
  the goal, found by breadth-first search over the app's state graph (:func:`.app.distance_to_goal`).
* action that does not apply (no visible element with that label, a click at coordinates inside
  the image that hit no element, typing with no focused field, back on the home screen):
  ``-INAPPLICABLE_PENALTY``; the state is unchanged.
* click at coordinates outside the image: ``-OUT_OF_SCREEN_PENALTY``; unchanged.
* format violation (:mod:`.answer`): ``-FORMAT_PENALTY``; unchanged.

Progress telescopes and every applied action costs ``step_cost``, so an episode's return is at
most ``success_bonus + (progress - step_cost) * shortest_path_length``
(:func:`max_return`), reached exactly by following a shortest action path.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from hyperpod_rl.tasks.metrics import multi_turn_means
from hyperpod_rl.tasks.reward import ProgressShaping
from hyperpod_rl.tasks.ui_nav.answer import parse_action
from hyperpod_rl.tasks.ui_nav.app import Action, App, State, apply_action, distance_to_goal, initial_state, is_solved
from hyperpod_rl.tasks.ui_nav.render import RenderStyle, element_at

__all__ = [
    "FORMAT_PENALTY",
    "INAPPLICABLE_PENALTY",
    "OUT_OF_SCREEN_PENALTY",
    "REWARD_VERSION",
    "SHAPING",
    "StepOutcome",
    "aggregate_metrics",
    "max_return",
    "resolve",
    "score_action",
    "score_completion",
    "score_step",
]

#: Version of the reward spec; recorded in every row and every step's metadata.
REWARD_VERSION: Final[str] = "ui_nav-1.1"
#: The reward of an applied action: progress-shaped.
SHAPING: Final[ProgressShaping] = ProgressShaping(success_bonus=1.0, progress=0.1, step_cost=0.01)
INAPPLICABLE_PENALTY: Final[float] = 0.1
OUT_OF_SCREEN_PENALTY: Final[float] = 0.15
FORMAT_PENALTY: Final[float] = 0.2


@dataclass(frozen=True, slots=True)
class StepOutcome:
    """One scored turn.

    Attributes:
        reward: Reward of the turn.
        action: The parsed action (None on a format violation).
        state_before, state_after: States around the turn (equal unless the action applied).
        error: None if the action applied; else ``"no_such_element"``, ``"missed"`` (coordinates
            on no element), ``"out_of_screen"``, ``"no_focused_field"``, ``"nothing_to_go_back_to"``
            or ``"format"``.
        violation: Format violation code, or None.
        distance_before, distance_after: Fewest actions left to the goal.
        optimal: The action lowered the distance by one.
        solved: The goal holds after the turn.
        label: Label of the element clicked (coordinate clicks included), if any.
    """

    reward: float
    action: Action | None
    state_before: State
    state_after: State
    error: str | None
    violation: str | None
    distance_before: int
    distance_after: int
    optimal: bool
    solved: bool
    label: str | None = None

    @property
    def invalid(self) -> bool:
        """The turn was a format violation."""
        return self.violation is not None


def resolve(app: App, state: State, action: Action, style: RenderStyle) -> tuple[Action | None, str | None]:
    """Turn a coordinate click into a label click: ``(action, None)`` or ``(None, "out_of_screen" | "missed")``."""
    if action.kind != "click_xy":
        return action, None
    if not (0 <= action.x < style.width_px and 0 <= action.y < style.height_px):
        return None, "out_of_screen"
    el = element_at(app, state, action.x, action.y, style)
    if el is None:
        return None, "missed"
    return Action("click", label=el.label), None


def score_action(app: App, state: State, action: Action, style: RenderStyle | None = None) -> StepOutcome:
    """Score one well-formed action in ``state`` (pure)."""
    style = style or RenderStyle()
    d0 = distance_to_goal(app, state)
    resolved, miss = resolve(app, state, action, style)
    if resolved is None:
        penalty = OUT_OF_SCREEN_PENALTY if miss == "out_of_screen" else INAPPLICABLE_PENALTY
        return StepOutcome(-penalty, action, state, state, miss, None, d0, d0, False, d0 == 0)
    step = apply_action(app, state, resolved)
    label = step.element.label if step.element is not None else None
    if step.error is not None:
        return StepOutcome(-INAPPLICABLE_PENALTY, action, state, state, step.error, None, d0, d0, False, d0 == 0, label)
    d1 = distance_to_goal(app, step.state)
    solved = is_solved(app, step.state)
    reward = SHAPING.step(d0, d1, solved=solved)
    return StepOutcome(reward, action, state, step.state, None, None, d0, d1, d1 == d0 - 1, solved, label)


def score_step(app: App, state: State, completion: str, style: RenderStyle | None = None) -> StepOutcome:
    """Parse one action from ``completion`` and score it in ``state``."""
    parsed = parse_action(completion)
    if parsed.action is None:
        d0 = distance_to_goal(app, state)
        return StepOutcome(-FORMAT_PENALTY, None, state, state, "format", parsed.violation, d0, d0, False, d0 == 0)
    return score_action(app, state, parsed.action, style)


def max_return(app: App, state: State | None = None) -> float:
    """Highest episode return from ``state`` (default: the start): a shortest action path."""
    return SHAPING.max_return(distance_to_goal(app, initial_state(app) if state is None else state))


def score_completion(completion: str, app: App, *, state: State | None = None, style: RenderStyle | None = None) -> float:
    """Reward of one completion in ``state`` (default: the start): the audit's reference reward function.

    A user-supplied reward for :func:`hyperpod_rl.tasks.ui_nav.audit.run_audit` takes the same arguments.
    """
    return score_step(app, initial_state(app) if state is None else state, completion, style).reward


def aggregate_metrics(metrics: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Average episode metrics (keys of :meth:`UINavEnv.get_metrics`); ``steps_over_optimal`` over solved episodes only."""
    return multi_turn_means(metrics, ("progress", "optimal_action_rate", "invalid_action_rate", "inapplicable_action_rate"))
