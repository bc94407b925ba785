"""Strata: label each sample by document kind, question kind and page density.

A label has three ``|``-separated parts, e.g. ``"invoice|sum|rows5-8"``: the document kind,
the question kind (``field`` / ``sum`` / ``compare``) and the bin of table rows
(edges :data:`DEFAULT_ROW_BINS`: ``rows1-4``, ``rows5-8``, ``rows9-15``, ``rows16+``).
A *mix key* selects strata by any subset of parts (``"sum"``, ``"form|compare"``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from hyperpod_rl.tasks.dataset import stratum_matches as matches
from hyperpod_rl.tasks.doc_read.document import Document, Question

__all__ = ["DEFAULT_ROW_BINS", "bin_label", "matches", "stratum_of"]

DEFAULT_ROW_BINS: Final[tuple[int, ...]] = (1, 5, 9, 16)


def bin_label(value: int, edges: Sequence[int], prefix: str) -> str:
    """Label of the bin holding ``value``; values below the first edge fall into the first bin."""
    for lo, hi in zip(edges, edges[1:], strict=False):
        if value < hi:
            return f"{prefix}{lo}-{hi - 1}"
    return f"{prefix}{edges[-1]}+"


def stratum_of(doc: Document, question: Question, *, row_bins: Sequence[int] = DEFAULT_ROW_BINS) -> str:
    """The stratum label of one sample (see the module docstring)."""
    return "|".join((doc.kind, question.kind, bin_label(len(doc.items), row_bins, "rows")))
