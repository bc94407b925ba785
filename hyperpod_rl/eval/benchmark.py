"""Greedy benchmark episodes: one greedy episode per row (maze or any task's item), recorded row by row.

Shared by the trainer (the base-model benchmark recorded before step 1 of every run) and
:func:`hyperpod_rl.eval.evaluate`, so both write the same per-maze records.
"""

from __future__ import annotations

from typing import Any

from hyperpod_rl.model.policy import MazePolicy
from hyperpod_rl.model.rollout import play_episodes
from hyperpod_rl.tasks import task_of_row

__all__ = ["greedy_benchmark"]


def greedy_benchmark(
    policy: MazePolicy, rows: list[dict[str, Any]], *, max_turns: int | None = None
) -> tuple[dict[str, float], list[dict[str, Any]]]:
    """Play one greedy episode per row.

    Args:
        policy: the acting policy (base model or base + adapter).
        rows: dataset rows of one task (SkyRL format with the task's extras; the task is found
            from the rows' ``env_class``).
        max_turns: overrides the rows' turn limit.

    Returns:
        ``(metrics, per_maze)``: the task's aggregate metrics (:meth:`Task.aggregate_metrics`; the
        maze's :func:`hyperpod_rl.tasks.maze.aggregate_metrics`, rates in [0, 1]) and one dict per row
        with ``layout_hash`` (the row's content hash, :attr:`Task.hash_column`), ``size``
        ``[rows, cols]`` (rows that have them), ``stratum``, ``split``, ``observation``, ``moves``
        (the answers) and the episode metrics (maze: ``solved``, ``turns``, ``optimal_move_rate``,
        ``invalid_move_rate``, ``blocked_move_rate``, ``steps_over_optimal`` when solved).
    """
    if not rows:
        return {}, []
    task = task_of_row(rows[0])
    episodes = play_episodes(policy, rows, group_size=1, greedy=True, max_turns=max_turns)
    metrics = task.aggregate_metrics([ep.metrics for ep in episodes])
    per_maze = []
    for ep in episodes:
        row = rows[ep.row_index]
        size = {"size": [int(row["rows"]), int(row["cols"])]} if "rows" in row and "cols" in row else {}
        per_maze.append(
            {
                "layout_hash": row[task.hash_column],
                **size,
                "stratum": row.get("stratum"),
                "split": row.get("split"),
                "observation": row.get("observation", "image"),
                "moves": [t.action.text for t in ep.turns],
                **ep.metrics,
            }
        )
    return {k: float(v) for k, v in metrics.items()}, per_maze
