"""One result file per benchmark: ``benchmarks/results/<name>.json``, with where and how it was measured.

Every script in ``benchmarks/`` writes its figures through :class:`Recording`, so each committed
result says which code produced it (git commit, and whether tracked files outside
``benchmarks/results/`` had uncommitted changes), with which packages, on which machine (CPU
model, cores, memory, GPU if any), when, with which arguments, and how busy the machine was (the
1/5/15-minute load average at start and at end: the CPU figures are measured on a shared machine).

Usage::

    with Recording("env_throughput", params=vars(args)) as rec:
        ...                      # measure
        rec.results = {...}      # the figures (JSON-serialisable)
    # on a clean exit the file is written and its path printed; on an exception nothing is
    # written, so a failed run never replaces a good result.

Standard library only: the GPU harness uses it on a machine that has torch but little else.
``HPRL_RESULTS_DIR`` redirects the files (tests use it); ``HPRL_GIT_COMMIT`` supplies the commit
where the checkout has no ``.git`` (a copied working tree), and ``HPRL_GIT_MANIFEST`` that
commit's ``git ls-files -s`` output, against which the copy's files are hashed to say whether
the code that ran is the commit's (:func:`manifest_dirty`).
"""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

__all__ = [
    "REPO",
    "RESULTS_DIR",
    "Recording",
    "code_commit",
    "exit_on_sigterm",
    "git_state",
    "load_result",
    "machine",
    "manifest_dirty",
    "package_versions",
    "results_dir",
    "scratch_dir",
]

REPO = Path(__file__).resolve().parents[1]
RESULTS_DIR = REPO / "benchmarks" / "results"
SCHEMA_VERSION = 1

#: Distributions whose versions every result records (those installed; the rest are left out).
PACKAGES = (
    "hyperpod-rl",
    "torch",
    "transformers",
    "peft",
    "numpy",
    "pillow",
    "pyarrow",
    "ray",
    "skyrl-gym",
    "skyrl",
    "vllm",
    "trl",
    "accelerate",
    "qwen-vl-utils",
    "pydantic",
    "plotly",
    "ipywidgets",
    "requests",
)


def results_dir() -> Path:
    """Where result files go: ``$HPRL_RESULTS_DIR`` or ``benchmarks/results/``."""
    return Path(os.environ.get("HPRL_RESULTS_DIR") or RESULTS_DIR)


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True, timeout=30, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip()


#: Tracked files whose changes do not make a tree dirty (git pathspec / fnmatch patterns): the
#: results and the docs, which the scripts themselves rewrite.
_NOT_CODE = ("benchmarks/results/*", "*.md")


def _counted(path: str) -> bool:
    """Whether a tracked file's changes make a tree dirty (it matches none of :data:`_NOT_CODE`)."""
    import fnmatch

    return not any(fnmatch.fnmatchcase(path, pattern) for pattern in _NOT_CODE)


def manifest_dirty(manifest: Path, root: Path = REPO) -> list[str]:
    """The tracked files under ``root`` that differ from a commit's ``git ls-files -s`` output.

    Args:
        manifest: That output, saved to a file (``mode sha stage\tpath`` per line) where the commit
            was checked out, for a copy of the tree that travels without ``.git``.
        root: The copied tree.

    Returns:
        The paths, outside ``benchmarks/results/`` and Markdown, whose bytes do not hash to the
        commit's blob (git's ``sha1("blob <size>\\0" + bytes)``) or that are missing; empty when
        the copy is the commit's code. Submodules (mode 160000) are skipped; symlinks hash their target path.

    Raises:
        OSError: the manifest cannot be read.
    """
    import hashlib

    differ = []
    for line in manifest.read_text().splitlines():
        meta, _, name = line.partition("\t")
        mode, sha, *_ = meta.split()
        if mode == "160000" or not _counted(name):
            continue
        f = root / name
        if f.is_symlink():
            data = os.readlink(f).encode()
        elif f.is_file():
            data = f.read_bytes()
        else:
            differ.append(name)
            continue
        if hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest() != sha:
            differ.append(name)
    return differ


def git_state() -> dict[str, Any]:
    """``{"commit": sha or None, "dirty": bool or None}``, plus ``dirty_files`` where a manifest was checked.

    ``dirty`` is True when tracked files other than ``benchmarks/results/`` and Markdown differ
    from the commit, i.e. the code that ran is not exactly the commit's (the scripts rewrite the
    docs' figure passages, which must not mark the next run dirty).
    """
    top = _git("rev-parse", "--show-toplevel")
    given = os.environ.get("HPRL_GIT_COMMIT")
    if given and not re.fullmatch(r"[0-9a-f]{40}", given):
        # a short sha cannot be checked against the schema or looked up later (9 lever records of 2026-12-07 carried one)
        raise ValueError(f"HPRL_GIT_COMMIT={given!r} is not a full commit sha: pass `git rev-parse HEAD` (40 hex digits)")
    if given:
        # the caller says: a device machine's copy of the checkout may carry an older commit plus the changes as a dirty tree
        manifest = os.environ.get("HPRL_GIT_MANIFEST")
        if not manifest:
            return {"commit": os.environ["HPRL_GIT_COMMIT"], "dirty": None}
        differ = manifest_dirty(Path(manifest))
        return {"commit": os.environ["HPRL_GIT_COMMIT"], "dirty": bool(differ), "dirty_files": differ}
    if top is None or Path(top).resolve() != REPO.resolve():
        # a copied working tree (no .git of its own, perhaps inside another checkout): the caller says
        return {"commit": os.environ.get("HPRL_GIT_COMMIT"), "dirty": None}
    commit = _git("rev-parse", "HEAD")
    status = _git("status", "--porcelain", "--untracked-files=no", "--", ".", *(f":(exclude){p}" for p in _NOT_CODE))
    return {"commit": commit, "dirty": None if status is None else bool(status)}


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) * 1024 / 2**30, 1)
    except (OSError, ValueError):
        pass
    return None


def _gpus() -> list[str]:
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.strip() for line in out.stdout.splitlines() if line.strip()]


def usable_cores() -> int:
    """The logical cores this process may run on (its CPU affinity, e.g. under ``taskset``)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def machine() -> dict[str, Any]:
    """CPU model, logical cores (and those this process may use), memory, OS, Python, GPUs."""
    usable = usable_cores()
    return {
        "cpu_model": _cpu_model(),
        "cpu_cores": os.cpu_count(),
        "cpu_cores_usable": usable,
        "memory_gib": _memory_gib(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "gpus": _gpus(),
    }


def package_versions(names: tuple[str, ...] = PACKAGES) -> dict[str, str]:
    """Installed versions of ``names`` (missing ones are left out); hyperpod-rl run from a copy of the
    checkout that is not installed (a device machine's ``PYTHONPATH``) is the checkout's pyproject version."""
    out = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            if name == "hyperpod-rl" and (REPO / "pyproject.toml").is_file():
                import tomllib

                out[name] = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"] + " (checkout, not installed)"
    return out


def _load() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def _now(epoch_s: float | None = None) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch_s))


class Recording:
    """Context manager that writes ``<results dir>/<name>.json`` when its block succeeds.

    Args:
        name: result name (file stem), e.g. ``"env_throughput"``.
        params: the run's parameters (arguments, workload sizes).
        script: the producing script, relative to the repo (default: the running ``__main__``).
        notes: free text stored with the result (what was run, caveats).
        path: write here instead of ``<results dir>/<name>.json`` (the GPU harness writes to ``$OUT``).
        started_at: when the measured work began (epoch seconds), where that was before this
            recording (``benchmarks/ci_time.py`` records a CI run after it ran): sets ``date``
            and ``wall_s``. Default: the ``with`` block's start.
        load_avg_start: the load average when the measured work began (1, 5, 15 min), with ``started_at``.
    """

    def __init__(
        self,
        name: str,
        *,
        params: dict[str, Any] | None = None,
        script: str | None = None,
        notes: str = "",
        path: Path | None = None,
        started_at: float | None = None,
        load_avg_start: list[float] | None = None,
    ) -> None:
        self.name = name
        self.params = dict(params or {})
        self.script = script or _main_script()
        self.notes = notes
        self.results: Any = None
        self.path = path
        self._started_at = started_at
        self._given_load = load_avg_start

    def __enter__(self) -> Recording:
        self._git = git_state()
        self._started = _now() if self._started_at is None else _now(self._started_at)
        self._load_start = _load() if self._given_load is None else [round(float(x), 2) for x in self._given_load]
        self._t0 = time.monotonic() - (0.0 if self._started_at is None else max(0.0, time.time() - self._started_at))
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is not None:
            return
        self.write()

    def write(self) -> Path:
        """Write the record now, with the results set so far (a long benchmark calls it at each
        point, so a run killed later still leaves its file); the block's clean exit writes it again.

        Raises:
            RuntimeError: no results set yet.
        """
        if self.results is None:
            raise RuntimeError(f"Recording({self.name!r}): set .results before the block ends")
        record = {
            "schema_version": SCHEMA_VERSION,
            "name": self.name,
            "script": self.script,
            "command": [Path(sys.executable).name, *(_relative(a) for a in sys.argv)],
            "params": self.params,
            "git_commit": self._git["commit"],
            "git_dirty": self._git["dirty"],
            **({"dirty_files": self._git["dirty_files"]} if self._git.get("dirty_files") else {}),
            "date": self._started,
            "finished": _now(),
            "wall_s": round(time.monotonic() - self._t0, 1),
            "machine": machine(),
            "load_avg_start": self._load_start,
            "load_avg_end": _load(),
            "packages": package_versions(),
            "notes": self.notes,
            "results": self.results,
        }
        self.path = self.path or results_dir() / f"{self.name}.json"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(f".json.tmp-{os.getpid()}")
        tmp.write_text(json.dumps(record, indent=1, sort_keys=False) + "\n")
        os.replace(tmp, self.path)
        print(f"wrote {self.path} (load average {self._load_start} -> {record['load_avg_end']})", flush=True)
        return self.path


def _relative(arg: str) -> str:
    """A path inside the repository as a repo-relative path; anything else unchanged."""
    try:
        return str(Path(arg).resolve().relative_to(REPO)) if arg.startswith("/") else arg
    except ValueError:
        return arg


def _main_script() -> str:
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if spec is not None and spec.name:
        return spec.name.replace(".", "/") + ".py"
    path = Path(getattr(main, "__file__", "") or "unknown").resolve()
    try:
        return str(path.relative_to(REPO))
    except ValueError:
        return str(path)


def scratch_dir(prefix: str) -> Path:
    """A new temporary directory (under ``$TMPDIR``) for a benchmark's data, models and clusters' homes,
    removed with everything in it when the script exits: normally, by an exception, or by SIGTERM
    once :func:`exit_on_sigterm` turned it into ``SystemExit`` (issue 44: a benchmark leaves nothing
    in the temp directory). Stop what runs in it first (``finally`` blocks run before this).

    Args:
        prefix: the directory name's start, e.g. ``"hprl-bench-serve-"``.
    """
    import atexit
    import shutil
    import tempfile

    path = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


def exit_on_sigterm() -> None:
    """Turn SIGTERM (``timeout``, ``kill``) into ``SystemExit`` so ``finally`` blocks stop what the script started."""
    import signal

    def _exit(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, _exit)


def code_commit(result: dict[str, Any]) -> str | None:
    """The commit whose code produced ``result``: its ``corrected_commit`` where one was added by hand, else ``git_commit``.

    ``git_commit`` always stays what the recorder wrote; a later correction goes into
    ``corrected_commit: {"commit": <40-hex sha>, "reason": <why>}`` beside it (``benchmarks/result.schema.json``).
    """
    corrected = result.get("corrected_commit")
    return corrected["commit"] if corrected else result.get("git_commit")


def load_result(name: str, directory: Path | None = None) -> dict[str, Any]:
    """Read ``<results dir>/<name>.json`` (written by :class:`Recording`)."""
    return json.loads(((directory or results_dir()) / f"{name}.json").read_text())
