"""Prompt budgets that count image tokens: a row's real prompt length, and filtering rows by it.

A maze row's prompt is a chat with an image. Its real length is what the model reads: the chat
template's text tokens plus every image expanded to its vision tokens by the processor (Qwen3-VL:
one ``<|image_pad|>`` per merged 32x32 px patch). SkyRL 0.3.0's ``PromptDataset`` length filter
(``max_prompt_length``) tokenizes the template text only, so it keeps rows whose real prompts are
longer than the limit. :func:`filter_rows` drops those rows before any trainer sees them (both
backends), and says how many it dropped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hyperpod_rl.errors import ConfigError
from hyperpod_rl.model.policy import messages_to_template

__all__ = ["PromptFilter", "filter_rows", "prompt_token_count"]


def prompt_token_count(processor: Any, messages: list[dict[str, Any]]) -> int:
    """Tokens of a chat prompt as the model reads it: template text plus expanded image tokens.

    Args:
        processor: a Qwen3-VL processor (``AutoProcessor`` or :class:`~hyperpod_rl.model.tiny.ImageOnlyQwen3VLProcessor`).
        messages: the chat (text parts and ``image`` / ``image_url`` parts).

    Returns:
        The length of the processor's ``input_ids`` with the generation prompt added.
    """
    tmpl, images, _ = messages_to_template(messages)
    text = processor.apply_chat_template(tmpl, add_generation_prompt=True, tokenize=False)
    enc = processor(text=[text], images=images or None, return_tensors="pt")
    return int(enc["input_ids"].shape[1])


@dataclass(frozen=True)
class PromptFilter:
    """What :func:`filter_rows` kept and dropped.

    Attributes:
        limit: the budget (``rollout.max_prompt_tokens``), tokens.
        kept: indices of the kept rows, in order.
        dropped: indices of the dropped rows, in order.
        lengths: the real prompt length of every row, tokens.
    """

    limit: int
    kept: list[int]
    dropped: list[int]
    lengths: list[int]

    def summary(self, what: str) -> str:
        """One line for the job log, e.g. ``train: dropped 3 of 64 rows ...``."""
        longest = max(self.lengths, default=0)
        return (
            f"{what}: dropped {len(self.dropped)} of {len(self.lengths)} rows whose prompt (text + image tokens) "
            f"exceeds rollout.max_prompt_tokens={self.limit} (longest prompt {longest} tokens)"
        )


def filter_rows(rows: Sequence[Mapping[str, Any]], processor: Any, limit: int, *, what: str = "dataset") -> PromptFilter:
    """Keep the rows whose real prompt (:func:`prompt_token_count`) fits in ``limit`` tokens.

    Args:
        rows: dataset rows with a ``prompt`` chat.
        processor: the base model's processor.
        limit: ``rollout.max_prompt_tokens``.
        what: name used in the error message (``"train"``, ``"heldout"``).

    Returns:
        :class:`PromptFilter`.

    Raises:
        ConfigError: every row is longer than ``limit`` (the message gives the shortest prompt).
    """
    lengths = [prompt_token_count(processor, list(row["prompt"])) for row in rows]
    kept = [i for i, n in enumerate(lengths) if n <= limit]
    dropped = [i for i, n in enumerate(lengths) if n > limit]
    if rows and not kept:
        raise ConfigError(
            f"rollout.max_prompt_tokens={limit} is below every {what} prompt: the shortest is {min(lengths)} tokens "
            f"(text + image tokens), the longest {max(lengths)}; raise rollout.max_prompt_tokens to at least {max(lengths)}"
        )
    return PromptFilter(limit=limit, kept=kept, dropped=dropped, lengths=lengths)
