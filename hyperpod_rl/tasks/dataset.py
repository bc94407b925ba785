"""Dataset helpers every task uses: content hashes, seeds, stratum quotas, split checks, parquet I/O.

Rows are SkyRL 0.3.0 ``PromptDataset`` rows (:mod:`hyperpod_rl.tasks.protocol` lists the columns
every task writes). Splits are disjoint by content hash: a task draws candidates, skips any whose
hash it has already used in any split, and :func:`check_splits` verifies the result.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import AfterValidator

from hyperpod_rl.base import listed
from hyperpod_rl.errors import TaskError
from hyperpod_rl.tasks.protocol import REQUIRED_COLUMNS, SPLITS, Row, check_counts

if TYPE_CHECKING:
    from hyperpod_rl.tasks.protocol import Task

__all__ = [
    "StratumMix",
    "check_counts",
    "check_mix",
    "check_splits",
    "check_weights",
    "clean_messages",
    "content_hash",
    "derive_seed",
    "quotas",
    "read_rows",
    "stratum_matches",
    "take_quota",
    "write_dataset",
    "write_parquet",
]


def content_hash(content: Any) -> str:
    """sha256 hex (64 chars) of the canonical JSON of ``content`` (sorted keys, no spaces).

    Hash what makes two items the same problem (layout, labels, values), not their seed.
    """
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def derive_seed(*parts: Any) -> int:
    """A non-negative int64-safe seed derived from ``parts`` (e.g. master seed, split, index)."""
    text = ":".join(str(p) for p in parts)
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") >> 1


def quotas(count: int, mix: Mapping[str, float] | None) -> dict[str, int]:
    """Split ``count`` rows over stratum keys by weight, largest remainder first (deterministic).

    Returns:
        ``{key: rows}`` summing to ``count``; ``{"": count}`` when ``mix`` is empty or None.
    """
    if not mix:
        return {"": count}
    total = sum(mix.values())
    exact = {k: count * w / total for k, w in mix.items()}
    out = {k: math.floor(x) for k, x in exact.items()}
    rest = count - sum(out.values())
    for k in sorted(exact, key=lambda k: (-(exact[k] - out[k]), k))[:rest]:
        out[k] += 1
    return out


def stratum_matches(key: str, stratum: str) -> bool:
    """True if every ``|``-part of the mix ``key`` is a part of ``stratum`` (``""`` matches any)."""
    parts = set(stratum.split("|"))
    return all(p in parts for p in key.split("|") if p)


def take_quota(need: dict[str, int], stratum: str) -> bool:
    """Count one candidate row of ``stratum`` against the stratum quotas ``need`` (from :func:`quotas`).

    The open quota (rows still needed) whose key matches the stratum and needs the most rows
    (ties: the larger key) takes it and is decremented in place.

    Returns:
        True if a quota took the row; False if none is open for it (the row is skipped).
    """
    open_keys = [k for k, n in need.items() if n > 0 and stratum_matches(k, stratum)]
    if not open_keys:
        return False
    need[max(open_keys, key=lambda k: (need[k], k))] -= 1
    return True


def shortfall(need: Mapping[str, int]) -> str:
    """The rows :func:`take_quota` still needs, in words: ``"95,667 rows"`` for a split without a
    mix, ``"12 rows of 'path:long', 3 of 'turns:many'"`` with one (open quotas only)."""
    open_ = [(k, n) for k, n in need.items() if n > 0]
    if not open_:
        return "no rows"
    if len(open_) == 1 and not open_[0][0]:
        return f"{open_[0][1]:,} rows"
    words = [f"{n:,} of {k!r}" if k else f"{n:,} of any stratum" for k, n in open_]
    return f"{words[0].replace(' of ', ' rows of ', 1)}{''.join(', ' + w for w in words[1:])}"


def check_weights[W: Mapping[str, float]](weights: W, known: Sequence[str], what: str) -> W:
    """Check sampling weights over the names ``known`` (e.g. generator algorithms); for a field validator.

    Raises:
        ValueError: a name outside ``known`` (``what`` names the kind), a negative weight or a zero sum.
    """
    bad = sorted(set(weights) - set(known))
    if bad:
        raise ValueError(f"unknown {what}(s) {listed(bad)}; use {listed(known)}")
    if any(w < 0 for w in weights.values()) or sum(weights.values()) <= 0:
        raise ValueError("weights must be >= 0 with a positive sum")
    return weights


def check_mix[W: Mapping[str, float]](mix: W | None) -> W | None:
    """Check a requested stratum mix (mix key -> weight, as :func:`quotas` takes it; None: rows as
    drawn); for a field validator.

    Raises:
        ValueError: an empty mix, a negative weight or a zero sum.
    """
    if mix is not None and (not mix or any(w < 0 for w in mix.values()) or sum(mix.values()) <= 0):
        raise ValueError("mix weights must be >= 0 with a positive sum")
    return mix


#: The type of an options model's ``mix`` field (stratum mix of train / heldout), checked by :func:`check_mix`.
StratumMix = Annotated[dict[str, float] | None, AfterValidator(check_mix)]


def check_splits(task: Task, splits: Mapping[str, Sequence[Mapping[str, Any]]]) -> None:
    """Check a task's dataset: known splits, the required columns, disjoint content hashes.

    Raises:
        TaskError: naming the split, the row and the column or hash at fault.
    """
    seen: dict[str, str] = {}
    for split, rows in splits.items():
        if split not in SPLITS:
            raise TaskError(f"task {task.name!r} built unknown split {split!r}; use {listed(SPLITS)}")
        for i, row in enumerate(rows):
            missing = [c for c in (*REQUIRED_COLUMNS, task.hash_column) if c not in row]
            if missing:
                raise TaskError(f"task {task.name!r}: {split} row {i} lacks the columns {listed(missing)}")
            if row["split"] != split or row["env_class"] != task.env_class:
                raise TaskError(
                    f"task {task.name!r}: {split} row {i} has split={row['split']!r}, env_class={row['env_class']!r}; "
                    f"expected {split!r}, {task.env_class!r}"
                )
            h = str(row[task.hash_column])
            if h in seen:
                raise TaskError(f"task {task.name!r}: {split} row {i} repeats content hash {h[:12]}... of a {seen[h]} row")
            seen[h] = split


def _clean(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _clean(v) for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        return _clean(value.tolist())
    return value


def clean_messages(messages: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Drop the ``None`` keys parquet readers add when they unify chat-part structs.

    pyarrow stores text and image parts as one struct type, so a text part comes back as
    ``{"type": "text", "text": ..., "image_url": None}``; chat templates that test
    ``'image_url' in part`` would then see an image. Numpy arrays become lists.
    """
    return [_clean(m) for m in messages]


def write_parquet(rows: Iterable[Mapping[str, Any]], path: str | Path) -> str:
    """Write rows to one parquet file (created with parent folders).

    Returns:
        sha256 hex digest of the file bytes (deterministic for a given pyarrow version).

    Raises:
        TaskError: no rows.
    """
    data = [dict(r) for r in rows]
    if not data:
        raise TaskError("write_parquet got no rows; build at least one row")
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(data), target, compression="zstd")
    return hashlib.sha256(target.read_bytes()).hexdigest()


def write_dataset(task: Task, options: Any, folder: str | Path) -> dict[str, Path]:
    """Build a task's dataset, check it (:func:`check_splits`) and write one parquet per split.

    Writes ``<folder>/<split>.parquet`` and ``<folder>/dataset.json`` (task name, options JSON,
    reward version, the sha256 of each file; the run's provenance record picks it up).

    Args:
        task: the task.
        options: its options (an instance of :attr:`Task.options_model`, or a dict of them).
        folder: output folder (created).

    Returns:
        ``{split: parquet path}`` for every split built.

    Raises:
        TaskError: invalid splits; the task's own error for invalid options or unfillable splits.
    """
    opts = options if isinstance(options, task.options_model) else task.options_model.build(options)
    splits = task.build_dataset(opts)
    check_splits(task, splits)
    root = Path(folder)
    root.mkdir(parents=True, exist_ok=True)
    paths = {split: root / f"{split}.parquet" for split in splits}
    hashes = {split: write_parquet(rows, paths[split]) for split, rows in splits.items()}
    meta = {
        "task": task.name,
        "reward_version": task.reward_version,
        "hashes": hashes,
        "spec": {"task": task.name, "options": opts.model_dump(mode="json")},
    }
    (root / "dataset.json").write_text(json.dumps(meta, sort_keys=True))
    return paths


def count_rows(path: str | Path) -> int:
    """Rows of a dataset file written by :func:`write_parquet`, from its parquet footer (no row is read).

    Raises:
        TaskError: the file does not exist or is not parquet.
    """
    source = Path(path).expanduser()
    if not source.is_file():
        raise TaskError(f"dataset file {source} does not exist: generate it first (hyperpod-rl tasks sample, or the quickstart)")
    try:
        return int(pq.read_metadata(source).num_rows)
    except (pa.ArrowInvalid, OSError) as err:
        raise TaskError(f"dataset file {source} is not a readable parquet file ({err}): regenerate it") from None


def read_rows(path: str | Path, *, required: Sequence[str] = ("prompt", "env_class")) -> list[Row]:
    """Read rows written by :func:`write_parquet`, with ``prompt`` cleaned (:func:`clean_messages`).

    Args:
        path: a parquet file.
        required: columns every row must have.

    Raises:
        TaskError: the file does not exist, is not parquet, or lacks a required column.
    """
    source = Path(path).expanduser()
    if not source.is_file():
        raise TaskError(f"dataset file {source} does not exist: generate it first (hyperpod-rl tasks sample, or the quickstart)")
    try:
        table = pq.read_table(source)
    except (pa.ArrowInvalid, OSError) as err:
        raise TaskError(f"dataset file {source} is not a readable parquet file ({err}): regenerate it") from None
    missing = [c for c in required if c not in table.column_names]
    if missing:
        raise TaskError(f"dataset file {source} lacks the columns {listed(missing)}: it was not written by a task; regenerate it")
    rows = table.to_pylist()
    for row in rows:
        if row.get("prompt") is not None:
            row["prompt"] = clean_messages(row["prompt"])
    return cast("list[Row]", rows)
