"""``hyperpod-rl quickstart``: the whole loop on the embedded local Ray cluster."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from hyperpod_rl.errors import HyperpodRLError

console = Console()

_LABELS = {"solve_rate": "solve rate", "optimal_move_rate": "optimal-move rate", "invalid_move_rate": "invalid-move rate"}


def _phase(timings: dict[str, float], name: str, start: float) -> None:
    timings[name] = round(time.perf_counter() - start, 2)


def quickstart(
    run_id: str | None = typer.Option(None, help="run id (default quickstart-<UTC time>)"),
    model_path: str | None = typer.Option(None, help="local Qwen3-VL checkpoint directory instead of the embedded tiny model"),
    seed: int = typer.Option(0, help="seed for data, model and training"),
    steps: int = typer.Option(200, help="GRPO steps"),
    lr: float = typer.Option(5e-4, help="AdamW learning rate of the LoRA adapter"),
    advantage: str = typer.Option("process", help="GRPO advantage: 'process' (per-turn, DeepSeekMath §4.1.3) or 'outcome' (per-episode)"),
    group_size: int = typer.Option(8, help="episodes per maze (GRPO group size)"),
    mazes_per_step: int = typer.Option(8, help="mazes per GRPO step"),
    train_mazes: int = typer.Option(2000, help="train mazes"),
    heldout_mazes: int = typer.Option(200, help="held-out mazes (evaluated before and after)"),
    max_turns: int = typer.Option(6, help="turn limit per episode"),
    min_size: int = typer.Option(3, help="smallest maze side (cells)"),
    max_size: int = typer.Option(5, help="largest maze side (cells)"),
    serve: bool = typer.Option(True, help="serve the adapter with Ray Serve and ask it one maze"),
    serve_port: int = typer.Option(8000, help="Ray Serve HTTP port on 127.0.0.1"),
    dashboard_port: int | None = typer.Option(None, help="local dashboard / job API port (default 8265 or a free one)"),
    summary_json: Path | None = typer.Option(None, help="also write the summary (phase times, figures) to this file"),
) -> None:
    """Run the whole loop locally: cluster, maze data, base eval, GRPO job, adapter eval, serving."""
    from hyperpod_rl.cli import follow_with_progress
    from hyperpod_rl.eval import compare, evaluate
    from hyperpod_rl.jobs import submit_run
    from hyperpod_rl.paths import run_dir as run_dir_of
    from hyperpod_rl.paths import storage_root
    from hyperpod_rl.quickstart import (
        QuickstartOptions,
        check_serve_port,
        default_run_id,
        make_run_config,
        prepare_base_model,
        prepare_dataset,
        start_local_cluster,
    )
    from hyperpod_rl.train.reference import read_rows

    t_total = time.perf_counter()
    timings: dict[str, float] = {}
    try:
        opts = QuickstartOptions.build(
            run_id=run_id,
            model_path=model_path,
            seed=seed,
            steps=steps,
            lr=lr,
            advantage=advantage,
            group_size=group_size,
            mazes_per_step=mazes_per_step,
            train_mazes=train_mazes,
            heldout_mazes=heldout_mazes,
            max_turns=max_turns,
            min_size=min_size,
            max_size=max_size,
            serve=serve,
            serve_port=serve_port,
        )
        rid = opts.run_id or default_run_id()
        rdir = run_dir_of(rid)
        if (rdir / "submissions.json").exists():
            raise HyperpodRLError(f"run {rid!r} already exists at {rdir}: pick another --run-id (or omit it)")
        if opts.serve:
            check_serve_port(opts.serve_port)
        storage = storage_root()
        console.rule(f"[bold]hyperpod-rl quickstart[/] · run {rid}")

        t = time.perf_counter()
        with console.status("1/8 starting the local Ray cluster (token auth, dashboard on 127.0.0.1)"):
            cluster = start_local_cluster(dashboard_port=dashboard_port)
        note = " (a stale cluster was found and restarted)" if getattr(cluster, "restarted_stale", False) else ""
        console.print(f"[green]✓[/] 1/8 local Ray cluster at {cluster.dashboard_url}{note}")
        _phase(timings, "cluster", t)

        t = time.perf_counter()
        with console.status("2/8 generating maze data"):
            data = prepare_dataset(opts, storage)
            train_rows = read_rows(data.train)
            heldout_rows = read_rows(data.heldout)
        console.print(
            f"[green]✓[/] 2/8 mazes: {len(train_rows)} train, {len(heldout_rows)} held-out (disjoint layouts), sizes {opts.min_size}x{opts.min_size}..{opts.max_size}x{opts.max_size} → {data.train.parent}"
        )
        _phase(timings, "dataset", t)

        t = time.perf_counter()
        with console.status("3/8 preparing the base model"):
            model_dir, revision = prepare_base_model(opts, storage, train_rows)
        console.print(f"[green]✓[/] 3/8 base model {model_dir.name} (revision {revision})")
        _phase(timings, "base_model", t)

        t = time.perf_counter()
        with console.status(f"4/8 evaluating the base model on {len(heldout_rows)} held-out mazes"):
            base = evaluate(model_dir, heldout_rows, label="base")
        rdir.mkdir(parents=True, exist_ok=True)
        base.save(rdir / "eval" / "base.json")
        console.print(
            f"[green]✓[/] 4/8 base model: optimal-move rate {base.metrics['optimal_move_rate']:.3f}, solve rate {base.metrics['solve_rate']:.3f}"
        )
        _phase(timings, "eval_base", t)

        t = time.perf_counter()
        config = make_run_config(opts, run_id=rid, model_path=model_dir, revision=revision, data=data)
        handle = submit_run(cluster.job_client(), config, rdir)
        console.print(
            f"[green]✓[/] 5/8 submitted detached Ray Job {handle.submission_id} (Ctrl-C detaches; hyperpod-rl job logs --follow {rid} reattaches)"
        )
        status = follow_with_progress(cluster.job_client(), handle.submission_id, config.trainer.steps)
        _phase(timings, "train", t)
        if status != "SUCCEEDED":
            raise HyperpodRLError(f"training job {handle.submission_id} ended {status}; its log: hyperpod-rl job logs {rid}")
        console.print(f"[green]✓[/] 6/8 adapter written to {rdir / 'adapter'}")

        t = time.perf_counter()
        with console.status("7/8 evaluating the adapter on the same held-out mazes"):
            tuned = evaluate(model_dir, heldout_rows, adapter_path=rdir / "adapter", label="adapter")
        tuned.save(rdir / "eval" / "adapter.json")
        _phase(timings, "eval_adapter", t)
        comparison = compare(base, tuned)
        comparison.save(rdir / "eval" / "comparison.json")
        table = Table(
            title=f"held-out mazes: {len(heldout_rows)} (greedy, ≤{opts.max_turns} turns; rates averaged over mazes, 95% bootstrap CIs)"
        )
        for column in ("metric", "base", "adapter", "Δ (paired)"):
            table.add_column(column, justify="left" if column == "metric" else "right")
        for row in comparison.table_rows():
            if row["metric"] in _LABELS:
                table.add_row(_LABELS[row["metric"]], row["base"], row["candidate"], row["delta"])
        table.add_row("mazes", str(base.num_mazes), str(tuned.num_mazes), "")
        console.print(table)
        console.print(f"optimal-move rate = share of a maze's turns whose move is on a shortest path · {comparison.reason}")

        answer: dict[str, Any] | None = None
        if opts.serve:
            t = time.perf_counter()
            answer = _serve_and_ask(cluster, model_dir, rdir, heldout_rows[0], port=opts.serve_port)
            _phase(timings, "serve", t)
    except HyperpodRLError as err:
        console.print(f"[bold red]error:[/] {err}")
        raise typer.Exit(code=2) from None

    timings["total"] = round(time.perf_counter() - t_total, 2)
    summary = {
        "run_id": rid,
        "run_dir": str(rdir),
        "submission_id": handle.submission_id,
        "wall_s": timings,
        "heldout_mazes": len(heldout_rows),
        "base": base.metrics,
        "adapter": tuned.metrics,
        "comparison": comparison.to_json(),
        "served_answer": answer,
    }
    (rdir / "quickstart.json").write_text(json.dumps(summary, indent=1))
    if summary_json:
        summary_json.write_text(json.dumps(summary, indent=1))
    console.print(f"[bold green]done[/] in {timings['total']:.0f} s · run dir {rdir}")


def _serve_and_ask(cluster: Any, model_dir: Path, rdir: Path, row: dict[str, Any], *, port: int) -> dict[str, Any]:
    from hyperpod_rl.serve.client import chat, maze_request
    from hyperpod_rl.serve.local import deploy_local

    with console.status("8/8 serving the adapter with Ray Serve"):
        url = deploy_local(cluster.job_client(), model_dir, {"maze": rdir / "adapter"}, port=port)
        answer, latency = chat(url, maze_request(row, model="maze"))
    console.print(
        f"[green]✓[/] 8/8 served at {url}/v1/chat/completions · held-out maze {row['rows']}x{row['cols']} → {answer!r} ({latency * 1000:.0f} ms)"
    )
    console.print("    stop serving: hyperpod-rl serve down · stop the cluster: hyperpod-rl local stop")
    return {"endpoint": url, "model": "maze", "answer": answer, "latency_ms": round(latency * 1000, 1)}
