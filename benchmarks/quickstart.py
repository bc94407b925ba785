"""The default quickstart, timed, with the base-vs-adapter figures the README quotes.

Usage (repository root): ``python -m benchmarks.quickstart [extra quickstart options]``

It runs ``hyperpod-rl quickstart`` in a fresh data dir (so the cluster start, data generation and
model build are all timed) and always stops the local Ray cluster it started, even on failure.
Then it

* prints the wall time of each phase;
* prints the held-out figures of the base model and the adapter with their 95% bootstrap
  intervals, and the paired difference (adapter - base, bootstrapped over the same mazes) with its
  interval: the base model is the baseline, measured in the same run;
* prints the forward-row saving of the policy update (samples vs forward rows, summed over the
  run's ``metrics.jsonl``);
* writes ``benchmarks/results/quickstart.json`` (figures + git commit, packages, machine, date,
  load average at start and end: see :mod:`benchmarks._record`);
* rewrites the README's and docs' passages that quote it (``benchmarks/figures.py``), unless
  ``--no-docs`` is given; ``tests/test_docs_figures.py`` checks they match the committed result.

Its last line is one JSON object with the figures.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._record import Recording, exit_on_sigterm

METRICS = ("optimal_move_rate", "solve_rate", "invalid_move_rate")


def _interval(iv: dict[str, Any]) -> dict[str, float | None]:
    """``{value, low, high}`` rounded to 4 places (NaN -> None: JSON has no NaN)."""
    return {k: (None if iv[k] is None or math.isnan(iv[k]) else round(iv[k], 4)) for k in ("value", "low", "high")}


def _forward_rows(metrics_path: Path) -> dict[str, float]:
    """Samples and forward rows of the policy update, over every step of the run."""
    samples, rows, steps = 0.0, 0.0, 0
    for line in metrics_path.read_text().splitlines():
        values = json.loads(line)["values"]
        samples += values["trainer/num_samples"]
        rows += values["trainer/num_forward_rows"]
        steps += 1
    return {
        "steps": steps,
        "samples": int(samples),
        "forward_rows": int(rows),
        "samples_per_step": round(samples / steps, 1),
        "forward_rows_per_step": round(rows / steps, 1),
        "saving": round(samples / rows, 2),
    }


def _run(home: Path, extra: list[str]) -> tuple[dict[str, Any], float]:
    """Run the quickstart CLI in ``home``; return its summary and the wall time. Stops the cluster."""
    summary_path = home / "summary.json"
    env = {**os.environ, "HYPERPOD_RL_HOME": str(home)}
    cmd = [sys.executable, "-m", "hyperpod_rl.cli", "quickstart", "--summary-json", str(summary_path), *extra]
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, env=env, text=True, check=False)
    finally:
        wall = time.monotonic() - start
        stop = subprocess.run(
            [sys.executable, "-m", "hyperpod_rl.cli", "local", "stop"], env=env, capture_output=True, text=True, timeout=300
        )
        if stop.returncode != 0:
            print(f"hyperpod-rl local stop exited {stop.returncode}: {stop.stderr.strip()[-500:]}", file=sys.stderr)
    if proc.returncode != 0 or not summary_path.exists():
        raise SystemExit(f"quickstart exited {proc.returncode} after {wall:.0f} s; nothing recorded")
    return json.loads(summary_path.read_text()), wall


def main() -> int:
    exit_on_sigterm()  # a timeout or kill still stops the cluster (finally blocks run)
    extra = [a for a in sys.argv[1:] if a != "--no-docs"]
    if not any(a.startswith("--serve-port") for a in extra):  # 8000 may be another engineer's
        from hyperpod_rl.cluster.local import find_free_port

        extra += ["--serve-port", str(find_free_port())]
    if not any(a.startswith("--dashboard-port") for a in extra):  # 8265 is raced for by every other cluster
        from hyperpod_rl.cluster.local import find_free_port

        extra += ["--dashboard-port", str(find_free_port())]
    home = Path(tempfile.mkdtemp(prefix="hprl-bench-quickstart-"))
    with Recording("quickstart", params={"quickstart_args": extra, "fresh_home": True}) as rec:
        summary, wall = _run(home, extra)
        phases = summary["wall_s"]
        deltas = summary["comparison"]["deltas"]
        figures = {
            m: {"base": _interval(deltas[m]["base"]), "adapter": _interval(deltas[m]["candidate"]), "diff": _interval(deltas[m]["diff"])}
            for m in METRICS
        }
        forward = _forward_rows(Path(summary["run_dir"]) / "metrics.jsonl")
        rec.results = {
            "wall_s_total": round(wall, 1),
            "wall_s_phases": phases,
            "heldout_mazes": summary["heldout_rows"],
            "paired_level": summary["comparison"]["level"],
            "figures": figures,
            "promote": summary["comparison"]["promote"],
            "forward_rows": forward,
        }
        print()
        for name, seconds in phases.items():
            print(f"{name:>14}: {seconds:7.1f} s")
        print(f"{'wall (total)':>14}: {wall:7.1f} s")
        n = summary["heldout_rows"]
        print(f"\n{n} held-out mazes, greedy; 95% percentile-bootstrap intervals over mazes; Δ paired by maze (adapter - base)")
        for m, f in figures.items():
            b, a, d = f["base"], f["adapter"], f["diff"]
            print(
                f"{m:>18}: base {b['value']:.3f} [{b['low']:.3f}, {b['high']:.3f}]  adapter {a['value']:.3f} [{a['low']:.3f}, {a['high']:.3f}]"
                f"  Δ {d['value']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}]"
            )
        print(
            f"policy update: {forward['samples']} samples in {forward['forward_rows']} forward rows over {forward['steps']} steps "
            f"({forward['saving']}x fewer forwards than one per sample)"
        )
    if "--no-docs" not in sys.argv[1:]:
        from benchmarks.figures import update

        for doc in update(["quickstart-time", "quickstart-eval", "forward-rows"]):
            print(f"updated {doc}")
    print(json.dumps(rec.results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
