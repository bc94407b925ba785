"""Build SkyRL dataset rows for the maze task and read/write them as parquet.

Row format (SkyRL 0.3.0 ``PromptDataset``: ``prompt`` is the chat, ``env_class`` picks the env,
every other column reaches the env as ``extras``; ``data_source`` keys eval metrics):

============================ =============================================================
``prompt``                   system message + first user message (start image, instructions)
``env_class``                :data:`~hyperpod_rl.tasks.maze.registry.ENV_CLASS`
``data_source``              ``"{spec.data_source}/{split}"``
``maze``                     :meth:`Maze.to_json` text
``layout_hash``              :meth:`Maze.layout_hash` (unique across all splits; checked)
``rows``, ``cols``           grid size in cells
``shortest_path_length``     BFS moves from start to goal
``num_turns``                direction changes along the canonical shortest path
``stratum``                  :func:`~hyperpod_rl.tasks.maze.strata.stratum_of` label
``split``                    ``train`` / ``heldout`` / ``ood`` / ``validation``
``mode``, ``max_turns``      env settings (plan mode: ``max_turns`` 1)
``observation``              ``image`` / ``text`` / ``both``
``render_style``             :class:`RenderStyle` JSON (cell size shrunk to fit the token cap)
``image_tokens``             vision tokens per image (0 for text observations), <= the cap
``algorithm``, ``braid``     generator settings; ``seed``: the maze's seed
``reward_version``           :data:`~hyperpod_rl.tasks.maze.reward.REWARD_VERSION`
============================ =============================================================

Splits: ``train`` and ``heldout`` come from the same distribution (``sizes``, ``mix``) with
disjoint layouts; ``ood`` uses ``ood_sizes`` and paths longer than every in-distribution
path (or ``ood_min_path_length``); ``validation`` (for choosing settings, so that held-out is
reported once) comes from the in-distribution one too, with layouts disjoint from every other
split. Same spec -> same hashes and identical PNG bytes.
"""

from __future__ import annotations

import hashlib
import random
from pathlib import Path
from typing import Any, Final, NotRequired, TypedDict, cast

from pydantic import Field, field_validator, model_validator

from hyperpod_rl.base import Seed
from hyperpod_rl.errors import MazeError
from hyperpod_rl.tasks import dataset as _shared
from hyperpod_rl.tasks.dataset import StratumMix, check_weights, quotas, shortfall, take_quota, write_parquet
from hyperpod_rl.tasks.maze._model import MazeModel
from hyperpod_rl.tasks.maze.generate import ALGORITHMS, Algorithm, generate_maze
from hyperpod_rl.tasks.maze.grid import MAX_SIDE, MIN_SIDE, Maze, default_max_turns
from hyperpod_rl.tasks.maze.messages import Mode, Observation, PromptStyle, build_prompt
from hyperpod_rl.tasks.maze.registry import ENV_CLASS
from hyperpod_rl.tasks.maze.render import RenderStyle, fit_style, image_size_px, image_token_count
from hyperpod_rl.tasks.maze.reward import REWARD_VERSION
from hyperpod_rl.tasks.maze.strata import DEFAULT_PATH_BINS, DEFAULT_TURN_BINS, check_edges, stratum_of
from hyperpod_rl.tasks.protocol import SPLITS, SplitCounts

__all__ = ["SPLITS", "DatasetSpec", "MazeRow", "build_dataset", "read_rows", "write_parquet"]

_REQUIRED_COLUMNS: Final[tuple[str, ...]] = ("prompt", "env_class", "maze", "layout_hash")


class MazeRow(TypedDict):
    """One dataset row (the table in the module docstring gives each column's meaning)."""

    prompt: list[dict[str, Any]]
    env_class: str
    data_source: str
    maze: str
    layout_hash: str
    rows: int
    cols: int
    shortest_path_length: int
    num_turns: int
    stratum: str
    split: str
    mode: str
    max_turns: int
    observation: str
    prompt_style: NotRequired[str]
    render_style: str
    image_tokens: int
    algorithm: str
    braid: float
    seed: int
    reward_version: str


_ATTEMPTS_PER_ROW: Final[int] = 200
#: Give up after this many candidates in a row were rejected (duplicate, too short, stratum full).
_STALL_LIMIT: Final[int] = 5000


class DatasetSpec(MazeModel):
    """What to generate. Construction raises :class:`MazeError` naming any bad field.

    Every field's description is the docstring under it.
    """

    seed: Seed = 0
    """Master seed; each maze's seed derives from (seed, split, index)."""
    sizes: tuple[tuple[int, int], ...] = ((5, 5),)
    """In-distribution grid sizes (rows, cols) in cells, drawn uniformly."""
    counts: SplitCounts = Field(default_factory=lambda: {"train": 256, "heldout": 64})
    """Rows per split; keys from train, heldout, ood, validation."""
    algorithms: dict[str, float] = Field(default_factory=lambda: {"backtracker": 1.0})
    """Generator weights, e.g. {"backtracker": 2, "prim": 1}."""
    braid: float = Field(default=0.0, ge=0.0, le=1.0)
    """Fraction of dead ends opened (0 = perfect mazes; > 0 adds loops)."""
    mix: StratumMix = None
    """Requested stratum mix for train/heldout: mix key (see .strata) -> weight; None draws mazes as they come."""
    path_bins: tuple[int, ...] = DEFAULT_PATH_BINS
    """Bin edges of the path-length stratum labels, in moves."""
    turn_bins: tuple[int, ...] = DEFAULT_TURN_BINS
    """Bin edges of the turn-count stratum labels."""
    min_path_length: int = Field(default=1, ge=1)
    """Shortest start-goal path accepted in train/heldout, in moves."""
    ood_sizes: tuple[tuple[int, int], ...] = ((9, 9),)
    """Grid sizes of the ood split."""
    ood_min_path_length: int | None = Field(default=None, ge=1)
    """Shortest path accepted in ood; None means one more than the longest in-distribution path built."""
    mode: Mode = "step"
    """Episode mode: 'step' (one move per turn) or 'plan' (the whole path in one answer)."""
    max_turns: int | None = Field(default=None, ge=1)
    """Step-mode turn limit (>= 1); None uses 2 * shortest_path_length + 4 per maze."""
    observation: Observation = "image"
    """What each turn shows: image, text (text-grid twin) or both."""
    prompt_style: PromptStyle = "full"
    """Prompt style: 'full' instructions (real VLMs) or 'terse' (image plus one word; for tiny random-init models)."""
    render_style: RenderStyle = Field(default_factory=RenderStyle)
    """Drawing style; cell size shrinks per maze to respect max_image_tokens."""
    max_image_tokens: int = Field(default=1024, ge=4)
    """Cap on vision tokens per image (qwen-vl-utils rules, patch 16, merge 2)."""
    data_source: str = "hyperpod_rl.maze"
    """Prefix of the data_source column."""

    @field_validator("sizes", "ood_sizes")
    @classmethod
    def _sizes(cls, v: tuple[tuple[int, int], ...]) -> tuple[tuple[int, int], ...]:
        if not v:
            raise ValueError("list at least one (rows, cols) size")
        for rows, cols in v:
            if not (MIN_SIDE <= rows <= MAX_SIDE and MIN_SIDE <= cols <= MAX_SIDE):
                raise ValueError(f"size ({rows}, {cols}) is out of range {MIN_SIDE}..{MAX_SIDE} cells per side")
        return v

    @field_validator("algorithms")
    @classmethod
    def _algorithms(cls, v: dict[str, float]) -> dict[str, float]:
        return check_weights(v, ALGORITHMS, "algorithm")

    @field_validator("path_bins", "turn_bins")
    @classmethod
    def _bins(cls, v: tuple[int, ...]) -> tuple[int, ...]:
        try:
            return check_edges("bins", v)
        except MazeError as e:
            raise ValueError(str(e)) from e

    @model_validator(mode="after")
    def _fits(self) -> DatasetSpec:
        for rows, cols in (*self.sizes, *self.ood_sizes):
            fit_style(rows, cols, self.render_style, max_image_tokens=self.max_image_tokens)
        longest = max(r * c - 1 for r, c in self.sizes)
        if self.min_path_length > longest:
            raise ValueError(f"min_path_length={self.min_path_length} exceeds the longest possible path ({longest}) in sizes")
        return self


def _candidate(spec: DatasetSpec, split: str, index: int, sizes: tuple[tuple[int, int], ...]) -> tuple[Maze, str, int]:
    rng = random.Random(f"{spec.seed}:{split}:{index}")
    rows, cols = sizes[rng.randrange(len(sizes))]
    names = sorted(spec.algorithms)
    algorithm = rng.choices(names, weights=[spec.algorithms[n] for n in names])[0]
    seed = int.from_bytes(hashlib.sha256(f"{spec.seed}:{split}:{index}".encode()).digest()[:8], "big") >> 1  # int64-safe
    return generate_maze(rows, cols, seed=seed, algorithm=cast(Algorithm, algorithm), braid=spec.braid), algorithm, seed


def _row(spec: DatasetSpec, maze: Maze, split: str, stratum: str, algorithm: str, seed: int) -> MazeRow:
    style = fit_style(maze.rows, maze.cols, spec.render_style, max_image_tokens=spec.max_image_tokens)
    max_turns = 1 if spec.mode == "plan" else (spec.max_turns or default_max_turns(maze))
    tokens = 0 if spec.observation == "text" else image_token_count(*image_size_px(maze.rows, maze.cols, style))
    return {
        "prompt": build_prompt(
            maze, mode=spec.mode, max_turns=max_turns, style=style, observation=spec.observation, prompt_style=spec.prompt_style
        ),
        "env_class": ENV_CLASS,
        "data_source": f"{spec.data_source}/{split}",
        "maze": maze.to_json(),
        "layout_hash": maze.layout_hash(),
        "rows": maze.rows,
        "cols": maze.cols,
        "shortest_path_length": maze.shortest_path_length,
        "num_turns": maze.num_turns(),
        "stratum": stratum,
        "split": split,
        "mode": spec.mode,
        "max_turns": max_turns,
        "observation": spec.observation,
        "prompt_style": spec.prompt_style,
        "render_style": style.model_dump_json(),
        "image_tokens": tokens,
        "algorithm": algorithm,
        "braid": float(spec.braid),
        "seed": seed,
        "reward_version": REWARD_VERSION,
    }


def _build_split(spec: DatasetSpec, split: str, seen: set[str], min_len: int) -> list[MazeRow]:
    count = spec.counts.get(split, 0)
    in_dist = split != "ood"
    sizes = spec.sizes if in_dist else spec.ood_sizes
    need = quotas(count, spec.mix if in_dist else None)
    rows: list[MazeRow] = []
    attempts, last_accept = _ATTEMPTS_PER_ROW * count + 1000, 0
    for index in range(attempts):
        if len(rows) == count or index - last_accept > _STALL_LIMIT:
            break
        maze, algorithm, seed = _candidate(spec, split, index, sizes)
        if maze.shortest_path_length < min_len:
            continue
        h = maze.layout_hash()
        if h in seen:
            continue
        stratum = stratum_of(maze, path_bins=spec.path_bins, turn_bins=spec.turn_bins)
        if not take_quota(need, stratum):
            continue
        last_accept = index
        seen.add(h)
        rows.append(_row(spec, maze, split, stratum, algorithm, seed))
    if len(rows) < count:
        short = shortfall(need)
        field = "mix" if in_dist and spec.mix else ("sizes" if in_dist else "ood_sizes / ood_min_path_length")
        raise MazeError(
            f"counts.{split}={count} cannot be filled with unique layouts: {len(rows)} built after {index + 1} "
            f"candidates, still missing {short}. Change {field} (larger grids, reachable strata) "
            f"or lower counts.{split}."
        )
    return rows


def build_dataset(spec: DatasetSpec) -> dict[str, list[MazeRow]]:
    """Generate the rows of every split with a positive count.

    Returns:
        ``{split: rows}`` in :data:`SPLITS` order (train, heldout, ood, validation). Layout
        hashes are unique across all splits; validation is in-distribution, built last.

    Raises:
        MazeError: if a split cannot be filled with unique layouts of the requested strata
            (the message names the split, the missing strata and the field to change).
    """
    seen: set[str] = set()
    out: dict[str, list[MazeRow]] = {}
    longest = 0
    for split in ("train", "heldout"):
        if spec.counts.get(split, 0) > 0:
            out[split] = _build_split(spec, split, seen, spec.min_path_length)
            longest = max([longest, *(r["shortest_path_length"] for r in out[split])])
    if spec.counts.get("ood", 0) > 0:
        min_len = spec.ood_min_path_length or max(longest + 1, spec.min_path_length)
        out["ood"] = _build_split(spec, "ood", seen, min_len)
    if spec.counts.get("validation", 0) > 0:
        out["validation"] = _build_split(spec, "validation", seen, spec.min_path_length)
    hashes = [r["layout_hash"] for rows in out.values() for r in rows]
    if len(hashes) != len(set(hashes)):  # invariant of _build_split; checked, not assumed
        raise MazeError("layout hashes repeat across splits; this is a bug in build_dataset")
    return out


def read_rows(path: str | Path) -> list[MazeRow]:
    """Read dataset rows written by :func:`write_parquet` (the one reader of maze datasets).

    Parquet stores every chat part with every part key, so the ``None`` keys it adds are dropped
    from ``prompt`` (:func:`~hyperpod_rl.tasks.maze.messages.clean_messages`): the rows come back as
    they were written.

    Args:
        path: a parquet file.

    Returns:
        The rows, in file order.

    Raises:
        MazeError: the file does not exist, is not parquet, or lacks the columns every row
            needs (``prompt``, ``env_class``, ``maze``, ``layout_hash``).
    """
    return cast("list[MazeRow]", _shared.read_rows(path, required=_REQUIRED_COLUMNS))
