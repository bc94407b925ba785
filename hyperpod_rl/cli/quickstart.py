"""``hyperpod-rl quickstart``: the whole loop on the embedded local Ray cluster (:func:`hyperpod_rl.quickstart.run`)."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

import typer
from rich.console import Group, RenderableType
from rich.markup import escape
from rich.measure import Measurement
from rich.table import Table

from hyperpod_rl.base import parse_user_data
from hyperpod_rl.cli._common import (
    cli_words,
    console,
    fail,
    flag_names,
    follow_with_progress,
    model_options,
    options_of,
    output_file,
    print_note,
    writing,
)
from hyperpod_rl.errors import HyperpodRLError
from hyperpod_rl.quickstart import Phase, QuickstartOptions, QuickstartSummary

__all__ = ["activate_hint", "quickstart"]

_LABELS = {"solve_rate": "solve rate", "optimal_move_rate": "optimal-move rate", "invalid_move_rate": "invalid-move rate"}


class _Phases:
    """Shows each phase as a spinner while it runs and a ✓ line when it ends."""

    def __init__(self) -> None:
        self.status: Any = None

    def __call__(self, phase: Phase) -> None:
        n = phase.counter  # among the steps this quickstart runs: --no-serve ends at 8/8
        if phase.note:
            self.stop()
            print_note(phase.note, out=console)
            return
        if not phase.done:
            if phase.name not in ("train", "sft"):  # training shows its own progress bar
                self.status = console.status(f"{n} {phase.description}")
                self.status.start()
            return
        self.stop()
        console.print(f"[green]✓[/] {n} {escape(phase.message)} [dim]({phase.seconds:.0f} s)[/]", soft_wrap=True, highlight=False)

    def stop(self) -> None:
        """Stop the spinner of the step that is running, if any."""
        if self.status is not None:
            self.status.stop()
            self.status = None


def _table(summary: QuickstartSummary, max_turns: int, *, width: int | None = None) -> RenderableType:
    """The result table; where it would be wider than ``width`` characters (a log, an 80-column
    terminal) it becomes two tables, the rates and then the paired differences, each value's
    interval under it, so no cell wraps mid-interval."""
    table = _build_table(summary, max_turns, columns=None)
    if width is None or Measurement.get(console, console.options.update(width=10_000), table).maximum <= width:
        return table
    rates, deltas = (["metric", "base", "SFT", "SFT → GRPO"], ["metric", "Δ SFT−base (paired)", "Δ GRPO−SFT (paired)"])
    if summary.sft is None or summary.sft_comparison is None:
        rates, deltas = ["metric", "base", "adapter"], ["metric", "Δ (paired)"]
    return Group(_build_table(summary, max_turns, columns=rates), _build_table(summary, max_turns, columns=deltas, title=False))


def _build_table(summary: QuickstartSummary, max_turns: int, *, columns: list[str] | None, title: bool = True) -> Table:
    """The result table with every column, or (``columns``) only those, each interval under its value."""
    maze = summary.base.task == "maze"
    items = "mazes" if maze else f"{summary.base.task} items"
    turns = f"≤{max_turns} turns" if maze else "the task's turn limit"
    heading = f"held-out {items}: {summary.heldout_rows} (greedy, {turns}; rates averaged over {items}, 95% bootstrap CIs)"
    rows: list[dict[str, str]] = []
    if summary.sft is not None and summary.sft_comparison is not None:
        grpo = {r["metric"]: r for r in summary.comparison.table_rows()}
        for row in summary.sft_comparison.table_rows():
            if row["metric"] in _LABELS or not maze:
                after = grpo.get(row["metric"], {})
                rows.append(
                    {
                        "metric": _LABELS.get(row["metric"], row["metric"]),
                        "base": row["base"],
                        "SFT": row["candidate"],
                        "SFT → GRPO": after.get("candidate", ""),
                        "Δ SFT−base (paired)": row["delta"],
                        "Δ GRPO−SFT (paired)": after.get("delta", ""),
                    }
                )
        counts = {
            "metric": items,
            "base": str(summary.base.num_mazes),
            "SFT": str(summary.sft.num_mazes),
            "SFT → GRPO": str(summary.adapter.num_mazes),
        }
    else:
        for row in summary.comparison.table_rows():
            if row["metric"] in _LABELS or not maze:  # other tasks: every reported metric, by its own name
                rows.append(
                    {
                        "metric": _LABELS.get(row["metric"], row["metric"]),
                        "base": row["base"],
                        "adapter": row["candidate"],
                        "Δ (paired)": row["delta"],
                    }
                )
        counts = {"metric": items, "base": str(summary.base.num_mazes), "adapter": str(summary.adapter.num_mazes)}
    names = columns or list(rows[0] if rows else counts)
    table = Table(title=heading if title else None)
    for name in names:
        table.add_column(name, justify="left" if name == "metric" else "right", no_wrap=name == "metric" or columns is not None)
    for row in rows:
        table.add_row(*(row[n].replace(" [", "\n[", 1) if columns is not None and n != "metric" else row[n] for n in names))
    if any(counts.get(n) for n in names if n != "metric"):
        table.add_row(*(counts.get(n, "") for n in names))
    return table


@model_options(QuickstartOptions, exclude=("task_options",))
def quickstart(
    *,
    task_options: str | None = typer.Option(
        None,
        "--task-options",
        help=f"{QuickstartOptions.model_fields['task_options'].description}, as a JSON object (hyperpod-rl tasks show TASK)",
    ),
    summary_json: Path | None = typer.Option(None, help="also write the summary (phase times, figures) to this file"),
    resume: str | None = typer.Option(
        None,
        "--resume",
        metavar="RUN_ID",
        help="finish the interrupted quickstart RUN_ID with the options it started with: keeps the steps it ended, follows its "
        "running job, does the rest (only --serve-port, --dashboard-port and --no-serve may be given with it)",
    ),
    **options: Any,
) -> None:
    """Run the whole loop locally: task data (the maze unless --task), cluster, base eval, SFT warm start and its eval (--no-sft skips them), GRPO job from the SFT adapter, adapter eval, serving.

    Ctrl-C (or SIGTERM, kill PID) stops it and says what was not done; hyperpod-rl quickstart --resume RUN_ID finishes it.
    """
    from hyperpod_rl.quickstart import QuickstartInterrupted, check_start, default_run_id, resume_options, run

    phases = _Phases()
    if summary_json is not None:  # checked before anything runs, not after the whole loop
        output_file(summary_json, "--summary-json")
    try:
        extra = parse_user_data(task_options, "--task-options", syntax="json") if task_options else {}
    except HyperpodRLError as err:
        raise typer.BadParameter(f"{err}; pass an object, e.g. '{{\"fill\": 0.5}}'") from None
    if not isinstance(extra, dict):
        raise typer.BadParameter("--task-options must be a JSON object")
    options["task_options"] = extra
    if resume is not None:
        fields = QuickstartOptions.model_fields
        given = {k: v for k, v in options.items() if v != fields[k].get_default(call_default_factory=True)}
        try:  # the saved options first: a problem there names their file and key, not a flag the user did not give
            resume_options(resume)
        except HyperpodRLError as err:
            fail(err)
        try:
            opts = resume_options(resume, **given)
        except HyperpodRLError as err:
            fail(flag_names(str(err), QuickstartOptions))
    else:
        opts = options_of(QuickstartOptions, options)
        if opts.run_id is None:
            opts = options_of(QuickstartOptions, {**options, "run_id": default_run_id()})
    try:  # what the quickstart refuses before it starts is said before its header
        check_start(opts, resume=resume is not None)
    except HyperpodRLError as err:
        fail(err)
    try:
        console.rule(f"[bold]hyperpod-rl quickstart[/] · run {opts.run_id}" + (" (resumed)" if resume else ""))
        summary = run(opts, on_phase=phases, follow=partial(follow_with_progress, detach=False), resume=resume is not None)
    except HyperpodRLError as err:
        phases.stop()
        fail(err)
    except QuickstartInterrupted as stop:
        phases.stop()
        console.print(f"\n[bold yellow]{escape(cli_words(str(stop)))}[/]", soft_wrap=True, highlight=False)
        raise typer.Exit(code=stop.exit_code) from None  # 130 after Ctrl-C, 143 after SIGTERM
    console.print(_table(summary, opts.max_turns, width=console.width))
    for warning in summary.warnings:
        console.print(f"[bold yellow]warning:[/] {escape(warning)}", soft_wrap=True)
    if summary.base.task == "maze":
        console.print(
            f"optimal-move rate = share of a maze's turns whose move is on a shortest path · {escape(summary.comparison.reason)}",
            soft_wrap=True,
            highlight=False,
        )
    else:
        console.print(escape(summary.comparison.reason), soft_wrap=True, highlight=False)
    # whole lines (soft_wrap): a piped or CI log is 80 columns wide, and a command cut in two cannot be copied
    if summary.served_answer:
        console.print(
            "    stop serving: hyperpod-rl serve down · stop the cluster: hyperpod-rl local stop", soft_wrap=True, highlight=False
        )
    elif not opts.serve:
        console.print(
            f"not served (--no-serve): hyperpod-rl serve up {opts.run_id} serves the adapter · stop the cluster: hyperpod-rl local stop",
            soft_wrap=True,
            highlight=False,
        )
    if summary_json:
        with writing(summary_json, "--summary-json"):
            summary_json.write_text(json.dumps(summary.to_json(), indent=1, sort_keys=True))
    console.print(
        f"[bold green]done[/] in {summary.wall_s['total']:.0f} s · run dir {escape(str(summary.run_dir))}", soft_wrap=True, highlight=False
    )
    hint = activate_hint()
    if hint:
        console.print(hint, soft_wrap=True, highlight=False)


def activate_hint() -> str | None:
    """How a new shell gets this environment's ``hyperpod-rl`` (the commands the quickstart names),
    when ``PATH`` does not lead to it (``make quickstart`` runs ``.venv/bin/hyperpod-rl``); None when it does."""
    import shutil
    import sys

    bin_dir = Path(sys.prefix) / "bin"
    found = shutil.which("hyperpod-rl")
    if found and Path(found).resolve() == (bin_dir / "hyperpod-rl").resolve():
        return None
    return f"the hyperpod-rl commands above run in this environment: in a new shell, first run source {bin_dir / 'activate'}"
