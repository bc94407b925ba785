"""Chat messages for document reading: the page image, the question and the answer format.

Image parts are the OpenAI chat-completions ``image_url`` parts with a base64 PNG data URI,
``{"type": "image_url", "image_url": {"url": "data:image/png;base64,..."}}``: the shape SkyRL 0.3.0's
vision-language generator sends to vLLM (as the maze task; ``hyperpod_rl/tasks/maze/messages.py`` cites
the sources).

Prompt styles: ``full`` (a system prompt with the answer rules, then the page and the question)
for real VLMs; ``terse`` (the page and the question only) for the tiny random-init model.
Observations: ``image`` (the page), ``text`` (the text twin, :meth:`Document.to_text`) or ``both``.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from hyperpod_rl.tasks.dataset import clean_messages
from hyperpod_rl.tasks.doc_read.document import Document, Question
from hyperpod_rl.tasks.doc_read.render import PageStyle, render_png
from hyperpod_rl.tasks.messages import first_messages, user_content
from hyperpod_rl.tasks.vision import image_part

__all__ = ["SYSTEM_PROMPT", "Observation", "PromptStyle", "build_prompt", "clean_messages", "image_part", "instructions"]

Observation = Literal["image", "text", "both"]
PromptStyle = Literal["full", "terse"]

SYSTEM_PROMPT: Final[str] = (
    "You read documents. Look at the page, think briefly if you like, then give only the answer "
    "inside <answer></answer> tags: a value as printed, a number, an amount, a date or yes/no."
)
_FORMAT_HINTS: Final[dict[str, str]] = {
    "text": "Answer with the text as printed.",
    "number": "Answer with a number.",
    "money": "Answer with the amount, for example <answer>1,234.50</answer>.",
    "date": "Answer with the date, for example <answer>2025-03-14</answer>.",
    "yesno": "Answer yes or no.",
}


def instructions(question: Question, prompt_style: PromptStyle = "full") -> str:
    """The text after the page: the question (and, in the ``full`` style, the answer format)."""
    if prompt_style == "terse":
        return question.text
    hint = _FORMAT_HINTS[question.answer_type]
    return f"{question.text} {hint if hint not in question.text else ''}".strip()


def build_prompt(
    doc: Document,
    question: Question,
    *,
    style: PageStyle | None = None,
    max_image_tokens: int = 1024,
    observation: Observation = "image",
    prompt_style: PromptStyle = "full",
    png: bytes | None = None,
) -> list[dict[str, Any]]:
    """The chat of one sample: (system,) user with the page and the question.

    Args:
        doc, question: The sample.
        style, max_image_tokens: How the page is rendered (:func:`~.render.render_document`).
        observation: ``image``, ``text`` (text twin) or ``both``.
        prompt_style: ``full`` or ``terse``.
        png: Already rendered page bytes (skips rendering).

    Returns:
        Messages whose every ``content`` is a list of parts (a uniform parquet type).
    """
    content = user_content(
        observation,
        instructions(question, prompt_style),
        image=lambda: image_part(png if png is not None else render_png(doc, style, max_image_tokens=max_image_tokens)),
        with_twin=lambda text: f"Document text:\n{doc.to_text()}\n\n{text}",
    )
    return first_messages(None if prompt_style == "terse" else SYSTEM_PROMPT, content)
