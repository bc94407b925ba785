"""A reference run on a GPU as a detached Ray Job: the path a single-GPU Studio user takes, end to end.

Starts the embedded local Ray cluster (token auth) on the GPU machine, builds the quickstart's
maze data and tiny base model, submits a ``trainer.device: cuda`` run through ``submit_run`` (so
Ray reserves ``entrypoint_num_gpus=1`` and sets ``CUDA_VISIBLE_DEVICES`` for the trainer), waits for
the job, and writes what the job reported: its status, the device line of its log, the metric
lines and the run's manifest status. The cluster is stopped whatever happens.

    python -m benchmarks.gpu.ray_job_gpu --out OUT.json [--steps 3] [--device cuda]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from benchmarks._record import Recording


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--device", default="cuda", help="trainer.device (cpu: a smoke run of this script without a GPU)")
    args = ap.parse_args()
    from hyperpod_rl.cluster.local import start_local_cluster
    from hyperpod_rl.jobs import entrypoint_gpus, submit_run, wait_terminal
    from hyperpod_rl.metrics import read_metrics
    from hyperpod_rl.quickstart import QuickstartOptions, make_run_config, prepare_base_model, prepare_dataset
    from hyperpod_rl.tasks.maze import read_rows

    storage = Path(tempfile.mkdtemp(prefix="ray-job-gpu-"))
    opts = QuickstartOptions.build(train_rows=64, heldout_rows=16, max_turns=3, steps=args.steps, group_size=4, prompts_per_step=4)
    data = prepare_dataset(opts, storage)
    model_dir, revision = prepare_base_model(opts, storage, read_rows(data.train))
    cfg = make_run_config(opts, run_id="ray-job-gpu", model_path=model_dir, revision=revision, data=data)
    raw = cfg.model_dump(mode="json")
    raw["trainer"].update(device=args.device, eval_rows=4)
    cfg = type(cfg).build(raw)
    with Recording(args.out.stem, params={"steps": args.steps, "device": args.device}, path=args.out) as rec:
        cluster = start_local_cluster()
        try:
            client = cluster.job_client()
            t0 = time.monotonic()
            submission = submit_run(client, cfg, storage / "runs" / cfg.run_id)
            status = wait_terminal(client, submission.submission_id, 900.0) or "did not end within 900 s"
            wall = time.monotonic() - t0
            logs = client.get_job_logs(submission.submission_id)
            run_dir = Path(submission.run_dir)
            records = list(read_metrics(run_dir / "metrics.jsonl")) if (run_dir / "metrics.jsonl").exists() else []
            manifest = json.loads((run_dir / "manifest.json").read_text()) if (run_dir / "manifest.json").exists() else {}
            rec.results = {
                "submission_id": submission.submission_id,
                "entrypoint_num_gpus": entrypoint_gpus(cfg),
                "status": status,
                "wall_s": wall,
                "device_lines": [
                    line for line in logs.splitlines() if line.startswith(("policy on", "rollouts:", "activation checkpointing"))
                ],
                "metric_steps": [r.step for r in records],
                "rewards": [r.values.get("reward/avg_raw_reward") for r in records],
                "manifest_status": manifest.get("status"),
                "log_tail": logs.splitlines()[-15:],
            }
            print(json.dumps(rec.results, indent=1), flush=True)
        finally:
            cluster.stop()


if __name__ == "__main__":
    main()
