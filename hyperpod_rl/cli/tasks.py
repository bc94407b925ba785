"""``hyperpod-rl tasks list|show|audit|sample``: the registered task plug-ins.

A typer sub-app (``app``) over :mod:`hyperpod_rl.tasks`; no task logic lives here. Tasks come from
the ``hyperpod_rl.tasks`` entry-point group (``docs/tasks.md``).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from hyperpod_rl.base import parse_user_data
from hyperpod_rl.cli._common import HprlGroup, TableColumn, console, fail, fitted_table, output_dir, writing
from hyperpod_rl.errors import HyperpodRLError
from hyperpod_rl.tasks import get_task, load_reward_fn, metric_spec, run_audit, task_sources, write_parquet

__all__ = ["app"]

app = typer.Typer(cls=HprlGroup, no_args_is_help=True, help="Task plug-ins: list them, show one, audit its reward, render samples.")


def _options(task: Any, text: str | None, **fixed: Any) -> Any:
    try:
        data = parse_user_data(text, "--options", syntax="json") if text else {}
    except HyperpodRLError as err:
        raise typer.BadParameter(f"{err}; pass an object, e.g. '{{\"seed\": 1}}'") from None
    if not isinstance(data, dict):
        raise typer.BadParameter("--options must be a JSON object")
    return task.options_model.build({**data, **fixed})


@app.command("list")
def list_tasks(as_json: bool = typer.Option(False, "--json", help="one JSON object per task, for scripts")) -> None:
    """Every registered task: name, turns, reward spec version, env class and where it comes from."""
    rows = []
    for name, source in task_sources().items():
        try:
            t = get_task(name)
        except HyperpodRLError as err:
            rows.append({"name": name, "error": str(err), "source": source})
            continue
        rows.append(
            {"name": t.name, "title": t.title, "turns": "multi" if t.multi_turn else "single", "reward_version": t.reward_version}
            | {"env_class": t.env_class, "source": source}
        )
    if as_json:
        console.print_json(json.dumps(rows))
        return

    # one line a task, as the other tables (fitted_table): at a narrow terminal its title up to
    # its colon and a built-in task's source as "built in" (each said under the table), then
    # columns left out
    def cell(row: dict[str, str], key: str) -> str:
        return "" if "error" in row else escape(row[key])

    titles = [f"[red]broken: {escape(row['error'])}[/]" if "error" in row else escape(row["title"]) for row in rows]
    sources = [escape(row["source"]) for row in rows]
    builtin = [src.startswith("hyperpod_rl.tasks.") for src in sources]
    console.print(
        fitted_table(
            [
                TableColumn("task", [escape(row["name"]) for row in rows]),
                TableColumn(
                    "title",
                    titles,
                    narrow_cells=["[red]broken[/]" if "error" in row else t.split(":")[0] for row, t in zip(rows, titles, strict=True)],
                    narrow_note="title: up to its colon (hyperpod-rl tasks show TASK has it whole)",
                ),
                TableColumn("turns", [cell(row, "turns") for row in rows], drop=3),
                TableColumn("reward", [cell(row, "reward_version") for row in rows], drop=2),
                TableColumn("env class", [cell(row, "env_class") for row in rows], drop=1),
                TableColumn(
                    "source",
                    sources,
                    narrow_cells=["built in" if b else src for b, src in zip(builtin, sources, strict=True)],
                    narrow_note="built in: a task of hyperpod_rl.tasks (tasks list --json names its source)" if any(builtin) else None,
                    drop=4,
                ),
            ]
        )
    )


@app.command("show")
def show(
    name: str = typer.Argument(..., help="task name (hyperpod-rl tasks list)"),
    schema: bool = typer.Option(False, "--schema", help="print the options' JSON schema instead of the table"),
) -> None:
    """A task's surface: env, answers, metrics, and its options (defaults and descriptions)."""
    try:
        t = get_task(name)
    except HyperpodRLError as err:
        fail(err)
    if schema:
        console.print_json(json.dumps(t.options_model.model_json_schema()))
        return
    spec = metric_spec(t)
    console.print(f"[bold]{t.name}[/]: {t.title}")
    console.print(f"env {t.env_class} ({t.env_entry_point}), {'multi' if t.multi_turn else 'single'}-turn, reward spec {t.reward_version}")
    console.print(f"answer words: {', '.join(t.answer_words) or '(free-form answers)'} · prompt styles: {', '.join(t.prompt_styles)}")
    console.print(f"metrics: {', '.join(spec.reported)} (primary {spec.primary}; guards {', '.join(spec.guards) or 'none'})")
    console.print(f"content hash column: {t.hash_column} · audit cases: {len(t.audit_cases())}")
    table = Table("option", "type", "default", "description", title=f"options ({t.options_model.__name__})")
    defaults = t.options_model()
    for field, info in t.options_model.model_fields.items():
        kind = getattr(info.annotation, "__name__", None) or str(info.annotation).replace("typing.", "")
        value = getattr(defaults, field)
        shown = value.model_dump_json() if hasattr(value, "model_dump_json") else json.dumps(value, default=str)
        table.add_row(field, escape(kind), escape(shown), escape(info.description or ""))
    console.print(table)


@app.command("audit")
def audit(
    name: str = typer.Argument(..., help="task name"),
    reward_fn: str | None = typer.Option(
        None, "--reward-fn", help="reward to audit, as package.module:function with fn(row, completion, state) (default: the task's)"
    ),
    tolerance: float = typer.Option(1e-6, help="largest accepted absolute difference"),
) -> None:
    """Run the task's adversarial completions through a reward function; report every disagreement.

    Exit code 0 when all cases agree, 1 on any disagreement, 2 when the task or function cannot be loaded.
    """
    try:
        t = get_task(name)
        fn = None if reward_fn is None else load_reward_fn(reward_fn)
    except HyperpodRLError as err:
        fail(err)
    report = run_audit(t, fn, tolerance=tolerance)
    label = reward_fn or f"{t.name} reward"
    if report.total == 0:
        fail(f"task {t.name!r} has no audit cases: add them (docs/tasks.md)")
    if report.passed:
        console.print(f"[green]{report.total}/{report.total} cases agree[/] ({label}, reward spec {report.reward_version})")
        return
    table = Table("case", "completion", "expected", "got", "probes", title=f"{label}: disagreements")
    for d in report.disagreements:
        got = d.error if d.error is not None else f"{d.got:+.4f}"
        table.add_row(d.case.case_id, escape(d.case.completion[:60]), f"{d.case.expected:+.4f}", escape(got), escape(d.case.note))
    console.print(table)
    console.print(f"[red]{len(report.disagreements)} of {report.total} cases disagree[/] with reward spec {report.reward_version}")
    raise typer.Exit(code=1)


@app.command("sample")
def sample(
    name: str = typer.Argument(..., help="task name"),
    out: Path = typer.Option(..., "--out", help="folder for the PNGs, prompts and a parquet of the rows"),
    count: int = typer.Option(4, min=1, max=64, help="rows per split"),
    split: list[str] | None = typer.Option(None, help="split(s) to sample: train, heldout, ood (repeatable; default train)"),
    seed: int = typer.Option(0, help="master seed"),
    options: str | None = typer.Option(None, "--options", help="the task's options as JSON (hyperpod-rl tasks show TASK)"),
) -> None:
    """Write a few rendered examples to look at: '<split>-<i>.png', '<split>-<i>.json' (prompt text,
    stratum, image tokens, text twin) and '<split>.parquet'."""
    splits = split or ["train"]
    output_dir(out, "--out")
    try:
        t = get_task(name)
        opts = _options(t, options, seed=seed, counts={s: count for s in splits})
        data = t.build_dataset(opts)
    except HyperpodRLError as err:
        fail(err)
    table = Table("split", "file", "stratum", "image px", "image tokens")
    with writing(out, "--out"):
        _write_samples(t, data, out, table)
    console.print(table)
    strata = Counter(r["stratum"] for rows in data.values() for r in rows)
    console.print(
        f"{sum(strata.values())} examples of {t.name} in {out} · strata: {', '.join(f'{s} ({n})' for s, n in strata.most_common())}"
    )


def _write_samples(t: Any, data: dict[str, list[Any]], out: Path, table: Table) -> None:
    """The PNG, JSON and parquet files of ``tasks sample``, one table row per example."""
    for name_, rows in data.items():
        write_parquet(rows, out / f"{name_}.parquet")
        for i, row in enumerate(rows):
            img = t.render(row)
            png = out / f"{name_}-{i}.png"
            img.save(png)
            texts = [
                p.get("text", "")
                for m in row["prompt"]
                for p in (m["content"] if isinstance(m["content"], list) else [])
                if p.get("type") == "text"
            ]
            info = {
                "task": t.name,
                "split": name_,
                "stratum": row["stratum"],
                "image_tokens": row["image_tokens"],
                "image_px": list(img.size),
                "content_hash": row[t.hash_column],
                "prompt_text": texts,
                "text_twin": t.text_twin(row),
            }
            (out / f"{name_}-{i}.json").write_text(json.dumps(info, indent=1))
            table.add_row(name_, png.name, row["stratum"], f"{img.size[0]}x{img.size[1]}", str(row["image_tokens"]))
