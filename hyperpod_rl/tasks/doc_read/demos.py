"""doc_read's demonstrations for SFT: the ground-truth answer (the Task ``demonstration`` member).

One turn: ``<answer>VALUE</answer>`` with the row's ``answer`` column, the value the reward
compares against (:func:`~hyperpod_rl.tasks.doc_read.dataset.make_row` writes it from the question).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["doc_read_demonstration"]


def doc_read_demonstration(row: Mapping[str, Any]) -> list[str] | None:
    """``["<answer>{row['answer']}</answer>"]``, or None for a row without an answer."""
    answer = row.get("answer")
    if answer is None or str(answer).strip() == "":
        return None
    return [f"<answer>{answer}</answer>"]
