"""Atomic training checkpoints with checksums, and the final adapter export.

Layout (``<run dir>/checkpoints/``)::

    step_000040/
        adapter_model.safetensors   LoRA weights (peft names)
        training_state.pt           optimizer state, RNG states (Python, NumPy, torch, sampler)
        trainer_state.json          step, epoch, sampler position, metrics offset
        checksums.json              sha256 of every file above (written last)

A checkpoint is written into ``step_N.tmp-<pid>`` and renamed into place, so a crash leaves
either a whole checkpoint or none. On load, checkpoints are tried newest first; one whose
checksums do not match (truncated, corrupt) is skipped with a warning.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import warnings
from pathlib import Path
from typing import Any

from hyperpod_rl.errors import CheckpointError

__all__ = ["file_sha256", "latest_valid_checkpoint", "prune_checkpoints", "write_checksums", "write_dir_atomically"]


def file_sha256(path: str | Path) -> str:
    """sha256 hex digest of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_checksums(directory: Path) -> dict[str, str]:
    """Write ``checksums.json`` for every other file in ``directory``; return the mapping."""
    sums = {p.name: file_sha256(p) for p in sorted(directory.iterdir()) if p.is_file() and p.name != "checksums.json"}
    (directory / "checksums.json").write_text(json.dumps(sums, indent=1, sort_keys=True))
    return sums


def verify_checksums(directory: Path) -> str | None:
    """``None`` when every file matches ``checksums.json``, else what is wrong."""
    sums_path = directory / "checksums.json"
    if not sums_path.is_file():
        return "checksums.json is missing"
    try:
        sums = json.loads(sums_path.read_text())
    except ValueError:
        return "checksums.json is corrupt"
    for name, expected in sums.items():
        path = directory / name
        if not path.is_file():
            return f"{name} is missing"
        if file_sha256(path) != expected:
            return f"{name} does not match its checksum (truncated or corrupt)"
    return None


def write_dir_atomically(final: Path, write: Any) -> Path:
    """Call ``write(tmp_dir)``, add checksums, fsync, and rename ``tmp_dir`` to ``final``.

    An existing ``final`` is replaced only after the new directory is complete.
    """
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.with_name(f"{final.name}.tmp-{os.getpid()}")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    write(tmp)
    write_checksums(tmp)
    for p in tmp.iterdir():
        with open(p, "rb") as fh:
            os.fsync(fh.fileno())
    if final.exists():
        old = final.with_name(f"{final.name}.old-{os.getpid()}")
        final.rename(old)
        tmp.rename(final)
        shutil.rmtree(old)
    else:
        tmp.rename(final)
    return final


def latest_valid_checkpoint(ckpt_root: Path) -> Path | None:
    """The newest ``step_*`` directory whose checksums match, or ``None``.

    Invalid newer checkpoints are skipped with a ``UserWarning`` naming the problem.
    """
    if not ckpt_root.is_dir():
        return None
    steps = sorted((p for p in ckpt_root.glob("step_*") if p.is_dir() and ".tmp-" not in p.name and ".old-" not in p.name), reverse=True)
    for path in steps:
        problem = verify_checksums(path)
        if problem is None:
            return path
        warnings.warn(f"checkpoint {path.name} is unusable ({problem}); falling back to an earlier one", stacklevel=2)
    return None


def prune_checkpoints(ckpt_root: Path, keep: int) -> None:
    """Delete all but the ``keep`` newest checkpoints."""
    steps = sorted(p for p in ckpt_root.glob("step_*") if p.is_dir() and ".tmp-" not in p.name)
    for path in steps[:-keep]:
        shutil.rmtree(path, ignore_errors=True)


def require_file(path: Path, what: str) -> Path:
    """Raise :class:`CheckpointError` unless ``path`` is a file."""
    if not path.is_file():
        raise CheckpointError(f"{what} not found at {path}")
    return path
