"""Greedy benchmark episodes: one greedy episode per maze, recorded maze by maze.

Shared by the trainer (the base-model benchmark recorded before step 1 of every run) and
:func:`hyperpod_rl.eval.evaluate`, so both write the same per-maze records.
"""

from __future__ import annotations

from typing import Any

from hyperpod_rl.maze import aggregate_metrics
from hyperpod_rl.model.policy import MazePolicy
from hyperpod_rl.model.rollout import play_episodes

__all__ = ["greedy_benchmark"]


def greedy_benchmark(
    policy: MazePolicy, rows: list[dict[str, Any]], *, max_turns: int | None = None
) -> tuple[dict[str, float], list[dict[str, Any]]]:
    """Play one greedy episode per row.

    Args:
        policy: the acting policy (base model or base + adapter).
        rows: dataset rows (SkyRL format with the maze extras).
        max_turns: overrides the rows' turn limit.

    Returns:
        ``(metrics, per_maze)``: the env's aggregate metrics (:func:`hyperpod_rl.maze.aggregate_metrics`,
        rates in [0, 1]) and one dict per maze with ``layout_hash``, ``size`` ``[rows, cols]``,
        ``stratum``, ``split``, ``observation``, ``moves`` and the episode metrics (``solved``,
        ``turns``, ``optimal_move_rate``, ``invalid_move_rate``, ``blocked_move_rate``,
        ``steps_over_optimal`` when solved).
    """
    episodes = play_episodes(policy, rows, group_size=1, greedy=True, max_turns=max_turns)
    metrics = aggregate_metrics([ep.metrics for ep in episodes])
    per_maze = []
    for ep in episodes:
        row = rows[ep.row_index]
        per_maze.append(
            {
                "layout_hash": row["layout_hash"],
                "size": [int(row["rows"]), int(row["cols"])],
                "stratum": row.get("stratum"),
                "split": row.get("split"),
                "observation": row.get("observation", "image"),
                "moves": [t.action.text for t in ep.turns],
                **ep.metrics,
            }
        )
    return {k: float(v) for k, v in metrics.items()}, per_maze
