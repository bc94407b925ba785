"""Fail when a test run left something behind: a process still alive, a changed checkout, a file in the temp directory.

Usage: ``python .ci/leftovers.py [--tag TAG] [--wait-s SECONDS] [--since SNAPSHOT]`` (``make test``
runs it last), and ``python .ci/leftovers.py --snapshot SNAPSHOT`` (``make test`` runs it first).

Every process a test run starts inherits the run's tag, the environment variable
``HPRL_RUN_TAG`` (``make test`` exports one; ``tests/conftest.py`` sets one for a bare ``pytest``):
``ray start`` and what it spawns (gcs_server, raylet, the dashboard and its agents, workers, Serve
controller, proxy and replicas, job drivers), JupyterLab servers and kernels, Chromium launched
by Playwright, jest's node. A process of another checkout or another engineer's cluster has
another tag or none, so it is never reported. The check waits up to ``--wait-s`` seconds for
processes that are still exiting, then exits 1 listing every tagged process left.

Files: tests and benchmarks write only to temporary places they remove (issue 44). A run gets a
temporary directory of its own (``HPRL_RUN_TMPDIR``, also its ``TMPDIR``, so everything made with
:mod:`tempfile` lands there); :func:`snapshot` records, at the start, the checkout's
``git status`` (with each changed file's hash), the names in the system temp directory and those
in the run's own; :func:`changes` says what differs at the end: a tracked file rewritten (a docs
screenshot), a new untracked file, a new entry in the system temp directory (a path hard-coded
outside ``TMPDIR``; checked by ``make test``), or a new entry in the run's directory that a test or
benchmark should have removed (checked by every pytest session; those in :data:`MANAGED` are not
leftovers). Then the run's directory is removed.
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TAG_VAR = "HPRL_RUN_TAG"
#: The run's own temporary directory (its ``TMPDIR``), made by ``make test`` or the pytest session.
TMPDIR_VAR = "HPRL_RUN_TMPDIR"
#: Prefix of the runs' own temporary directories (short: Ray's Unix socket paths live below them).
RUN_TMP_PREFIX = "hprl-t-"
#: Entries of a run's temporary directory that are not leftovers: pytest's ``tmp_path`` root
#: (pytest prunes it), the local clusters' private directory (``cluster.local.private_tmp_dir``:
#: their Ray temp dirs, kept for their logs), Ray's own default one (a driver's ``ray.init``) and
#: torch.compile's cache; all go when the run's directory is removed.
MANAGED = ("pytest-of-*", "hprl-[0-9]*", "ray", "torchinductor_*")


@dataclass(frozen=True)
class Leftover:
    """One tagged process still alive: its pid, name and command line."""

    pid: int
    name: str
    cmdline: str

    def __str__(self) -> str:
        return f"{self.pid:>7}  {self.name:<18} {self.cmdline[:160]}"


def leftovers(tag: str) -> list[Leftover]:
    """Live processes (zombies excluded) whose environment holds ``HPRL_RUN_TAG=<tag>``, except
    this process and its ancestors (the shells and make that run the check), and any
    ``multiprocessing`` resource tracker whose parent is one of those (started by a spawn context,
    it exits with its parent; a nested pytest session sees its outer session's)."""
    import psutil

    me = psutil.Process()
    mine = {me.pid, *(p.pid for p in me.parents())}
    spared = set(mine)
    for proc in psutil.process_iter(["pid", "ppid", "cmdline"]):
        if proc.info["ppid"] in mine and "multiprocessing.resource_tracker" in " ".join(proc.info["cmdline"] or []):
            spared.add(proc.info["pid"])
    needle = f"{TAG_VAR}={tag}"
    found = []
    for proc in psutil.process_iter(["pid", "name", "cmdline", "status"]):
        if proc.info["pid"] in spared or proc.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        try:
            with open(f"/proc/{proc.info['pid']}/environ", "rb") as fh:
                environ = fh.read().split(b"\0")
        except OSError:  # gone, or not ours to read
            continue
        if needle.encode() in environ:
            found.append(Leftover(proc.info["pid"], proc.info["name"] or "?", " ".join(proc.info["cmdline"] or [])))
    return found


def wait_for_none(tag: str, wait_s: float) -> list[Leftover]:
    """:func:`leftovers`, polled until none are left or ``wait_s`` seconds have passed."""
    deadline = time.monotonic() + wait_s
    while True:
        left = leftovers(tag)
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(1.0)


def _tree(repo: Path) -> dict[str, str]:
    """``git status --porcelain`` of ``repo`` (untracked files one by one, ignored files not): each
    entry's path -> its status and the hash of its content, so a file that was already changed and
    is rewritten again counts too. Empty outside a git checkout."""
    proc = subprocess.run(
        ["git", "-C", str(repo), "status", "--porcelain", "-z", "--untracked-files=all"], capture_output=True, timeout=120, check=False
    )
    if proc.returncode != 0:
        return {}
    out: dict[str, str] = {}
    entries = proc.stdout.decode(errors="replace").split("\0")
    i = 0
    while i < len(entries):
        entry = entries[i]
        i += 1
        if len(entry) < 4:
            continue
        status, path = entry[:2], entry[3:]
        if status[0] in "RC":  # a rename or copy: its source path follows
            i += 1
        file = repo / path
        digest = hashlib.sha1(file.read_bytes()).hexdigest()[:12] if file.is_file() else "-"
        out[path] = f"{status.strip()} {digest}"
    return out


def _names(directory: Path | None) -> list[str]:
    try:
        return sorted(os.listdir(directory)) if directory is not None else []
    except OSError:
        return []


def system_tmp_dir() -> Path:
    """The machine's temporary directory: the parent of the run's own one when one is set, else :mod:`tempfile`'s."""
    run_tmp = os.environ.get(TMPDIR_VAR)
    return Path(run_tmp).parent if run_tmp else Path(tempfile.gettempdir())


def snapshot(repo: Path) -> dict[str, Any]:
    """What :func:`changes` compares against: the checkout's changed files (path -> status and hash),
    the names in the system temp directory and in the run's own (``$HPRL_RUN_TMPDIR``, if set)."""
    run_tmp = os.environ.get(TMPDIR_VAR)
    return {
        "repo": str(repo),
        "tree": _tree(repo),
        "system_tmp": str(system_tmp_dir()),
        "system_tmp_names": _names(system_tmp_dir()),
        "run_tmp": run_tmp,
        "run_tmp_names": _names(Path(run_tmp) if run_tmp else None),
    }


def changes(
    before: dict[str, Any], after: dict[str, Any], *, expected: tuple[str, ...] = (), system_tmp: bool = True, run_tmp: bool = True
) -> list[str]:
    """What a run left, one line each: checkout files changed or added since ``before`` (except
    those under the ``expected`` path prefixes, e.g. ``docs/img/`` for ``make screenshots``); with
    ``system_tmp``, new entries in the system temp directory (other runs' own directories,
    ``hprl-t-*``, excepted: they are theirs); with ``run_tmp``, new entries in the run's own
    directory other than :data:`MANAGED` ones.

    ``make test`` checks the system temp directory (CI has the machine to itself); a pytest session
    checks its own directory only, since on a shared machine other programs write to the system one
    while it runs."""
    out = []
    for path, state in sorted(after["tree"].items()):
        if before["tree"].get(path) != state and not path.startswith(expected):
            out.append(f"checkout: {path} ({state.split()[0]}) was changed by the run")
    own = Path(after["run_tmp"]).name if after.get("run_tmp") else None
    for name in sorted(set(after["system_tmp_names"]) - set(before["system_tmp_names"])) if system_tmp else []:
        if name != own and not name.startswith(RUN_TMP_PREFIX):
            out.append(f"temp: {Path(after['system_tmp']) / name} was made by the run (write under $TMPDIR and remove it)")
    for name in sorted(set(after["run_tmp_names"]) - set(before["run_tmp_names"])) if run_tmp else []:
        if not any(fnmatch.fnmatch(name, pattern) for pattern in MANAGED):
            out.append(
                f"temp: {Path(after['run_tmp']) / name} was left by a test or benchmark (remove what you make: tempfile.TemporaryDirectory, tmp_path)"
            )
    return out


def make_run_tmp() -> Path:
    """A new temporary directory for a run, in the system temp directory (mode 0700)."""
    return Path(tempfile.mkdtemp(prefix=RUN_TMP_PREFIX, dir=system_tmp_dir()))


def remove_run_tmp(path: Path) -> None:
    """Remove a run's temporary directory (whatever is left inside, and only one of ours)."""
    if path.name.startswith(RUN_TMP_PREFIX):
        shutil.rmtree(path, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tag", default=os.environ.get(TAG_VAR), help=f"the run's tag (default: ${TAG_VAR})")
    parser.add_argument("--wait-s", type=float, default=30.0, help="seconds to wait for processes still exiting")
    parser.add_argument("--snapshot", type=Path, help="write the checkout's and temp directories' state to this file and exit")
    parser.add_argument("--since", type=Path, help="also fail on files changed since this snapshot, then remove $HPRL_RUN_TMPDIR")
    args = parser.parse_args()
    repo = Path(__file__).resolve().parents[1]
    if args.snapshot:
        args.snapshot.parent.mkdir(parents=True, exist_ok=True)
        args.snapshot.write_text(json.dumps(snapshot(repo)))
        return 0
    if not args.tag:
        print(f"error: no tag: pass --tag or set {TAG_VAR} (make test exports one)")
        return 2
    status = 0
    left = wait_for_none(args.tag, args.wait_s)
    if left:
        print(f"error: {len(left)} process(es) started by this run are still running ({TAG_VAR}={args.tag}):")
        for proc in left:
            print(f"  {proc}")
        print("every test and benchmark must stop what it started, even on failure (try/finally, fixture teardown)")
        status = 1
    else:
        print(f"no process of this run is left ({TAG_VAR}={args.tag})")
    if args.since:
        # the run's own directory was checked by the pytest session (it also holds yarn's and jest's files), and goes now
        # HPRL_CI_RECORD=1 (a timing run that refreshes the committed record) writes benchmarks/results/ci_time.json on purpose
        expected = ("benchmarks/results/ci_time.json",) if os.environ.get("HPRL_CI_RECORD") == "1" else ()
        found = changes(json.loads(args.since.read_text()), snapshot(repo), expected=expected, run_tmp=False)
        if found:
            print(f"error: the run left {len(found)} change(s) in the checkout or the temp directory:")
            for line in found:
                print(f"  {line}")
            print("tests and benchmarks write only to temporary places they remove (docs screenshots: make screenshots)")
            status = 1
        else:
            print("the checkout and the temp directory are as they were")
        if os.environ.get(TMPDIR_VAR):
            remove_run_tmp(Path(os.environ[TMPDIR_VAR]))
    return status


if __name__ == "__main__":
    sys.exit(main())
