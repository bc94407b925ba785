"""``hyperpod-rl maze ...``: audit the reward, build datasets, look at a maze.

A typer sub-app (``app``) over :mod:`hyperpod_rl.tasks.maze`; no task logic lives here.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import typer
from rich.table import Table

from hyperpod_rl.base import load_user_data
from hyperpod_rl.cli._common import HprlGroup, console, fail, output_dir, output_file, writing
from hyperpod_rl.errors import HyperpodRLError, TaskError
from hyperpod_rl.tasks.maze import (
    ALGORITHMS,
    REWARD_VERSION,
    DatasetSpec,
    build_dataset,
    generate_maze,
    render_maze,
    write_parquet,
)
from hyperpod_rl.tasks.maze.audit import load_reward_fn, run_audit

__all__ = ["app"]

app = typer.Typer(cls=HprlGroup, no_args_is_help=True, help="The visual maze task: reward audit, datasets, previews.")


@app.command("audit")
def audit(
    reward_fn: str | None = typer.Option(
        None, "--reward-fn", help="reward function to audit, as package.module:function (default: the built-in reward)"
    ),
    tolerance: float = typer.Option(1e-6, help="largest accepted absolute difference"),
) -> None:
    """Run the adversarial completion table through a reward function and report every disagreement.

    Exit code 0 when all cases agree, 1 on any disagreement, 2 when the function cannot be loaded.
    """
    try:
        fn = None if reward_fn is None else load_reward_fn(reward_fn)
    except TaskError as err:
        fail(err)
    report = run_audit(fn, tolerance=tolerance)
    name = reward_fn or "hyperpod_rl.tasks.maze.reward:score_completion"
    if report.passed:
        console.print(f"[green]{report.total}/{report.total} cases agree[/] ({name}, reward spec {REWARD_VERSION})")
        return
    table = Table(title=f"{name}: disagreements")
    for column in ("case", "mode", "maze", "agent", "expected", "got"):
        table.add_column(column, no_wrap=True)
    table.add_column("probes")
    for d in report.disagreements:
        got = d.error if d.error is not None else f"{d.got:+.4f}"
        agent = "start" if d.case.agent is None else str(d.case.agent)
        table.add_row(d.case.case_id, d.case.mode, d.case.maze, agent, f"{d.case.expected:+.4f}", got, d.case.note)
    console.print(table)
    console.print(f"[red]{len(report.disagreements)} of {report.total} cases disagree[/] with reward spec {REWARD_VERSION}")
    raise typer.Exit(code=1)


def _size(text: str) -> tuple[int, int]:
    rows, sep, cols = text.lower().partition("x")
    if not sep or not rows.isdigit() or not cols.isdigit():
        raise typer.BadParameter(f"size {text!r} must look like 5x5 (rows x cols)")
    return int(rows), int(cols)


@app.command("build")
def build(
    out: Path = typer.Option(..., "--out", help="folder for {split}.parquet and spec.json"),
    spec_file: Path | None = typer.Option(None, "--spec", help="DatasetSpec as JSON; other options are ignored"),
    seed: int = typer.Option(0, help="master seed"),
    size: list[str] | None = typer.Option(None, help="in-distribution grid size rows x cols (repeatable; default 5x5)"),
    train: int = typer.Option(256, help="train rows"),
    heldout: int = typer.Option(64, help="held-out rows (disjoint layouts)"),
    ood: int = typer.Option(0, help="out-of-distribution rows (larger grids, longer paths)"),
    ood_size: list[str] | None = typer.Option(None, help="ood grid size (repeatable; default 9x9)"),
    algorithm: list[str] | None = typer.Option(None, help=f"generator, one of {', '.join(ALGORITHMS)} (repeatable; default backtracker)"),
    braid: float = typer.Option(0.0, help="fraction of dead ends opened (loops)"),
    mode: str = typer.Option("step", help="step or plan"),
) -> None:
    """Build train / heldout / ood parquet files and print their sha256 and strata."""
    output_dir(out, "--out")
    try:
        if spec_file is not None:
            fields = load_user_data(spec_file, "dataset spec file", fix="give an existing JSON file of DatasetSpec fields", syntax="json")
            if not isinstance(fields, dict):
                fail(f"dataset spec file {spec_file} holds a {type(fields).__name__}, not an object: write DatasetSpec fields as keys")
            spec = DatasetSpec(**fields)
        else:
            spec = DatasetSpec(
                seed=seed,
                sizes=tuple(_size(s) for s in (size or ["5x5"])),
                counts={k: v for k, v in {"train": train, "heldout": heldout, "ood": ood}.items() if v > 0},
                ood_sizes=tuple(_size(s) for s in (ood_size or ["9x9"])),
                algorithms={a: 1.0 for a in (algorithm or ["backtracker"])},
                braid=braid,
                mode=mode,
            )
        splits = build_dataset(spec)
    except HyperpodRLError as err:
        fail(err)
    table = Table("split", "rows", "sha256", "strata (count)")
    with writing(out, "--out"):
        (out / "spec.json").write_text(spec.model_dump_json(indent=2))
        for split, rows in splits.items():
            sha = write_parquet(rows, out / f"{split}.parquet")
            strata = Counter(r["stratum"] for r in rows).most_common(4)
            table.add_row(split, str(len(rows)), sha[:16], ", ".join(f"{s} ({n})" for s, n in strata))
    console.print(table)
    console.print(f"written to {out} (reward spec {REWARD_VERSION})")


@app.command("show")
def show(
    rows: int = typer.Option(5, help="grid rows (cells)"),
    cols: int = typer.Option(5, help="grid columns (cells)"),
    seed: int = typer.Option(0, help="maze seed"),
    algorithm: str = typer.Option("backtracker", help=f"one of {', '.join(ALGORITHMS)}"),
    braid: float = typer.Option(0.0, help="fraction of dead ends opened"),
    png: Path | None = typer.Option(None, help="write the rendered image here"),
) -> None:
    """Print a maze's text-grid twin, its shortest path and layout hash; optionally save the image."""
    try:
        maze = generate_maze(rows, cols, seed=seed, algorithm=algorithm, braid=braid)  # type: ignore[arg-type]
    except TaskError as err:
        fail(err)
    console.print(maze.to_text(), markup=False, highlight=False)
    console.print(f"shortest path ({maze.shortest_path_length}): {' '.join(maze.shortest_path())}")
    console.print(f"layout hash: {maze.layout_hash()}")
    if png is not None:
        with writing(output_file(png, "--png"), "--png"):
            render_maze(maze).save(png)
        console.print(f"image: {png}")
