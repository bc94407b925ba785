"""Latency of live metrics, idle cost of the poller, and comm messages per figure update.

Usage (repository root): python -m benchmarks.metrics_latency [--steps 40] [--idle-s 20] [--interval-s 0.5]

Starts a local Ray cluster in a fresh data dir, submits a tiny reference-backend run from a
RunPanel wired to a MetricsPanel (the same objects a notebook shows), and measures:

- latency per step: from the record's ``time_s`` (the job stamps it when the step finishes,
  just before writing ``metrics.jsonl`` and the log line) to the moment the step's point is in
  the training figure's data (``MetricsPanel.arrivals``); p50 and p95 over all steps
  (target p95 <= 3 s on the local cluster);
- idle poller CPU: CPU seconds used by the poller thread (file tail + hardware scrape every
  5 s) per wall second, after the run ended, as a share of one core (target <= 2 %);
- comm messages per update: messages sent by the training ``FigureWidget`` divided by its
  refreshes. With ``batch_update()`` one refresh of all 12 traces is one data message
  (``_py2js_update``) plus plotly's bookkeeping (two edit ids and the reset of the update
  property): 4, whatever the trace count; the unbatched count is printed for comparison.

It stops the cluster it started, also on failure, writes ``benchmarks/results/metrics_latency.json``
(:mod:`benchmarks._record`), and prints as its LAST line one JSON object with p50_s, p95_s,
idle_poller_cpu_frac, messages_per_update.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

from benchmarks._record import Recording, exit_on_sigterm, scratch_dir


def main() -> int:
    exit_on_sigterm()  # a timeout or kill still stops the cluster (finally blocks run)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40, help="training steps of the tiny run")
    parser.add_argument("--idle-s", type=float, default=20.0, help="seconds of idle poller measurement")
    parser.add_argument(
        "--interval-s",
        type=float,
        default=0.5,
        help="MetricsPanel poll interval, seconds",
    )
    args = parser.parse_args()
    home = scratch_dir("hprl-metrics-bench-")
    os.environ["HYPERPOD_RL_HOME"] = str(home)
    os.environ["HYPERPOD_RL_LEDGER"] = "off"
    with Recording("metrics_latency", params=vars(args), notes="tiny reference-backend run on a fresh local Ray cluster") as rec:
        rec.results = _measure(args)
    print(json.dumps(rec.results))
    return 0


def _measure(args: argparse.Namespace) -> dict[str, float | int | str]:

    import psutil

    from hyperpod_rl.cluster.local import find_free_port, start_local_cluster
    from hyperpod_rl.paths import storage_root
    from hyperpod_rl.quickstart import (
        QuickstartOptions,
        make_run_config,
        prepare_base_model,
        prepare_dataset,
    )
    from hyperpod_rl.tasks.maze import read_rows
    from hyperpod_rl.widgets import MetricsPanel, RunPanel

    cluster = start_local_cluster(dashboard_port=find_free_port())  # not 8265: raced for on a shared machine
    metrics = None
    try:
        opts = QuickstartOptions.build(
            steps=args.steps,
            train_rows=64,
            heldout_rows=16,
            group_size=2,
            prompts_per_step=2,
            max_turns=3,
        )
        storage = storage_root()
        data = prepare_dataset(opts, storage)
        model_dir, revision = prepare_base_model(opts, storage, read_rows(data.train))
        config = make_run_config(
            opts,
            run_id="metrics-latency",
            model_path=model_dir,
            revision=revision,
            data=data,
        )
        metrics = MetricsPanel(hardware="auto", interval_s=args.interval_s)
        sent = {"n": 0}
        comm = metrics.training.comm
        original_send = comm.send

        def counting_send(*a, **k):
            sent["n"] += 1
            return original_send(*a, **k)

        comm.send = counting_send
        run = RunPanel(config, cluster=cluster, metrics=metrics, poll_s=1.0)
        renders0 = metrics.renders
        for _ in range(30):  # a fresh head can answer "no available agent, try again later"
            run.errors.clear()
            run.submit_button.click()
            if not run.errors or "try again later" not in run.errors[-1]:
                break
            time.sleep(1.0)
        if run.errors:
            raise SystemExit(f"submit failed: {run.errors}")
        deadline = time.monotonic() + 900
        while run.status not in ("SUCCEEDED", "FAILED", "STOPPED"):
            if time.monotonic() > deadline:
                raise SystemExit("the run did not finish within 900 s")
            time.sleep(0.5)
        if run.status != "SUCCEEDED":
            raise SystemExit(f"the run ended {run.status}; nothing recorded")
        time.sleep(3 * args.interval_s)
        renders = metrics.renders - renders0
        latencies = sorted(metrics.arrivals[r.step] - r.time_s for r in metrics.records if r.step in metrics.arrivals)
        messages = sent["n"]

        # For comparison: one refresh without batch_update (each trace loses its last point,
        # so every property really changes), then the batched refresh restores the data.
        before = sent["n"]
        for trace in metrics.training.data:
            trace.x, trace.y = (
                [*(trace.x or ()), 0][:-2] or [0],
                [*(trace.y or ()), 0][:-2] or [0],
            )
        unbatched = sent["n"] - before
        metrics._render()

        thread = metrics.stream._thread
        proc = psutil.Process()

        def thread_cpu() -> float:
            for t in proc.threads():
                if thread is not None and t.id == thread.native_id:
                    return t.user_time + t.system_time
            return 0.0

        c0, w0 = thread_cpu(), time.monotonic()
        time.sleep(args.idle_s)
        idle_frac = (thread_cpu() - c0) / (time.monotonic() - w0)
        p50 = statistics.median(latencies) if latencies else float("nan")
        p95 = latencies[min(round(0.95 * (len(latencies) - 1)), len(latencies) - 1)] if latencies else float("nan")
        print(f"run status: {run.status}; steps seen in the figure: {len(latencies)} of {args.steps}")
        print(
            f"latency write -> figure: p50 {p50:.2f} s, p95 {p95:.2f} s, max {max(latencies, default=float('nan')):.2f} s (target p95 <= 3 s)"
        )
        print(f"idle poller CPU: {100 * idle_frac:.2f} % of one core over {args.idle_s:.0f} s (target <= 2 %)")
        print(f"training figure: {messages} comm messages over {renders} batched updates; the same refresh unbatched: {unbatched} messages")
        result = {
            "p50_s": round(p50, 3),
            "p95_s": round(p95, 3),
            "idle_poller_cpu_frac": round(idle_frac, 4),
            "messages_per_update": round(messages / max(renders, 1), 2),
            "messages_per_update_unbatched": unbatched,
            "steps": len(latencies),
            "interval_s": args.interval_s,
            "run_status": run.status,
        }
        return result
    finally:
        if metrics is not None:
            metrics.close()
        cluster.stop()


if __name__ == "__main__":
    raise SystemExit(main())
