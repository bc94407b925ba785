"""Multi-turn rollouts: a policy plays maze episodes through the skyrl-gym maze env.

Each episode is created with :func:`hyperpod_rl.tasks.make_env` (``skyrl_gym.make(row['env_class'], ...)``) exactly as
SkyRL's generator creates envs, starts from the row's ``prompt`` and runs turn by turn: the
policy sees the image, answers one move, the env returns the reward and the new image, until
the goal or the turn limit. Episodes of all groups advance in lock-step so that each turn is one
batched forward pass.

Context per turn: the system message(s) plus the latest observation. The maze is fully
observable from the latest image (it shows the agent), so earlier turns add tokens but no
information; SkyRL's generator keeps the full history instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from hyperpod_rl.model.policy import Action, MazePolicy
from hyperpod_rl.tasks import make_env

__all__ = ["Episode", "Turn", "play_episodes"]


@dataclass
class Turn:
    """One turn of one episode: what the policy saw, what it answered, what it got."""

    context: list[dict[str, Any]]
    action: Action
    reward: float
    metadata: dict[str, Any]


@dataclass
class Episode:
    """One episode.

    Attributes:
        row_index: index of the dataset row (maze) it played.
        turns: the turns in order.
        metrics: the env's ``get_metrics()`` at the end (solve_rate, optimal_move_rate, ...).
    """

    row_index: int
    turns: list[Turn] = field(default_factory=list)
    metrics: dict[str, float] = field(default_factory=dict)

    @property
    def total_return(self) -> float:
        return float(sum(t.reward for t in self.turns))


def _context(system: list[dict[str, Any]], observation: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return system + [m for m in observation if m.get("role") != "system"][-1:]


def play_episodes(
    policy: MazePolicy,
    rows: list[dict[str, Any]],
    *,
    group_size: int = 1,
    greedy: bool = False,
    temperature: float = 1.0,
    max_turns: int | None = None,
    generator: torch.Generator | None = None,
    batch_size: int = 128,
) -> list[Episode]:
    """Play ``group_size`` episodes of every row.

    Args:
        policy: the acting policy.
        rows: dataset rows (SkyRL format: ``prompt``, ``env_class`` and the maze extras).
        group_size: episodes per row (GRPO group); episodes of row i are
            ``result[i * group_size : (i + 1) * group_size]``.
        greedy: argmax decoding (evaluation).
        temperature: sampling temperature.
        max_turns: overrides the rows' turn limit.
        generator: torch RNG for sampling.
        batch_size: observations per forward pass.

    Returns:
        ``len(rows) * group_size`` episodes, grouped by row.
    """
    envs, contexts, systems, episodes = [], [], [], []
    for i, row in enumerate(rows):
        extras = dict(row)
        if max_turns is not None:
            extras["max_turns"] = max_turns
        for _ in range(group_size):
            env = make_env(None, extras)  # the task of the row's env_class
            prompt, _ = env.init(list(row["prompt"]))
            system = [m for m in prompt if m.get("role") == "system"]
            envs.append(env)
            systems.append(system)
            contexts.append(_context(system, prompt))
            episodes.append(Episode(row_index=i))
    active = list(range(len(envs)))
    while active:
        actions: list[Action] = []
        for start in range(0, len(active), batch_size):
            chunk = active[start : start + batch_size]
            actions.extend(policy.act([contexts[k] for k in chunk], greedy=greedy, temperature=temperature, generator=generator))
        still = []
        for k, action in zip(active, actions, strict=True):
            out = envs[k].step(action.text)
            episodes[k].turns.append(
                Turn(context=contexts[k], action=action, reward=float(out["reward"]), metadata=dict(out.get("metadata") or {}))
            )
            if out["done"]:
                episodes[k].metrics = {key: float(v) for key, v in envs[k].get_metrics().items() if isinstance(v, (int, float))}
                envs[k].close()
            else:
                contexts[k] = _context(systems[k], out["observations"])
                still.append(k)
        active = still
    return episodes
