"""Chat messages of the interface-navigation task: instruction, screen images, feedback, text twin.

Image parts have SkyRL's VLM shape (:func:`hyperpod_rl.tasks.vision.image_part`):
``{"type": "image_url", "image_url": {"url": "data:image/png;base64,..."}}``.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from hyperpod_rl.tasks.messages import first_messages, user_content
from hyperpod_rl.tasks.ui_nav.app import DIALOG_TEXT, App, State, visible_elements
from hyperpod_rl.tasks.ui_nav.render import RenderStyle, render_png
from hyperpod_rl.tasks.vision import image_part as vision_image_part

__all__ = [
    "SYSTEM_PROMPT",
    "Observation",
    "PromptStyle",
    "build_prompt",
    "feedback_text",
    "goal_text",
    "image_part",
    "instructions",
    "observation_message",
    "screen_text",
]

#: What each user turn shows: the screen image, its text twin (an accessibility-tree listing), or both.
Observation = Literal["image", "text", "both"]
#: ``"full"``: system prompt and rules (real VLMs); ``"terse"``: the goal sentence and the image only (tiny models).
PromptStyle = Literal["full", "terse"]

SYSTEM_PROMPT: Final[str] = (
    "You operate an application by looking at its screen. Each turn, give exactly one action inside "
    '<answer></answer> tags: click "Label" (a visible element), click (x, y) (pixel coordinates of the '
    'screenshot, origin top-left), type "text" (into the focused text field) or back.'
)


def goal_text(app: App) -> str:
    """The goal in words, e.g. ``Open Settings > Display, turn on Dark mode, then press Save.``"""
    page = app.screens[app.goal.page]
    path = " > ".join(app.screens[i].title for i in app.path_to(app.goal.page))
    parts = []
    for idx, value in app.goal.targets:
        ctl = page.controls[idx]
        if isinstance(value, bool):
            parts.append(f"turn {'on' if value else 'off'} {ctl.label}")
        else:
            parts.append(f'type "{value}" into {ctl.label}')
    return f"In {app.name}: open {path}, {' and '.join(parts)}, then press {page.action_label}."


def instructions(app: App, max_turns: int, style: RenderStyle | None = None, observation: Observation = "image") -> str:
    """The task text of the first user turn (full prompt style)."""
    s = style or RenderStyle()
    seen = f"The screenshot is {s.width_px}x{s.height_px} pixels." if observation != "text" else "The screen is listed as text."
    return (
        f"{goal_text(app)} {seen} You have {max_turns} turns; after each action you see the screen again. "
        'Answer with one action, for example <answer>click "Settings"</answer>.'
    )


def image_part(app: App, state: State, style: RenderStyle | None = None) -> dict[str, Any]:
    """An ``image_url`` content part holding the PNG of ``state``."""
    return vision_image_part(render_png(app, state, style))


def screen_text(app: App, state: State) -> str:
    """The text twin of a screen: title line, then one line per element (``[button] Save``, ``[toggle on] Wi-Fi``...)."""
    s = app.screens[state.screen]
    lines = [f"Window: {app.name}" + ("" if state.screen == 0 else f" - {s.title}")]
    values = state.pending or tuple(c.initial for c in s.controls)
    for el in visible_elements(app, State(screen=state.screen, focus=state.focus, pending=values)):
        if el.role == "toggle":
            lines.append(f"[toggle {'on' if values[el.index] else 'off'}] {el.label}")
        elif el.role == "field":
            focus = ", focused" if state.focus == el.index else ""
            lines.append(f'[text field{focus}] {el.label}: "{values[el.index]}"')
        else:
            lines.append(f"[button] {el.label}")
    if state.dialog:
        lines.append(f"[dialog] {DIALOG_TEXT}")
        lines.extend(f"[button] {el.label}" for el in visible_elements(app, state))
    return "\n".join(lines)


def _content(app: App, state: State, style: RenderStyle | None, text: str, observation: Observation) -> list[dict[str, Any]]:
    return user_content(
        observation, text, image=lambda: image_part(app, state, style), with_twin=lambda t: f"{t}\n{screen_text(app, state)}"
    )


def build_prompt(
    app: App,
    state: State,
    *,
    max_turns: int,
    style: RenderStyle | None = None,
    observation: Observation = "image",
    prompt_style: PromptStyle = "full",
) -> list[dict[str, Any]]:
    """The first messages: system prompt (full style only) and the user turn (screen, then instructions)."""
    if prompt_style == "terse":
        return first_messages(None, _content(app, state, style, goal_text(app), observation))
    return first_messages(SYSTEM_PROMPT, _content(app, state, style, instructions(app, max_turns, style, observation), observation))


def feedback_text(
    *, error: str | None, violation: str | None, label: str | None, action_text: str, prompt_style: PromptStyle = "full"
) -> str:
    """Text after the new screen: what the last action did."""
    if prompt_style == "terse":
        return "invalid" if violation else ("no effect" if error else "ok")
    if violation is not None:
        return f"Invalid answer ({violation}); nothing happened. Reply with one action inside <answer></answer>."
    if error == "out_of_screen":
        return "That point is outside the screen; nothing happened."
    if error == "missed":
        return "Nothing to click at that point; nothing happened."
    if error == "no_such_element":
        return "No element with that label is on this screen; nothing happened."
    if error == "no_focused_field":
        return "No text field is focused; click one first. Nothing happened."
    if error == "nothing_to_go_back_to":
        return "This is the first screen; there is nothing to go back to."
    if label is not None:
        return f'You clicked "{label}".'
    return f"Done: {action_text}."


def observation_message(
    app: App, state: State, text: str, *, style: RenderStyle | None = None, observation: Observation = "image"
) -> dict[str, Any]:
    """A user message showing ``state`` and ``text``."""
    return {"role": "user", "content": _content(app, state, style, text, observation)}
