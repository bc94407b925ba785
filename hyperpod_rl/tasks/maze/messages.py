"""Chat messages for the maze task: image parts, prompts and feedback text.

Image part shape: the OpenAI chat-completions ``image_url`` part with a base64 PNG data URI,
``{"type": "image_url", "image_url": {"url": "data:image/png;base64,..."}}``. This is what
SkyRL's VLM example builds (NovaSky-AI/SkyRL ``examples/train/visgym/utils.py``,
``make_image_message``) and what SkyRL 0.3.0's vision-language generator
(``skyrl/train/generators/skyrl_vlm_generator.py``) sends to vLLM's ``/v1/chat/completions/render``
through ``skyrl/backends/skyrl_train/inference_servers/remote_inference_client.py``, which also
builds ``{"type": "image_url", "image_url": {"url": ...}}`` parts itself.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from hyperpod_rl.tasks.dataset import clean_messages
from hyperpod_rl.tasks.maze.grid import Cell, Maze
from hyperpod_rl.tasks.maze.render import RenderStyle, render_png
from hyperpod_rl.tasks.messages import first_messages, user_content
from hyperpod_rl.tasks.vision import decode_image_part, flatten_alpha
from hyperpod_rl.tasks.vision import image_part as vision_image_part

__all__ = [
    "Mode",
    "Observation",
    "PromptStyle",
    "TERSE_TEXT",
    "SYSTEM_PROMPT",
    "build_prompt",
    "clean_messages",
    "decode_image_part",
    "feedback_text",
    "flatten_alpha",
    "image_part",
    "instructions",
    "observation_message",
]

Mode = Literal["step", "plan"]
#: What each user turn shows: the rendered image, the text-grid twin, or both.
Observation = Literal["image", "text", "both"]
#: How much text the prompts carry. ``"full"``: system prompt, legend and rules (for real VLMs).
#: ``"terse"``: no system prompt, the image plus one word per turn. A tiny random-init model
#: cannot find the image in ~130 tokens of fixed text (measured: supervised first-move accuracy
#: stayed at chance with "full" and rose from 0.30 to 0.62 in 125 steps with "terse").
PromptStyle = Literal["full", "terse"]

#: Terse texts: the first turn, and the feedback after a move / a blocked move / a bad answer.
TERSE_TEXT: Final[dict[str, str]] = {"start": "move", "moved": "moved", "blocked": "blocked", "invalid": "invalid"}

SYSTEM_PROMPT: Final[str] = (
    "You solve mazes. Think briefly if you like, then give your final answer inside "
    "<answer></answer> tags using only the words up, down, left and right."
)


def image_part(maze: Maze, agent: Cell | None = None, style: RenderStyle | None = None) -> dict[str, Any]:
    """An ``image_url`` content part holding the PNG of the maze with the agent at ``agent``."""
    return vision_image_part(render_png(maze, agent, style))


def instructions(maze: Maze, mode: Mode, max_turns: int, *, style: RenderStyle | None = None, observation: Observation = "image") -> str:
    """The task text of the first user turn (the legend matches the style's colours and the observation)."""
    if observation == "text":
        legend = f"This is a {maze.rows}x{maze.cols} maze shown as text. You cannot move through walls."
    else:
        drawn = (style or RenderStyle()).legend()
        legend = f"This is a {maze.rows}x{maze.cols} maze. {drawn} You cannot move through walls."
    if mode == "plan":
        return (
            f"{legend} Give the whole sequence of moves from your position to the goal in one answer, "
            "for example <answer>up right right down</answer>."
        )
    return (
        f"{legend} Move one cell per turn: answer with exactly one move, for example <answer>up</answer>. "
        f"You have {max_turns} turns. After each move you see the maze again."
    )


def feedback_text(move: str | None, *, blocked: bool, violation: str | None, prompt_style: PromptStyle = "full") -> str:
    """The text of the observation after a step-mode turn."""
    if prompt_style == "terse":
        return TERSE_TEXT["invalid" if violation is not None else "blocked" if blocked else "moved"]
    if violation is not None:
        return f"Invalid answer ({violation}); you did not move. Reply with one move inside <answer></answer>."
    if blocked:
        return f"A wall blocks '{move}'; you did not move."
    return f"You moved {move}."


def _content(maze: Maze, agent: Cell | None, style: RenderStyle | None, text: str, observation: Observation) -> list[dict[str, Any]]:
    return user_content(
        observation,
        text,
        image=lambda: image_part(maze, agent, style),
        with_twin=lambda t: f"{t}\nText view (# wall, . open, A you, G goal):\n{maze.to_text(agent)}",
    )


def build_prompt(
    maze: Maze,
    *,
    mode: Mode = "step",
    max_turns: int = 1,
    style: RenderStyle | None = None,
    observation: Observation = "image",
    prompt_style: PromptStyle = "full",
) -> list[dict[str, Any]]:
    """System message plus the first user message (start image, then instructions).

    The system content is a list with one text part, so that every message's ``content``
    has the same type when stored in parquet. ``prompt_style="terse"`` gives only the user
    message: the start image and :data:`TERSE_TEXT` ``["start"]``.
    """
    if prompt_style == "terse":
        return first_messages(None, _content(maze, None, style, TERSE_TEXT["start"], observation))
    text = instructions(maze, mode, max_turns, style=style, observation=observation)
    return first_messages(SYSTEM_PROMPT, _content(maze, None, style, text, observation))


def observation_message(
    maze: Maze, agent: Cell, text: str, *, style: RenderStyle | None = None, observation: Observation = "image"
) -> dict[str, Any]:
    """A user message showing the maze with the agent at ``agent`` and ``text`` after the image."""
    return {"role": "user", "content": _content(maze, agent, style, text, observation)}
