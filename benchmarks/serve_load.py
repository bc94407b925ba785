"""Load test of the local Ray Serve endpoint: concurrent clients sending maze images.

Usage:
    python benchmarks/serve_load.py --endpoint http://127.0.0.1:8000 --model maze --heldout PATH
    python benchmarks/serve_load.py            # self-contained: see below

With ``--endpoint`` it loads the running server. Without it, it builds everything in a fresh
data dir: the tiny base model, a small maze dataset and an adapter (exported by the reference
trainer, LoRA B randomised so it differs from the base model), starts (or reuses) the local Ray
cluster, deploys with :func:`hyperpod_rl.serve.local.deploy_local` on ``--port``, runs the load,
and tears the app down.

Each of ``--clients`` threads (one ``requests.Session`` each) sends ``--requests`` chat
completions, one held-out maze image per request (cycling through the mazes), greedy. A request
fails on any HTTP error, timeout or an answer that is not ``<answer>move</answer>``. It prints
the latency percentiles and throughput, and as its LAST line one JSON object with ``requests``,
``failed``, ``p50_ms``, ``p95_ms``, ``p99_ms`` and ``requests_per_s``. Exit status 1 if any
request failed. Bar (issue 7): 16 clients x 50 requests, zero failed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

ANSWER = re.compile(r"<answer>(up|down|left|right)</answer>")


def run_load(
    endpoint: str, model: str, rows: list[dict[str, Any]], *, clients: int = 16, requests_per_client: int = 50, timeout_s: float = 120.0
) -> dict[str, Any]:
    """Send ``clients * requests_per_client`` requests from ``clients`` threads.

    Returns:
        ``requests``, ``failed``, ``p50_ms``, ``p95_ms``, ``p99_ms``, ``mean_ms``, ``max_ms``
        (latency of successful requests, milliseconds), ``requests_per_s`` (completed requests
        over the wall time), ``wall_s``, ``clients``, ``requests_per_client`` and up to 5
        ``errors``.
    """
    import requests

    from hyperpod_rl.errors import ServeError
    from hyperpod_rl.serve.client import chat, maze_request

    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()

    def client(index: int) -> None:
        with requests.Session() as session:
            for k in range(requests_per_client):
                row = rows[(index * requests_per_client + k) % len(rows)]
                try:
                    answer, latency = chat(endpoint, maze_request(row, model=model), timeout_s=timeout_s, session=session)
                    if not ANSWER.fullmatch(answer):
                        raise ServeError(f"malformed answer {answer!r}")
                except ServeError as err:
                    with lock:
                        errors.append(str(err)[:300])
                    continue
                with lock:
                    latencies.append(latency)

    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=clients) as pool:
        list(pool.map(client, range(clients)))
    wall = time.perf_counter() - start
    ms = np.array(latencies) * 1000 if latencies else np.array([float("nan")])
    total = clients * requests_per_client
    return {
        "requests": total,
        "failed": len(errors),
        "p50_ms": round(float(np.percentile(ms, 50)), 2),
        "p95_ms": round(float(np.percentile(ms, 95)), 2),
        "p99_ms": round(float(np.percentile(ms, 99)), 2),
        "mean_ms": round(float(ms.mean()), 2),
        "max_ms": round(float(ms.max()), 2),
        "requests_per_s": round(len(latencies) / wall, 2),
        "wall_s": round(wall, 2),
        "clients": clients,
        "requests_per_client": requests_per_client,
        "errors": errors[:5],
    }


def _self_contained(args: argparse.Namespace) -> tuple[str, list[dict[str, Any]], Any]:
    """Build model, data and adapter in a fresh data dir, deploy; return (endpoint, rows, teardown)."""
    import torch

    from hyperpod_rl.cluster.local import start_local_cluster
    from hyperpod_rl.quickstart import (
        QuickstartOptions,
        make_run_config,
        prepare_base_model,
        prepare_dataset,
    )
    from hyperpod_rl.serve.local import deploy_local, shutdown_local
    from hyperpod_rl.train.reference import ReferenceTrainer, read_rows

    os.environ.setdefault("HYPERPOD_RL_HOME", tempfile.mkdtemp(prefix="hprl-serve-load-"))
    storage = Path(tempfile.mkdtemp(prefix="hprl-serve-load-storage-"))
    opts = QuickstartOptions.build(train_mazes=64, heldout_mazes=32, max_turns=3, steps=1, group_size=2, mazes_per_step=2)
    data = prepare_dataset(opts, storage)
    model_dir, revision = prepare_base_model(opts, storage, read_rows(data.train))
    trainer = ReferenceTrainer(
        make_run_config(opts, run_id="serve-load", model_path=model_dir, revision=revision, data=data), storage / "runs" / "serve-load"
    )
    trainer._build()
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, param in trainer.model.named_parameters():
            if "lora_B" in name:
                param.copy_(torch.randn(param.shape, generator=gen) * 0.5)
    adapter = trainer.export_adapter()
    cluster = start_local_cluster()
    client = cluster.job_client()
    endpoint = deploy_local(client, model_dir, {args.model: adapter}, port=args.port)
    return endpoint, read_rows(data.heldout), lambda: shutdown_local(client)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--endpoint", help="base URL of a running server; default: deploy one")
    parser.add_argument("--model", default="maze", help="model (adapter) name to ask")
    parser.add_argument("--heldout", help="held-out parquet whose maze images are sent (with --endpoint)")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--requests", type=int, default=50, help="requests per client")
    parser.add_argument("--port", type=int, default=8250, help="port of the self-contained deployment")
    parser.add_argument("--timeout-s", type=float, default=120.0)
    args = parser.parse_args()

    from hyperpod_rl.maze import read_rows

    teardown = None
    if args.endpoint:
        if not args.heldout:
            parser.error("--endpoint needs --heldout (the maze images to send)")
        endpoint, rows = args.endpoint, read_rows(args.heldout)
    else:
        endpoint, rows, teardown = _self_contained(args)
    try:
        result = run_load(endpoint, args.model, rows, clients=args.clients, requests_per_client=args.requests, timeout_s=args.timeout_s)
    finally:
        if teardown is not None:
            teardown()
    print(
        f"{result['requests']} requests from {result['clients']} clients x {result['requests_per_client']} against {endpoint} (model {args.model!r}), cpu_count {os.cpu_count()}"
    )
    print(
        f"latency ms: p50 {result['p50_ms']}  p95 {result['p95_ms']}  p99 {result['p99_ms']}  mean {result['mean_ms']}  max {result['max_ms']}"
    )
    print(f"throughput: {result['requests_per_s']} requests/s over {result['wall_s']} s; failed: {result['failed']}")
    for err in result["errors"]:
        print(f"  error: {err}")
    print(json.dumps(result))
    return 1 if result["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
