"""``hyperpod-rl serve ...``: serve a run's adapter, check adapters, ask and solve, cluster configs.

Mounted by :mod:`hyperpod_rl.cli` as ``app.add_typer(serve.app, name="serve")``. Each command
calls the library function a notebook would call.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from hyperpod_rl.cli._common import HprlGroup, console, fail, handled, local_client
from hyperpod_rl.cli.runs import about_run, fail_if_unknown

__all__ = ["app"]

app = typer.Typer(
    cls=HprlGroup, no_args_is_help=True, help="Serve adapters: local Ray Serve, preflight checks, vLLM / Ray Serve LLM configs."
)


def _pairs(items: list[str], option: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise typer.BadParameter(f"{item!r} is not NAME=PATH", param_hint=option)
        out[name] = path
    return out


def _heldout_row(run_id: str, index: int) -> Any:
    """Held-out maze ``index`` of a run (exits with the valid range when out of it)."""
    from hyperpod_rl.runs import dataset_rows

    with about_run(run_id):
        rows = dataset_rows(run_id)
    if not 0 <= index < len(rows):
        raise typer.BadParameter(f"must be in 0..{len(rows) - 1}", param_hint="--index")
    return rows[index]


def _task_name(run_id: str) -> str:
    """The run's task name: the default name its adapter is served as."""
    from hyperpod_rl.runs import read_config

    with about_run(run_id):
        return read_config(run_id).task.name


@app.command("up")
def serve_up(
    run_id: str,
    port: int = typer.Option(8000, help="HTTP port on 127.0.0.1"),
    name: str | None = typer.Option(None, help="model name of the run's adapter (default: the run's task, e.g. doc_read)"),
    adapter: Annotated[list[str] | None, typer.Option(help="NAME=PATH of another adapter to serve beside it; repeatable")] = None,
) -> None:
    """Serve a run's adapter (and the base model as 'base') with Ray Serve on the local cluster.

    Every adapter passes preflight first; a failing one is refused before anything is deployed.
    """
    from hyperpod_rl.serve.local import serve_run

    extra = _pairs(adapter or [], "--adapter")
    name = name or _task_name(run_id)
    client = local_client()
    with handled(), console.status("checking the adapters and deploying"):
        url, reports = serve_run(client, run_id, port=port, name=name, extra_adapters=dict(extra))
    for report in reports:
        for finding in report.warnings:
            console.print(f"[yellow]warning:[/] {report.adapter}: {escape(finding.message)}", soft_wrap=True)
    console.print(f"serving at {url}/v1/chat/completions (models: base, {', '.join([name, *extra])})")
    from hyperpod_rl.jupyter import browser_link

    link = browser_link(f"{url}/v1/models", "models")
    if link.href != f"{url}/v1/models":
        console.print(f"from this JupyterLab's browser tab: {link.href}")


@app.command("down")
def serve_down() -> None:
    """Remove the serving app from the local cluster (Serve stops when no app is left).

    Exit code 0 also when nothing was deployed (or no local cluster runs): then it says so.
    """
    from hyperpod_rl.cluster.local import current_local_cluster
    from hyperpod_rl.serve.local import shutdown_local

    cluster = current_local_cluster()
    if cluster is None or not cluster.is_alive():
        console.print("nothing deployed on the local cluster: it is not running")
        return
    with handled():
        deleted = shutdown_local(local_client())
    console.print(f"serving app deleted from {cluster.dashboard_url}" if deleted else f"nothing deployed on {cluster.dashboard_url}")


@app.command("ask")
def serve_ask(
    run_id: str,
    index: int = typer.Option(0, help="held-out maze index"),
    model: str | None = typer.Option(None, help="adapter name, or 'base' (default: the run's task, as serve up names it)"),
    endpoint: str = typer.Option("http://127.0.0.1:8000"),
) -> None:
    """Send one held-out maze of a run to the served model and print its move."""
    from hyperpod_rl.serve.client import chat, maze_request

    row = _heldout_row(run_id, index)
    model = model or _task_name(run_id)
    with handled():
        answer, latency = chat(endpoint, maze_request(row, model=model), run_id=run_id)
    size = f" ({row['rows']}x{row['cols']})" if "rows" in row and "cols" in row else ""
    console.print(f"held-out item {index}{size}: {model} answered {escape(repr(answer))} in {latency * 1000:.0f} ms")


@app.command("solve")
def serve_solve(
    run_id: str,
    index: int = typer.Option(0, help="held-out maze index"),
    model: str | None = typer.Option(None, help="adapter name, or 'base' (default: the run's task, as serve up names it)"),
    endpoint: str = typer.Option("http://127.0.0.1:8000"),
    max_turns: int | None = typer.Option(None, help="turn limit (default: the maze's)"),
) -> None:
    """Play one held-out maze (or item of the run's task) through the served model, turn by turn."""
    from hyperpod_rl.serve.client import solve

    row = _heldout_row(run_id, index)
    model = model or _task_name(run_id)
    with handled():
        result = solve(row, endpoint, model, max_turns=max_turns, run_id=run_id)
    from hyperpod_rl.tasks import get_task, metric_spec, turn_columns

    task = get_task(result.task)
    columns = turn_columns(task)
    table = Table("turn", "answer", *columns, "reward", "latency ms", title=f"{task.name} held-out item {index} · model {model}")
    for t, (answer, step, reward, lat) in enumerate(zip(result.answers, result.steps, result.rewards, result.latencies_s, strict=True), 1):
        table.add_row(str(t), escape(answer), *(escape(_cell(step.get(c))) for c in columns), f"{reward:+.3f}", f"{lat * 1000:.0f}")
    console.print(table)
    spec = metric_spec(task)
    key = spec.episode_key[spec.primary]
    path = f", path {result.path}" if result.path else ""
    console.print(
        f"{'solved' if result.solved else 'not solved'} ({key} {result.metrics.get(key, 0.0):g}) in {result.turns} turn(s), reward {result.reward:+.3f}{path}"
    )


def _cell(value: Any) -> str:
    """A step-metadata value as a table cell (``-`` for none)."""
    if value is None:
        return "-"
    if isinstance(value, (list, tuple)):
        return "(" + ", ".join(str(v) for v in value) + ")"
    return str(value)


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
    if base is None and not (model_id and revision):
        raise typer.BadParameter("pass --base DIR, or both --model-id and --revision", param_hint="--base")
    with handled():
        ref = (
            BaseModelRef.from_dir(base, model_id=model_id, revision=revision)
            if base is not None
            else BaseModelRef(model_id=model_id, revision=revision)
        )
        profile = LOCAL_SERVER if server == "local" else vllm_server(max_lora_rank, generation_config=generation_config)  # type: ignore[arg-type]
        report = preflight(adapter, ref, profile)
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
    if target not in ("vllm-job", "ray-serve-llm"):
        raise typer.BadParameter("use 'vllm-job' or 'ray-serve-llm'", param_hint="--target")
    if target == "ray-serve-llm" and not lora_uri:
        raise typer.BadParameter("ray-serve-llm needs --lora-uri s3://...", param_hint="--lora-uri")
    with handled():
        if target == "vllm-job":
            print(json.dumps(vllm_job(spec), indent=1))
        else:
            preflight_cluster(spec)
            print(yaml.safe_dump(ray_serve_llm_app(spec, lora_uri=str(lora_uri)), sort_keys=False))


@app.command("promote")
def serve_promote(
    run_id: str,
    base_label: str = typer.Option("base", help="evaluation of the base model: <run dir>/eval/<label>.json"),
    adapter_label: str = typer.Option("adapter", help="evaluation of the adapter: <run dir>/eval/<label>.json"),
    primary: str | None = typer.Option(
        None, help="metric that must improve significantly (default: the task's primary metric, maze: solve_rate)"
    ),
) -> None:
    """Promote the run's adapter if its held-out evaluation beats the base model (exit 1 if not).

    Compares the saved evaluations (paired bootstrap, hyperpod_rl.eval.compare), saves the
    comparison to eval/comparison.json and records the decision (promotion.json, provenance record).
    """
    from hyperpod_rl.errors import HyperpodRLError, PromotionRefused
    from hyperpod_rl.serve.promote import promote_run

    try:
        decision = promote_run(run_id, base_label=base_label, adapter_label=adapter_label, primary=primary)
    except HyperpodRLError as err:
        if not isinstance(err, PromotionRefused):
            fail_if_unknown(run_id)
            fail(err)
        _comparison_table(err.decision.comparison, base_label, adapter_label)
        console.print(f"[bold red]not promoted:[/] {escape(err.decision.reason)}", soft_wrap=True)
        raise typer.Exit(code=1) from None
    _comparison_table(decision.comparison, base_label, adapter_label)
    console.print(f"[green]promoted[/] {decision.adapter}: {escape(decision.reason)}", soft_wrap=True)


@app.command("export")
def serve_export(
    run_id: str,
    s3_uri: str | None = typer.Option(None, "--s3-uri", help="s3://<bucket>/<prefix>/<adapter name>"),
    default_bucket: bool = typer.Option(False, "--default-bucket", help="use the existing SageMaker default bucket (never created)"),
) -> None:
    """Upload a run's adapter to S3 with checksums (for Ray Serve LLM) and record the URI in its provenance."""
    from hyperpod_rl.serve.export import export_adapter

    with about_run(run_id):
        result = export_adapter(run_id, s3_uri, allow_default_bucket=default_bucket)
    console.print(
        f"exported {len(result.files)} files ({result.bytes} bytes) to {result.uri}; Ray Serve LLM dynamic_lora_loading_path: {result.lora_root}"
    )


def _comparison_table(comparison: dict[str, Any] | None, base_label: str, adapter_label: str) -> None:
    from hyperpod_rl.eval import Comparison

    if not comparison:
        return
    table = Table("metric", base_label, adapter_label, "delta (paired)", "verdict")
    for row in Comparison.from_json(comparison).table_rows():
        table.add_row(row["metric"], row["base"], row["candidate"], row["delta"], row["verdict"])
    console.print(table)
