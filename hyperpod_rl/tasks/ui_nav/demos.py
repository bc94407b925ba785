"""ui_nav's demonstrations for SFT: breadth-first search over the app's state graph (the Task ``demonstration`` member).

From the home screen, each turn takes the first action of
:func:`~hyperpod_rl.tasks.ui_nav.app.optimal_actions` (actions that lower the BFS distance to
the goal by one; label clicks, back, typing a target text), in answer syntax
(``<answer>click "Dark mode"</answer>``), until the goal holds. So the demonstration is one
shortest action sequence, deterministic for a given app.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ui_nav_demonstration"]


def ui_nav_demonstration(app: Any) -> list[str] | None:
    """The shortest action sequence of one ui_nav app (a row's ``app``, parsed) as completions, or None
    when the goal holds at the start.

    Raises:
        TaskError: the search finds no way to the goal.
    """
    from hyperpod_rl.errors import TaskError
    from hyperpod_rl.tasks.ui_nav.app import apply_action, initial_state, is_solved, optimal_actions

    state = initial_state(app)
    out: list[str] = []
    while not is_solved(app, state):
        actions = optimal_actions(app, state)
        if not actions:
            raise TaskError(f"ui_nav app {app.name!r}: no action lowers the distance to the goal from screen {state.screen}")
        step = apply_action(app, state, actions[0])
        state = step.state
        out.append(f"<answer>{actions[0].describe()}</answer>")
    return out or None
