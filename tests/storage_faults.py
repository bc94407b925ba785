"""Real storage faults for the tests: a read-only run directory and a full one.

Both run a command in a user and mount namespace of its own (``unshare --map-root-user
--mount``), where the test may mount file systems even as an unprivileged user, and where root
is subject to a read-only mount like anyone (mode bits do not stop root): a read-only bind mount
of the directory, or a small ``tmpfs`` mounted over it that holds its files and a chosen number
of free bytes, so a write past them fails with the kernel's own ``ENOSPC``. The mounts vanish
with the command; the directory outside is left as it was.
"""

from __future__ import annotations

import builtins
import errno
import io
import os
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest

__all__ = ["PAGE", "disk_fills_after", "on_a_full_disk", "pages", "read_only"]

#: tmpfs counts its size in pages.
PAGE = 4096


def pages(*paths: Path) -> int:
    """Bytes the files under ``paths`` take on a tmpfs (whole pages)."""
    files = [f for p in paths for f in ([p] if p.is_file() else p.rglob("*")) if f.is_file()]
    return sum(-(-f.stat().st_size // PAGE) * PAGE for f in files)


def read_only(path: Path, argv: list[str]) -> list[str]:
    """``argv`` run with ``path`` read-only: a read-only bind mount in a user namespace as root
    (root ignores mode bits), mode 0555 otherwise."""
    if os.geteuid() != 0:
        for p in (path, *path.rglob("*")):
            p.chmod(0o555 if p.is_dir() else 0o444)
        return argv
    script = f"mount --bind -o ro {shlex.quote(str(path))} {shlex.quote(str(path))} && exec {shlex.join(argv)}"
    return ["unshare", "--map-root-user", "--mount", "sh", "-c", script]


def on_a_full_disk(path: Path, argv: list[str], *, free: int, copy_to: Path, **run: object) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` with ``path`` on a tmpfs that holds its files and ``free`` bytes more (rounded
    up to a page), then copy what the directory holds afterwards to ``copy_to`` (to inspect).

    Returns:
        The finished command (``text=True``, output captured); ``run`` goes to ``subprocess.run``.
    """
    q = shlex.quote
    stage = path.with_name(f"{path.name}.stage")
    script = f"""
set -e
cp -a {q(str(path))} {q(str(stage))}
mount -t tmpfs -o size=256m tmpfs {q(str(path))}
cp -a {q(str(stage))}/. {q(str(path))}/
rm -rf {q(str(stage))}
used=$(df -B1 --output=used {q(str(path))} | tail -1)
mount -o remount,size=$((used + {int(free)})) {q(str(path))}
set +e
{shlex.join(argv)}
rc=$?
mkdir -p {q(str(copy_to))} && cp -a {q(str(path))}/. {q(str(copy_to))}/
exit $rc
"""
    run = {"capture_output": True, "text": True, "check": False, "timeout": 900, **run}
    return subprocess.run(["unshare", "--map-root-user", "--mount", "sh", "-c", script], **run)  # type: ignore[call-overload]


class _FillingFile(io.RawIOBase):
    """A file's raw writer that takes ``room`` more bytes, then fails every write with ENOSPC."""

    def __init__(self, fd: int, room: int) -> None:
        self.fd, self.room = fd, room

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        data = bytes(data)
        if len(data) > self.room:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.room -= len(data)
        return os.write(self.fd, data)

    def close(self) -> None:
        if not self.closed:
            os.close(self.fd)
        super().close()


def disk_fills_after(monkeypatch: pytest.MonkeyPatch, path: Path, room: int) -> None:
    """In this process, ``path`` opened for appending takes ``room`` more bytes in all (a disk that
    fills mid-run), then every write, flush and close fails with ``ENOSPC`` as a full disk's would
    (Python's buffered file keeps the bytes that failed, so its close tries them again)."""
    real_open = builtins.open
    left = {"room": room}

    def open_(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if isinstance(file, (str, os.PathLike)) and os.fspath(file) == str(path) and "a" in mode and "b" not in mode:
            raw = _FillingFile(os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644), left["room"])
            fh = io.TextIOWrapper(io.BufferedWriter(raw), encoding="utf-8")
            left["room"] = 0  # the room is used by this file (a later open gets none)
            return fh
        return real_open(file, mode, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", open_)
    monkeypatch.setattr(io, "open", open_)
