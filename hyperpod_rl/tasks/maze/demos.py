"""The maze's demonstrations for SFT: its shortest path, one move per turn (the Task ``demonstration`` member).

Step mode: one ``<answer>MOVE</answer>`` per turn along :meth:`~hyperpod_rl.tasks.maze.grid.Maze.shortest_path`
from the start (ties broken by direction order, so the demonstration is deterministic). Plan mode:
one answer with the whole path, ``<answer>up right right</answer>``. A maze already solved at its
start has no demonstration (None).
"""

from __future__ import annotations

from hyperpod_rl.tasks.maze.grid import Maze

__all__ = ["maze_demonstration"]


def maze_demonstration(maze: Maze, mode: str = "step") -> list[str] | None:
    """The shortest-path completions of one maze (a row's ``maze``, parsed, and its ``mode``), or None
    when the start is the goal."""
    path = maze.shortest_path()
    if not path:
        return None
    if mode == "plan":
        return [f"<answer>{' '.join(path)}</answer>"]
    return [f"<answer>{move}</answer>" for move in path]
