"""The visual maze task: generation, rendering, answer parsing, reward, skyrl-gym env and datasets.

The first task plug-in (:mod:`hyperpod_rl.tasks.maze.task`, entry point ``maze`` of the
``hyperpod_rl.tasks`` group; ``docs/tasks.md``). It imports nothing from the package except the task
API (:mod:`hyperpod_rl.tasks`), :mod:`hyperpod_rl.errors` and :mod:`hyperpod_rl.base`, and no torch,
Ray or skyrl-gym at import time (``MazeEnv`` loads skyrl-gym on first use; :func:`make_env` builds
envs). The written answer-format and reward spec is ``docs/maze-task.md``.

Example:
    >>> from hyperpod_rl.tasks.maze import generate_maze, render_maze, parse_answer
    >>> maze = generate_maze(5, 5, seed=0)
    >>> render_maze(maze).size
    (160, 160)
    >>> parse_answer("left, then <answer>up</answer>").moves
    ('up',)
"""

from hyperpod_rl.tasks.answer import VISION_TOKENS
from hyperpod_rl.tasks.maze.answer import VIOLATIONS, ParsedAnswer, parse_answer
from hyperpod_rl.tasks.maze.audit import AUDIT_CASES, AuditReport, run_audit
from hyperpod_rl.tasks.maze.dataset import SPLITS, DatasetSpec, MazeRow, build_dataset, read_rows, write_parquet
from hyperpod_rl.tasks.maze.generate import ALGORITHMS, generate_maze
from hyperpod_rl.tasks.maze.grid import DIRECTIONS, Cell, Maze, default_max_turns
from hyperpod_rl.tasks.maze.messages import SYSTEM_PROMPT, build_prompt, clean_messages, decode_image_part, flatten_alpha, image_part
from hyperpod_rl.tasks.maze.registry import ENV_CLASS, make_env, register_env
from hyperpod_rl.tasks.maze.render import (
    RenderStyle,
    encode_png,
    fit_style,
    image_size_px,
    image_token_count,
    render_maze,
    render_path,
    render_png,
)
from hyperpod_rl.tasks.maze.reward import (
    REWARD_VERSION,
    aggregate_metrics,
    max_return,
    score_completion,
    score_move,
    score_plan,
    score_step,
)
from hyperpod_rl.tasks.maze.strata import stratum_of
from hyperpod_rl.tasks.registry import lazy_attributes

__all__ = [
    "ALGORITHMS",
    "AUDIT_CASES",
    "DIRECTIONS",
    "ENV_CLASS",
    "REWARD_VERSION",
    "SPLITS",
    "SYSTEM_PROMPT",
    "VIOLATIONS",
    "VISION_TOKENS",
    "AuditReport",
    "Cell",
    "DatasetSpec",
    "Maze",
    "MazeEnv",
    "MazeRow",
    "ParsedAnswer",
    "RenderStyle",
    "aggregate_metrics",
    "build_dataset",
    "build_prompt",
    "clean_messages",
    "decode_image_part",
    "default_max_turns",
    "encode_png",
    "fit_style",
    "flatten_alpha",
    "generate_maze",
    "image_part",
    "image_size_px",
    "image_token_count",
    "make_env",
    "max_return",
    "parse_answer",
    "read_rows",
    "register_env",
    "render_maze",
    "render_path",
    "render_png",
    "run_audit",
    "score_completion",
    "score_move",
    "score_plan",
    "score_step",
    "stratum_of",
    "write_parquet",
]


#: ``MazeEnv`` is loaded on first use: it imports skyrl-gym, which the rest of the task does not need.
__getattr__ = lazy_attributes(__name__, {"MazeEnv": "hyperpod_rl.tasks.maze.env:MazeEnv"})
