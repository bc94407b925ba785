"""Load test of the local Ray Serve endpoint: concurrent clients sending maze images.

Usage (repository root):
    python -m benchmarks.serve_load            # self-contained: see below; writes the result file
    python benchmarks/serve_load.py --endpoint http://127.0.0.1:8000 --model maze --heldout PATH

Without ``--endpoint`` it builds everything in a fresh data dir of its own: the tiny base model, a
small maze dataset and an adapter (exported by the reference trainer, LoRA B randomised so it
differs from the base model), starts a local Ray cluster there, deploys with
:func:`hyperpod_rl.serve.local.deploy_local` on ``--port``, and measures, in this order:

1. per-request latency: one client sending ``--single-requests`` requests one after another (the
   baseline, measured in the same run: no queueing);
2. the load: ``--clients`` threads (one ``requests.Session`` each) sending ``--requests`` chat
   completions each.

Then it deletes the app and stops the cluster it started, also on failure, and writes
``benchmarks/results/serve_load.json`` (:mod:`benchmarks._record`). With ``--endpoint`` it loads
a running server and records nothing unless ``--record NAME`` is given.

Every request is one held-out maze image (cycling through the mazes), greedy. A request fails on
any HTTP error, timeout or an answer that is not ``<answer>move</answer>``. It prints the latency
percentiles and throughput, and as its LAST line one JSON object with ``requests``, ``failed``,
``p50_ms``, ``p95_ms``, ``p99_ms`` and ``requests_per_s`` of the load. Exit status 1 if any
request failed. Bar (issue 7): 16 clients x 50 requests, zero failed.

Errors are one ``error: ...`` line on standard error, as the ``hyperpod-rl`` commands print them:
exit status 2 for bad input (an option, the ``--heldout`` file), 1 when the server or cluster
cannot be reached or used (``--endpoint`` is asked one request before the load starts).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import urlsplit

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


def _self_contained(args: argparse.Namespace, home: Path) -> tuple[Any, Path, list[dict[str, Any]]]:
    """Build model, data and adapter under ``home``, start a local cluster there; return (cluster, model_dir, held-out rows)."""
    import torch

    from hyperpod_rl.cluster.local import find_free_port, start_local_cluster
    from hyperpod_rl.quickstart import (
        QuickstartOptions,
        make_run_config,
        prepare_base_model,
        prepare_dataset,
    )
    from hyperpod_rl.tasks.maze import read_rows
    from hyperpod_rl.train.reference import ReferenceTrainer

    storage = home / "storage"
    opts = QuickstartOptions.build(train_rows=64, heldout_rows=32, max_turns=3, steps=1, group_size=2, prompts_per_step=2)
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
    trainer.export_adapter()
    # A random free dashboard port: the default 8265 is raced for by every other cluster on a shared machine.
    return start_local_cluster(dashboard_port=find_free_port()), model_dir, read_rows(data.heldout)


def _print(label: str, result: dict[str, Any]) -> None:
    print(f"{label}: {result['requests']} requests from {result['clients']} client(s) x {result['requests_per_client']}")
    print(
        f"  latency ms: p50 {result['p50_ms']}  p95 {result['p95_ms']}  p99 {result['p99_ms']}  mean {result['mean_ms']}  max {result['max_ms']}"
    )
    print(f"  throughput: {result['requests_per_s']} requests/s over {result['wall_s']} s; failed: {result['failed']}")
    for err in result["errors"]:
        print(f"  error: {err}")


class _Parser(argparse.ArgumentParser):
    """argparse, with a usage error as the one ``error: ...`` line (exit 2) the CLI prints."""

    def error(self, message: str) -> NoReturn:
        _error(f"{message} (see: {self.prog} --help)")
        raise SystemExit(2)


def _error(message: str) -> None:
    print(f"error: {message}", file=sys.stderr, flush=True)


def _count(text: str) -> int:
    """An option that counts something: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"give an integer >= 1, e.g. 4 (got {text!r})") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1 (got {value})")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"give a number of seconds, e.g. 120 (got {text!r})") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0 (got {text})")
    return value


def main() -> int:
    """Run the benchmark; a project error becomes one ``error: ...`` line (exit 2 bad input, 1 an unreachable service)."""
    from hyperpod_rl.errors import ConfigError, HyperpodRLError, TaskError

    try:
        return _main()
    except HyperpodRLError as err:
        _error(str(err))
        return 2 if isinstance(err, (ConfigError, TaskError)) else 1


def _main() -> int:
    parser = _Parser(description=__doc__.splitlines()[0])
    parser.add_argument("--endpoint", help="base URL of a running server; default: deploy one")
    parser.add_argument("--model", default="maze", help="model (adapter) name to ask")
    parser.add_argument("--heldout", help="held-out parquet whose maze images are sent (with --endpoint)")
    parser.add_argument("--clients", type=_count, default=16)
    parser.add_argument("--requests", type=_count, default=50, help="requests per client")
    parser.add_argument("--single-requests", type=_count, default=100, help="sequential requests of the one-client latency baseline")
    parser.add_argument("--port", type=int, default=None, help="port of the self-contained deployment (default: a free one)")
    parser.add_argument("--timeout-s", type=_seconds, default=120.0)
    parser.add_argument("--record", help="with --endpoint: write benchmarks/results/<RECORD>.json")
    args = parser.parse_args()

    if args.endpoint:
        from hyperpod_rl.tasks.maze import read_rows

        if not args.heldout:
            parser.error("--endpoint needs --heldout (the maze images to send)")
        if urlsplit(args.endpoint).scheme not in ("http", "https") or not urlsplit(args.endpoint).netloc:
            parser.error(f"--endpoint {args.endpoint} is not an http(s) URL: give the server's base URL, e.g. http://127.0.0.1:8000")
        rows = read_rows(args.heldout)
        if not rows:
            parser.error(f"--heldout {args.heldout} holds no rows: give a held-out parquet with maze rows")
        _reachable(args.endpoint, args.model, rows[0], args.timeout_s)
        if args.record:
            from benchmarks._record import Recording

            with Recording(args.record, params=vars(args)) as rec:
                rec.results = _measure(args.endpoint, args, rows)
            results = rec.results
        else:
            results = _measure(args.endpoint, args, rows)
        return _report(results, args.endpoint)

    from benchmarks._record import Recording, exit_on_sigterm, scratch_dir
    from hyperpod_rl.cluster.local import find_free_port
    from hyperpod_rl.serve.local import deploy_local, shutdown_local

    exit_on_sigterm()  # a timeout or kill still stops the cluster (finally blocks run)
    home = scratch_dir("hprl-bench-serve-")
    os.environ["HYPERPOD_RL_HOME"] = str(home)  # a cluster of its own, never the user's
    os.environ["HYPERPOD_RL_LEDGER"] = "off"
    params = {k: v for k, v in vars(args).items() if k not in ("endpoint", "heldout", "record")}
    with Recording("serve_load", params=params, notes="tiny Qwen3-VL, one Ray Serve replica, adapter 'maze'") as rec:
        cluster = None
        try:
            cluster, model_dir, rows = _self_contained(args, home)
            client = cluster.job_client()
            try:
                port = args.port or find_free_port()
                endpoint = deploy_local(client, model_dir, {args.model: home / "storage" / "runs" / "serve-load" / "adapter"}, port=port)
                rec.results = _measure(endpoint, args, rows)
            finally:
                shutdown_local(client)
        finally:
            if cluster is not None:
                cluster.stop()
    return _report(rec.results, "the self-contained deployment")


def _reachable(endpoint: str, model: str, row: dict[str, Any], timeout_s: float) -> None:
    """Ask ``endpoint`` one request before the load, so a server that is not there (or does not
    serve ``model``) is one error line, not hundreds of failed requests.

    Raises:
        ServeError: no connection, or an error answer (the message says how to serve the model).
    """
    from hyperpod_rl.serve.client import chat, maze_request

    chat(endpoint, maze_request(row, model=model), timeout_s=timeout_s)


def _measure(endpoint: str, args: argparse.Namespace, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Warm-up, the one-client latency baseline, then the load."""
    run_load(endpoint, args.model, rows, clients=1, requests_per_client=5, timeout_s=args.timeout_s)  # warm-up, not recorded
    single = run_load(endpoint, args.model, rows, clients=1, requests_per_client=args.single_requests, timeout_s=args.timeout_s)
    load = run_load(endpoint, args.model, rows, clients=args.clients, requests_per_client=args.requests, timeout_s=args.timeout_s)
    return {"single_client": single, "load": load, "cpu_count": os.cpu_count()}


def _report(results: dict[str, Any], where: str) -> int:
    print(f"against {where} (cpu_count {results['cpu_count']})")
    _print("one client, sequential (per-request latency)", results["single_client"])
    _print("load", results["load"])
    print(json.dumps(results["load"]))
    return 1 if results["load"]["failed"] or results["single_client"]["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
