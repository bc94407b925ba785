"""Driver run inside a Ray Job: ``python -m hyperpod_rl.serve up|down``."""

from __future__ import annotations

from typing import Annotated

import typer

app = typer.Typer(add_completion=False, no_args_is_help=True)


@app.command()
def up(
    model_path: str = typer.Option(..., help="base model directory"),
    adapter: Annotated[list[str] | None, typer.Option(help="NAME=PATH of an adapter directory; repeatable")] = None,
    port: int = typer.Option(8000, help="HTTP port on 127.0.0.1"),
    num_cpus: float = typer.Option(1.0, help="CPUs of the replica"),
    model_id: str | None = typer.Option(
        None, help="base model id the adapters' provenance must name (default: read from the model directory)"
    ),
    app_name: str = typer.Option("hyperpod-rl", help="Serve application name (another than the default is served at /<name>)"),
) -> None:
    """Deploy the serving app and return (the app keeps running)."""
    import ray

    from hyperpod_rl.serve.local import route_prefix, run_app

    adapters = {}
    for item in adapter or []:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise typer.BadParameter(f"{item!r} is not NAME=PATH", param_hint="--adapter")
        adapters[name] = path
    ray.init(logging_level="ERROR")
    run_app(model_path, adapters, port=port, num_cpus=num_cpus, model_id=model_id, app_name=app_name)
    prefix = route_prefix(app_name)
    print(f"serving {app_name} on http://127.0.0.1:{port}{'' if prefix == '/' else prefix}", flush=True)


@app.command()
def down(app_name: str = typer.Option("hyperpod-rl", help="the Serve application to delete (no other is touched)")) -> None:
    """Delete one serving app; stop Serve (freeing its HTTP port) when no application is left.

    The last line printed is ``{"deleted": true|false}`` (JSON), which
    :func:`hyperpod_rl.serve.local.shutdown_local` reads from the job log.
    """
    import json

    import ray
    from ray import serve

    from hyperpod_rl.serve.local import _serve_http_port

    ray.init(logging_level="ERROR")
    deleted = False
    if _serve_http_port() is None:
        print("Ray Serve is not running", flush=True)
    else:
        deleted = app_name in serve.status().applications
        if deleted:
            serve.delete(app_name)
        if not serve.status().applications:
            serve.shutdown()
            print("Ray Serve stopped", flush=True)
    print(json.dumps({"deleted": deleted}), flush=True)


if __name__ == "__main__":
    app()
