"""``hyperpod-rl serve ...``: serve a run's adapter, check adapters, ask and solve, cluster configs.

Mounted by :mod:`hyperpod_rl.cli` as ``app.add_typer(serve.app, name="serve")``. Each command
calls the library function a notebook would call.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from hyperpod_rl.errors import HyperpodRLError

__all__ = ["app"]

app = typer.Typer(no_args_is_help=True, help="Serve adapters: local Ray Serve, preflight checks, vLLM / Ray Serve LLM configs.")
console = Console()


def _fail(err: Exception) -> None:
    console.print(f"[bold red]error:[/] {escape(str(err))}", soft_wrap=True)
    raise typer.Exit(code=2)


def _pairs(items: list[str], option: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise typer.BadParameter(f"{item!r} is not NAME=PATH", param_hint=option)
        out[name] = path
    return out


def _run(run_id: str) -> tuple[Any, Path]:
    """The run's config and directory (the adapter must exist)."""
    from hyperpod_rl.config.run import RunConfig
    from hyperpod_rl.paths import run_dir

    rdir = run_dir(run_id)
    if not (rdir / "config.json").is_file():
        _fail(HyperpodRLError(f"run {run_id!r} not found under {rdir.parent}: check the run id (hyperpod-rl job list)"))
    return RunConfig.model_validate_json((rdir / "config.json").read_text()), rdir


def _client():
    from hyperpod_rl.cluster.local import current_local_cluster

    cluster = current_local_cluster()
    if cluster is None or not cluster.is_alive():
        _fail(HyperpodRLError("no local Ray cluster is running: hyperpod-rl local start"))
    return cluster.job_client()


@app.command("up")
def serve_up(
    run_id: str,
    port: int = typer.Option(8000, help="HTTP port on 127.0.0.1"),
    name: str = typer.Option("maze", help="model name of the run's adapter"),
    adapter: Annotated[list[str] | None, typer.Option(help="NAME=PATH of another adapter to serve beside it; repeatable")] = None,
) -> None:
    """Serve a run's adapter (and the base model as 'base') with Ray Serve on the local cluster.

    Every adapter passes preflight first; a failing one is refused before anything is deployed.
    """
    from hyperpod_rl.serve.local import check_adapters, deploy_local

    config, rdir = _run(run_id)
    if not (rdir / "adapter" / "adapter_model.safetensors").is_file():
        _fail(HyperpodRLError(f"run {run_id!r} has no adapter yet ({rdir / 'adapter'}): train it first"))
    adapters = {name: str(rdir / "adapter"), **_pairs(adapter or [], "--adapter")}
    try:
        for report in check_adapters(config.model.path, adapters, model_id=config.model.model_id):
            for finding in report.warnings:
                console.print(f"[yellow]warning:[/] {report.adapter}: {escape(finding.message)}", soft_wrap=True)
        with console.status("deploying"):
            url = deploy_local(_client(), config.model.path, adapters, port=port, model_id=config.model.model_id)
    except HyperpodRLError as err:
        _fail(err)
        raise
    from hyperpod_rl.jupyter import browser_link

    console.print(f"serving at {url}/v1/chat/completions (models: base, {', '.join(adapters)})")
    link = browser_link(f"{url}/v1/models", "models")
    if link.href != f"{url}/v1/models":
        console.print(f"from this JupyterLab's browser tab: {link.href}")


@app.command("down")
def serve_down() -> None:
    """Remove the serving app from the local cluster (Serve stops when no app is left)."""
    from hyperpod_rl.serve.local import shutdown_local

    shutdown_local(_client())
    console.print("serving app deleted")


@app.command("ask")
def serve_ask(
    run_id: str,
    index: int = typer.Option(0, help="held-out maze index"),
    model: str = typer.Option("maze"),
    endpoint: str = typer.Option("http://127.0.0.1:8000"),
) -> None:
    """Send one held-out maze of a run to the served model and print its move."""
    from hyperpod_rl.serve.client import chat, maze_request
    from hyperpod_rl.train.reference import read_rows

    config, _ = _run(run_id)
    rows = read_rows(config.data.heldout_path)
    if not 0 <= index < len(rows):
        _fail(HyperpodRLError(f"--index must be in 0..{len(rows) - 1}"))
    try:
        answer, latency = chat(endpoint, maze_request(rows[index], model=model))
    except HyperpodRLError as err:
        _fail(err)
        raise
    console.print(
        f"maze {index} ({rows[index]['rows']}x{rows[index]['cols']}): {model} answered {escape(repr(answer))} in {latency * 1000:.0f} ms"
    )


@app.command("solve")
def serve_solve(
    run_id: str,
    index: int = typer.Option(0, help="held-out maze index"),
    model: str = typer.Option("maze", help="adapter name, or 'base'"),
    endpoint: str = typer.Option("http://127.0.0.1:8000"),
    max_turns: int | None = typer.Option(None, help="turn limit (default: the maze's)"),
) -> None:
    """Play one held-out maze through the served model, turn by turn."""
    from hyperpod_rl.serve.client import solve
    from hyperpod_rl.train.reference import read_rows

    config, _ = _run(run_id)
    rows = read_rows(config.data.heldout_path)
    if not 0 <= index < len(rows):
        _fail(HyperpodRLError(f"--index must be in 0..{len(rows) - 1}"))
    try:
        result = solve(rows[index], endpoint, model, max_turns=max_turns)
    except HyperpodRLError as err:
        _fail(err)
        raise
    table = Table("turn", "answer", "move", "cell", "latency ms")
    for t, (answer, move, cell, lat) in enumerate(
        zip(result.answers, result.moves, result.path[1:], result.latencies_s, strict=False), start=1
    ):
        table.add_row(str(t), escape(answer), str(move), str(cell), f"{lat * 1000:.0f}")
    console.print(table)
    console.print(f"{'solved' if result.solved else 'not solved'} in {result.turns} turns, reward {result.reward:+.3f}, path {result.path}")


@app.command("preflight")
def serve_preflight(
    adapter: Annotated[Path, typer.Argument(help="adapter directory")],
    base: Annotated[
        Path | None, typer.Option(help="local base model directory (tokenizer, generation config, and default id/revision)")
    ] = None,
    model_id: str | None = typer.Option(None, help="base model id the server loads (default: read from --base)"),
    revision: str | None = typer.Option(None, help="base model revision the server loads (default: hash of --base)"),
    server: str = typer.Option("local", help="'local' (transformers + peft) or 'vllm'"),
    max_lora_rank: int = typer.Option(16, help="vLLM --max-lora-rank (server 'vllm')"),
    generation_config: str = typer.Option("vllm", help="vLLM --generation-config: 'auto' or 'vllm' (server 'vllm')"),
    as_json: bool = typer.Option(False, "--json", help="print the findings as JSON"),
) -> None:
    """Check an adapter against a base model and server; exit 1 if it would be refused."""
    from hyperpod_rl.serve.preflight import (
        LOCAL_SERVER,
        BaseModelRef,
        preflight,
        vllm_server,
    )

    if server not in ("local", "vllm"):
        raise typer.BadParameter("use 'local' or 'vllm'", param_hint="--server")
    if generation_config not in ("auto", "vllm"):
        raise typer.BadParameter("use 'auto' or 'vllm'", param_hint="--generation-config")
    try:
        if base is not None:
            ref = BaseModelRef.from_dir(base, model_id=model_id, revision=revision)
        elif model_id and revision:
            ref = BaseModelRef(model_id=model_id, revision=revision)
        else:
            raise typer.BadParameter("pass --base DIR, or both --model-id and --revision", param_hint="--base")
        profile = LOCAL_SERVER if server == "local" else vllm_server(max_lora_rank, generation_config=generation_config)  # type: ignore[arg-type]
        report = preflight(adapter, ref, profile)
    except HyperpodRLError as err:
        _fail(err)
        raise
    if as_json:
        print(
            json.dumps(
                {
                    "adapter": str(report.adapter),
                    "server": report.server,
                    "ok": report.ok,
                    "rank": report.rank,
                    "findings": [f.__dict__ for f in report.findings],
                }
            )
        )
    elif report.findings:
        table = Table("severity", "check", "problem", "fix", title=f"preflight of {adapter} for {report.server}")
        for f in report.findings:
            table.add_row(
                f"[red]{f.severity}[/]" if f.severity == "error" else f"[yellow]{f.severity}[/]", f.check, escape(f.problem), escape(f.fix)
            )
        console.print(table)
    else:
        console.print(f"[green]preflight passed[/] for {report.server}: {adapter} (rank {report.rank})")
    raise typer.Exit(code=0 if report.ok else 1)


@app.command("cluster-config")
def serve_cluster_config(
    adapter: Annotated[list[str], typer.Option(help="NAME=PATH of an adapter on shared storage; repeatable")],
    base_model: str = typer.Option(..., help="Hugging Face id or shared-storage directory of the base model"),
    revision: str = typer.Option(..., help="base model revision the adapters were trained on"),
    base_model_id: str | None = typer.Option(None, help="id in the adapters' provenance (default: --base-model)"),
    base_model_local: Annotated[
        Path | None, typer.Option(help="local copy of the base model for the tokenizer / chat template checks")
    ] = None,
    target: str = typer.Option("vllm-job", help="'vllm-job' (vLLM OpenAI server as a detached Ray job) or 'ray-serve-llm'"),
    lora_uri: str | None = typer.Option(None, help="s3:// prefix holding one directory per adapter (ray-serve-llm)"),
    tensor_parallel_size: int = typer.Option(1, help="GPUs per replica"),
    served_model_name: str = typer.Option("qwen3-vl", help="name clients use for the base model"),
) -> None:
    """Generate (and validate) the GPU serving config: Ray job kwargs as JSON, or a Serve YAML."""
    import yaml

    from hyperpod_rl.serve.cluster import preflight_cluster, ray_serve_llm_app, vllm_job

    spec = {
        "base_model": base_model,
        "base_model_revision": revision,
        "base_model_id": base_model_id,
        "base_model_local": base_model_local,
        "adapters": _pairs(adapter, "--adapter"),
        "tensor_parallel_size": tensor_parallel_size,
        "served_model_name": served_model_name,
    }
    try:
        if target == "vllm-job":
            print(json.dumps(vllm_job(spec), indent=1))
        elif target == "ray-serve-llm":
            if not lora_uri:
                raise typer.BadParameter("ray-serve-llm needs --lora-uri s3://...", param_hint="--lora-uri")
            preflight_cluster(spec)
            print(yaml.safe_dump(ray_serve_llm_app(spec, lora_uri=lora_uri), sort_keys=False))
        else:
            raise typer.BadParameter("use 'vllm-job' or 'ray-serve-llm'", param_hint="--target")
    except HyperpodRLError as err:
        _fail(err)


@app.command("promote")
def serve_promote(
    run_id: str,
    base_label: str = typer.Option("base", help="evaluation of the base model: <run dir>/eval/<label>.json"),
    adapter_label: str = typer.Option("adapter", help="evaluation of the adapter: <run dir>/eval/<label>.json"),
    primary: str = typer.Option("solve_rate", help="metric that must improve significantly"),
) -> None:
    """Promote the run's adapter if its held-out evaluation beats the base model (exit 1 if not).

    Compares the saved evaluations (paired bootstrap, hyperpod_rl.eval.compare), saves the
    comparison to eval/comparison.json and records the decision (promotion.json, manifest, ledger).
    """
    from hyperpod_rl.eval import EvalResult, compare
    from hyperpod_rl.paths import run_dir
    from hyperpod_rl.serve.promote import COMPARISON_FILE, PromotionRefused, promote

    rdir = run_dir(run_id)
    if not (rdir / "adapter").is_dir():
        _fail(HyperpodRLError(f"run {run_id!r} has no adapter under {rdir}: check the run id (hyperpod-rl job list) or train it first"))
    files = [rdir / "eval" / f"{label}.json" for label in (base_label, adapter_label)]
    for f in files:
        if not f.is_file():
            _fail(
                HyperpodRLError(
                    f"{f} is missing: evaluate the base model and the adapter on the held-out mazes first (hyperpod-rl quickstart does)"
                )
            )
    try:
        comparison = compare(EvalResult.load(files[0]), EvalResult.load(files[1]), primary=primary)
        comparison.save(rdir / COMPARISON_FILE)
        table = Table("metric", base_label, adapter_label, "delta (paired)", "verdict")
        for row in comparison.table_rows():
            table.add_row(row["metric"], row["base"], row["candidate"], row["delta"], row["verdict"])
        console.print(table)
        decision = promote(rdir / "adapter", comparison=comparison, run_dir=rdir)
    except PromotionRefused as err:
        console.print(f"[bold red]not promoted:[/] {escape(err.decision.reason)}", soft_wrap=True)
        raise typer.Exit(code=1) from None
    except HyperpodRLError as err:
        _fail(err)
        raise
    console.print(f"[green]promoted[/] {decision.adapter}: {escape(decision.reason)}", soft_wrap=True)


@app.command("export")
def serve_export(
    run_id: str,
    s3_uri: str | None = typer.Option(None, "--s3-uri", help="s3://<bucket>/<prefix>/<adapter name>"),
    default_bucket: bool = typer.Option(False, "--default-bucket", help="use the existing SageMaker default bucket (never created)"),
) -> None:
    """Upload a run's adapter to S3 with checksums (for Ray Serve LLM) and record the URI in its provenance."""
    from hyperpod_rl.serve.export import export_adapter

    try:
        result = export_adapter(run_id, s3_uri, allow_default_bucket=default_bucket)
    except HyperpodRLError as err:
        _fail(err)
        raise
    console.print(
        f"exported {len(result.files)} files ({result.bytes} bytes) to {result.uri}; Ray Serve LLM dynamic_lora_loading_path: {result.lora_root}"
    )
