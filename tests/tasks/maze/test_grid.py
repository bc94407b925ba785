"""Maze layout: walls, BFS distances, optimal moves, JSON and the text twin."""

from __future__ import annotations

from collections import deque

import pytest

from hyperpod_rl.errors import MazeError
from hyperpod_rl.tasks.maze import DIRECTIONS, Maze, generate_maze

CORRIDOR_SIDES = (8, 12, 6, 8, 12, 5)  # same layout as the `corridor` fixture in conftest.py


def _brute_distances(maze: Maze) -> dict[tuple[int, int], int]:
    """Independent BFS from the goal using only Maze.move (walls block)."""
    dist = {maze.goal: 0}
    queue = deque([maze.goal])
    while queue:
        cell = queue.popleft()
        for d in DIRECTIONS:
            nxt, blocked = maze.move(cell, d)
            if not blocked and nxt not in dist:
                dist[nxt] = dist[cell] + 1
                queue.append(nxt)
    return dist


def test_walls_block_and_agent_stays(corridor: Maze) -> None:
    assert corridor.move((0, 0), "down") == ((0, 0), True)
    assert corridor.move((0, 0), "up") == ((0, 0), True)  # outer wall
    assert corridor.move((0, 0), "left") == ((0, 0), True)
    assert corridor.move((0, 0), "right") == ((0, 1), False)
    assert corridor.move((0, 2), "down") == ((1, 2), False)
    assert corridor.move((1, 1), "up") == ((1, 1), True)


def test_corridor_distances_and_optimal_moves(corridor: Maze) -> None:
    assert corridor.shortest_path_length == 5
    assert corridor.shortest_path() == ("right", "right", "down", "left", "left")
    assert corridor.distance_to_goal((1, 2)) == 2
    assert corridor.optimal_moves((0, 0)) == frozenset({"right"})
    assert corridor.optimal_moves((1, 2)) == frozenset({"left"})
    assert corridor.optimal_moves((1, 0)) == frozenset()
    assert corridor.num_turns() == 2


@pytest.mark.parametrize("algorithm", ["backtracker", "prim", "kruskal"])
@pytest.mark.parametrize("braid", [0.0, 1.0])
def test_bfs_optimal_moves_match_brute_force(algorithm: str, braid: float) -> None:
    maze = generate_maze(7, 6, seed=11, algorithm=algorithm, braid=braid)
    brute = _brute_distances(maze)
    assert len(brute) == maze.rows * maze.cols  # every cell reachable
    for cell, d in brute.items():
        assert maze.distance_to_goal(cell) == d
        expected = {m for m in DIRECTIONS if not maze.move(cell, m)[1] and brute[maze.move(cell, m)[0]] == d - 1}
        assert maze.optimal_moves(cell) == expected
        assert bool(expected) == (d > 0)


def test_json_round_trip_and_hash_stability(corridor: Maze) -> None:
    again = Maze.from_json(corridor.to_json())
    assert again == corridor
    assert again.layout_hash() == corridor.layout_hash()
    moved = Maze(rows=2, cols=3, start=(0, 1), goal=(1, 0), open_sides=CORRIDOR_SIDES)
    assert moved.layout_hash() != corridor.layout_hash()  # start is part of the hash
    assert len(corridor.layout_hash()) == 64


def test_text_twin(corridor: Maze) -> None:
    assert corridor.to_text() == "\n".join(
        [
            "#######",
            "#A....#",
            "#####.#",
            "#G....#",
            "#######",
        ]
    )
    assert corridor.to_text(agent=(1, 2)).splitlines()[3] == "#G...A#"


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"rows": 1, "cols": 3, "start": (0, 0), "goal": (0, 1), "open_sides": (8, 12, 4)}, "rows=1"),
        ({"rows": 2, "cols": 3, "start": (0, 0), "goal": (0, 0), "open_sides": CORRIDOR_SIDES}, "same cell"),
        ({"rows": 2, "cols": 3, "start": (0, 0), "goal": (5, 0), "open_sides": CORRIDOR_SIDES}, "goal=.*outside"),
        ({"rows": 2, "cols": 3, "start": (0, 0), "goal": (1, 0), "open_sides": (8, 12, 6, 8, 12)}, "open_sides has 5"),
        ({"rows": 2, "cols": 3, "start": (0, 0), "goal": (1, 0), "open_sides": (9, 12, 6, 8, 12, 5)}, "outer wall"),
        ({"rows": 2, "cols": 3, "start": (0, 0), "goal": (1, 0), "open_sides": (8, 12, 6, 8, 12, 4)}, "one-sided"),
        ({"rows": 2, "cols": 3, "start": (0, 0), "goal": (1, 0), "open_sides": (8, 4, 0, 0, 0, 0)}, "unsolvable"),
    ],
)
def test_invalid_layouts_name_the_field(kwargs: dict, match: str) -> None:
    with pytest.raises(MazeError, match=match):
        Maze(**kwargs)


def test_from_json_errors() -> None:
    with pytest.raises(MazeError, match="could not be parsed"):
        Maze.from_json("{not json")
    with pytest.raises(MazeError, match=r"missing field\(s\) open_sides$"):
        Maze.from_json('{"rows": 2, "cols": 2, "start": [0, 0], "goal": [1, 1]}')


def test_unknown_direction_and_cell(corridor: Maze) -> None:
    with pytest.raises(MazeError, match="direction='north'"):
        corridor.move((0, 0), "north")
    with pytest.raises(MazeError, match=r"cell \(3, 0\) is outside"):
        corridor.distance_to_goal((3, 0))
