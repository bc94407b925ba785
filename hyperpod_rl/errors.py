"""Exception hierarchy for hyperpod_rl: every error the package raises on purpose.

::

    HyperpodRLError
    ├── ConfigError          bad RunConfig / option / path / request setting; names the field and the fix
    │   └── LogprobInputError    tensors given to the log-prob functions disagree in shape or type
    ├── TaskError            unknown or broken task plug-in, bad task options or task data (any task)
    │   └── MazeError            bad maze, generator or dataset settings
    ├── ClusterError         Ray cluster could not be reached, started or used
    │   ├── ClusterNotReady
    │   ├── ClusterTimeout
    │   └── ClusterRefused       the KubeRay operator refused the RayCluster (terminal)
    ├── JobError             Ray Job submission / lookup failed
    ├── CheckpointError      missing, truncated or corrupt checkpoint / adapter / run file
    ├── LedgerError          the run ledger is not an SQLite ledger, is damaged, or cannot be used
    ├── StorageError         a run file or directory cannot be written or read (read-only, full, denied)
    ├── ServeError           serving or preflight failed
    │   └── PromotionRefused     the promotion gate refused an adapter (``.decision``)
    └── AWSError             an AWS or Studio call failed or is not allowed (names the fix)

``ConfigError``, ``TaskError`` (so ``MazeError``) and ``LogprobInputError`` are also ``ValueError`` s. Every message
says what to change. No message ever contains a token or cookie.
"""

from __future__ import annotations

import os
from typing import Any

__all__ = [
    "AWSError",
    "CheckpointError",
    "ClusterError",
    "ClusterNotReady",
    "ClusterRefused",
    "ClusterTimeout",
    "ConfigError",
    "HyperpodRLError",
    "JobError",
    "LedgerError",
    "LogprobInputError",
    "MazeError",
    "PromotionRefused",
    "ServeError",
    "StorageError",
    "TaskError",
    "last_line",
    "storage_error",
]


class HyperpodRLError(Exception):
    """Base class of every error this package raises on purpose."""


class ConfigError(HyperpodRLError, ValueError):
    """A configuration value is invalid. The message names the field and the fix."""


class LogprobInputError(ConfigError):
    """Tensors given to the log-prob functions have inconsistent shapes or types, or a response
    cannot be scored (it holds a vision token, or a token outside the policy's vocabulary)."""


class TaskError(HyperpodRLError, ValueError):
    """A task is not registered or its plug-in is broken, or task options or task data are invalid.

    The one error of the task layer: every task's own error subclasses it (:class:`MazeError`), so
    ``except TaskError`` catches any task's failure and no layer converts between them.
    """


class MazeError(TaskError):
    """A maze, generator or dataset setting is invalid, or a dataset file is unreadable (a :class:`TaskError`)."""


class ClusterError(HyperpodRLError):
    """The Ray cluster could not be started, reached or used."""


class ClusterNotReady(ClusterError):
    """The cluster exists but cannot take work yet."""


class ClusterTimeout(ClusterError, TimeoutError):
    """Waiting for the cluster ran past its timeout (seconds in the message)."""


class ClusterRefused(ClusterError):
    """The KubeRay operator refused the RayCluster; waiting cannot help (the event's message is in the text)."""


class JobError(HyperpodRLError):
    """A Ray Job could not be submitted, found or controlled."""


class CheckpointError(HyperpodRLError):
    """A checkpoint, adapter or run file is missing, truncated or corrupt."""


class LedgerError(HyperpodRLError):
    """The run ledger file is not an SQLite database, is damaged, is another program's database,
    or cannot be opened or written; the message names the file and the fix (a damaged ledger is
    rebuilt from the run directories: ``hyperpod-rl runs sync --rebuild``)."""


class StorageError(HyperpodRLError, OSError):
    """A file or directory on the run's storage cannot be written or read: read-only, full,
    permission denied, gone. The message names the path and the fix (:func:`storage_error`)."""


#: The fix for each storage failure, by ``errno`` name (``errno.errorcode``).
_STORAGE_FIXES = {
    "EROFS": "the file system is read-only: mount the storage read-write for this job, or point HYPERPOD_RL_STORAGE at a writable directory",
    "EACCES": "permission denied for uid {uid}: give that user write access to {parent} (chown/chmod, or the FSx/volume mount's owner)",
    "EPERM": "operation not permitted for uid {uid}: give that user write access to {parent} (chown/chmod, or the mount's options)",
    "ENOSPC": "no space left on that file system: free space or grow it (FSx: raise its storage capacity), then {again}",
    "EDQUOT": "the disk quota is used up: free space or raise the quota, then {again}",
    "EFBIG": "the file is larger than the file system or this process's file-size limit allows (ulimit -f): raise the limit, then {again}",
    "ENOENT": "it does not exist (the storage was unmounted or the run directory removed): check the mount, then {again}",
    "EIO": "the storage reported an I/O error: check the file system's health (FSx: its status in the console), then {again}",
}


#: What to do once the storage is fixed (the fixes above end with it).
_AGAIN = "try again (a resubmitted run resumes from its last checkpoint)"


def storage_error(err: OSError, path: str | os.PathLike[str] | None = None, *, verb: str = "use") -> StorageError:
    """One line for an ``OSError`` of the run's storage: the path, what failed and the fix.

    Args:
        err: the error (``err.filename`` names the path unless ``path`` is given).
        path: the file or directory concerned, when the error does not name it.
        verb: what could not be done to it, e.g. ``"write"`` (``cannot write <path>: ...``).

    Returns:
        A :class:`StorageError` to raise (``from None``), e.g. ``cannot write /fsx/runs/r1/trainer.lock:
        the file system is read-only: mount the storage read-write ...``.
    """
    import errno

    where = path or err.filename or "the run directory"
    name = errno.errorcode.get(err.errno or 0, "")
    parent = os.path.dirname(str(where)) or str(where)
    fix = _STORAGE_FIXES.get(name, "{strerror}: check the storage is mounted and writable, then {again}")
    fix = fix.format(uid=os.getuid(), parent=parent, strerror=err.strerror or type(err).__name__, again=_AGAIN)
    return StorageError(f"cannot {verb} {where}: {fix}")


class ServeError(HyperpodRLError):
    """Serving failed, or an adapter failed a preflight check."""


class PromotionRefused(ServeError):
    """The promotion gate refused the adapter; ``decision`` holds the recorded decision."""

    def __init__(self, decision: Any) -> None:
        super().__init__(f"adapter {decision.adapter} not promoted: {decision.reason}")
        self.decision = decision


class AWSError(HyperpodRLError):
    """An AWS or SageMaker Studio call failed or is not allowed; the message names the fix."""


#: Lines of a Python traceback that say where, not what: left out by :func:`last_line`.
_TRACEBACK_FRAMING = ("Traceback (most recent call last)", 'File "', "During handling of the above exception", "The above exception was")


def last_line(text: object, *, limit: int = 300) -> str:
    """The one line of a remote error's text that says what failed, at most ``limit`` characters.

    A Ray job server answering 500 sends its whole Python traceback (``Request failed with status
    code 500: Traceback (most recent call last): ...`` and 50 lines more); an error message of
    ours holds only what precedes the traceback and its last line, the exception (``Request
    failed with status code 500: ... RuntimeError: ...``). Text of one line is kept as it is.

    Args:
        text: the error or its text (``str()`` is taken).
        limit: most characters kept; a longer line ends with ``...``.
    """
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    if not lines:
        return ""
    head = lines[0]
    cut = head.find(_TRACEBACK_FRAMING[0])
    prefix = head[:cut].rstrip(" :") if cut >= 0 else ""
    what = [line for line in lines if not line.startswith(_TRACEBACK_FRAMING) and not set(line) <= set("^~ ")]
    if cut >= 0 and what and what[0] == head:
        what = what[1:]  # the head line opens the traceback: its prefix is kept apart
    last = what[-1] if what else head
    if len(lines) == 1:
        line = head
    elif prefix and last != prefix:
        line = f"{prefix}: {last}"
    else:
        line = last
    return line if len(line) <= limit else line[: limit - 3] + "..."
