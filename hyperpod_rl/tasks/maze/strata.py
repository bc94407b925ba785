"""Difficulty strata: label each maze by grid size, shortest-path length and number of turns.

A stratum label has three ``|``-separated parts, e.g. ``"5x5|len4-7|turns2-3"``:

* grid size ``{rows}x{cols}``;
* shortest-path length bin ``len{lo}-{hi}`` (or ``len{lo}+`` for the last, open bin);
* bin of direction changes along the (canonical) shortest path, ``turns{lo}-{hi}`` / ``turns{lo}+``.

Bins come from ascending edge lists: edges ``(1, 4, 8)`` give ``len1-3``, ``len4-7``, ``len8+``.

A *mix key* selects strata by any subset of the parts: ``"5x5"``, ``"len4-7"`` or
``"7x7|len8+"`` all match ``"7x7|len8+|turns4+"`` if each of the key's parts is one of the
label's parts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from hyperpod_rl.base import listed
from hyperpod_rl.errors import MazeError
from hyperpod_rl.tasks.dataset import stratum_matches as matches
from hyperpod_rl.tasks.maze.grid import Maze

__all__ = ["DEFAULT_PATH_BINS", "DEFAULT_TURN_BINS", "bin_label", "check_edges", "matches", "stratum_of"]

DEFAULT_PATH_BINS: Final[tuple[int, ...]] = (1, 4, 8, 16)
DEFAULT_TURN_BINS: Final[tuple[int, ...]] = (0, 2, 4, 8)


def check_edges(name: str, edges: Sequence[int]) -> tuple[int, ...]:
    """Validate bin edges: non-empty, strictly ascending, non-negative ints.

    Raises:
        MazeError: naming ``name`` otherwise.
    """
    out = tuple(int(e) for e in edges)
    if not out:
        raise MazeError(f"{name} must list at least one bin edge")
    if out[0] < 0 or any(b <= a for a, b in zip(out, out[1:], strict=False)):
        raise MazeError(f"{name} ({listed(out)}) must be strictly ascending non-negative integers, e.g. 4, 8, 16")
    return out


def bin_label(value: int, edges: Sequence[int], prefix: str) -> str:
    """Label of the bin holding ``value``; values below the first edge fall into the first bin."""
    for lo, hi in zip(edges, edges[1:], strict=False):
        if value < hi:
            return f"{prefix}{lo}-{hi - 1}"
    return f"{prefix}{edges[-1]}+"


def stratum_of(
    maze: Maze,
    *,
    path_bins: Sequence[int] = DEFAULT_PATH_BINS,
    turn_bins: Sequence[int] = DEFAULT_TURN_BINS,
) -> str:
    """The stratum label of ``maze`` (see module docstring)."""
    return "|".join(
        (
            f"{maze.rows}x{maze.cols}",
            bin_label(maze.shortest_path_length, path_bins, "len"),
            bin_label(maze.num_turns(), turn_bins, "turns"),
        )
    )
