"""Run the default quickstart and report wall time per phase and the base vs adapter figures.

Usage: python benchmarks/quickstart.py [extra quickstart options]

It runs `hyperpod-rl quickstart` in a fresh data dir (so the cluster start, data generation and
model build are all timed), then prints each phase, the held-out figures, and as its LAST line
one JSON object with wall_s_total, wall_s_train, heldout_mazes, base/adapter optimal-move and
solve rates, and the optimal-move-rate gain over the base model (the baseline measured in the
same run). Targets (issue 2): wall_s_total <= 600 on a 2-core CPU machine, gain >= 0.15.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main() -> int:
    home = Path(tempfile.mkdtemp(prefix="hprl-bench-"))
    summary_path = home / "summary.json"
    env = {**os.environ, "HYPERPOD_RL_HOME": str(home)}
    cmd = [sys.executable, "-m", "hyperpod_rl.cli", "quickstart", "--summary-json", str(summary_path), *sys.argv[1:]]
    start = time.monotonic()
    proc = subprocess.run(cmd, env=env, text=True)
    wall = time.monotonic() - start
    try:
        subprocess.run([sys.executable, "-m", "hyperpod_rl.cli", "local", "stop"], env=env, capture_output=True, timeout=120)
    except subprocess.TimeoutExpired:
        pass
    if proc.returncode != 0 or not summary_path.exists():
        print(json.dumps({"error": f"quickstart exited {proc.returncode}", "wall_s_total": round(wall, 1)}))
        return 1
    summary = json.loads(summary_path.read_text())
    phases = summary["wall_s"]
    for name, seconds in phases.items():
        print(f"{name:>14}: {seconds:7.1f} s")
    base, tuned = summary["base"], summary["adapter"]
    for key in ("optimal_move_rate", "solve_rate", "invalid_move_rate"):
        print(f"{key:>18}: base {base.get(key, 0):.3f}  adapter {tuned.get(key, 0):.3f}  (Δ {tuned.get(key, 0) - base.get(key, 0):+.3f})")
    result = {
        "wall_s_total": round(wall, 1),
        "wall_s_train": phases.get("train"),
        "wall_s_phases": phases,
        "heldout_mazes": summary["heldout_mazes"],
        "base_optimal_move_rate": round(base["optimal_move_rate"], 4),
        "adapter_optimal_move_rate": round(tuned["optimal_move_rate"], 4),
        "optimal_move_rate_gain": round(tuned["optimal_move_rate"] - base["optimal_move_rate"], 4),
        "base_solve_rate": round(base["solve_rate"], 4),
        "adapter_solve_rate": round(tuned["solve_rate"], 4),
        "cpu_count": os.cpu_count(),
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
