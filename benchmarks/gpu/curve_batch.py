"""Several :mod:`benchmarks.gpu.maze_curve` runs side by side on one GPU, in one device call (issue 40).

The curve's model (about 10 M parameters) leaves an H100 nearly idle, so one device call can train a
seed's curve and several lever runs at once, each in its own process (its own CUDA context, torch
threads split between them). Usage, from the repository root (on the GPU machine after the kit's
staging calls: ``BATCH=jobs.json bash benchmarks/gpu/run_curve.sh``)::

    python3 -m benchmarks.gpu.curve_batch JOBS.json --out DIR --budget 540

``JOBS.json`` is a list of jobs (checked with pydantic, one line per error)::

    [{"name": "lr1e-3", "record": "{gpu}_maze_lever_lr1e-3_s0",
      "args": ["--seed", "0", "--sft-from", "build/maze_curve/s0", "--eval-split", "validation",
               "--engine", "hf", "--set", "grpo.lr=1e-3"]},
     {"name": "s2", "record": "{gpu}_maze_curve_s2", "args": ["--seed", "2", "--engine", "hf"], "pack": true}]

Each job runs ``maze_curve run --state build/maze_curve/<name> --out DIR/<record>.json
--time-budget <what is left less 30 s> <args>`` (``{gpu}`` in a record name becomes h100 or h200),
its log in ``DIR/logs/<name>.log``, bundled into ``DIR/logs.tgz`` once the jobs end. A state folder
under ``build/maze_curve/`` that a job names (its own, or its ``--sft-from``) and that holds no state
yet is unpacked first from ``.curve-state/<folder>`` where that was carried (the parts a ``pack``
wrote). Once all jobs end, the states of jobs with ``"pack": true`` are packed
(:func:`place_state`): into ``DIR/state_<name>`` while DIR then holds no more than one device call
brings back from ``$OUT`` (the device tool's limits: :data:`OUT_FILES` files, :data:`OUT_BYTES`
bytes), else into ``build/maze_curve/.packed/state_<name>``, said in the log, for a later call on the
same warm machine to return (``cp -r build/maze_curve/.packed/state_<name> $OUT/``). So a batch has
at most ``OUT_FILES - 2`` jobs (a result each; the driver's log and ``logs.tgz`` are the other two).
Exit status: 0 when every job exited 0, else the first non-zero status (each job's is printed).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

#: Where every job's state lives by default (the same folder as ``run_curve.sh``'s, so a seed's state is shared).
STATES = Path("build/maze_curve")
#: Where carried packed states are found by default (``.curve-state/<state folder name>``).
PACKED = Path(".curve-state")
#: Seconds kept after the jobs for packing.
PACK_S = 30.0
#: What one device call brings back from ``$OUT``: at most 8 files, 64 MiB together (16 MiB a file:
#: :func:`benchmarks.gpu.maze_curve.pack` writes parts of at most 15 MiB).
OUT_FILES, OUT_BYTES = 8, 64 * 2**20
#: ``$OUT`` files besides the jobs' results: ``run_curve.sh``'s log and the jobs' logs bundled (``logs.tgz``).
OWN_FILES = 2


class Job(BaseModel):
    """One ``maze_curve run`` of the batch."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$", description="the state folder's and log's name")
    record: str = Field(pattern=r"^[a-z0-9_{}-]{1,128}$", description="the result file's stem ({gpu}: h100/h200), as results/ names them")
    args: list[str] = Field(default_factory=list, description="maze_curve run options (not --state, --out or --time-budget)")
    pack: bool = False


JOBS = TypeAdapter(list[Job])


class BatchError(Exception):
    """A bad jobs file, said in one line with its fix."""


def load_jobs(path: Path) -> list[Job]:
    """The jobs of ``path``.

    Raises:
        BatchError: the file is missing, not a list of jobs, names a job twice, or passes an option
            the batch sets itself.
    """
    try:
        jobs = JOBS.validate_json(path.read_bytes())
    except OSError as err:
        raise BatchError(f"cannot read {path} ({err.strerror}): give the jobs file") from None
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        raise BatchError(f"{path}: {where or 'the file'}: {first['msg']} ({err.error_count()} error(s)): fix the jobs file") from None
    if not jobs:
        raise BatchError(f"{path} lists no job: give at least one")
    if len(jobs) > OUT_FILES - OWN_FILES:
        raise BatchError(
            f"{path} lists {len(jobs)} jobs: one device call brings back {OUT_FILES} files, so a batch has at most "
            f"{OUT_FILES - OWN_FILES} (a result each, the driver's log and the jobs' logs); split it into two batches"
        )
    names = [j.name for j in jobs]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise BatchError(f"{path} names job(s) {', '.join(twice)} more than once: give each its own name")
    for j in jobs:
        own = [a for a in j.args if a.split("=")[0] in ("--state", "--out", "--time-budget")]
        if own:
            raise BatchError(f"job {j.name} passes {own[0]}: the batch sets --state, --out and --time-budget itself; drop it")
    return jobs


def _gpu() -> str:
    """``h100`` or ``h200`` from the recorder's GPU list (:func:`benchmarks._record.machine`, what every
    result records), ``gpu`` for another card, ``cpu`` for none."""
    from benchmarks._record import machine

    gpus = machine()["gpus"]
    found = re.search(r"h100|h200", gpus[0], re.IGNORECASE) if gpus else None
    return found.group(0).lower() if found else ("gpu" if gpus else "cpu")


def _states_of(job: Job, states: Path) -> list[Path]:
    """The state folders a job reads: its own and its ``--sft-from``."""
    out = [states / job.name]
    for i, a in enumerate(job.args):
        if a == "--sft-from" and i + 1 < len(job.args):
            out.append(Path(job.args[i + 1]))
        elif a.startswith("--sft-from="):
            out.append(Path(a.split("=", 1)[1]))
    return out


def _unpack_carried(jobs: list[Job], states: Path, packed_root: Path) -> None:
    from benchmarks.gpu.maze_curve import unpack

    for job in jobs:
        for state in _states_of(job, states):
            packed = packed_root / state.name
            if not (state / "state.json").is_file() and (packed / "maze_state.json").is_file():
                print(f"== unpacking {packed} into {state}", flush=True)
                unpack(packed, state)


def run(jobs: list[Job], out: Path, budget: float, threads: int | None = None, states: Path = STATES, packed: Path = PACKED) -> int:
    """Run ``jobs`` side by side within ``budget`` seconds (their states under ``states``, carried
    packed states read from ``packed``), then pack; the first non-zero exit status or 0."""
    from benchmarks.gpu.maze_curve import CurveError

    t0 = time.monotonic()
    out.mkdir(parents=True, exist_ok=True)
    _unpack_carried(jobs, states, packed)
    gpu = _gpu()
    per = threads or max(1, (os.cpu_count() or 1) // len(jobs))
    env = {**os.environ, "OMP_NUM_THREADS": str(per), "MKL_NUM_THREADS": str(per), "PYTHONUNBUFFERED": "1"}
    left = budget - (time.monotonic() - t0) - PACK_S
    procs: list[tuple[Job, subprocess.Popen[bytes]]] = []
    try:
        for job in jobs:
            cmd = [
                sys.executable, "-m", "benchmarks.gpu.maze_curve", "run", "--state", str(states / job.name),
                "--out", str(out / f"{job.record.replace('{gpu}', gpu)}.json"), "--time-budget", f"{max(left, 1.0):.0f}", *job.args,
            ]  # fmt: skip
            (out / "logs").mkdir(exist_ok=True)
            with (out / "logs" / f"{job.name}.log").open("wb") as log:
                procs.append((job, subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)))
            print(f"== {job.name}: {' '.join(cmd[3:])}", flush=True)
        status = 0
        for job, proc in procs:
            try:
                rc = proc.wait(timeout=max(budget - (time.monotonic() - t0) - PACK_S / 2, 1.0))
            except subprocess.TimeoutExpired:
                proc.kill()
                rc = proc.wait()
            print(f"== {job.name}: exit {rc} after {time.monotonic() - t0:.0f} s", flush=True)
            status = status or rc
    finally:
        for _, proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    _bundle_logs(out)
    for job in jobs:
        if job.pack and (states / job.name / "state.json").is_file():
            try:
                place_state(job.name, states, out)
            except (CurveError, OSError) as err:  # a pack that does not fit must not hide the results
                print(f"== pack of {job.name} refused: {err}", flush=True)
    return status


def place_state(name: str, states: Path, out: Path) -> Path:
    """Pack the state ``states/name`` into ``out/state_<name>`` when ``out`` then still holds no more
    than one device call brings back (:data:`OUT_FILES`, :data:`OUT_BYTES`), else into
    ``states/.packed/state_<name>`` (no job name starts with a dot), said on stdout; where it went.

    Raises:
        CurveError: the state cannot be packed (:func:`benchmarks.gpu.maze_curve.pack`).
    """
    from benchmarks.gpu.maze_curve import pack

    kept = states / ".packed" / f"state_{name}"
    shutil.rmtree(kept, ignore_errors=True)
    pack(states / name, kept)
    if _fits(out, kept):
        shutil.rmtree(out / kept.name, ignore_errors=True)
        shutil.move(kept, out / kept.name)
        print(f"== {name}: state packed into {out / kept.name}", flush=True)
        return out / kept.name
    print(
        f"== {name}: state packed into {kept}, not {out}: one device call brings back {OUT_FILES} files and "
        f"{OUT_BYTES // 2**20} MiB; a later call on this machine returns it (cp -r {kept} $OUT/)",
        flush=True,
    )
    return kept


def _files(folder: Path) -> list[Path]:
    return [f for f in folder.rglob("*") if f.is_file()]


def _fits(out: Path, more: Path) -> bool:
    """Whether ``out`` with the folder ``more`` in it stays within what one device call brings back."""
    files = _files(out) + _files(more)
    return len(files) <= OUT_FILES and sum(f.stat().st_size for f in files) <= OUT_BYTES


def _bundle_logs(out: Path) -> None:
    """The jobs' logs (``out/logs/``) as one ``out/logs.tgz``: one file of the call's eight."""
    logs = out / "logs"
    if not logs.is_dir():
        return
    tmp = out / "logs.tgz.tmp"
    try:
        with tarfile.open(tmp, "w:gz") as tar:
            for log in sorted(logs.glob("*.log")):
                tar.add(log, arcname=log.name)
        tmp.replace(out / "logs.tgz")
    finally:
        tmp.unlink(missing_ok=True)
    shutil.rmtree(logs)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.gpu.curve_batch", description=__doc__.splitlines()[0])
    p.add_argument("jobs", type=Path, help="the jobs file (JSON: a list of jobs)")
    p.add_argument("--out", type=Path, required=True, help="results, logs and packed states go here")
    p.add_argument("--budget", type=float, required=True, help="seconds for the whole batch, packing included")
    p.add_argument("--threads", type=int, default=None, help="torch threads a job (default: the cores over the jobs)")
    p.add_argument("--states", type=Path, default=STATES, help=f"the jobs' state folders go under this (default {STATES})")
    p.add_argument("--packed", type=Path, default=PACKED, help=f"carried packed states are read from here (default {PACKED})")
    args = p.parse_args(argv)
    try:
        jobs = load_jobs(args.jobs)
    except BatchError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return run(jobs, args.out, args.budget, args.threads, args.states, args.packed)


if __name__ == "__main__":
    raise SystemExit(main())
