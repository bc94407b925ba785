"""The maze layout: a grid of cells with walls between neighbouring cells.

A :class:`Maze` is immutable. Cells are ``(row, col)`` tuples, row 0 at the top,
col 0 at the left. Each cell stores which of its four sides are open as a bit
mask (:data:`OPEN_BITS`). Walls are symmetric: if ``(r, c)`` is open to the
right then ``(r, c + 1)`` is open to the left. The outer border is always a wall.

Distances are BFS distances in moves over open sides; the grid graph is
bipartite, so one move always changes the distance to the goal by exactly one.
"""

from __future__ import annotations

import hashlib
import json
from collections import deque
from dataclasses import dataclass, field
from functools import cached_property
from typing import Final

from hyperpod_rl.base import listed
from hyperpod_rl.errors import MazeError

__all__ = [
    "default_max_turns",
    "DELTAS",
    "DIRECTIONS",
    "MAX_SIDE",
    "MIN_SIDE",
    "OPEN_BITS",
    "OPPOSITE",
    "Cell",
    "Maze",
]

Cell = tuple[int, int]

#: The four moves, in the canonical order used everywhere (prompts, metrics, tests).
DIRECTIONS: Final[tuple[str, str, str, str]] = ("up", "down", "left", "right")
#: Bit of each direction in a cell's open-side mask.
OPEN_BITS: Final[dict[str, int]] = {"up": 1, "down": 2, "left": 4, "right": 8}
#: (d_row, d_col) of each move.
DELTAS: Final[dict[str, Cell]] = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}
OPPOSITE: Final[dict[str, str]] = {"up": "down", "down": "up", "left": "right", "right": "left"}

#: Smallest and largest supported side length, in cells.
MIN_SIDE: Final[int] = 2
MAX_SIDE: Final[int] = 64


def _check_side(name: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise MazeError(f"{name} must be an int number of cells, got {value!r}")
    if not MIN_SIDE <= value <= MAX_SIDE:
        raise MazeError(
            f"{name}={value} is out of range: use {MIN_SIDE} <= {name} <= {MAX_SIDE} cells "
            f"(a maze needs at least two cells so start and goal differ)"
        )


@dataclass(frozen=True, slots=False)
class Maze:
    """An immutable rectangular maze.

    Attributes:
        rows: Height in cells, ``MIN_SIDE..MAX_SIDE``.
        cols: Width in cells, ``MIN_SIDE..MAX_SIDE``.
        start: ``(row, col)`` where the agent starts.
        goal: ``(row, col)`` the agent must reach; differs from ``start``.
        open_sides: Row-major tuple of ``rows * cols`` bit masks (:data:`OPEN_BITS`);
            a set bit means no wall on that side of the cell.

    Raises:
        MazeError: on sizes out of range, cells outside the grid, ``start == goal``,
            asymmetric walls, openings through the outer border, or a goal that
            cannot be reached from the start (the message names the field).
    """

    rows: int
    cols: int
    start: Cell
    goal: Cell
    open_sides: tuple[int, ...] = field(repr=False)

    def __post_init__(self) -> None:
        _check_side("rows", self.rows)
        _check_side("cols", self.cols)
        object.__setattr__(self, "start", tuple(int(v) for v in self.start))
        object.__setattr__(self, "goal", tuple(int(v) for v in self.goal))
        object.__setattr__(self, "open_sides", tuple(int(v) for v in self.open_sides))
        for name in ("start", "goal"):
            cell = getattr(self, name)
            if len(cell) != 2 or not self.in_bounds(cell):
                raise MazeError(f"{name}={cell} is outside the {self.rows}x{self.cols} grid")
        if self.start == self.goal:
            raise MazeError(f"start and goal are the same cell {self.start}; pick distinct cells")
        if len(self.open_sides) != self.rows * self.cols:
            raise MazeError(f"open_sides has {len(self.open_sides)} entries; expected rows*cols={self.rows * self.cols}")
        for r in range(self.rows):
            for c in range(self.cols):
                mask = self.open_sides[r * self.cols + c]
                for d in DIRECTIONS:
                    if not mask & OPEN_BITS[d]:
                        continue
                    nr, nc = r + DELTAS[d][0], c + DELTAS[d][1]
                    if not self.in_bounds((nr, nc)):
                        raise MazeError(f"open_sides: cell {(r, c)} is open '{d}' through the outer wall")
                    if not self.open_sides[nr * self.cols + nc] & OPEN_BITS[OPPOSITE[d]]:
                        raise MazeError(f"open_sides: wall between {(r, c)} and {(nr, nc)} is one-sided")
        if self._distances[self._index(self.start)] < 0:
            raise MazeError(f"goal {self.goal} cannot be reached from start {self.start}; the maze is unsolvable")

    # ------------------------------------------------------------------ geometry
    def in_bounds(self, cell: Cell) -> bool:
        """True if ``cell`` lies inside the grid."""
        return 0 <= cell[0] < self.rows and 0 <= cell[1] < self.cols

    def _index(self, cell: Cell) -> int:
        return cell[0] * self.cols + cell[1]

    def _check_cell(self, cell: Cell) -> None:
        if not self.in_bounds(cell):
            raise MazeError(f"cell {cell} is outside the {self.rows}x{self.cols} grid")

    def is_open(self, cell: Cell, direction: str) -> bool:
        """True if there is no wall on the ``direction`` side of ``cell``.

        Raises:
            MazeError: if ``direction`` is not one of :data:`DIRECTIONS` or the cell is outside the grid.
        """
        if direction not in OPEN_BITS:
            raise MazeError(f"direction={direction!r} is not one of {listed(DIRECTIONS)}")
        self._check_cell(cell)
        return bool(self.open_sides[self._index(cell)] & OPEN_BITS[direction])

    def move(self, cell: Cell, direction: str) -> tuple[Cell, bool]:
        """Apply one move.

        Returns:
            ``(new_cell, blocked)``. A wall blocks the move: the agent stays and ``blocked`` is True.

        Raises:
            MazeError: on an unknown direction or a cell outside the grid.
        """
        if not self.is_open(cell, direction):
            return (cell[0], cell[1]), True
        dr, dc = DELTAS[direction]
        return (cell[0] + dr, cell[1] + dc), False

    # ------------------------------------------------------------------ BFS
    @cached_property
    def _distances(self) -> tuple[int, ...]:
        """BFS distance (moves) from every cell to the goal, row-major; -1 where unreachable."""
        dist = [-1] * (self.rows * self.cols)
        dist[self._index(self.goal)] = 0
        queue: deque[Cell] = deque([self.goal])
        while queue:
            r, c = queue.popleft()
            here = dist[r * self.cols + c]
            mask = self.open_sides[r * self.cols + c]
            for d in DIRECTIONS:
                if mask & OPEN_BITS[d]:
                    nr, nc = r + DELTAS[d][0], c + DELTAS[d][1]
                    i = nr * self.cols + nc
                    if dist[i] < 0:
                        dist[i] = here + 1
                        queue.append((nr, nc))
        return tuple(dist)

    def distance_to_goal(self, cell: Cell) -> int:
        """BFS distance in moves from ``cell`` to the goal (cached per maze).

        Raises:
            MazeError: if the cell is outside the grid.
        """
        self._check_cell(cell)
        return self._distances[self._index(cell)]

    def optimal_moves(self, cell: Cell) -> frozenset[str]:
        """Every move from ``cell`` that lies on some shortest path to the goal.

        With loops (braided mazes) several moves can be optimal; at the goal the set is empty.
        """
        here = self.distance_to_goal(cell)
        if here <= 0:
            return frozenset()
        mask = self.open_sides[self._index(cell)]
        out = []
        for d in DIRECTIONS:
            if mask & OPEN_BITS[d]:
                nr, nc = cell[0] + DELTAS[d][0], cell[1] + DELTAS[d][1]
                if self._distances[nr * self.cols + nc] == here - 1:
                    out.append(d)
        return frozenset(out)

    @property
    def shortest_path_length(self) -> int:
        """Moves on a shortest path from ``start`` to ``goal``."""
        return self._distances[self._index(self.start)]

    def shortest_path(self, cell: Cell | None = None) -> tuple[str, ...]:
        """One shortest move sequence from ``cell`` (default ``start``) to the goal.

        Ties are broken by :data:`DIRECTIONS` order, so the result is deterministic.
        """
        here = self.start if cell is None else cell
        moves: list[str] = []
        while here != self.goal:
            best = self.optimal_moves(here)
            d = next(x for x in DIRECTIONS if x in best)
            moves.append(d)
            here, _ = self.move(here, d)
        return tuple(moves)

    def num_turns(self) -> int:
        """Direction changes along :meth:`shortest_path` (a difficulty measure)."""
        path = self.shortest_path()
        return sum(1 for a, b in zip(path, path[1:], strict=False) if a != b)

    # ------------------------------------------------------------------ identity / IO
    def _canonical(self) -> dict[str, object]:
        return {
            "rows": self.rows,
            "cols": self.cols,
            "start": list(self.start),
            "goal": list(self.goal),
            "open_sides": list(self.open_sides),
        }

    def layout_hash(self) -> str:
        """Stable sha256 hex digest of the layout, start and goal (independent of rendering)."""
        blob = json.dumps(self._canonical(), separators=(",", ":"), sort_keys=True)
        return hashlib.sha256(blob.encode("ascii")).hexdigest()

    def to_json(self) -> str:
        """Compact JSON round-tripped by :meth:`from_json`."""
        return json.dumps(self._canonical(), separators=(",", ":"), sort_keys=True)

    @classmethod
    def from_json(cls, s: str | bytes) -> Maze:
        """Rebuild a maze from :meth:`to_json` output.

        Raises:
            MazeError: if the text is not valid maze JSON (missing field, bad JSON, invalid layout).
        """
        try:
            data = json.loads(s)
        except (TypeError, ValueError) as e:
            raise MazeError(f"maze JSON could not be parsed: {e}") from e
        if not isinstance(data, dict):
            raise MazeError("maze JSON must be an object with rows, cols, start, goal, open_sides")
        missing = [k for k in ("rows", "cols", "start", "goal", "open_sides") if k not in data]
        if missing:
            raise MazeError(f"maze JSON is missing field(s) {listed(missing)}")
        return cls(
            rows=data["rows"],
            cols=data["cols"],
            start=tuple(data["start"]),
            goal=tuple(data["goal"]),
            open_sides=tuple(data["open_sides"]),
        )

    def to_text(self, agent: Cell | None = None) -> str:
        """The text-grid twin: the same layout in characters.

        The grid has ``2*rows+1`` lines of ``2*cols+1`` characters: ``#`` wall, ``.`` open
        floor or passage, ``A`` agent (``agent``, default ``start``), ``G`` goal. Cell
        ``(r, c)`` sits at line ``2r+1``, column ``2c+1``.
        """
        here: Cell = self.start if agent is None else (int(agent[0]), int(agent[1]))
        self._check_cell(here)
        h, w = 2 * self.rows + 1, 2 * self.cols + 1
        grid = [["#"] * w for _ in range(h)]
        for r in range(self.rows):
            for c in range(self.cols):
                mask = self.open_sides[r * self.cols + c]
                grid[2 * r + 1][2 * c + 1] = "."
                if mask & OPEN_BITS["right"]:
                    grid[2 * r + 1][2 * c + 2] = "."
                if mask & OPEN_BITS["down"]:
                    grid[2 * r + 2][2 * c + 1] = "."
        grid[2 * self.goal[0] + 1][2 * self.goal[1] + 1] = "G"
        grid[2 * here[0] + 1][2 * here[1] + 1] = "A"
        return "\n".join("".join(line) for line in grid)


def default_max_turns(maze: Maze) -> int:
    """Default step-mode turn limit of a maze episode: ``2 * shortest_path_length + 4``."""
    return 2 * maze.shortest_path_length + 4
