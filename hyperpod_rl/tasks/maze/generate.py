"""Seeded, reproducible maze generators.

Three classic perfect-maze generators (every pair of cells joined by exactly one
path), plus *braiding*, which removes dead ends by opening extra walls so that
loops, and with them several shortest paths, appear:

* ``backtracker`` - randomised depth-first search: long, winding corridors.
* ``prim`` - randomised Prim's algorithm on the cell frontier: many short dead ends.
* ``kruskal`` - randomised Kruskal's algorithm over a shuffled wall list (union-find).

Reference: Jamis Buck, *Mazes for Programmers* (2015), chapters 5-11 (algorithms and braiding).

All randomness flows from one ``random.Random(seed)``; the same arguments give the
same :meth:`Maze.layout_hash` on every platform and Python >= 3.12 run.
"""

from __future__ import annotations

import random
from typing import Final, Literal, get_args

from hyperpod_rl.base import listed
from hyperpod_rl.errors import MazeError
from hyperpod_rl.tasks.maze.grid import DELTAS, DIRECTIONS, OPEN_BITS, OPPOSITE, Cell, Maze, _check_side

__all__ = ["ALGORITHMS", "Algorithm", "generate_maze"]

Algorithm = Literal["backtracker", "prim", "kruskal"]
ALGORITHMS: Final[tuple[str, ...]] = get_args(Algorithm)


class _Carver:
    """Mutable wall state used while generating; turned into a frozen :class:`Maze` at the end."""

    def __init__(self, rows: int, cols: int) -> None:
        self.rows, self.cols = rows, cols
        self.mask = [0] * (rows * cols)

    def neighbours(self, cell: Cell) -> list[tuple[str, Cell]]:
        out = []
        for d in DIRECTIONS:
            nr, nc = cell[0] + DELTAS[d][0], cell[1] + DELTAS[d][1]
            if 0 <= nr < self.rows and 0 <= nc < self.cols:
                out.append((d, (nr, nc)))
        return out

    def carve(self, cell: Cell, direction: str) -> None:
        nr, nc = cell[0] + DELTAS[direction][0], cell[1] + DELTAS[direction][1]
        self.mask[cell[0] * self.cols + cell[1]] |= OPEN_BITS[direction]
        self.mask[nr * self.cols + nc] |= OPEN_BITS[OPPOSITE[direction]]

    def degree(self, cell: Cell) -> int:
        return bin(self.mask[cell[0] * self.cols + cell[1]]).count("1")

    def is_open(self, cell: Cell, direction: str) -> bool:
        return bool(self.mask[cell[0] * self.cols + cell[1]] & OPEN_BITS[direction])


def _backtracker(c: _Carver, rng: random.Random) -> None:
    start = (rng.randrange(c.rows), rng.randrange(c.cols))
    seen = {start}
    stack = [start]
    while stack:
        cell = stack[-1]
        options = [(d, n) for d, n in c.neighbours(cell) if n not in seen]
        if not options:
            stack.pop()
            continue
        d, n = options[rng.randrange(len(options))]
        c.carve(cell, d)
        seen.add(n)
        stack.append(n)


def _prim(c: _Carver, rng: random.Random) -> None:
    start = (rng.randrange(c.rows), rng.randrange(c.cols))
    inside = {start}
    frontier: list[Cell] = []
    in_frontier: set[Cell] = set()

    def add_frontier(cell: Cell) -> None:
        for _, n in c.neighbours(cell):
            if n not in inside and n not in in_frontier:
                in_frontier.add(n)
                frontier.append(n)

    add_frontier(start)
    while frontier:
        i = rng.randrange(len(frontier))
        frontier[i], frontier[-1] = frontier[-1], frontier[i]
        cell = frontier.pop()
        in_frontier.discard(cell)
        links = [(d, n) for d, n in c.neighbours(cell) if n in inside]
        d, _ = links[rng.randrange(len(links))]
        c.carve(cell, d)
        inside.add(cell)
        add_frontier(cell)


def _kruskal(c: _Carver, rng: random.Random) -> None:
    parent = list(range(c.rows * c.cols))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    walls = [((r, col), d) for r in range(c.rows) for col in range(c.cols) for d in ("down", "right")]
    walls = [(cell, d) for cell, d in walls if (cell[0] + DELTAS[d][0] < c.rows and cell[1] + DELTAS[d][1] < c.cols)]
    rng.shuffle(walls)
    for cell, d in walls:
        n = (cell[0] + DELTAS[d][0], cell[1] + DELTAS[d][1])
        a, b = find(cell[0] * c.cols + cell[1]), find(n[0] * c.cols + n[1])
        if a != b:
            parent[a] = b
            c.carve(cell, d)


def _braid(c: _Carver, rng: random.Random, braid: float) -> None:
    """Open one extra wall at each dead end with probability ``braid`` (prefer linking two dead ends)."""
    dead_ends = [(r, col) for r in range(c.rows) for col in range(c.cols) if c.degree((r, col)) == 1]
    rng.shuffle(dead_ends)
    for cell in dead_ends:
        if c.degree(cell) != 1 or rng.random() >= braid:
            continue
        closed = [(d, n) for d, n in c.neighbours(cell) if not c.is_open(cell, d)]
        if not closed:
            continue
        best = [(d, n) for d, n in closed if c.degree(n) == 1] or closed
        d, _ = best[rng.randrange(len(best))]
        c.carve(cell, d)


_GENERATORS = {"backtracker": _backtracker, "prim": _prim, "kruskal": _kruskal}


def generate_maze(
    rows: int,
    cols: int,
    *,
    seed: int,
    algorithm: Algorithm = "backtracker",
    braid: float = 0.0,
    start: Cell | None = None,
    goal: Cell | None = None,
) -> Maze:
    """Generate a seeded maze.

    Args:
        rows: Height in cells (2..64).
        cols: Width in cells (2..64).
        seed: Any int; the same arguments always give the same layout hash.
        algorithm: ``"backtracker"``, ``"prim"`` or ``"kruskal"``.
        braid: Fraction in [0, 1] of dead ends that get one extra opening. 0 gives a
            perfect maze (one path between any two cells); > 0 adds loops, so several
            shortest paths can exist.
        start: Start cell; drawn uniformly from the grid when None.
        goal: Goal cell; drawn uniformly from the remaining cells when None.

    Returns:
        A frozen :class:`Maze`; start and goal are always connected.

    Raises:
        MazeError: naming the bad field (size out of range, unknown algorithm, braid
            outside [0, 1], start/goal outside the grid or equal).
    """
    _check_side("rows", rows)
    _check_side("cols", cols)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise MazeError(f"seed must be an int, got {seed!r}")
    if algorithm not in _GENERATORS:
        raise MazeError(f"algorithm={algorithm!r} is not supported; use one of {listed(ALGORITHMS)}")
    if not isinstance(braid, (int, float)) or not 0.0 <= float(braid) <= 1.0:
        raise MazeError(f"braid={braid!r} must be a fraction in [0, 1]")
    # Mix the generator name into the seed so different algorithms do not share random streams.
    rng = random.Random(f"hyperpod_rl.maze:{algorithm}:{rows}x{cols}:{seed}")
    carver = _Carver(rows, cols)
    _GENERATORS[algorithm](carver, rng)
    if braid > 0:
        _braid(carver, rng, float(braid))
    cells = [(r, c) for r in range(rows) for c in range(cols)]
    if start is None:
        start = cells[rng.randrange(len(cells))]
    if goal is None:
        others = [cell for cell in cells if cell != tuple(start)]
        goal = others[rng.randrange(len(others))]
    return Maze(
        rows=rows, cols=cols, start=(int(start[0]), int(start[1])), goal=(int(goal[0]), int(goal[1])), open_sides=tuple(carver.mask)
    )
