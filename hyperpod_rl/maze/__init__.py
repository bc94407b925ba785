"""The visual maze task: generation, rendering, answer parsing, reward, skyrl-gym env and datasets.

The lowest layer of hyperpod_rl: it imports nothing from the package except
:mod:`hyperpod_rl.errors` (no Ray, no torch, no training code). The written answer-format
and reward spec is ``docs/maze-task.md``.

Example:
    >>> from hyperpod_rl.maze import generate_maze, render_maze, parse_answer
    >>> maze = generate_maze(5, 5, seed=0)
    >>> render_maze(maze).size
    (160, 160)
    >>> parse_answer("left, then <answer>up</answer>").moves
    ('up',)
"""

from hyperpod_rl.maze.answer import VIOLATIONS, VISION_TOKENS, ParsedAnswer, parse_answer
from hyperpod_rl.maze.audit import AUDIT_CASES, AuditReport, run_audit
from hyperpod_rl.maze.dataset import SPLITS, DatasetSpec, build_dataset, read_parquet, write_parquet
from hyperpod_rl.maze.env import ENV_CLASS, MazeEnv, default_max_turns, register_env
from hyperpod_rl.maze.generate import ALGORITHMS, generate_maze
from hyperpod_rl.maze.grid import DIRECTIONS, Cell, Maze
from hyperpod_rl.maze.messages import SYSTEM_PROMPT, build_prompt, clean_messages, decode_image_part, image_part
from hyperpod_rl.maze.render import RenderStyle, fit_style, image_size_px, image_token_count, render_maze, render_png
from hyperpod_rl.maze.reward import REWARD_VERSION, max_return, score_completion, score_move, score_plan, score_step
from hyperpod_rl.maze.strata import stratum_of

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
    "ParsedAnswer",
    "RenderStyle",
    "build_dataset",
    "build_prompt",
    "clean_messages",
    "decode_image_part",
    "default_max_turns",
    "fit_style",
    "generate_maze",
    "image_part",
    "image_size_px",
    "image_token_count",
    "max_return",
    "parse_answer",
    "read_parquet",
    "register_env",
    "render_maze",
    "render_png",
    "run_audit",
    "score_completion",
    "score_move",
    "score_plan",
    "score_step",
    "stratum_of",
    "write_parquet",
]
