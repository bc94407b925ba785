"""Interface navigation as a :class:`hyperpod_rl.tasks.Task` plug-in (entry point ``ui_nav`` of ``hyperpod_rl.tasks``).

States (``state`` arguments) are ``{"history": [action, ...]}``: actions in answer syntax (no
tags), replayed from the app's start; None is the start. Options are
:class:`~hyperpod_rl.tasks.ui_nav.dataset.DatasetSpec`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from hyperpod_rl.errors import TaskError
from hyperpod_rl.tasks.protocol import AuditCase, Row, RowObject, TaskBase, parse_model
from hyperpod_rl.tasks.ui_nav.answer import ParsedAction, parse_action
from hyperpod_rl.tasks.ui_nav.app import App, State, default_max_turns, initial_state
from hyperpod_rl.tasks.ui_nav.audit import AUDIT_CASES
from hyperpod_rl.tasks.ui_nav.dataset import DatasetSpec, build_dataset
from hyperpod_rl.tasks.ui_nav.messages import build_prompt, screen_text
from hyperpod_rl.tasks.ui_nav.registry import ENTRY_POINT, ENV_CLASS
from hyperpod_rl.tasks.ui_nav.render import RenderStyle, render_screen
from hyperpod_rl.tasks.ui_nav.reward import REWARD_VERSION, aggregate_metrics, score_action, score_step

if TYPE_CHECKING:
    from PIL import Image

__all__ = ["TASK", "UINavTask", "app_of", "replay", "style_of"]


#: The :class:`App` of a dataset row (its ``app`` column: JSON text or dict); call it with the row.
app_of: Final[RowObject[App]] = RowObject("app", App.from_json, "ui_nav")


def style_of(row: Mapping[str, Any]) -> RenderStyle:
    """The row's :class:`RenderStyle` (its ``render_style`` column; default style when absent).

    Raises:
        TaskError: the style is invalid (names the field).
    """
    return parse_model(row.get("render_style"), RenderStyle, name="render_style")


def replay(app: App, state: Mapping[str, Any] | None, style: RenderStyle | None = None) -> State:
    """The state after the ``history`` actions of ``state`` (answer syntax, no tags).

    Raises:
        TaskError: an action is malformed or does not apply (names it and its position).
    """
    current = initial_state(app)
    for k, text in enumerate((state or {}).get("history") or ()):
        parsed: ParsedAction = parse_action(f"<answer>{text}</answer>")
        if parsed.action is None:
            raise TaskError(f"state.history[{k}]={text!r} is not an action ({parsed.violation})")
        out = score_action(app, current, parsed.action, style)
        if out.error is not None:
            raise TaskError(f"state.history[{k}]={text!r} does not apply ({out.error})")
        current = out.state_after
    return current


class UINavTask(TaskBase):
    """Interface navigation: reach a goal in a synthetic application, one action per turn."""

    name = "ui_nav"
    title = "Interface navigation: click, type and go back through app screens to reach a goal (multi-turn)"
    env_class = ENV_CLASS
    env_entry_point = ENTRY_POINT
    multi_turn = True
    reward_version = REWARD_VERSION
    options_model = DatasetSpec
    primary_metric = "solve_rate"
    reported_metrics = {
        "solve_rate": "solved",
        "progress": "progress",
        "optimal_action_rate": "optimal_action_rate",
        "invalid_action_rate": "invalid_action_rate",
        "inapplicable_action_rate": "inapplicable_action_rate",
        "steps_over_optimal": "steps_over_optimal",
    }
    lower_is_better = ("invalid_action_rate", "inapplicable_action_rate", "steps_over_optimal")
    guard_metrics = ("optimal_action_rate", "invalid_action_rate")
    turn_columns = ("action", "label", "error", "violation")
    invalid_metric = "invalid_action_rate"

    def build_dataset(self, options: Any) -> dict[str, list[Row]]:
        """:func:`hyperpod_rl.tasks.ui_nav.dataset.build_dataset` (``options``: a :class:`DatasetSpec` or its dict)."""
        return build_dataset(self.options_of(options))

    def render(self, row: Mapping[str, Any], state: Mapping[str, Any] | None = None) -> Image.Image:
        """The screen of ``state`` (:func:`~hyperpod_rl.tasks.ui_nav.render.render_screen`) in the row's style."""
        app, style = app_of(row), style_of(row)
        return render_screen(app, replay(app, state, style), style)

    def build_prompt(self, row: Mapping[str, Any], *, prompt_style: str | None = None, observation: str = "image") -> list[dict[str, Any]]:
        """:func:`hyperpod_rl.tasks.ui_nav.messages.build_prompt` with the row's turn limit and style."""
        app = app_of(row)
        return build_prompt(
            app,
            initial_state(app),
            max_turns=int(row.get("max_turns") or default_max_turns(app)),
            style=style_of(row),
            **self.prompt_view(row, prompt_style, observation),
        )

    def parse_answer(self, text: str) -> Any:
        """:func:`hyperpod_rl.tasks.ui_nav.answer.parse_action` (``.action``, ``.violation``)."""
        return parse_action(text)

    def score(self, row: Mapping[str, Any], completion: str, state: Mapping[str, Any] | None = None) -> float:
        """:func:`hyperpod_rl.tasks.ui_nav.reward.score_step` of one turn at ``state`` (None: the start)."""
        app, style = app_of(row), style_of(row)
        return score_step(app, replay(app, state, style), completion, style).reward

    def aggregate_metrics(self, metrics: Sequence[Mapping[str, Any]]) -> dict[str, float]:
        """:func:`hyperpod_rl.tasks.ui_nav.reward.aggregate_metrics` (``solve_rate``, ``progress``, ...)."""
        return aggregate_metrics(metrics)

    def demonstration(self, row: Mapping[str, Any]) -> list[str] | None:
        """SFT demonstration (:func:`hyperpod_rl.tasks.ui_nav.demos.ui_nav_demonstration`)."""
        from hyperpod_rl.tasks.ui_nav.demos import ui_nav_demonstration

        return ui_nav_demonstration(app_of(row))

    def audit_cases(self) -> Sequence[AuditCase]:
        """:data:`hyperpod_rl.tasks.ui_nav.audit.AUDIT_CASES`."""
        return AUDIT_CASES

    def text_twin(self, row: Mapping[str, Any], state: Mapping[str, Any] | None = None) -> str | None:
        """The screen as an accessibility-tree listing (:func:`~hyperpod_rl.tasks.ui_nav.messages.screen_text`)."""
        app = app_of(row)
        return screen_text(app, replay(app, state, style_of(row)))


#: The entry-point object (``hyperpod_rl.tasks.ui_nav.task:TASK``).
TASK: Final[UINavTask] = UINavTask()
