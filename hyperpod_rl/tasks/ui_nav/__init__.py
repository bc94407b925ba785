"""Interface navigation (multi-turn): synthetic application screens, one action per turn.

The spec (answer format, reward, splits) is ``docs/ui-nav-task.md``. Split like the maze package:
:mod:`.app` (screens, state graph, breadth-first search), :mod:`.generate`, :mod:`.strata`,
:mod:`.render`, :mod:`.messages`, :mod:`.answer`, :mod:`.reward`, :mod:`.env` (skyrl-gym, loaded
lazily), :mod:`.registry`, :mod:`.audit`, :mod:`.dataset`, and :mod:`.task` (the plug-in).
Imports PIL and pydantic, never torch, Ray or (outside :mod:`.env` / :mod:`.registry`) skyrl-gym.

Example:
    >>> from hyperpod_rl.tasks.ui_nav import generate_app, initial_state, render_screen, score_step
    >>> app = generate_app(seed=0, depth=1)
    >>> render_screen(app, initial_state(app)).size
    (320, 224)
    >>> score_step(app, initial_state(app), "<answer>back</answer>").reward
    -0.1
"""

from hyperpod_rl.tasks.registry import lazy_attributes
from hyperpod_rl.tasks.ui_nav.answer import VIOLATIONS, ParsedAction, parse_action
from hyperpod_rl.tasks.ui_nav.app import (
    Action,
    App,
    Control,
    Goal,
    Screen,
    State,
    apply_action,
    default_max_turns,
    distance_to_goal,
    initial_state,
    is_solved,
    optimal_actions,
    visible_elements,
)
from hyperpod_rl.tasks.ui_nav.audit import AUDIT_APPS, AUDIT_CASES
from hyperpod_rl.tasks.ui_nav.dataset import DatasetSpec, build_dataset, read_rows
from hyperpod_rl.tasks.ui_nav.generate import generate_app, vocabulary
from hyperpod_rl.tasks.ui_nav.messages import build_prompt, goal_text, screen_text
from hyperpod_rl.tasks.ui_nav.registry import ENV_CLASS, make_env, register_env
from hyperpod_rl.tasks.ui_nav.render import SIZES, THEMES, RenderStyle, element_at, image_tokens, layout, render_png, render_screen
from hyperpod_rl.tasks.ui_nav.reward import REWARD_VERSION, StepOutcome, aggregate_metrics, max_return, score_action, score_step
from hyperpod_rl.tasks.ui_nav.strata import stratum_of
from hyperpod_rl.tasks.ui_nav.task import TASK, UINavTask

__all__ = [
    "AUDIT_APPS",
    "AUDIT_CASES",
    "ENV_CLASS",
    "REWARD_VERSION",
    "SIZES",
    "TASK",
    "THEMES",
    "VIOLATIONS",
    "Action",
    "App",
    "Control",
    "DatasetSpec",
    "Goal",
    "ParsedAction",
    "RenderStyle",
    "Screen",
    "State",
    "StepOutcome",
    "UINavEnv",
    "UINavTask",
    "aggregate_metrics",
    "apply_action",
    "build_dataset",
    "build_prompt",
    "default_max_turns",
    "distance_to_goal",
    "element_at",
    "generate_app",
    "goal_text",
    "image_tokens",
    "initial_state",
    "is_solved",
    "layout",
    "make_env",
    "max_return",
    "optimal_actions",
    "parse_action",
    "read_rows",
    "register_env",
    "render_png",
    "render_screen",
    "score_action",
    "score_step",
    "screen_text",
    "stratum_of",
    "visible_elements",
    "vocabulary",
]


#: ``UINavEnv`` is loaded on first use: it imports skyrl-gym, which the rest of the task does not need.
__getattr__ = lazy_attributes(__name__, {"UINavEnv": "hyperpod_rl.tasks.ui_nav.env:UINavEnv"})
