"""One-off migration: take the planner's predictions out of the H200 measurement files.

The first H200 result files (2026-11-29) were JSON lists of records that mixed measurements with
the planner's predictions (``predicted_*`` keys, some refreshed after later calibration changes).
This script

* moves the predictions the harness stored *at run time* (``predicted_*_at_run``) to
  ``benchmarks/results/h200_predictions_at_run.json`` (a historical record, never refreshed);
* drops the refreshed predictions (``benchmarks/gpu/repredict.py`` now writes the current ones to
  ``benchmarks/results/planner_predictions.json``);
* wraps each measurement list in the result envelope every benchmark now writes
  (:mod:`benchmarks._record`), with the provenance that can still be established: the commit
  before the file was first committed, the package versions in ``h200_env.txt`` and the GPU.
  Not recorded at the time, so left empty: the CPU model, the load average, whether the tree
  had uncommitted changes.

Idempotent: files already in the envelope are left alone.

    python -m benchmarks.gpu.split_predictions
"""

from __future__ import annotations

import json
import subprocess
import time
from typing import Any

from benchmarks._record import REPO, RESULTS_DIR, SCHEMA_VERSION, package_versions

#: file stem -> (harness arguments as run_h200.sh passes them, commit that first added the file)
FILES: dict[str, tuple[list[str], str]] = {
    "h200_1gpu": (["-m", "benchmarks.gpu.policy_update", "--suite", "single", "--steps", "3"], "3dc3c1b"),
    "h200_2gpu_fsdp": (
        ["torchrun", "--nproc-per-node", "2", "-m", "benchmarks.gpu.policy_update", "--suite", "fsdp", "--steps", "3"],
        "3dc3c1b",
    ),
    "h200_1gpu_fsdp": (
        ["torchrun", "--nproc-per-node", "1", "-m", "benchmarks.gpu.policy_update", "--suite", "fsdp", "--steps", "5"],
        "54eb18a",
    ),
    "h200_2gpu_fsdp_run2": (
        ["torchrun", "--nproc-per-node", "2", "-m", "benchmarks.gpu.policy_update", "--suite", "fsdp", "--steps", "3"],
        "0f4eb18",
    ),
    "h200_logprob_check": (["-m", "benchmarks.gpu.policy_update", "--suite", "check"], "0f4eb18"),
    "h200_1gpu_fsdp_tuning": (["-m", "benchmarks.gpu.policy_update", "--suite", "tune", "--steps", "3"], "7763f74"),
}
AT_RUN = ("predicted_peak_gib_at_run", "predicted_baseline_peak_gib_at_run")
REFRESHED = (
    "predicted_peak_gib",
    "predicted_tokens_per_s",
    "predicted_baseline_peak_gib",
    "predicted_baseline_tokens_per_s",
    "predict_error",
)


def _parent(commit: str) -> str:
    return subprocess.run(["git", "-C", str(REPO), "rev-parse", f"{commit}^"], capture_output=True, text=True, check=True).stdout.strip()


def _env() -> tuple[list[str], dict[str, str]]:
    """GPUs and package versions from ``h200_env.txt`` (nvidia-smi and the versions line)."""
    gpus, packages = [], {}
    for line in (RESULTS_DIR / "h200_env.txt").read_text().splitlines():
        if line.startswith("NVIDIA "):
            gpus.append(line.strip())
        if line.startswith("torch "):
            words = line.split()
            packages = dict(zip(words[::2], words[1::2], strict=True))
    return gpus, packages


def migrate(stem: str, at_run: dict[str, Any]) -> bool:
    """Wrap one measurement file; collect its at-run predictions into ``at_run``. False if already done."""
    path = RESULTS_DIR / f"{stem}.json"
    data = json.loads(path.read_text())
    if isinstance(data, dict):
        return False
    args, added_in = FILES[stem]
    gpus, packages = _env()
    for rec in data:
        saved = {k: rec.pop(k) for k in AT_RUN if k in rec}
        for key in REFRESHED:
            rec.pop(key, None)
        if saved:
            entry = at_run.setdefault(f"{stem}.json", {"planner_commit": _parent(added_in), "predictions": {}})
            entry["predictions"][rec["config"]["name"]] = saved
    n_gpus = max(int(r.get("gpus", 1)) for r in data)
    envelope = {
        "schema_version": SCHEMA_VERSION,
        "name": stem,
        "script": "benchmarks/gpu/policy_update.py",
        "command": args,
        "params": {},
        "git_commit": _parent(added_in),
        "git_dirty": None,
        "date": data[0]["date"],
        "finished": None,
        "wall_s": None,
        "machine": {
            "cpu_model": None,
            "cpu_cores": None,
            "cpu_cores_usable": None,
            "memory_gib": None,
            "platform": None,
            "python": None,
            "gpus": gpus[:n_gpus],
        },
        "load_avg_start": None,
        "load_avg_end": None,
        "packages": packages,
        "notes": (
            "Measured before result files carried provenance; reconstructed by benchmarks/gpu/split_predictions.py. "
            f"git_commit is the last commit before this file was first committed ({added_in}); the harness ran on that tree, "
            "possibly with uncommitted changes. Packages and GPUs from h200_env.txt (recorded on the first 2-GPU machine; "
            "the second machine ran the same image). CPU model and load average were not recorded. "
            "The planner's predictions were moved out: h200_predictions_at_run.json (at run time), planner_predictions.json (current)."
        ),
        "results": data,
    }
    path.write_text(json.dumps(envelope, indent=1) + "\n")
    return True


def main() -> None:
    at_run: dict[str, Any] = {}
    for stem in FILES:
        print(f"{stem}: {'migrated' if migrate(stem, at_run) else 'already in the envelope'}")
    if at_run:
        out = RESULTS_DIR / "h200_predictions_at_run.json"
        envelope = {
            "schema_version": SCHEMA_VERSION,
            "name": "h200_predictions_at_run",
            "script": "benchmarks/gpu/split_predictions.py",
            "command": ["-m", "benchmarks.gpu.split_predictions"],
            "params": {},
            "git_commit": _git_head(),
            "git_dirty": None,
            "date": time.strftime("%Y-%m-%d", time.gmtime()),
            "finished": None,
            "wall_s": None,
            "machine": {k: None for k in ("cpu_model", "cpu_cores", "cpu_cores_usable", "memory_gib", "platform", "python")} | {"gpus": []},
            "load_avg_start": None,
            "load_avg_end": None,
            "packages": package_versions(("hyperpod-rl", "pydantic")),  # of this migration run
            "notes": "Predictions, not measurements: the peak GiB the planner predicted when each H200 run was made (improved path and "
            "baseline), moved here out of the measurement files; planner_commit is the code that predicted them. For h200_1gpu and "
            "h200_2gpu_fsdp that was before the memory calibration was fitted on them. Kept as history, never refreshed.",
            "results": at_run,
        }
        out.write_text(json.dumps(envelope, indent=1) + "\n")
        print(f"wrote {out}")


def _git_head() -> str:
    return subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()


if __name__ == "__main__":
    main()
