"""Shared fixtures for the maze tests."""

from __future__ import annotations

import pytest

from hyperpod_rl.tasks.maze import Maze

# A 2x3 maze with one corridor: (0,0) > (0,1) > (0,2) v (1,2) < (1,1) < (1,0).
#   +---+---+---+
#   | S         |
#   +---+---+   +
#   | G         |
#   +---+---+---+
# Bits: up=1, down=2, left=4, right=8.
CORRIDOR_SIDES = (8, 12, 6, 8, 12, 5)


@pytest.fixture
def corridor() -> Maze:
    return Maze(rows=2, cols=3, start=(0, 0), goal=(1, 0), open_sides=CORRIDOR_SIDES)
