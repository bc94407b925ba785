"""``hyperpod-rl doctor``: a thin front-end over :func:`hyperpod_rl.readiness.doctor`."""

from __future__ import annotations

import typer
from rich.console import Console
from rich.table import Table

__all__ = ["doctor_command"]

_STYLE = {"ok": "green", "warn": "yellow", "fail": "bold red", "skip": "dim"}


def doctor_command(
    cluster: str | None = typer.Option(None, "--cluster", help="HyperPod cluster to check access to (default: the only usable one)"),
    namespace: str = typer.Option("default", "--namespace", "-n", help="namespace of your RayClusters"),
    address: str | None = typer.Option(
        None, "--address", help="cluster address to compare Ray with (sagemaker_ray://<raycluster>/<ns>, local)"
    ),
    region: str | None = typer.Option(None, help="AWS region (default: the environment's)"),
    aws: bool | None = typer.Option(None, "--aws/--no-aws", help="run the AWS checks (default: only where AWS is configured)"),
    as_json: bool = typer.Option(False, "--json", help="print JSON for scripts"),
) -> None:
    """Check this environment for hyperpod-rl: one line per check with the fix; exit 1 when any fails."""
    from hyperpod_rl.readiness import doctor

    report = doctor(cluster=cluster, namespace=namespace, address=address, region=region, aws=aws)
    if as_json:
        typer.echo(report.to_json())
    else:
        table = Table("", "check", "found", "fix", show_lines=False)
        for check in report.checks:
            table.add_row(f"[{_STYLE[check.status]}]{check.status}[/]", check.name, check.detail, check.fix)
        Console().print(table)
    raise typer.Exit(code=0 if report.ok else 1)
