"""``hyperpod-rl runs list|show|search|note|compare|reproduce|sync``: the run ledger from a shell.

Every command calls :class:`hyperpod_rl.ledger.Ledger` (the same API a notebook uses). The
trainer never writes the ledger: ``list``, ``show``, ``search`` and ``compare`` first import the
run directories under the storage root that changed since (``sync`` does only that).
``--ledger PATH`` (or ``HYPERPOD_RL_LEDGER``) picks another database, e.g. a team's on FSx.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from hyperpod_rl.cli._common import (
    Address,
    HprlGroup,
    TableColumn,
    cli_words,
    console,
    err_console,
    fail,
    fitted_table,
    follow_with_progress,
    handled,
    job_client,
    reachable_client,
)
from hyperpod_rl.errors import ConfigError, HyperpodRLError

app = typer.Typer(cls=HprlGroup, no_args_is_help=True, help="The run ledger: list, show, search, annotate, compare and reproduce runs.")

LedgerOpt = typer.Option(None, "--ledger", help="ledger database file (default $HYPERPOD_RL_LEDGER or <data dir>/ledger.sqlite)")


#: What a run recorded ``running`` shows when no cluster can confirm it.
UNREACHABLE = "unknown (cluster not reachable)"


def _reconcile(address: str | None) -> dict[str, str] | None:
    """Record the end of runs not recorded as ended whose Ray job has ended, and return each
    store run's status by the one rule (:func:`hyperpod_rl.jobs.overview`, which ``job status``
    shares; lower case, e.g. ``lost`` for a job the cluster no longer knows); None when the
    cluster (``address``, else the local one) cannot be reached.

    A run whose end cannot be written (its run directory is read-only, full or forbidden) gets
    one ``warning:`` line naming the path and the fix; its status and every other run's are the
    cluster's all the same."""
    from hyperpod_rl.jobs import overview, reconcile_statuses

    client, _ = reachable_client(address)
    if client is None:
        return None
    unrecorded: dict[str, str] = {}
    try:
        reconcile_statuses(client, unrecorded=unrecorded)
        statuses = {row["run_id"]: str(row["status"]).lower() for row in overview(client)}
    except (HyperpodRLError, OSError, RuntimeError):  # the cluster stopped answering
        return None
    for run_id, problem in unrecorded.items():
        err_console.print(
            f"[bold yellow]warning:[/] {escape(f'run {run_id}: its end was not recorded: {problem}')}", soft_wrap=True, highlight=False
        )
    return statuses


def _shown_status(run_id: str, status: str, statuses: dict[str, str] | None) -> str:
    """A run's status as the cluster and its run directory tell it (``statuses``, from
    :func:`_reconcile`); a run not in this store shows its ledger status; with no cluster
    reachable, one not yet ended (``submitted``, ``running``) is unknown."""
    if statuses is None:
        return UNREACHABLE if status in ("submitted", "running") else status
    return statuses.get(run_id, status)


@contextmanager
def _open(path: Path | None, *, sync: bool = True) -> Iterator[Any]:
    """The ledger, synced with the run directories; a project error inside the block (a damaged
    ledger, a bad argument) is one ``error:`` line (:func:`handled`)."""
    from hyperpod_rl.ledger import Ledger
    from hyperpod_rl.runs import runs_root

    with handled(), Ledger(path) as ledger:
        if sync:
            ledger.sync_storage(runs_root())
        yield ledger


def fail_if_unknown(run_id: str, *, option: str | None = None) -> None:
    """Exit 2 saying plainly that no run has the id ``run_id``, where runs were looked for, and
    that ``hyperpod-rl runs list`` shows the known ones, as ``runs show`` says it
    (:meth:`hyperpod_rl.ledger.Ledger.require_run`, over the ledger synced with the storage root);
    ``option`` (e.g. ``--from-run``) starts the message when the id came from an option. A run
    that has no job because its quickstart was interrupted before submitting it exits 2 saying
    so and that ``hyperpod-rl quickstart --resume`` finishes it
    (:func:`hyperpod_rl.runs.unsubmitted_quickstart`), not what failed for want of the job.

    Returns when a run has this id (in the ledger or as a run directory), and when that cannot be
    told (the id is not a valid run id, or the ledger cannot be used): the caller's own error says why.
    """
    from hyperpod_rl.ledger import Ledger
    from hyperpod_rl.runs import run_paths, runs_root, unsubmitted_quickstart

    try:
        paths = run_paths(run_id)
        if paths.root.is_dir():
            interrupted = unsubmitted_quickstart(paths)
            if interrupted:
                fail(f"{option}: {interrupted}" if option else interrupted)
            return
        led = Ledger()
    except HyperpodRLError:
        return
    with led:
        try:
            led.sync_storage(runs_root())
            led.require_run(run_id)
        except ConfigError as unknown:
            fail(f"{option}: {unknown}" if option else unknown)
        except HyperpodRLError:
            return


@contextmanager
def about_run(run_id: str, *, option: str | None = None) -> Iterator[None]:
    """:func:`handled` for a command given a run id: when the block raises a project error and no
    run has that id, the error says so instead (:func:`fail_if_unknown`), not what failed for want of it."""
    try:
        yield
    except HyperpodRLError as err:
        fail_if_unknown(run_id, option=option)
        fail(err)


def run_client(run_id: str, address: str | None) -> Any:
    """The job client for ``address`` (:func:`hyperpod_rl.cli._common.job_client`); when no
    cluster can be reached and no run has the id ``run_id``, exit 2 saying that first
    (:func:`fail_if_unknown`), else with why the cluster cannot be reached."""
    client, unreachable = reachable_client(address)
    if client is None:
        fail_if_unknown(run_id)
        fail(str(unreachable))
    return client


def _when(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts, tz=dt.UTC).strftime("%Y-%m-%d %H:%M")


@app.command("list")
def list_cmd(
    status: str | None = typer.Option(None, help="only runs with this status (created, submitted, running, succeeded, failed, stopped)"),
    limit: int = typer.Option(50, help="most runs shown"),
    ledger: Path | None = LedgerOpt,
    address: str | None = Address,
) -> None:
    """Runs, most recently updated first, with their adapter's primary metric (the task's).

    A run recorded 'submitted' or 'running' whose Ray job has ended is recorded as ended
    first (the cluster is asked); a bad '--status' is an error listing the statuses; when the cluster cannot be reached it shows 'unknown (cluster not reachable)'.
    """
    statuses = _reconcile(address)
    with _open(ledger) as led:
        with handled():
            runs = led.list_runs(status=status, limit=limit)
        rows: list[dict[str, str]] = []
        for r in runs:
            full = led.get_run(r.run_id) or r
            name, metrics = _task_metrics(full)
            ev = full.evals.get("adapter") or {}
            cell = _figure(ev, metrics[0]) if metrics else ""
            shown = _shown_status(r.run_id, r.status, statuses)
            rows.append(
                {
                    "run": r.run_id,
                    "task": name,
                    "status": shown,
                    "status_short": "unknown" if shown == UNREACHABLE else shown,
                    "hash": r.config_hash or "",
                    "updated": _when(r.updated_at),
                    "metric": f"{metrics[0]} {cell}" if cell else "",
                    "metric_short": f"{metrics[0]} {cell.split(' [')[0]}" if cell else "",
                }
            )
        title = f"runs in {led.path}"
        known = {r.run_id for r in led.list_runs(limit=1 << 30)}
    # each run on one line, whole (other commands take its id), as kubectl get lists: at a narrow
    # terminal shorter cells, then fewer columns, never a word broken over lines
    console.print(
        fitted_table(
            [
                TableColumn("run id", [r["run"] for r in rows]),
                TableColumn("task", [r["task"] for r in rows], drop=2),
                TableColumn(
                    "status",
                    [r["status"] for r in rows],
                    narrow_cells=[r["status_short"] for r in rows],
                    narrow_note="unknown: the cluster is not reachable" if UNREACHABLE in [r["status"] for r in rows] else None,
                    drop=5,
                ),
                TableColumn("config hash", [r["hash"] for r in rows], drop=1),
                TableColumn(
                    "updated (UTC)",
                    [r["updated"] for r in rows],
                    short_header="updated",
                    narrow_cells=[r["updated"][5:] for r in rows],
                    drop=3,
                ),
                TableColumn(
                    "adapter primary metric",
                    [r["metric"] for r in rows],
                    short_header="adapter metric",
                    narrow_cells=[r["metric_short"] for r in rows],
                    narrow_note="adapter metric without its interval (runs show RUN has it)",
                    drop=4,
                ),
            ],
            title=title,
        )
    )
    _warn_damaged_runs([r["run"] for r in rows], known)


def _warn_damaged_runs(shown: list[str], known: set[str]) -> None:
    """``runs list``'s warnings: one line per listed run with a damaged file, and per run
    directory the ledger could not import (its records damaged), naming the files and the
    command that says the way back for each (``runs show``). The adapter's weights are checked
    for their framing only here (not hashed: a list may hold many runs)."""
    from hyperpod_rl.runs import damaged_files, runs_root

    root = runs_root()
    unread = sorted(p.name for p in root.iterdir() if p.is_dir() and p.name not in known) if root.is_dir() else []
    for run_id in [*shown, *unread]:
        try:
            damaged = damaged_files(root / run_id, weights=False)
        except (HyperpodRLError, OSError):
            continue
        if damaged:
            names = ", ".join(str(d.path.relative_to(root / run_id)) for d in damaged)
            missing = "" if run_id in shown else " (not listed: the ledger could not read it)"
            err_console.print(
                f"[bold yellow]warning:[/] {escape(f'run {run_id}{missing}: damaged {names}: hyperpod-rl runs show {run_id} says the way back for each')}",
                soft_wrap=True,
                highlight=False,
            )


def _task_name(config: dict | None) -> str:
    """The task of a run config in JSON form: ``task.name``; a config without a ``task`` section
    is the default task, the maze (:class:`hyperpod_rl.config.sections.TaskConfig`)."""
    from hyperpod_rl.config.sections import TaskConfig

    section = (config or {}).get("task") or {}
    return str(section.get("name") or TaskConfig().name)


def _task_metrics(rec: object) -> tuple[str, list[str]]:
    """``(task name, reported metrics, primary first)`` of a ledger run record (its config's task).

    A task that cannot be loaded here (its plug-in is not installed) reports the metrics its
    evaluations hold, as recorded."""
    from hyperpod_rl.tasks import get_task, metric_spec

    name = _task_name(getattr(rec, "config", None))
    try:
        return name, list(metric_spec(get_task(name)).reported)
    except HyperpodRLError:
        seen = dict.fromkeys(m for ev in (getattr(rec, "evals", None) or {}).values() for m in (ev.get("metrics") or {}))
        return name, list(seen)


def _figure(ev: dict, metric: str, *, narrow: bool = False) -> str:
    """``"<value> [<low>, <high>]"`` of one metric of an evaluation record (empty when it lacks
    it); ``narrow``: the interval's bounds without their leading zero, ``0.420 [.355,.485]``."""
    value = (ev.get("metrics") or {}).get(metric)
    if not isinstance(value, (int, float)):
        return ""
    ci = (ev.get("ci") or {}).get(metric)
    if not ci:
        return f"{value:.3f}"
    if narrow:
        low, high = (re.sub(r"^(-?)0\.", r"\1.", f"{bound:.3f}") for bound in ci)
        return f"{value:.3f} [{low},{high}]"
    return f"{value:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]"


@app.command("show")
def show(
    run_id: str,
    as_json: bool = typer.Option(False, "--json", help="print the ledger record and manifest as JSON"),
    ledger: Path | None = LedgerOpt,
    address: str | None = Address,
) -> None:
    """One run: status, config, provenance, checkpoints, evals with intervals, notes.

    Each damaged file of the run (its config, provenance record, submissions, evaluations, or
    its adapter's files, which serving reads) gets a 'warning:' line on standard error naming
    the file and the way back (nothing deleted), and the rest is shown; the exit code stays 0,
    as kubectl and git exit 0 on a result shown with warnings (2: the run cannot be shown).
    """
    from hyperpod_rl.errors import CheckpointError
    from hyperpod_rl.runs import damaged_files, read_provenance, run_paths

    statuses = _reconcile(address)
    with _open(ledger) as led:
        try:
            rec = led.require_run(run_id)
        except HyperpodRLError:
            fail_if_unknown(run_id)  # an interrupted quickstart's run says how to finish it
            with handled():  # a run directory the ledger could not import: say which of its files are damaged
                damaged = damaged_files(run_id) if run_paths(run_id).root.is_dir() else []
            _warn_damaged(damaged)
            if damaged:
                fail(f"run {run_id} cannot be shown: its run directory could not be read into the ledger (see the warnings above)")
            raise
    run_dir = Path(rec.run_dir) if rec.run_dir and Path(rec.run_dir).is_dir() else None
    damaged = damaged_files(run_dir) if run_dir is not None else []
    try:
        manifest = read_provenance(run_dir) if run_dir is not None else None
    except CheckpointError:  # said below, with the way back; the ledger's record is shown
        manifest = None
    if as_json:
        damage = [{"path": str(d.path), "message": d.message} for d in damaged]
        console.print_json(json.dumps({"run": rec.__dict__, "manifest": manifest, "damaged_files": damage}, default=str))
        _warn_damaged(damaged)
        return
    console.rule(f"run {rec.run_id} · {_shown_status(rec.run_id, rec.status, statuses)}")
    console.print(f"run dir: {rec.run_dir}\nconfig hash: {rec.config_hash}\nupdated: {_when(rec.updated_at)} UTC")
    if manifest:
        git, base = manifest.get("git") or {}, manifest.get("base_model") or {}
        console.print(
            f"code: {git.get('commit')}{' (dirty)' if git.get('dirty') else ''} · base model {base.get('id')} @ {base.get('revision')} · reward version {manifest.get('reward_version')} · seeds {_seeds(manifest.get('seeds'))}"
        )
        console.print(
            f"checkpoints: {', '.join(str(c['step']) for c in manifest.get('checkpoints') or []) or 'none'} · resumes: {len(manifest.get('resumes') or [])}"
        )
    name, metrics = _task_metrics(rec)
    console.print(f"task: {name}" + (f" (primary metric {metrics[0]})" if metrics else ""))
    shown = [(label, ev) for label, ev in rec.evals.items() if ev.get("metrics")]  # a saved comparison has no figures of its own
    if shown:
        # one line an evaluation, as the other tables (fitted_table): at a narrow terminal the
        # intervals without their leading zeros, then the last metric, the item count and the
        # other metrics after the primary one left out, in that order
        items = "mazes" if name == "maze" else "items"
        count = TableColumn(items, [str(ev.get("num_mazes") or "") for _, ev in shown], justify="right")
        columns = [TableColumn("label", [escape(label) for label, _ in shown]), count]
        for i, metric in enumerate(metrics):
            narrow = [_figure(ev, metric, narrow=True) for _, ev in shown]
            columns.append(
                TableColumn(
                    metric.replace("_", " "),
                    [_figure(ev, metric) for _, ev in shown],
                    narrow_cells=narrow,
                    narrow_note=_interval_legend(narrow) if i == 0 else None,
                )
            )
        later = columns[2:][1:][::-1]  # the metrics after the primary one, last first
        for drop, column in enumerate([*later[:1], count, *later[1:]], 1):
            column.drop = drop
        console.print(fitted_table(columns, title=f"evaluations (95% bootstrap intervals) · task {name}"))
    for note in rec.notes:
        console.print(escape(f"[{note['kind']}] {_when(note['created_at'])}: {note['text']}"))
    _warn_damaged(damaged)


def _seeds(seeds: object) -> str:
    """A manifest's seeds as ``dataset 0, trainer 0`` (not a Python dict)."""
    return ", ".join(f"{k} {v}" for k, v in seeds.items()) if isinstance(seeds, dict) else str(seeds)


def _interval_legend(cells: list[str]) -> str | None:
    """The line under a narrow evaluation table that reads its first interval, e.g. ``[.355,.550]:
    the 95% interval 0.355 to 0.550`` (the table's own figures); None when no cell has one."""
    for cell in cells:
        found = re.search(r"\[(-?\.?\d[\d.]*),(-?\.?\d[\d.]*)\]", cell)
        if found:
            low, high = found.groups()
            return f"[{low},{high}]: the 95% interval {float(low):.3f} to {float(high):.3f}"
    return None


def warn_if_damaged(run_id: str) -> None:
    """The ``warning:`` lines of :func:`_warn_damaged` for run ``run_id``'s directory under the
    storage root, for a command that answers about the run without reading all its files
    (``job status``); nothing when it cannot be told (an invalid run id, an unreadable folder)."""
    from hyperpod_rl.runs import damaged_files, run_paths

    try:
        paths = run_paths(run_id)
        damaged = damaged_files(paths) if paths.root.is_dir() else []
    except (HyperpodRLError, OSError):
        return
    _warn_damaged(damaged)


def _warn_damaged(damaged: list[Any]) -> None:
    """One ``warning:`` line on standard error per damaged file of a run
    (:func:`hyperpod_rl.runs.damaged_files`): the file, what is wrong, the way back."""
    for d in damaged:
        err_console.print(f"[bold yellow]warning:[/] {escape(cli_words(d.message))}", soft_wrap=True, highlight=False)


@app.command("search")
def search(
    query: str = typer.Argument(..., help="free text, or key=value / metric>=number (e.g. grpo.lr=0.0005, solve_rate>0.4)"),
    limit: int = typer.Option(50),
    ledger: Path | None = LedgerOpt,
) -> None:
    """Find runs by a config value, an eval figure or note text."""
    with _open(ledger) as led:
        with handled():
            hits = led.search(query, limit=limit)
    if not hits:
        console.print("no match")
        raise typer.Exit(code=1)
    console.print(
        fitted_table(
            [
                TableColumn("run id", [escape(h.run_id or "-") for h in hits]),
                TableColumn("where", [h.kind for h in hits]),
                TableColumn("match", [escape(h.text) for h in hits], text=True),
            ]
        )
    )


@app.command("note")
def note(
    text: str = typer.Argument(..., help="the note: a finding, an incident, a runbook step"),
    run: str | None = typer.Option(None, "--run", help="attach it to this run id"),
    kind: str = typer.Option("note", help="note, runbook, incident or finding"),
    ledger: Path | None = LedgerOpt,
) -> None:
    """Add a free-text note (searchable), to a run or to the ledger as a whole."""
    with _open(ledger, sync=False) as led:
        with handled():
            note_id = led.add_note(text, run_id=run, kind=kind)  # type: ignore[arg-type]
    console.print(f"note {note_id} added" + (f" to run {run}" if run else ""))


@app.command("compare")
def compare_cmd(run_ids: Annotated[list[str], typer.Argument(help="two or more run ids")], ledger: Path | None = LedgerOpt) -> None:
    """Config keys that differ between runs, and their eval figures side by side."""
    with _open(ledger) as led:
        with handled():
            diff = led.compare(run_ids)
    keys = [*diff["config"], *(f"eval {key}" for key in diff["eval"])]
    cells = {
        rid: [json.dumps(values[rid]) for values in diff["config"].values()]
        + ["" if values.get(rid) is None else f"{values[rid]:.3f}" for values in diff["eval"].values()]
        for rid in run_ids
    }
    # where the run ids as headers make it too wide, the columns are numbered and the caption names each run
    runs = [
        TableColumn(rid, cells[rid], short_header=str(i), narrow_note=f"{i}: {rid}", justify="right") for i, rid in enumerate(run_ids, 1)
    ]
    console.print(fitted_table([TableColumn("key", keys), *runs], title="differences"))


@app.command("reproduce")
def reproduce(
    run_id: str,
    new_run_id: str | None = typer.Option(None, "--as", help="run id of the reproduction (default <run_id>-r<N>)"),
    follow: bool = typer.Option(False, help="stream progress until the job ends"),
    address: str | None = Address,
) -> None:
    """Resubmit a recorded run exactly (same resolved config, same data and base model) under a new run id."""
    from hyperpod_rl.jobs import reproduction, submit_run

    with about_run(run_id):
        config, warns = reproduction(run_id, new_run_id=new_run_id)
    for w in warns:
        console.print(f"[yellow]warning:[/] {w}")
    client = job_client(address)
    with handled():
        handle = submit_run(client, config)
    with _open(None, sync=True) as led:
        led.add_note(f"reproduction of {run_id}, submission {handle.submission_id}", run_id=handle.run_id)
    console.print(
        f"submitted {handle.submission_id}: run {handle.run_id} reproduces {run_id}; hyperpod-rl job logs --follow {handle.run_id}"
    )
    if follow:
        from hyperpod_rl.runs import read_config

        status = follow_with_progress(client, handle.submission_id, read_config(handle.run_dir).trainer.steps)
        raise typer.Exit(code=0 if status == "SUCCEEDED" else 1)


@app.command("sync")
def sync(
    ledger: Path | None = LedgerOpt,
    address: str | None = Address,
    rebuild: bool = typer.Option(
        False, "--rebuild", help="build a new ledger from the run directories (a damaged one is kept aside as <file>.before-rebuild-<time>)"
    ),
) -> None:
    """Import the run directories under the storage root that changed since the last sync.

    Runs recorded 'running' whose Ray job has ended are recorded as ended first (the cluster
    is asked); when it cannot be reached, their status is said to be unknown. With --rebuild,
    the ledger is built anew from the run directories (hyperpod_rl.ledger.Ledger.rebuild): the
    fix for a ledger that is damaged or not SQLite.
    """
    from hyperpod_rl.ledger import Ledger
    from hyperpod_rl.runs import runs_root

    reachable = _reconcile(address) is not None
    aside = None
    with handled():
        led, aside = Ledger.rebuild(ledger, runs_root=runs_root()) if rebuild else (Ledger(ledger), None)
        with led:
            count = len(led.list_runs(limit=1 << 30)) if rebuild else led.sync_storage(runs_root())
            running = [r.run_id for r in led.list_runs(status="running", limit=1000)]
    console.print(f"{count} run(s) imported into {'a new ledger ' if rebuild else ''}{led.path}")
    if aside is not None:
        console.print(f"the old ledger is kept as {aside} (its notes: sqlite3 {aside} .recover)", soft_wrap=True)
    if running and not reachable:
        console.print(f"{len(running)} run(s) recorded running: status {UNREACHABLE}: {', '.join(running)}", soft_wrap=True)
