"""``hyperpod-rl plan``: will a run fit its GPUs, and where does its step time go.

Thin over :func:`hyperpod_rl.run_plan.plan_run` (the planner, :mod:`hyperpod_rl.plan`); the
tables are :func:`hyperpod_rl.plan.report.plan_tables`, the same rows a notebook shows.
"""

from __future__ import annotations

import re
from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from hyperpod_rl.cli._common import console, fail, handled
from hyperpod_rl.config.presets import preset_gpu
from hyperpod_rl.config.run import RunConfig
from hyperpod_rl.plan import GPUS
from hyperpod_rl.plan.hardware import CALIBRATION_GPU

__all__ = ["parse_image_px", "plan_command"]

_PX = re.compile(r"^\s*(\d+)\s*(?:[xX]\s*(\d+))?\s*$")


def parse_image_px(text: str) -> tuple[int, int]:
    """``"448"`` -> ``(448, 448)``; ``"448x672"`` -> ``(448, 672)`` (height x width, pixels); otherwise exit 2 with the fix."""
    match = _PX.match(text)
    if not match:
        fail(f"--image-px takes SIDE or HEIGHTxWIDTH in pixels (e.g. 448 or 448x672), got {text!r}")
    h = int(match.group(1))
    w = int(match.group(2) or h)
    if h <= 0 or w <= 0:
        fail(f"--image-px must be positive pixels (e.g. 448 or 448x672), got {text!r}")
    return h, w


def plan_command(
    preset: str | None = typer.Option(None, "--preset", help=f"run preset: {', '.join(RunConfig.presets())}"),
    config: Path | None = typer.Option(
        None, "--config", help="run config file, YAML or JSON (the RunConfig fields: run_id, backend, data, trainer, ...)"
    ),
    gpu: str | None = typer.Option(
        None,
        "--gpu",
        help=f"GPU of the nodes, case-insensitive: {', '.join(GPUS)} (default: the preset's own GPU; H200 for --config)",
    ),
    image_px: str = typer.Option("448", "--image-px", help="image size in pixels: SIDE or HEIGHTxWIDTH"),
    micro_batch: int | None = typer.Option(
        None, "--micro-batch", help="override trainer.micro_batch_size (sequences per GPU per forward/backward)"
    ),
    as_json: bool = typer.Option(False, "--json", help="print the plan as JSON (hyperpod_rl.plan.Plan) instead of tables"),
) -> None:
    """Predict a run's per-GPU memory, vLLM KV-cache room and step time, with verdicts.

    Give a run preset (--preset) or a run config file (--config). A preset is planned on its own GPU (hyperpod-6gpu: RTXPRO6000, the RTX PRO 6000 of ml.g7e.12xlarge), a config file on an H200, unless --gpu says otherwise. An SFT stage (hyperpod-6gpu-sft) is not planned: plan the GRPO run that follows it. Exit code: 0 when the run fits its GPUs, 1 when it does not (a blocker verdict says what to change), 2 on bad input.
    """
    from hyperpod_rl.plan.report import plan_summary, plan_tables
    from hyperpod_rl.run_plan import plan_run

    if (preset is None) == (config is None):
        fail(
            f"give either --preset NAME (one of {', '.join(RunConfig.presets())}) or --config FILE (YAML or JSON), not {'both' if preset else 'neither'}"
        )
    px = parse_image_px(image_px)
    overrides = {} if micro_batch is None else {"trainer.micro_batch_size": micro_batch}
    with handled():
        run = RunConfig.from_preset(preset, **overrides) if preset is not None else RunConfig.from_file(config, **overrides)  # type: ignore[arg-type]
        planned_gpu = gpu if gpu is not None else (preset_gpu(preset) if preset is not None else CALIBRATION_GPU)
        result = plan_run(run, gpu=planned_gpu, image_px=px)
    if as_json:
        typer.echo(result.model_dump_json(indent=1))
        raise typer.Exit(code=0 if result.fits else 1)
    if gpu is None and preset is None:
        console.print(
            f"[yellow]note:[/] a run config does not say which GPU its nodes have; planning for {escape(result.input.gpu_spec().name)} "
            "(give --gpu to change it)"
        )
    if run.backend != "skyrl":
        console.print(
            f"[yellow]note:[/] run {escape(run.run_id)} uses the {escape(run.backend)} backend: the planner models its policy update "
            "as one plain process per worker (no FSDP2) and its rollouts as compiled transformers decoding in that process "
            "(no vLLM engine, no weight sync; decode time fitted on H200 runs, docs/gpu.md)"
        )
    console.print(f"[bold {'green' if result.fits else 'red'}]{escape(plan_summary(result))}[/]", soft_wrap=True)
    for t in plan_tables(result):
        table = Table(title=t.title, title_justify="left")
        for i, column in enumerate(t.columns):
            table.add_column(column, justify="left" if i == 0 else "right", overflow="fold")
        for row in t.rows:
            style = "bold" if row[0] in ("peak", "total") else None
            table.add_row(*(escape(c) for c in row), style=style)
        console.print(table)
    console.print("[bold]Verdicts[/]")
    blockers = set(result.blockers)
    for verdict in result.verdicts:
        mark = "[bold red]blocker:[/] " if verdict in blockers else "- "
        console.print(f"{mark}{escape(verdict)}", soft_wrap=True)
    raise typer.Exit(code=0 if result.fits else 1)
