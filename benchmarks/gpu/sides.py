"""Our reference backend against TRL's ``GRPOTrainer``, each side in its own fresh process, order alternated.

``python -m benchmarks.gpu.sides --shape 2B --turns 1 --sides ours-vllm trl-vllm-0.3 --reps 3 --out OUT.json``

Each repetition runs every side once as ``python -m benchmarks.gpu.grpo_e2e --one SIDE`` in a new
process (so no side inherits another's CUDA context, compile caches in memory, or allocator state),
and the order of the sides is reversed on every other repetition. Every run does ``--warmup``
warm-up steps and ``--steps`` measured steps. The result holds each run whole and, per side, the
median and min-max over repetitions of the median step seconds, samples/s, generated tokens/s and
peak device memory (``total - free`` polled every 10 ms: a colocated vLLM engine's memory counts),
and the ratio of every side's samples/s to the baseline side's (``--baseline``), each repetition's
pair measured in the same sitting.

A run that fails or passes ``--side-timeout`` is recorded with its last log lines; the others go on.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._record import Recording

FIGURES = ("median_step_s", "samples_per_s", "generated_tokens_per_s", "peak_device_gib")


def _spread(values: list[float]) -> dict[str, float] | None:
    vals = [v for v in values if isinstance(v, (int, float))]
    if not vals:
        return None
    return {"median": statistics.median(vals), "min": min(vals), "max": max(vals), "n": len(vals)}


def summarize(runs: list[dict[str, Any]], baseline: str) -> dict[str, Any]:
    """Per side: median and min-max of :data:`FIGURES` over repetitions; ratios to ``baseline`` per repetition."""
    sides = sorted({r["side"] for r in runs})
    out: dict[str, Any] = {"per_side": {}, "ratios_to_baseline": {}}
    for side in sides:
        mine = [r for r in runs if r["side"] == side and r.get("status") != "failed"]
        out["per_side"][side] = {f: _spread([r.get(f) for r in mine]) for f in FIGURES}
        out["per_side"][side]["runs_ok"] = len(mine)
    by_rep = {}
    for r in runs:
        by_rep.setdefault(r["rep"], {})[r["side"]] = r
    for side in sides:
        if side == baseline:
            continue
        ratios = [
            rep[side]["samples_per_s"] / rep[baseline]["samples_per_s"]
            for rep in by_rep.values()
            if side in rep and baseline in rep and rep[side].get("samples_per_s") and rep[baseline].get("samples_per_s")
        ]
        out["ratios_to_baseline"][side] = _spread(ratios)
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shape", default="2B")
    p.add_argument("--turns", type=int, default=1)
    p.add_argument("--sides", nargs="+", default=["ours-vllm", "trl-vllm-0.3"])
    p.add_argument("--baseline", default=None, help="the side ratios are taken against (default: the first TRL side)")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--side-timeout", type=float, default=300.0, help="seconds one run may take")
    p.add_argument("--extra", default="", help="more grpo_e2e arguments for every side, one string")
    p.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="NAME=SIDE ARGS",
        help="a side NAME that runs grpo_e2e's --one SIDE with ARGS added, e.g. "
        "'ours-vllm-awake=ours-vllm --no-engine-sleep' (repeatable; list NAME in --sides)",
    )
    p.add_argument(
        "--resume",
        type=Path,
        default=None,
        help="an earlier result (or .partial.json) of the same sides: its runs are kept and only the missing "
        "repetitions run, each in the order its number gives (a device call's time limit splits a comparison)",
    )
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    args.variants = {}
    for spec in args.variant:
        name, sep, rest = spec.partition("=")
        if not sep or not rest.split():
            raise SystemExit(f"--variant {spec!r}: write NAME=SIDE [ARGS...]")
        args.variants[name.strip()] = rest.split()
    baseline = args.baseline or next((s for s in args.sides if s.startswith("trl")), args.sides[-1])
    runs: list[dict[str, Any]] = _earlier_runs(args.resume, args.sides) if args.resume else []
    with Recording(args.out.stem, params={k: str(v) for k, v in vars(args).items()}, path=args.out) as rec:
        rec.results = {"runs": runs, "summary": None}
        try:
            for rep in range(args.reps):
                order = args.sides if rep % 2 == 0 else list(reversed(args.sides))
                for side in order:
                    if any(r["rep"] == rep and r["side"] == side for r in runs):
                        continue  # from --resume
                    runs.append(_one(args, side, rep))
                    rec.results["summary"] = summarize(runs, baseline)
                    _checkpoint(rec, args.out)
        except KeyboardInterrupt:
            rec.notes = f"interrupted after {len(runs)} runs; the runs listed are complete"
        rec.results["summary"] = summarize(runs, baseline)
        print(json.dumps(rec.results["summary"], indent=1), flush=True)


def _earlier_runs(path: Path, sides: list[str]) -> list[dict[str, Any]]:
    """The runs of an earlier result file whose side is one of ``sides`` (failed runs are run again)."""
    data = json.loads(path.read_text())
    results = data.get("results", data)  # a final file, or a .partial.json (its results only)
    kept = [r for r in results.get("runs", []) if r.get("side") in sides and r.get("status") != "failed"]
    print(f"resuming from {path}: {len(kept)} runs kept", flush=True)
    return kept


def _checkpoint(rec: Recording, out: Path) -> None:
    """The runs so far, beside the final file (a run cut off by the device's time limit keeps them)."""
    out.with_suffix(".partial.json").write_text(json.dumps(rec.results, default=str))


def _one(args: argparse.Namespace, side: str, rep: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        child = Path(tmp) / "side.json"
        cmd = [sys.executable, "-m", "benchmarks.gpu.grpo_e2e", "--shapes", args.shape, "--max-turns", str(args.turns)]
        one, *own = args.variants.get(side, [side])
        cmd += ["--warmup", str(args.warmup), "--steps", str(args.steps), "--one", one, "--out", str(child), *args.extra.split(), *own]
        t0 = time.monotonic()
        env = dict(os.environ, HPRL_RESULTS_DIR=tmp)
        print(f"== rep {rep} {side}: {' '.join(cmd[1:])}", flush=True)
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.side_timeout, env=env)
            code, log = proc.returncode, proc.stdout + proc.stderr
        except subprocess.TimeoutExpired as err:
            code, log = "timeout", (err.stdout or b"").decode(errors="replace") + (err.stderr or b"").decode(errors="replace")
        wall = time.monotonic() - t0
        tail = [ln for ln in log.splitlines() if ln.strip() and "Warning" not in ln][-40:]
        if code == 0 and child.exists():
            run = json.loads(child.read_text())["results"]["runs"][0]
            run.update(rep=rep, side=side, process_wall_s=wall)
            print(json.dumps({k: run.get(k) for k in ("side", "rep", *FIGURES, "engine_start_s", "learning")}, default=str), flush=True)
            return run
        print(f"   failed ({code}) after {wall:.0f} s:\n" + "\n".join(tail[-15:]), flush=True)
        return {"side": side, "rep": rep, "status": "failed", "exit": code, "process_wall_s": wall, "log_tail": tail}


if __name__ == "__main__":
    main()
