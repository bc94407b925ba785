"""Hypothesis property tests on random mazes: connectivity, BFS optimality, reward bounds and maximum."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from hyperpod_rl.tasks.maze import ALGORITHMS, DIRECTIONS, Maze, generate_maze, max_return, score_plan, score_step
from hyperpod_rl.tasks.maze.reward import PLAN_REWARD_FLOOR, step_reward_bounds

mazes = st.builds(
    generate_maze,
    rows=st.integers(2, 12),
    cols=st.integers(2, 12),
    seed=st.integers(0, 2**62),
    algorithm=st.sampled_from(ALGORITHMS),
    braid=st.sampled_from([0.0, 0.25, 1.0]) | st.floats(0.0, 1.0),
)
moves = st.lists(st.sampled_from(DIRECTIONS), max_size=40)
junk = st.text(max_size=60) | st.sampled_from(["<answer>", "</answer>", "<think>", "<|image_pad|>", "up", "<answer>up"])
completions = (
    moves.map(lambda ms: f"<answer>{' '.join(ms)}</answer>")
    | st.tuples(junk, moves, junk).map(lambda t: f"{t[0]}<answer>{' '.join(t[1])}</answer>{t[2]}")
    | junk
)
PROPS = settings(max_examples=60, deadline=None)


def _cell(maze: Maze, data: st.DataObject) -> tuple[int, int]:
    return (data.draw(st.integers(0, maze.rows - 1)), data.draw(st.integers(0, maze.cols - 1)))


@PROPS
@given(mazes)
def test_start_and_goal_connected_and_every_cell_reachable(maze: Maze) -> None:
    assert maze.shortest_path_length >= 1
    cells = [(r, c) for r in range(maze.rows) for c in range(maze.cols)]
    assert all(maze.distance_to_goal(cell) >= 0 for cell in cells)
    here = maze.start
    for move in maze.shortest_path():
        here, blocked = maze.move(here, move)
        assert not blocked
    assert here == maze.goal


@PROPS
@given(mazes, st.data())
def test_bfs_moves_are_optimal(maze: Maze, data: st.DataObject) -> None:
    cell = _cell(maze, data)
    d = maze.distance_to_goal(cell)
    best = maze.optimal_moves(cell)
    for move in DIRECTIONS:
        nxt, blocked = maze.move(cell, move)
        if move in best:
            assert not blocked and maze.distance_to_goal(nxt) == d - 1
        else:
            assert blocked or maze.distance_to_goal(nxt) == d + 1  # bipartite grid: never equal
    # Any choice among optimal moves reaches the goal in exactly d moves.
    for _ in range(d):
        cell, _ = maze.move(cell, data.draw(st.sampled_from(sorted(maze.optimal_moves(cell)))))
    assert cell == maze.goal


@PROPS
@given(mazes, st.data(), completions)
def test_reward_is_bounded(maze: Maze, data: st.DataObject, completion: str) -> None:
    cell = _cell(maze, data)
    if cell == maze.goal:
        cell = maze.start
    low, high = step_reward_bounds()
    assert low <= score_step(maze, cell, completion).reward <= high
    plan = score_plan(maze, completion, cell=cell).reward
    assert PLAN_REWARD_FLOOR <= plan <= max_return(maze, cell)


@PROPS
@given(mazes, st.data(), moves)
def test_optimal_path_scores_the_maximum(maze: Maze, data: st.DataObject, other: list[str]) -> None:
    # Any shortest path (ties chosen at random on braided mazes) scores exactly max_return ...
    cell, total, path = maze.start, 0.0, []
    while cell != maze.goal:
        move = data.draw(st.sampled_from(sorted(maze.optimal_moves(cell))))
        out = score_step(maze, cell, f"<answer>{move}</answer>")
        total, cell = total + out.reward, out.cell_after
        path.append(move)
    best = max_return(maze)
    assert abs(total - best) < 1e-9
    assert abs(score_plan(maze, f"<answer>{' '.join(path)}</answer>").reward - best) < 1e-9
    # ... and no other move sequence scores more, in either mode.
    cell, total = maze.start, 0.0
    for move in other:
        out = score_step(maze, cell, f"<answer>{move}</answer>")
        total, cell = total + out.reward, out.cell_after
        if out.solved:
            break
    assert total <= best + 1e-9
    assert score_plan(maze, f"<answer>{' '.join(other)}</answer>").reward <= best + 1e-9
