"""Fail when a process started by this test run is still alive, and print it.

Usage: ``python .ci/leftovers.py [--tag TAG] [--wait-s SECONDS]`` (``make test`` runs it last).

Every process a test run starts inherits the run's tag, the environment variable
``HPRL_RUN_TAG`` (``make test`` exports one; ``tests/conftest.py`` sets one for a bare ``pytest``):
``ray start`` and what it spawns (gcs_server, raylet, the dashboard and its agents, workers, Serve
controller, proxy and replicas, job drivers), JupyterLab servers and kernels, Chromium launched
by Playwright, jest's node. A process of another checkout or another engineer's cluster has
another tag or none, so it is never reported. The check waits up to ``--wait-s`` seconds for
processes that are still exiting, then exits 1 listing every tagged process left.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass

TAG_VAR = "HPRL_RUN_TAG"


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
    this process and its ancestors (the shells and make that run the check), and this process's
    own ``multiprocessing`` resource tracker (started by a spawn context, it exits with its parent)."""
    import psutil

    me = psutil.Process()
    spared = {me.pid, *(p.pid for p in me.parents())}
    for child in me.children():
        try:
            if "multiprocessing.resource_tracker" in " ".join(child.cmdline()):
                spared.add(child.pid)
        except psutil.Error:  # gone already
            continue
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tag", default=os.environ.get(TAG_VAR), help=f"the run's tag (default: ${TAG_VAR})")
    parser.add_argument("--wait-s", type=float, default=30.0, help="seconds to wait for processes still exiting")
    args = parser.parse_args()
    if not args.tag:
        print(f"error: no tag: pass --tag or set {TAG_VAR} (make test exports one)")
        return 2
    left = wait_for_none(args.tag, args.wait_s)
    if left:
        print(f"error: {len(left)} process(es) started by this run are still running ({TAG_VAR}={args.tag}):")
        for proc in left:
            print(f"  {proc}")
        print("every test and benchmark must stop what it started, even on failure (try/finally, fixture teardown)")
        return 1
    print(f"no process of this run is left ({TAG_VAR}={args.tag})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
