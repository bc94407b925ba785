"""What every ``hyperpod-rl`` command shares: the console, error exit, the local job client,
options generated from a pydantic model, and following a job with a progress bar."""

from __future__ import annotations

import inspect
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NoReturn, TypeVar, get_origin

import typer
from pydantic import BaseModel
from rich.console import Console, Group, RenderableType
from rich.markup import escape
from rich.measure import Measurement
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Column, Table
from rich.text import Text
from typer.core import TyperGroup

from hyperpod_rl.base import Model
from hyperpod_rl.errors import HyperpodRLError

__all__ = [
    "ERROR_PREFIX",
    "PLAIN_LINE_EVERY_S",
    "Address",
    "HprlGroup",
    "TableColumn",
    "cli_words",
    "console",
    "err_console",
    "fail",
    "fitted_table",
    "flag_names",
    "follow_with_progress",
    "handled",
    "help_paragraphs",
    "job_client",
    "local_client",
    "model_options",
    "options_of",
    "output_dir",
    "output_file",
    "print_note",
    "reachable_client",
    "writing",
]

console = Console()
F = TypeVar("F", bound=Callable[..., Any])


#: Where :func:`fail` writes (standard error, so scripts can parse standard output).
err_console = Console(stderr=True)


#: A Python alternative inside a library message, e.g. `` (or hp.start_local_cluster())``, `` (in
#: Python: hp.quickstart.resume('x'))``: the notebook's words, which :func:`cli_words` leaves out.
_PYTHON_ALTERNATIVE = re.compile(r" \((?:or |in Python: )?hp\.")


def cli_words(text: str) -> str:
    """``text`` (a library message, written for a notebook and a shell alike) in a command-line
    user's words: each parenthesized Python alternative to a command (`` (or hp.start_local_cluster())``,
    `` (in Python: hp.quickstart.resume('x'))``) is left out, the command it stands beside is kept."""
    while found := _PYTHON_ALTERNATIVE.search(text):
        depth, end = 0, len(text)
        for i in range(found.start() + 1, len(text)):
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            if depth == 0:
                end = i + 1
                break
        text = text[: found.start()] + text[end:]
    return text


def print_note(text: str, *, out: Console = err_console) -> None:
    """One ``note:`` line (yellow on a terminal), ``text`` shown literally (no rich markup) in a
    command-line user's words (:func:`cli_words`), on standard error unless ``out`` says otherwise."""
    out.print(f"[bold yellow]note:[/] {escape(cli_words(text))}", soft_wrap=True, highlight=False)


@dataclass
class TableColumn:
    """One column of a :func:`fitted_table`.

    Attributes:
        header: its header.
        cells: its cells, one per row.
        short_header: its header where the table is too wide for the terminal (default: ``header``).
        narrow_cells: its cells there, e.g. a date without its year (default: ``cells``).
        narrow_note: said under the table when the narrow cells are shown, e.g. what they stand for.
        drop: where the table is still too wide, columns are left out in this order (lowest
            first); None: never left out (a run id).
        text: free text (a search match): wraps at spaces; a word too long for the column ends
            in ``…``. Every other column keeps each cell on one line.
        justify: ``"left"`` or ``"right"``.
    """

    header: str
    cells: list[str]
    short_header: str | None = None
    narrow_cells: list[str] | None = None
    narrow_note: str | None = None
    drop: int | None = None
    text: bool = False
    justify: Literal["left", "right"] = "left"


#: The width a free-text column (:attr:`TableColumn.text`) is given at least when a table is fitted.
TEXT_MIN_WIDTH = 16


def fitted_table(columns: list[TableColumn], *, width: int | None = None, title: str | None = None) -> RenderableType:
    """A table that fits ``width`` characters (default: the terminal's) with no cell or header
    broken inside a word, as ``kubectl get`` fits its columns: every cell on one line (free text
    wraps at spaces); where the whole table is too wide, the short headers and narrow cells are
    used, then columns are left out (:attr:`TableColumn.drop` order) until it fits. A line under
    the table says what each narrow column stands for, and one which columns were left out."""
    width = console.width if width is None else width
    narrow, shown = False, list(columns)
    droppable = sorted((c for c in columns if c.drop is not None), key=lambda c: c.drop or 0)
    while not _fits(shown, narrow, width):
        if not narrow and any(c.short_header or c.narrow_cells for c in shown):
            narrow = True
        elif droppable:
            gone = droppable.pop(0)
            shown = [c for c in shown if c is not gone]
        else:
            break
    notes = [c.narrow_note for c in shown if narrow and c.narrow_note]
    hidden = [c.short_header or c.header for c in columns if c not in shown]
    if hidden:
        notes.append(f"not shown at {width} columns: {', '.join(hidden)}")
    return Group(_table(shown, narrow, title=title), *(Text(note, style="dim") for note in notes))


def _table(columns: list[TableColumn], narrow: bool, *, title: str | None = None, probe: bool = False) -> Table:
    """The :class:`Table` of ``columns`` (narrow: short headers and narrow cells); ``probe``: free
    text stands in as one word of :data:`TEXT_MIN_WIDTH` characters, to measure what must fit."""
    table = Table(
        *(
            Column(
                (c.short_header or c.header) if narrow else c.header,
                no_wrap=not c.text,
                overflow="ellipsis",
                justify=c.justify,
            )
            for c in columns
        ),
        title=title,
    )
    cells = [(c.narrow_cells or c.cells) if narrow else c.cells for c in columns]
    for row in zip(*cells, strict=True):
        table.add_row(*("x" * TEXT_MIN_WIDTH if probe and c.text else cell for c, cell in zip(columns, row, strict=True)))
    return table


def _fits(columns: list[TableColumn], narrow: bool, width: int) -> bool:
    """Whether the table's cells and headers fit ``width`` whole, each on one line (its natural width)."""
    probe = _table(columns, narrow, probe=True)
    return Measurement.get(console, console.options.update_width(1 << 20), probe).maximum <= width


#: The one prefix of every ``hyperpod-rl`` error message.
ERROR_PREFIX = "error:"


def fail(err: BaseException | str, *, code: int = 2) -> NoReturn:
    """Print ``error: <message>`` (markup escaped) on standard error and exit with ``code``.

    Every error of every ``hyperpod-rl`` command goes through here, command-line usage errors
    included (:class:`HprlGroup`), so each says ``error:`` once, in a command-line user's words
    (:func:`cli_words`: no Python alternative).
    """
    err_console.print(f"[bold red]{ERROR_PREFIX}[/] {escape(cli_words(str(err)))}", soft_wrap=True, highlight=False)
    raise typer.Exit(code=code)


#: pydantic's wording in typer's option-type errors -> what to write instead.
_PLAIN_WORDS = (
    (r"Input should be a valid integer[^()]*", "give an integer, e.g. 3"),
    (r"Input should be a valid number[^()]*", "give a number, e.g. 0.5"),
    (r"Input should be a valid boolean[^()]*", "give true or false"),
    (r"Input should be ", "use "),
)


def help_paragraphs(text: str | None) -> str | None:
    """``text`` (a command's docstring or an option's help) as its ``--help`` shows it: each
    paragraph one line, which the terminal wraps at its own width, the paragraphs apart. typer's
    rich help keeps a docstring's own line breaks after its first paragraph, so a docstring
    wrapped at 100 columns in the source showed as ragged lines. A paragraph click marks not to be
    rewrapped (a line of ``\\b``) is kept as it is, as is all after a line of ``\\f``."""
    if not text:
        return text
    body, cut, rest = inspect.cleandoc(text).partition("\f")
    paragraphs = [p if p.startswith("\b") else " ".join(p.split()) for p in re.split(r"\n\s*\n", body.strip())]
    return "\n\n".join(p for p in paragraphs if p) + (cut + rest if cut else "")


def _untyped_flag(param: Any) -> Any:
    """``param`` with no type shown in the help when it is a flag (``--follow``, ``--help``): typer
    0.29's rich help lists a flag's Python type, ``--help <bool>``, though a flag takes no value."""
    if param is not None and getattr(param, "is_flag", False) and not getattr(param, "count", False):
        param.metavar = ""
    return param


def _plain_help(command: Any) -> None:
    """Give ``command`` and its options their help as :func:`help_paragraphs` says, and its
    flags, ``--help`` included, no type (:func:`_untyped_flag`); once."""
    if getattr(command, "_hprl_help", False):
        return
    command.help = help_paragraphs(command.help)
    for param in getattr(command, "params", []):
        if getattr(param, "help", None):
            param.help = help_paragraphs(param.help)
        _untyped_flag(param)
    made = command.get_help_option  # the --help option is made on first use
    command.get_help_option = lambda ctx: _untyped_flag(made(ctx))
    command._hprl_help = True


class HprlGroup(TyperGroup):
    """A command group whose command-line usage errors (unknown option or command, missing
    argument, bad value) go through :func:`fail` too, instead of click's ``Error`` box; so does
    a ``UnicodeDecodeError`` from a file that is not UTF-8 (the commands read user files with
    :func:`hyperpod_rl.base.read_user_text`, which names the file; this is the net under it).
    Its own help and its commands' show each paragraph as one line the terminal wraps
    (:func:`help_paragraphs`), not the docstring's source line breaks.

    typer 0.29 vendors click, so its exceptions are caught through their public base
    :class:`typer.TyperException`; ``NoArgsIsHelpError`` (a bare group prints its help) is left alone.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _plain_help(self)
        for command in self.commands.values():
            _plain_help(command)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = super().get_command(ctx, cmd_name)
        if command is not None:
            _plain_help(command)
        return command

    @staticmethod
    def _usage(err: Exception) -> NoReturn:
        if type(err).__name__ == "NoArgsIsHelpError" or not hasattr(err, "format_message"):
            raise err
        ctx = getattr(err, "ctx", None)
        hint = f" (see: {ctx.command_path} --help)" if ctx is not None else ""
        message = err.format_message()
        for pattern, plain in _PLAIN_WORDS:  # typer checks option types with pydantic: say it plainly
            message = re.sub(pattern, plain, message)
        fail(f"{message}{hint}", code=int(getattr(err, "exit_code", 2)))

    def make_context(self, info_name: str | None, args: list[str], parent: Any = None, **extra: Any) -> Any:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except typer.TyperException as err:
            self._usage(err)

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except typer.TyperException as err:
            self._usage(err)
        except UnicodeDecodeError as err:  # a user's file read without hyperpod_rl.base.read_user_text
            fail(f"a file this command read is not UTF-8 text ({err.reason} at byte {err.start}): save it as UTF-8")


@contextmanager
def handled() -> Iterator[None]:
    """Turn a project error raised inside the block into :func:`fail`."""
    try:
        yield
    except HyperpodRLError as err:
        fail(err)


def output_dir(path: Path, option: str) -> Path:
    """Create the folder an ``--out`` option names (parents too) or exit 2 saying why it cannot be:
    it is an existing file, a parent is a file, or it is not writable."""
    if path.exists() and not path.is_dir():
        fail(f"{option} {path} is an existing file: give a folder (it is created when missing)")
    with writing(path, option, what="folder"):
        path.mkdir(parents=True, exist_ok=True)
    return path


def output_file(path: Path, option: str) -> Path:
    """Check the file an output option names can be written (not a folder; its folder exists or is created), or exit 2."""
    if path.is_dir():
        fail(f"{option} {path} is a folder: give a file name")
    with writing(path.parent, option, what="folder"):
        path.parent.mkdir(parents=True, exist_ok=True)
    return path


@contextmanager
def writing(path: Path, option: str, *, what: str = "file") -> Iterator[None]:
    """Turn an ``OSError`` while writing an output into ``error: cannot write ...`` (exit 2)."""
    try:
        yield
    except OSError as err:
        fail(f"cannot write the {what} {err.filename or path} of {option} ({err.strerror or err}): give a path you can write to")


def local_client() -> Any:
    """The job client of the running local cluster, or exit with the command that starts one."""
    from hyperpod_rl.cluster.local import local_job_client

    with handled():
        return local_job_client()


Address: Any = typer.Option(
    None,
    "--address",
    envvar="HYPERPOD_RL_ADDRESS",
    help="cluster address: sagemaker_ray://<raycluster>/<namespace> (HyperPod: the kubeconfig, or the HyperPod cluster named by "
    "HYPERPOD_RL_HYPERPOD_CLUSTER), a dashboard URL, or the local cluster (default)",
)


def job_client(address: str | None = None) -> Any:
    """The job client for ``address`` (see :func:`hyperpod_rl.cluster.access.job_client_of`), or
    the running local cluster's when ``address`` is empty; exits with the fix on failure."""
    if not address:
        return local_client()
    from hyperpod_rl.cluster.access import job_client_of

    with handled():
        return job_client_of(address)


def reachable_client(address: str | None = None) -> tuple[Any | None, str | None]:
    """``(job client, None)`` for ``address`` (as :func:`job_client`), or ``(None, why)`` when
    the cluster cannot be reached (none running, refused connection, no kubeconfig), for the
    commands that can answer from the run directory alone; exits 2 on a malformed address."""
    from hyperpod_rl.errors import ClusterError, JobError

    try:
        if address:
            from hyperpod_rl.cluster.access import job_client_of

            return job_client_of(address), None
        from hyperpod_rl.cluster.local import local_job_client

        return local_job_client(), None
    except (ClusterError, JobError, OSError, RuntimeError) as err:  # Ray's client raises these when nothing answers
        return None, str(err)
    except HyperpodRLError as err:
        fail(err)


def model_options(model: type[BaseModel], *, exclude: tuple[str, ...] = ()) -> Callable[[F], F]:
    """Give a typer command one ``--option`` per field of ``model`` (defaults and help from the model).

    The decorated function receives the option values as keyword arguments; its own parameters
    (keyword-only, with typer defaults) come after them. So a model's defaults and descriptions
    are written once, in the model. A field renamed in the model (its ``renamed_fields``) also
    takes its old flag, marked deprecated in the help (``--train-rows`` / ``--train-mazes``).
    """
    old_names = {new: old for old, new in getattr(model, "renamed_fields", {}).items()}

    def decorate(fn: F) -> F:
        params = []
        for name, info in model.model_fields.items():
            if name in exclude:
                continue
            default = info.get_default(call_default_factory=True)
            flags, help_text = [], info.description or ""
            if name in old_names:
                old = "--" + old_names[name].replace("_", "-")
                flags, help_text = ["--" + name.replace("_", "-"), old], f"{help_text} ({old}: deprecated name)"
            option = typer.Option(default, *flags, help=help_text, show_default=default is not None)
            annotation = str if get_origin(info.annotation) is Literal else info.annotation  # the model checks the choice
            params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=annotation))
        own = [p for p in inspect.signature(fn).parameters.values() if p.kind is inspect.Parameter.KEYWORD_ONLY]
        fn.__signature__ = inspect.Signature(params + own)  # type: ignore[attr-defined]
        return fn

    return decorate


def flag_names(message: str, model: type[BaseModel]) -> str:
    """``message`` (a :meth:`hyperpod_rl.base.Model.build` error of ``model``) with each field of
    ``model`` named by its command-line flag, as :func:`model_options` spells it: ``steps: must be
    > 0`` becomes ``--steps: must be > 0``. A field that starts a line is renamed whatever its name
    (``task: unknown task ...`` -> ``--task: ...``); elsewhere in a line only names with an
    underscore are (``min_size`` -> ``--min-size``), so plain words (task, seed) stay words. The
    library's message, seen from Python, keeps the field names."""
    fields = set(model.model_fields)
    compound = sorted((f for f in fields if "_" in f), key=len, reverse=True)
    inside = re.compile(r"(?<![\w'.-])(" + "|".join(compound) + r")(?![\w'])") if compound else None

    def flag(name: str) -> str:
        return "--" + name.replace("_", "-")

    lines = []
    for line in message.splitlines():
        indent = line[: len(line) - len(line.lstrip())]
        rest = line.lstrip()
        head = re.match(r"([a-z][a-z0-9_]*)(?=[:. (]|$)", rest)
        if head and head.group(1) in fields:
            after = rest[head.end() :]
            if after.startswith("."):  # a key inside a mapping option: --task-options doc.x: ...
                after = " " + after[1:]
            rest = flag(head.group(1)) + after
            prefix_len = len(flag(head.group(1)))
            body = rest[prefix_len:]
        else:
            prefix_len, body = 0, rest
        if inside is not None:
            body = inside.sub(lambda m: flag(m.group(1)), body)
        lines.append(indent + rest[:prefix_len] + body)
    return "\n".join(lines)


def options_of[M: Model](model: type[M], values: dict[str, Any]) -> M:
    """``model.build(values)`` for a command whose options came from :func:`model_options`; an
    invalid value exits 2 with the model's message naming the flags (:func:`flag_names`)."""
    try:
        return model.build(values)
    except HyperpodRLError as err:
        fail(flag_names(str(err), model))


#: Outside a terminal (a piped or CI log), a progress line at least this often while steps come (seconds).
PLAIN_LINE_EVERY_S = 30.0


def follow_with_progress(client: Any, submission_id: str, total_steps: int, *, from_start: bool = True, detach: bool = True) -> str:
    """Show a rich progress bar, labelled with the run's stage (``grpo``, ``sft``), with its figures
    (GRPO: reward and loss; SFT: its loss) and ETA until the job ends; return its final Ray status.

    Ctrl-C detaches: the job keeps running (exit code 130; with ``detach=False`` the
    ``KeyboardInterrupt`` goes to the caller, e.g. the quickstart, which says what is left). When stdout is not a terminal (a
    piped or CI log), a plain line (:meth:`hyperpod_rl.jobs.RunProgress.line`: step, reward, loss,
    seconds per step, ETA) is printed every 10% of the steps and at least every
    :data:`PLAIN_LINE_EVERY_S` seconds while steps come. The ETA is computed from the steps' own
    finish times, so it is right after a reattach too. Trainer notices (a corrupt checkpoint
    skipped, the step a job resumed from) are printed as they come. When the job ends and no
    rollout of any step produced a valid answer, a warning says so and what to do
    (:func:`hyperpod_rl.tasks.no_valid_answer_note`).
    """
    from hyperpod_rl.jobs import RunProgress, follow_run, format_duration

    status = "PENDING"
    run_id = submission_id.split("-", 1)[1].rsplit("-", 1)[0]
    live = console.is_terminal
    columns = [
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[figures]}"),
        TimeElapsedColumn(),
        TextColumn("ETA {task.fields[eta]}"),
    ]
    progress = Progress(*columns, console=console, transient=False, disable=not live)
    task = progress.add_task("train", total=total_steps, figures="", eta="-")
    state = RunProgress(total_steps)
    seen: list[dict[str, float]] = []
    shown_decile, shown_at, shown_step = -1, time.monotonic(), -1
    try:
        with progress:
            for update in follow_run(client, submission_id, from_start=from_start):
                status = update.status
                for notice in state.add(update):
                    print_note(notice, out=console)
                seen.extend(rec.values for rec in update.records)
                eta = state.eta_s
                progress.update(
                    task,
                    description=state.label,
                    completed=state.step,
                    figures=state.figures(),
                    eta="-" if eta is None else format_duration(eta),
                )
                decile = state.step * 10 // max(total_steps, 1)
                due = decile > shown_decile or time.monotonic() - shown_at >= PLAIN_LINE_EVERY_S
                if not live and update.records and state.step != shown_step and due:
                    shown_decile, shown_at, shown_step = decile, time.monotonic(), state.step
                    console.print(state.line(), soft_wrap=True, highlight=False)
                if update.terminal and status != "SUCCEEDED":
                    _print_failure(client, submission_id, run_id, status, update.message)
    except KeyboardInterrupt:
        if not detach:
            raise
        console.print(f"\ndetached; the job keeps running. Reattach: hyperpod-rl job logs --follow {run_id}")
        raise typer.Exit(code=130) from None
    _warn_if_never_valid(run_id, seen)
    return status


def _print_failure(client: Any, submission_id: str, run_id: str, status: str, message: str) -> None:
    """Say why a followed job did not succeed: a stopped job, Ray's message alone (its steps were
    shown as they came); else the trainer's own ``error: ...`` line when its log has one
    (:func:`hyperpod_rl.jobs.error_line`), else Ray's message and the log's last lines, each metric
    line as its progress line (:func:`hyperpod_rl.jobs.readable_log`, as ``job logs`` prints it),
    secrets masked (:func:`hyperpod_rl.jobs.job_logs`)."""
    from hyperpod_rl.jobs import error_line, job_logs, readable_log, strip_ansi

    log = "" if status == "STOPPED" else job_logs(client, submission_id)  # secrets masked
    line = error_line(log)
    if status == "STOPPED":
        console.print(f"[yellow]job {submission_id} ended {status}[/]: {escape(message)}", soft_wrap=True, highlight=False)
    elif line is not None:
        console.print(f"[red]job {submission_id} ended {status}[/]: {escape(line)}", soft_wrap=True, highlight=False)
    else:
        tail = strip_ansi("".join(readable_log(log).splitlines(keepends=True)[-25:])).rstrip("\n")
        console.print(f"[red]job {submission_id} ended {status}[/]: {escape(message)}\n{escape(tail)}", soft_wrap=True, highlight=False)
    console.print(f"the whole log: hyperpod-rl job logs {run_id}", soft_wrap=True, highlight=False)


def _warn_if_never_valid(run_id: str, steps: list[dict[str, float]]) -> None:
    """Print the no-valid-answer warning when every followed step had an invalid-answer share of 1."""
    from hyperpod_rl.runs import read_config
    from hyperpod_rl.tasks import get_task, never_valid, no_valid_answer_note

    if not steps:
        return
    try:
        task = get_task(read_config(run_id).task.name)
    except HyperpodRLError:
        return
    if never_valid(task, steps, prefix="environment/"):
        note = no_valid_answer_note(task, f"{len(steps)} training step(s)", floor=steps[-1].get("reward/max_raw_reward"))
        console.print(f"[bold yellow]warning:[/] {escape(note)}", soft_wrap=True)
