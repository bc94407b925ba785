"""Atomic files and directories of a run: checkpoints with checksums, JSON records, the adapter.

Layout (``<run dir>/checkpoints/``)::

    step_000040/
        adapter_model.safetensors   LoRA weights (peft names)
        training_state.pt           optimizer state, RNG states (Python, NumPy, torch, sampler)
        trainer_state.json          step, epoch, sampler position, metrics offset
        checksums.json              sha256 of every file above (written last)

A checkpoint is written into ``step_N.tmp-<pid>``, every file and the directory are fsynced,
and it is renamed into place (then the parent directory is fsynced), so a crash, even SIGKILL,
leaves either a whole checkpoint or none; leftovers of an interrupted write
(``*.tmp-<pid>``, ``*.old-<pid>`` of a dead pid) are removed on resume, in the checkpoints and in
the run directory (an adapter export SIGKILL interrupted leaves ``adapter.tmp-<pid>/``). On load, checkpoints are tried newest
first; one whose checksums do not match (truncated, corrupt) is skipped with a warning, so
resume falls back to the previous valid one.

A write that fails (no space left, a read-only or forbidden run directory, a quota) removes its
temporary file or directory, leaves the previous file or checkpoint as it was, and raises one
:class:`~hyperpod_rl.errors.StorageError` naming the path and the fix (:func:`storage_errors`,
the one place an ``OSError`` of a run write becomes that error).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import struct
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from hyperpod_rl.base import parse_user_data
from hyperpod_rl.errors import HyperpodRLError, StorageError, storage_error

__all__ = [
    "appending",
    "checkpoint_entries",
    "checkpoint_recovery",
    "checkpoints_recovery",
    "file_sha256",
    "os_error_of",
    "storage_errors",
    "latest_valid_checkpoint",
    "prune_checkpoints",
    "remove_stale_temporaries",
    "verify_checksums",
    "write_checksums",
    "write_dir_atomically",
    "write_bytes_atomic",
    "write_json_atomic",
    "write_text_atomic",
]


def file_sha256(path: str | Path) -> str:
    """sha256 hex digest of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def safetensors_header(path: str | Path) -> dict[str, Any]:
    """Parse a safetensors header (8-byte little-endian length + JSON) and check the data size,
    without loading a tensor: a file cut short or overwritten fails here.

    Format: https://github.com/huggingface/safetensors#format.

    Returns:
        The header's tensor entries (``__metadata__`` left out).

    Raises:
        ValueError: with what is wrong (short file, bad header, data shorter than declared).
        OSError: the file cannot be read.
    """
    size = Path(path).stat().st_size
    with open(path, "rb") as fh:
        raw = fh.read(8)
        if len(raw) < 8:
            raise ValueError(f"the file is {size} bytes, shorter than the 8-byte safetensors header length")
        (length,) = struct.unpack("<Q", raw)
        if length > size - 8:
            raise ValueError(f"the header claims {length} bytes but the file has {size - 8} after the length")
        try:
            header = parse_user_data(fh.read(length).decode(), "the safetensors header", syntax="json", error=StorageError)
        except (UnicodeDecodeError, HyperpodRLError):  # not JSON, or nested past MAX_DATA_DEPTH
            header = None
    if not isinstance(header, dict):
        raise ValueError("the safetensors header is not a JSON object")  # noqa: TRY004 - a file-content problem, reported as such
    header.pop("__metadata__", None)
    end = max((int(t["data_offsets"][1]) for t in header.values() if isinstance(t, dict) and "data_offsets" in t), default=0)
    if 8 + length + end > size:
        raise ValueError(f"tensor data ends at byte {8 + length + end} but the file has {size} bytes (truncated)")
    return header


#: How a native writer (safetensors' Rust ``std::io::Error``) states the OS error it got.
_NATIVE_OS_ERROR = re.compile(r"\(os error (\d+)\)")


def os_error_of(err: BaseException) -> OSError | None:
    """The ``OSError`` behind a failed write: ``err`` itself, or the one a native writer reported
    in its message (safetensors raises ``SafetensorError('... No space left on device (os error 28)')``).
    ``None`` when the failure is not the storage's."""
    if isinstance(err, OSError):
        return err
    match = _NATIVE_OS_ERROR.search(str(err))
    if match is None:
        return None
    code = int(match.group(1))
    return OSError(code, os.strerror(code))


@contextmanager
def storage_errors(path: str | Path, *, verb: str = "write") -> Iterator[None]:
    """Turn a storage failure inside the block into one :class:`~hyperpod_rl.errors.StorageError`
    naming ``path`` and the fix (:func:`hyperpod_rl.errors.storage_error`); other errors pass.

    An ``OSError`` about another file (not ``path``, its temporary copy or a file inside it: an
    input the write read) names that file instead.

    Raises:
        StorageError: e.g. ``cannot write /fsx/runs/r1/manifest.json: no space left on that file
            system: free space or grow it (FSx: raise its storage capacity), then try again ...``.
    """
    try:
        yield
    except StorageError:
        raise
    except Exception as err:
        found = os_error_of(err)
        if found is None:
            raise
        named = str(found.filename) if found.filename is not None else None
        if named is not None and not named.startswith(str(path)):  # another file (an input read), not the one written
            raise storage_error(found, verb="use") from None
        raise storage_error(found, path, verb=verb) from None


@contextmanager
def appending(path: str | Path) -> Iterator[IO[str]]:
    """``path`` opened for appending text (a run's ``metrics.jsonl``), closed on every way out.

    The close is the last write (it flushes what is buffered), so it is a storage write too: a
    close that fails on its own raises one :class:`~hyperpod_rl.errors.StorageError` naming
    ``path``. A close that fails while an error already leaves the block (the write before it
    failed: the same bytes fail again) is dropped, so that error, e.g. the ``StorageError`` of the
    failed write, is the one reported, never a second raw ``OSError`` chained over it. Writes in
    the block name ``path`` themselves (``with storage_errors(path): fh.write(...)``).

    Raises:
        StorageError: ``path`` cannot be opened or its close fails (full, read-only, forbidden).
    """
    with storage_errors(path):
        fh = open(path, "a")  # noqa: SIM115 - closed below on every way out
    try:
        yield fh
    except BaseException:
        try:
            fh.close()  # the file descriptor is closed even when the flush fails
        except OSError:
            pass  # the error leaving the block is the one to report
        raise
    with storage_errors(path):
        fh.close()


@contextmanager
def _removed_on_failure(tmp: Path) -> Iterator[None]:
    """Remove ``tmp`` (a file or a directory) when the block fails, then re-raise."""
    try:
        yield
    except BaseException:
        if tmp.is_dir() and not tmp.is_symlink():
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            try:
                tmp.unlink(missing_ok=True)
            except OSError:
                pass  # a read-only directory: the file was never created
        raise


def write_text_atomic(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` through a temporary file in the same directory, fsynced, then renamed.

    A reader sees the old file or the new one, never a part; two writers never share a
    temporary file (its name carries the pid and thread id).

    Raises:
        StorageError: the directory cannot be written (full, read-only, forbidden): the old file
            is unchanged and the temporary file is removed.
    """
    return write_bytes_atomic(path, text.encode())


def write_bytes_atomic(path: Path, data: bytes) -> Path:
    """:func:`write_text_atomic` for bytes."""
    import threading

    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}-{threading.get_ident()}")
    with storage_errors(path), _removed_on_failure(tmp):
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    return path


def canonical_json(data: Any) -> str:
    """``data`` as the run files hold it: sorted keys, one-space indent, trailing newline.

    Sorted keys make the bytes a function of the content, so identical inputs hash the same.
    """
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def write_json_atomic(path: Path, data: Any) -> Path:
    """Write :func:`canonical_json` atomically."""
    return write_text_atomic(path, canonical_json(data))


def write_checksums(directory: Path) -> dict[str, str]:
    """Write ``checksums.json`` for every other file in ``directory``; return the mapping."""
    sums = {p.name: file_sha256(p) for p in sorted(directory.iterdir()) if p.is_file() and p.name != "checksums.json"}
    with storage_errors(directory / "checksums.json"):
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

    Raises:
        StorageError: the run's storage failed (full, read-only, forbidden), in ``write`` or after
            it: the temporary directory is removed and an existing ``final`` is kept as it was.
            Other errors of ``write`` pass unchanged, after the same clean-up.
    """
    tmp = final.with_name(f"{final.name}.tmp-{os.getpid()}")
    old = final.with_name(f"{final.name}.old-{os.getpid()}")
    with storage_errors(final), _removed_on_failure(tmp):
        final.parent.mkdir(parents=True, exist_ok=True)
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir()
        write(tmp)
        write_checksums(tmp)
        for p in tmp.iterdir():
            with open(p, "rb") as fh:
                os.fsync(fh.fileno())
        _fsync_dir(tmp)
        if final.exists():
            final.rename(old)
            try:
                tmp.rename(final)
            except BaseException:
                old.rename(final)  # the previous copy back in place
                raise
        else:
            tmp.rename(final)
    shutil.rmtree(old, ignore_errors=True)  # a leftover is removed on resume (remove_stale_temporaries)
    try:
        _fsync_dir(final.parent)
    except OSError:
        pass  # the rename is done; the directory entry reaches the disk with the file system's next flush
    return final


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


#: ``<name>.tmp-<pid>[-<thread>]`` / ``<name>.old-<pid>``: what :func:`write_dir_atomically` and
#: :func:`write_text_atomic` write before their final rename.
_TEMPORARY = re.compile(r"(?P<final>.+)\.(?P<kind>tmp|old)-(?P<pid>[0-9]+)(?:-[0-9]+)?")


def _is_temporary(path: Path) -> bool:
    return ".tmp-" in path.name or ".old-" in path.name


def _pid_alive(pid: int) -> bool:
    """A process with this id runs on this machine (``kill(pid, 0)``); this process is not counted:
    a writer it left behind is an earlier process that had the same id (a new container)."""
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def remove_stale_temporaries(directory: Path) -> list[str]:
    """Delete the ``*.tmp-<pid>`` / ``*.old-<pid>`` leftovers of writes a crash interrupted.

    Only leftovers of writers that are dead (no process with that pid here) are touched, so a
    write still in progress is never broken. A ``<name>.old-<pid>`` whose ``<name>`` is missing
    (the writer died between its two renames) is renamed back to ``<name>`` rather than deleted,
    so the previous complete copy is kept. Call while holding the run (no other writer); used on
    the run directory (``adapter.tmp-<pid>/``, records) and its ``checkpoints/``.

    Returns:
        The names removed or restored.

    Raises:
        StorageError: a leftover cannot be removed (read-only or forbidden storage).
    """
    if not directory.is_dir():
        return []
    removed = []
    for path in sorted(directory.iterdir()):
        m = _TEMPORARY.fullmatch(path.name)
        if m is None or _pid_alive(int(m["pid"])):
            continue
        final = directory / m["final"]
        try:
            if m["kind"] == "old" and not final.exists():
                path.rename(final)
            elif path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
        except OSError as err:
            raise storage_error(err, verb="remove") from None
        removed.append(path.name)
    return removed


def latest_valid_checkpoint(ckpt_root: Path) -> Path | None:
    """The newest ``step_*`` directory whose checksums match, or ``None``.

    Invalid newer checkpoints are skipped with a ``UserWarning`` naming the problem.
    """
    if not ckpt_root.is_dir():
        return None
    steps = sorted((p for p in ckpt_root.glob("step_*") if p.is_dir() and not _is_temporary(p)), reverse=True)
    for path in steps:
        problem = verify_checksums(path)
        if problem is None:
            return path
        warnings.warn(f"checkpoint {path.name} is unusable ({problem}); falling back to an earlier one", stacklevel=2)
    return None


def checkpoint_recovery(checkpoint: Path) -> str:
    """What to do about a checkpoint (``<run dir>/checkpoints/step_N``) that cannot be resumed from,
    nothing deleted: move it out of ``checkpoints/`` (kept beside it in the run directory, where
    neither the resume nor pruning looks) and resubmit, which resumes from the checkpoint before it,
    or, with none, trains from step 0 (which writes ``metrics.jsonl`` anew: that is said too)."""
    ckpt_root = checkpoint.parent
    run = ckpt_root.parent
    aside = f"move it out of checkpoints/ (mv {checkpoint} {run / (checkpoint.name + '.damaged')}; nothing is deleted)"
    resubmit = f"resubmit the run (hyperpod-rl job submit {run / 'config.json'})"
    earlier = [p for p in ckpt_root.glob("step_*") if p.is_dir() and p.name < checkpoint.name and not _is_temporary(p)]
    if earlier:
        return f"{aside} and {resubmit}: it resumes from the checkpoint before it, {max(earlier).name}"
    return (
        f"{aside} and {resubmit}: with no checkpoint before it, the run trains from step 0 and writes {run / 'metrics.jsonl'} "
        "anew (move that aside too to keep it)"
    )


def checkpoints_recovery(ckpt_root: Path) -> str:
    """What to do when no checkpoint under ``ckpt_root`` can be resumed from (each failed its
    checksums), nothing deleted: set the folder aside and resubmit, which trains from step 0 (and
    writes ``metrics.jsonl`` anew: that is said too). ``--fresh`` would do the same by deleting them."""
    run = ckpt_root.parent
    return (
        f"move the folder aside (mv {ckpt_root} {ckpt_root}.damaged; nothing is deleted) and resubmit the run "
        f"(hyperpod-rl job submit {run / 'config.json'}): it trains from step 0 and writes {run / 'metrics.jsonl'} anew "
        "(move that aside too to keep it)"
    )


def prune_checkpoints(ckpt_root: Path, keep: int) -> None:
    """Delete all but the ``keep`` newest checkpoints."""
    steps = sorted(p for p in ckpt_root.glob("step_*") if p.is_dir() and not _is_temporary(p))
    for path in steps[:-keep]:
        shutil.rmtree(path, ignore_errors=True)


def checkpoint_entries(ckpt_root: Path, run_dir: Path) -> list[dict[str, Any]]:
    """``[{"step", "path", "files"}]`` for every complete checkpoint under ``ckpt_root`` (oldest first).

    ``files`` is the checkpoint's own ``checksums.json`` (name -> sha256); ``path`` is relative
    to ``run_dir``.
    """
    out: list[dict[str, Any]] = []
    if not ckpt_root.is_dir():
        return out
    for path in sorted(ckpt_root.glob("step_*")):
        sums = path / "checksums.json"
        if _is_temporary(path) or not sums.is_file():
            continue
        try:
            files = json.loads(sums.read_text())
        except ValueError:
            continue
        out.append({"step": int(path.name.removeprefix("step_")), "path": str(path.relative_to(run_dir)), "files": files})
    return out
