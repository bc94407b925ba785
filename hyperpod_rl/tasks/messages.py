"""The chat messages every task's prompts are made of: one user turn's content, the first messages.

Messages follow SkyRL's VLM format (``{"role": ..., "content": [part, ...]}``). Every message's
``content`` is a list of parts, the system message's too, so that the ``prompt`` column has one
type when stored in parquet. A task supplies what is its own: the image part
(:func:`hyperpod_rl.tasks.vision.image_part`), its text, and its text twin.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["first_messages", "user_content"]


def user_content(
    observation: str, text: str, *, image: Callable[[], dict[str, Any]], with_twin: Callable[[str], str]
) -> list[dict[str, Any]]:
    """The content parts of one user turn: the image (if shown), then one text part.

    Args:
        observation: ``"image"`` (the image, then ``text``), ``"text"`` (no image; the text
            twin with ``text``) or ``"both"``.
        text: The turn's own text (instructions or feedback).
        image: Builds the image part; called only when the image is shown.
        with_twin: ``text`` joined with the observation's text twin, in the task's order;
            called only when the twin is shown.

    Returns:
        ``[image part, {"type": "text", "text": ...}]``, or the text part alone for ``"text"``.
    """
    parts = [image()] if observation in ("image", "both") else []
    if observation in ("text", "both"):
        text = with_twin(text)
    parts.append({"type": "text", "text": text})
    return parts


def first_messages(system_prompt: str | None, content: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The first messages of an episode: the system message (unless ``system_prompt`` is None,
    as in the terse prompt style), then the user turn holding ``content``."""
    user = {"role": "user", "content": content}
    if system_prompt is None:
        return [user]
    return [{"role": "system", "content": [{"type": "text", "text": system_prompt}]}, user]
