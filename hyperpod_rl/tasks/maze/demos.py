"""The maze's demonstrations for SFT: its shortest path, one move per turn (the Task ``demonstration`` member).

Step mode: one ``<answer>MOVE</answer>`` per turn along :meth:`~hyperpod_rl.tasks.maze.grid.Maze.shortest_path`
from the start (ties broken by direction order, so the demonstration is deterministic). Plan mode:
one answer with the whole path, ``<answer>up right right</answer>``. A maze already solved at its
start has no demonstration (None).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["maze_demonstration"]


def maze_demonstration(row: Mapping[str, Any]) -> list[str] | None:
    """The shortest-path completions of one maze row (columns ``maze`` and ``mode``), or None.

    Raises:
        MazeError: the row's ``maze`` column is not a valid maze.
    """
    from hyperpod_rl.tasks.maze.task import maze_of

    maze = maze_of(row)
    path = maze.shortest_path()
    if not path:
        return None
    if str(row.get("mode") or "step") == "plan":
        return [f"<answer>{' '.join(path)}</answer>"]
    return [f"<answer>{move}</answer>" for move in path]
