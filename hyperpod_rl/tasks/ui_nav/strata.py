"""Difficulty strata of interface-navigation apps.

A stratum label has four ``|``-separated parts, e.g. ``"depth2|settings|small|dark"``: menu depth of
the goal page, goal kind (``settings`` toggles or ``form`` fields), window size and theme.
A *mix key* selects strata by any subset of the parts (``"depth2"``, ``"form|large"``), as in every
task (:func:`hyperpod_rl.tasks.dataset.stratum_matches`).
"""

from __future__ import annotations

from hyperpod_rl.tasks.dataset import stratum_matches as matches
from hyperpod_rl.tasks.ui_nav.app import App
from hyperpod_rl.tasks.ui_nav.render import RenderStyle

__all__ = ["matches", "stratum_of"]


def stratum_of(app: App, style: RenderStyle) -> str:
    """The stratum label of ``app`` drawn in ``style``."""
    return f"depth{app.depth}|{app.goal_kind}|{style.size}|{style.theme}"
