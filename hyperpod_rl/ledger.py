"""The run ledger: an embedded SQLite database (with FTS5) of every run, its config, status,
artifacts, eval results and free-text notes (runbooks, incident notes, findings).

Where it lives: ``$HYPERPOD_RL_LEDGER`` if set (e.g. ``/fsx/hyperpod-rl/ledger.sqlite`` for a
team), else ``<data dir>/ledger.sqlite`` (:func:`hyperpod_rl.paths.data_dir`).

Who writes it: notebooks and the CLI, never the trainer. Runs are imported from their run
directories (:meth:`Ledger.sync_storage`, ``hyperpod-rl runs sync``), which the trainer writes.

Concurrency: every write is one ``BEGIN IMMEDIATE`` transaction with a busy timeout, so two
notebooks can write at the same time; SQLite serialises them
(https://sqlite.org/lang_transaction.html).

Journal mode is one setting, read by every opener: ``journal_mode=`` when given, else
``$HYPERPOD_RL_LEDGER_JOURNAL``, else the mode the existing file already has, else ``WAL`` for a
new file (readers never block the writer; https://sqlite.org/wal.html). An opener never changes
an existing file's mode unless told to. WAL needs shared memory on one host: on a network file
system (nfs, lustre, ...) a WAL request is replaced by ``DELETE`` with a warning, which is also
the mode for a ledger on FSx shared by several hosts.

Search (:meth:`Ledger.search`) takes either

* ``key<op>value`` with ``op`` one of ``= : != > >= < <=``: matched against every flattened
  config value (``grpo.lr=0.0005``; a suffix such as ``lr`` matches ``grpo.lr``) and every
  eval figure (``solve_rate>=0.4``, ``adapter.solve_rate>0.3``), numerically when the value is
  a number; or
* free text: every word must occur (FTS5, any order) in a run's config, an eval or a note.

A file that is not what it claims (not SQLite, damaged, another program's database) or that
cannot be used (read-only, full, locked past the busy timeout) is one :class:`LedgerError`
naming the file and the fix, from every method. The ledger holds nothing the run directories do
not, but for notes: :meth:`Ledger.rebuild` (``hyperpod-rl runs sync --rebuild``) moves the old
file aside (kept, so its notes can be recovered with ``sqlite3 OLD .recover``) and imports every
run directory into a new one.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
import sqlite3
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Self

from hyperpod_rl.base import parse_user_data
from hyperpod_rl.errors import ConfigError, LedgerError
from hyperpod_rl.paths import data_dir

__all__ = [
    "JOURNAL_ENV",
    "LEDGER_ENV",
    "REBUILD_COMMAND",
    "Ledger",
    "SearchHit",
    "filesystem_type",
    "flatten",
    "ledger_error",
    "ledger_path",
]

LEDGER_ENV = "HYPERPOD_RL_LEDGER"
#: Journal mode of the ledger (``WAL`` or ``DELETE``) for every opener that does not pass one.
JOURNAL_ENV = "HYPERPOD_RL_LEDGER_JOURNAL"
#: File system types where SQLite's WAL shared memory does not work across hosts.
NETWORK_FILESYSTEMS = frozenset({"nfs", "nfs4", "lustre", "cifs", "smb3", "smbfs", "fuse.sshfs", "9p", "efs", "ceph", "glusterfs"})
JournalMode = Literal["WAL", "DELETE"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    status TEXT NOT NULL,
    run_dir TEXT,
    config_json TEXT,
    config_hash TEXT,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS facts (
    run_id TEXT NOT NULL,
    source TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT,
    num REAL,
    PRIMARY KEY (run_id, source, key)
);
CREATE INDEX IF NOT EXISTS facts_key ON facts (key);
CREATE TABLE IF NOT EXISTS artifacts (
    run_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    path TEXT NOT NULL,
    sha256 TEXT,
    created_at REAL NOT NULL,
    PRIMARY KEY (run_id, kind, path)
);
CREATE TABLE IF NOT EXISTS evals (
    run_id TEXT NOT NULL,
    label TEXT NOT NULL,
    metrics_json TEXT NOT NULL,
    ci_json TEXT,
    num_mazes INTEGER,
    path TEXT,
    created_at REAL NOT NULL,
    PRIMARY KEY (run_id, label)
);
CREATE TABLE IF NOT EXISTS notes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT,
    kind TEXT NOT NULL,
    text TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE VIRTUAL TABLE IF NOT EXISTS search_index USING fts5(run_id UNINDEXED, kind UNINDEXED, ref UNINDEXED, body);
"""

_CONDITION = re.compile(r"^\s*(?P<key>[A-Za-z_][\w./-]*)\s*(?P<op>>=|<=|!=|=|:|>|<)\s*(?P<value>\S.*?)\s*$")
_OPS = {"=": "=", ":": "=", "!=": "!=", ">": ">", ">=": ">=", "<": "<", "<=": "<="}

NoteKind = Literal["note", "runbook", "incident", "finding"]


def ledger_path() -> Path:
    """``$HYPERPOD_RL_LEDGER``, else ``<data dir>/ledger.sqlite``."""
    env = os.environ.get(LEDGER_ENV)
    return Path(env).expanduser() if env else data_dir() / "ledger.sqlite"


#: The mount table :func:`filesystem_type` reads (Linux).
MOUNTS_FILE = "/proc/mounts"


def filesystem_type(path: str | Path, *, mounts: str | Path | None = None) -> str | None:
    """The type of the file system holding ``path`` (longest matching mount point), or ``None``.

    Reads ``mounts`` (default :data:`MOUNTS_FILE`); ``None`` where it cannot be read.
    """
    target = Path(path).expanduser().resolve()
    try:
        lines = Path(mounts or MOUNTS_FILE).read_text().splitlines()
    except OSError:
        return None
    best, fstype = -1, None
    for line in lines:
        fields = line.split()
        if len(fields) < 3:
            continue
        point = Path(fields[1].replace("\\040", " "))
        if (target == point or point in target.parents) and len(str(point)) > best:
            best, fstype = len(str(point)), fields[2]
    return fstype


def _current_journal_mode(path: Path) -> JournalMode | None:
    """The journal mode stored in an existing database file's header (WAL files have version 2)."""
    try:
        with open(path, "rb") as fh:
            header = fh.read(20)
    except OSError:
        return None
    if len(header) < 20 or not header.startswith(b"SQLite format 3\x00"):
        return None
    return "WAL" if header[18] == 2 else "DELETE"


def _journal_mode(path: Path, requested: JournalMode | None) -> JournalMode | None:
    """The mode to set (``None``: leave the existing file's mode alone)."""

    mode = requested or os.environ.get(JOURNAL_ENV, "").upper() or None
    if mode not in (None, "WAL", "DELETE"):
        raise ConfigError(f"{JOURNAL_ENV}={mode!r}: use WAL or DELETE")
    existing = _current_journal_mode(path)
    if mode is None and existing is not None:
        return None
    mode = mode or "WAL"
    fstype = filesystem_type(path.parent)
    if mode == "WAL" and fstype in NETWORK_FILESYSTEMS:
        warnings.warn(
            f"ledger {path} is on a {fstype} file system, where SQLite's WAL mode is unsafe across hosts: using journal_mode=DELETE",
            UserWarning,
            stacklevel=4,
        )
        mode = "DELETE"
    return None if mode == existing else mode  # type: ignore[return-value]


#: The one command that rebuilds a ledger from the run directories (:meth:`Ledger.rebuild`).
REBUILD_COMMAND = "hyperpod-rl runs sync --rebuild"


def ledger_error(path: Path, err: sqlite3.Error) -> LedgerError:
    """What an SQLite error of the ledger at ``path`` means for the user, and the fix."""
    name = getattr(err, "sqlite_errorname", "") or ""
    rebuild = f"rebuild it from the run directories: {REBUILD_COMMAND} (the old file is kept beside it)"
    if name == "SQLITE_NOTADB":
        return LedgerError(f"ledger {path} is not an SQLite database ({err}): {rebuild}, or set {LEDGER_ENV} to the ledger")
    if name.startswith("SQLITE_CORRUPT"):
        return LedgerError(f"ledger {path} is damaged ({err}): {rebuild}")
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        return LedgerError(f"ledger {path} stayed locked by another writer past the busy timeout ({err}): try again")
    if name.startswith(("SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_PERM", "SQLITE_IOERR", "SQLITE_FULL", "SQLITE_AUTH")):
        return LedgerError(
            f"cannot use ledger {path} ({err}): make its folder writable with room to spare, or set {LEDGER_ENV} to another file"
        )
    return LedgerError(f"ledger {path} failed ({type(err).__name__}: {err}): if it persists, {rebuild}")


def _reported[**P, R](method: Callable[P, R]) -> Callable[P, R]:
    """Turn an SQLite error of a :class:`Ledger` method into :func:`ledger_error`."""

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(*args, **kwargs)
        except sqlite3.Error as err:
            raise ledger_error(args[0].path, err) from None  # type: ignore[attr-defined]

    return wrapper


def _foreign_tables(path: Path) -> list[str]:
    """The tables of an SQLite file at ``path`` that is another program's database (tables, no
    ``runs``); ``[]`` for a ledger, a missing file, or one SQLite cannot read (damaged, not SQLite)."""
    if not path.is_file():
        return []
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            tables = sorted(r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"))
        finally:
            conn.close()
    except sqlite3.Error:
        return []
    return tables if tables and "runs" not in tables else []


def flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    """``{"grpo": {"lr": 5e-4}}`` -> ``{"grpo.lr": 5e-4}``; lists become JSON text."""
    if isinstance(data, dict):
        out: dict[str, Any] = {}
        for key, value in data.items():
            out.update(flatten(value, f"{prefix}{key}."))
        return out
    return {prefix.rstrip("."): json.dumps(data) if isinstance(data, list) else data}


def _num(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(float(value)) else None
    try:
        return float(str(value))
    except ValueError:
        return None


def _text(value: Any) -> str:
    return "" if value is None else str(value)


@dataclass(frozen=True)
class SearchHit:
    """One search result: the run, where it matched (``config``, ``eval``, ``note``) and how."""

    run_id: str | None
    kind: str
    ref: str
    text: str


@dataclass
class RunRecord:
    """One run as the ledger knows it."""

    run_id: str
    status: str
    run_dir: str | None
    config_hash: str | None
    created_at: float
    updated_at: float
    config: dict[str, Any] | None = None
    artifacts: list[dict[str, Any]] = field(default_factory=list)
    evals: dict[str, dict[str, Any]] = field(default_factory=dict)
    notes: list[dict[str, Any]] = field(default_factory=list)


class Ledger:
    """A connection to the ledger database (created on first use).

    Args:
        path: database file; default :func:`ledger_path`.
        timeout_s: how long a write waits for another writer (SQLite busy timeout), seconds.
        journal_mode: ``"WAL"`` or ``"DELETE"``; default: ``$HYPERPOD_RL_LEDGER_JOURNAL``, else the
            existing file's mode (never changed), else WAL (DELETE on a network file system).

    Raises:
        ConfigError: the path is a directory, its parent cannot be created, or the journal mode
            is unknown.
        LedgerError: the file is not an SQLite database, is damaged, is another program's
            database (tables, but no ``runs``), or cannot be opened (every method raises it for
            an SQLite failure, naming the file and the fix).
    """

    @_reported
    def __init__(self, path: str | Path | None = None, *, timeout_s: float = 60.0, journal_mode: JournalMode | None = None) -> None:
        self.path = Path(path).expanduser() if path else ledger_path()
        #: The run directories this connection last imported (:meth:`sync_storage`), which
        #: :meth:`require_run` names with the ledger when a run id matches no run.
        self.synced_from: Path | None = None
        if self.path.is_dir():
            raise ConfigError(f"ledger path {self.path} is a directory: pass a file path such as {self.path / 'ledger.sqlite'}")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise ConfigError(
                f"cannot create the ledger directory {self.path.parent} ({err}): set {LEDGER_ENV} to a writable path"
            ) from None
        mode = _journal_mode(self.path, journal_mode)
        self._conn = sqlite3.connect(str(self.path), timeout=timeout_s, isolation_level=None, check_same_thread=False)
        self._conn.row_factory = sqlite3.Row
        self._conn.execute(f"PRAGMA busy_timeout = {int(timeout_s * 1000)}")
        if mode is not None:
            self._conn.execute(f"PRAGMA journal_mode = {mode}")
        self.journal_mode: str = str(self._conn.execute("PRAGMA journal_mode").fetchone()[0]).upper()
        self._conn.execute("PRAGMA synchronous = NORMAL" if self.journal_mode == "WAL" else "PRAGMA synchronous = FULL")
        tables = sorted(r[0] for r in self._conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"))
        if tables and "runs" not in tables:
            self._conn.close()
            raise LedgerError(
                f"{self.path} is an SQLite database but not a hyperpod-rl ledger (its tables: {', '.join(tables[:6])}): "
                f"set {LEDGER_ENV} or --ledger to the ledger file, or to a new file"
            )
        with self._write() as cur:
            for statement in filter(str.strip, _SCHEMA.split(";")):
                cur.execute(statement)

    @classmethod
    def rebuild(
        cls, path: str | Path | None = None, *, runs_root: str | Path, journal_mode: JournalMode | None = None
    ) -> tuple[Ledger, Path | None]:
        """A new ledger at ``path`` filled from the run directories under ``runs_root``.

        The one way to rebuild a ledger that is damaged or not SQLite (``hyperpod-rl runs sync
        --rebuild``). The old file (and its ``-wal`` / ``-shm`` / ``-journal`` files) is moved
        aside to ``<name>.before-rebuild-<UTC time>``, not deleted: every run, config, status,
        checkpoint, adapter and evaluation comes back from the run directories, and the old
        file's free-text notes can be recovered from it (``sqlite3 OLD .recover``). Run it while
        nothing else writes the ledger.

        Returns:
            ``(the new ledger, where the old file was moved or None)``.

        Raises:
            ConfigError: as the constructor (a folder, an unwritable parent).
            LedgerError: the new file cannot be created.
            StorageError: the old file cannot be moved aside.
        """
        from hyperpod_rl.errors import storage_error

        target = Path(path).expanduser() if path else ledger_path()
        if target.is_dir():
            raise ConfigError(f"ledger path {target} is a directory: pass a file path such as {target / 'ledger.sqlite'}")
        aside = None
        foreign = _foreign_tables(target)
        if foreign:
            raise LedgerError(
                f"{target} is an SQLite database but not a hyperpod-rl ledger (its tables: {', '.join(foreign[:6])}): it is left as it is; "
                f"set {LEDGER_ENV} or --ledger to the ledger file, or to a new file"
            )
        if target.exists():
            aside = target.with_name(f"{target.name}.before-rebuild-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}")
            for suffix in ("", "-wal", "-shm", "-journal"):
                old = Path(f"{target}{suffix}")
                if old.exists():
                    try:
                        old.rename(f"{aside}{suffix}")
                    except OSError as err:
                        raise storage_error(err, verb="move aside") from None
        ledger = cls(target, journal_mode=journal_mode)
        ledger.sync_storage(runs_root)
        return ledger, aside

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Cursor]:
        cur = self._conn.cursor()
        cur.execute("BEGIN IMMEDIATE")
        try:
            yield cur
        except BaseException:
            cur.execute("ROLLBACK")
            raise
        else:
            cur.execute("COMMIT")

    # ------------------------------------------------------------------ writes
    @_reported
    def record_run(
        self,
        run_id: str,
        *,
        status: str,
        config: dict[str, Any] | None = None,
        config_hash: str | None = None,
        run_dir: str | Path | None = None,
        updated_at: float | None = None,
    ) -> None:
        """Insert or update a run: its status and, when given, its config (indexed for search).

        ``updated_at`` is the run's last change (Unix seconds; :meth:`sync_storage` passes the
        newest modification time of its ``metrics.jsonl``, ``manifest.json`` and ``config.json``);
        default now.
        """
        now = time.time() if updated_at is None else updated_at
        with self._write() as cur:
            cur.execute(
                "INSERT INTO runs (run_id, status, run_dir, config_json, config_hash, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT(run_id) DO UPDATE SET status = excluded.status, updated_at = excluded.updated_at, "
                "run_dir = COALESCE(excluded.run_dir, runs.run_dir), config_json = COALESCE(excluded.config_json, runs.config_json), "
                "config_hash = COALESCE(excluded.config_hash, runs.config_hash)",
                (
                    run_id,
                    status,
                    str(run_dir) if run_dir else None,
                    json.dumps(config, sort_keys=True) if config is not None else None,
                    config_hash,
                    now,
                    now,
                ),
            )
            if config is not None:
                flat = flatten(config)
                cur.execute("DELETE FROM facts WHERE run_id = ? AND source = 'config'", (run_id,))
                cur.executemany(
                    "INSERT INTO facts (run_id, source, key, value, num) VALUES (?, 'config', ?, ?, ?)",
                    [(run_id, k, _text(v), _num(v)) for k, v in flat.items()],
                )
                cur.execute("DELETE FROM search_index WHERE run_id = ? AND kind = 'config'", (run_id,))
                body = " ".join(f"{k}={_text(v)}" for k, v in sorted(flat.items())) + f" status={status} config_hash={config_hash or ''}"
                cur.execute("INSERT INTO search_index (run_id, kind, ref, body) VALUES (?, 'config', ?, ?)", (run_id, run_id, body))

    def set_status(self, run_id: str, status: str) -> None:
        """Set a run's status (the run row is created when missing)."""
        self.record_run(run_id, status=status)

    @_reported
    def add_artifact(self, run_id: str, kind: str, path: str | Path, sha256: str | None = None) -> None:
        """Record an artifact (``checkpoint``, ``adapter``, ``metrics``, ``eval``...) of a run."""
        with self._write() as cur:
            cur.execute(
                "INSERT INTO artifacts (run_id, kind, path, sha256, created_at) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT(run_id, kind, path) DO UPDATE SET sha256 = excluded.sha256, created_at = excluded.created_at",
                (run_id, kind, str(path), sha256, time.time()),
            )

    @_reported
    def add_eval(
        self,
        run_id: str,
        label: str,
        metrics: dict[str, float],
        *,
        ci: dict[str, Any] | None = None,
        num_mazes: int | None = None,
        path: str | Path | None = None,
    ) -> None:
        """Record an evaluation (one per ``(run_id, label)``; a new one replaces the old).

        Its figures become searchable as ``<metric>`` and ``<label>.<metric>``.
        """
        source = f"eval:{label}"
        with self._write() as cur:
            cur.execute(
                "INSERT OR REPLACE INTO evals (run_id, label, metrics_json, ci_json, num_mazes, path, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    run_id,
                    label,
                    json.dumps(metrics, sort_keys=True),
                    json.dumps(ci, sort_keys=True) if ci is not None else None,
                    num_mazes,
                    str(path) if path else None,
                    time.time(),
                ),
            )
            cur.execute("DELETE FROM facts WHERE run_id = ? AND source = ?", (run_id, source))
            cur.executemany(
                "INSERT INTO facts (run_id, source, key, value, num) VALUES (?, ?, ?, ?, ?)",
                [(run_id, source, f"{label}.{k}", _text(v), _num(v)) for k, v in metrics.items()],
            )
            cur.execute("DELETE FROM search_index WHERE run_id = ? AND kind = 'eval' AND ref = ?", (run_id, label))
            body = f"eval {label} mazes={num_mazes} " + " ".join(f"{k}={float(v):.4g}" for k, v in sorted(metrics.items()))
            cur.execute("INSERT INTO search_index (run_id, kind, ref, body) VALUES (?, 'eval', ?, ?)", (run_id, label, body))

    @_reported
    def add_note(self, text: str, *, run_id: str | None = None, kind: NoteKind = "note") -> int:
        """Add a free-text note (``note``, ``runbook``, ``incident``, ``finding``); return its id.

        Raises:
            ConfigError: empty text or an unknown kind.
        """
        if not text.strip():
            raise ConfigError("note text is empty: write what you found, or what to do")
        if kind not in ("note", "runbook", "incident", "finding"):
            raise ConfigError(f"note kind {kind!r} is unknown: use note, runbook, incident or finding")
        with self._write() as cur:
            cur.execute("INSERT INTO notes (run_id, kind, text, created_at) VALUES (?, ?, ?, ?)", (run_id, kind, text, time.time()))
            note_id = int(cur.lastrowid or 0)
            cur.execute(
                "INSERT INTO search_index (run_id, kind, ref, body) VALUES (?, 'note', ?, ?)", (run_id, str(note_id), f"{kind} {text}")
            )
        return note_id

    # ------------------------------------------------------------------ reads
    @_reported
    def list_runs(self, *, status: str | None = None, limit: int = 100) -> list[RunRecord]:
        """Runs, most recently updated first.

        Args:
            status: only runs with this status, one of :data:`hyperpod_rl.runs.RUN_STATUSES`; ``None``: all.
            limit: most runs returned.

        Raises:
            ConfigError: ``status`` is not a run status (the message lists them).
        """
        from hyperpod_rl.runs import RUN_STATUSES

        if status is not None and status not in RUN_STATUSES:
            raise ConfigError(f"{status!r} is not a run status: use one of {', '.join(RUN_STATUSES)}")
        sql = "SELECT * FROM runs" + (" WHERE status = ?" if status else "") + " ORDER BY updated_at DESC LIMIT ?"
        rows = self._conn.execute(sql, ((status,) if status else ()) + (limit,)).fetchall()
        return [
            RunRecord(
                run_id=r["run_id"],
                status=r["status"],
                run_dir=r["run_dir"],
                config_hash=r["config_hash"],
                created_at=r["created_at"],
                updated_at=r["updated_at"],
            )
            for r in rows
        ]

    @_reported
    def get_run(self, run_id: str) -> RunRecord | None:
        """Everything recorded about one run, or ``None``."""
        r = self._conn.execute("SELECT * FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if r is None:
            return None
        rec = RunRecord(
            run_id=r["run_id"],
            status=r["status"],
            run_dir=r["run_dir"],
            config_hash=r["config_hash"],
            created_at=r["created_at"],
            updated_at=r["updated_at"],
            config=self._json(r["config_json"], run_id),
        )
        rec.artifacts = [
            dict(a)
            for a in self._conn.execute(
                "SELECT kind, path, sha256, created_at FROM artifacts WHERE run_id = ? ORDER BY created_at", (run_id,)
            )
        ]
        for e in self._conn.execute("SELECT * FROM evals WHERE run_id = ? ORDER BY created_at", (run_id,)):
            rec.evals[e["label"]] = {
                "metrics": self._json(e["metrics_json"], run_id) or {},
                "ci": self._json(e["ci_json"], run_id),
                "num_mazes": e["num_mazes"],
                "path": e["path"],
            }
        rec.notes = [
            dict(n) for n in self._conn.execute("SELECT id, kind, text, created_at FROM notes WHERE run_id = ? ORDER BY id", (run_id,))
        ]
        return rec

    @_reported
    def require_run(self, run_id: str) -> RunRecord:
        """Everything recorded about one run (:meth:`get_run`), for a run id a person gave.

        Raises:
            ConfigError: no run has this id: the message says so plainly, names this ledger and the
                run directories it last imported (:meth:`sync_storage`), and that ``hyperpod-rl
                runs list`` shows the known runs (:func:`hyperpod_rl.runs.unknown_run`); or its run
                directory is there but could not be imported (no readable ``manifest.json`` or
                ``config.json``).
        """
        from hyperpod_rl.runs import unknown_run

        rec = self.get_run(run_id)
        if rec is not None:
            return rec
        places = [f"the ledger {self.path}"]
        if self.synced_from is not None:
            run_dir = self.synced_from / run_id
            if run_dir.is_dir():
                raise ConfigError(
                    f"run {run_id!r} is not in the ledger {self.path}: its run directory {run_dir} holds no readable manifest.json or config.json"
                )
            places.append(f"the run directories under {self.synced_from}")
        raise unknown_run(run_id, places)

    def _json(self, text: str | None, run_id: str) -> Any:
        """A JSON column of a row, or ``None``; a damaged one is a :class:`LedgerError` saying how to rebuild."""
        if not text:
            return None
        return parse_user_data(
            text, f"ledger {self.path}, a row of run {run_id!r},", syntax="json", error=LedgerError, repair=f"rebuild it: {REBUILD_COMMAND}"
        )

    @_reported
    def notes(self, *, run_id: str | None = None) -> list[dict[str, Any]]:
        """Notes of one run, or all notes (newest last)."""
        if run_id is None:
            return [dict(n) for n in self._conn.execute("SELECT id, run_id, kind, text, created_at FROM notes ORDER BY id")]
        return [
            dict(n)
            for n in self._conn.execute("SELECT id, run_id, kind, text, created_at FROM notes WHERE run_id = ? ORDER BY id", (run_id,))
        ]

    @_reported
    def search(self, query: str, *, limit: int = 50) -> list[SearchHit]:
        """Find runs (and notes) by a config value, an eval figure or note text.

        Args:
            query: ``key<op>value`` (see the module docstring) or free text.
            limit: most hits returned.

        Raises:
            ConfigError: an empty query.
        """
        if not query.strip():
            raise ConfigError("empty search: pass words to find, or key=value / metric>=number")
        cond = _CONDITION.match(query)
        if cond:
            return self._search_facts(cond["key"], _OPS[cond["op"]], cond["value"].strip("'\""), limit)
        terms = [t for t in query.split() if t]
        match = " ".join('"' + t.replace('"', '""') + '"' for t in terms)
        rows = self._conn.execute(
            "SELECT run_id, kind, ref, snippet(search_index, 3, '[', ']', '…', 12) AS text FROM search_index WHERE search_index MATCH ? ORDER BY rank LIMIT ?",
            (match, limit),
        ).fetchall()
        return [SearchHit(run_id=r["run_id"], kind=r["kind"], ref=r["ref"], text=r["text"]) for r in rows]

    def _search_facts(self, key: str, op: str, value: str, limit: int) -> list[SearchHit]:
        number = _num(value)
        key_sql = "(key = ? OR key LIKE ? ESCAPE '\\')"
        like = "%." + key.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        if number is not None and op in ("=", "!="):
            value_sql = f"(num IS NOT NULL AND abs(num - ?) {'<=' if op == '=' else '>'} 1e-12 * max(1.0, abs(?)))"
            params: tuple[Any, ...] = (key, like, number, number)
        elif number is not None:
            value_sql = f"(num IS NOT NULL AND num {op} ?)"
            params = (key, like, number)
        elif op in ("=", "!="):
            value_sql = f"(lower(value) {op} lower(?))"
            params = (key, like, value)
        else:
            raise ConfigError(f"search {key}{op}{value!r}: comparisons need a number")
        rows = self._conn.execute(
            f"SELECT run_id, source, key, value FROM facts WHERE {key_sql} AND {value_sql} ORDER BY run_id LIMIT ?", (*params, limit)
        ).fetchall()
        return [
            SearchHit(
                run_id=r["run_id"], kind="config" if r["source"] == "config" else "eval", ref=r["key"], text=f"{r['key']}={r['value']}"
            )
            for r in rows
        ]

    @_reported
    def compare(self, run_ids: list[str]) -> dict[str, Any]:
        """Config keys that differ between runs, and their eval figures side by side.

        Returns:
            ``{"runs": [...], "config": {key: {run_id: value}}, "eval": {"label.metric": {run_id: value}}}``.

        Raises:
            ConfigError: fewer than two runs, or a run the ledger does not know (:meth:`require_run`).
        """
        if len(run_ids) < 2:
            raise ConfigError("compare needs at least two run ids")
        records = [self.require_run(rid) for rid in run_ids]
        flats = {r.run_id: flatten(r.config or {}) for r in records}
        keys = sorted(set().union(*flats.values()) - {"run_id"})
        config = {
            k: {rid: flats[rid].get(k) for rid in run_ids} for k in keys if len({json.dumps(flats[rid].get(k)) for rid in run_ids}) > 1
        }
        figures: dict[str, dict[str, Any]] = {}
        for rec in records:
            for label, ev in rec.evals.items():
                for metric, value in ev["metrics"].items():
                    figures.setdefault(f"{label}.{metric}", {})[rec.run_id] = value
        return {"runs": run_ids, "config": config, "eval": dict(sorted(figures.items()))}

    # ------------------------------------------------------------------ run directories
    @_reported
    def import_manifest(self, manifest: dict[str, Any], run_dir: str | Path | None = None, *, updated_at: float | None = None) -> None:
        """Record a run from its ``manifest.json`` content: config, status, checkpoints, adapter, evals.

        ``updated_at``: the run's last change (Unix seconds), as in :meth:`record_run`.
        """
        rid = manifest["run_id"]
        self.record_run(
            rid,
            status=manifest.get("status", "unknown"),
            config=manifest.get("config"),
            config_hash=manifest.get("config_hash"),
            run_dir=run_dir,
            updated_at=updated_at,
        )
        for ck in manifest.get("checkpoints") or []:
            self.add_artifact(rid, "checkpoint", ck["path"], (ck.get("files") or {}).get("adapter_model.safetensors"))
        adapter = manifest.get("adapter")
        if adapter:
            self.add_artifact(rid, "adapter", adapter["path"], adapter.get("sha256"))
        for label, ev in (manifest.get("eval") or {}).items():
            self.add_eval(rid, label, ev.get("metrics") or {}, ci=ev.get("ci"), num_mazes=ev.get("num_mazes"), path=ev.get("path"))
        promotion = manifest.get("promotion")
        if promotion:
            verdict = "promoted" if promotion.get("promoted") else "not promoted"
            text = f"adapter {verdict}: {promotion.get('reason')}"
            if not any(n["text"] == text for n in self.notes(run_id=rid)):
                self.add_note(text, run_id=rid, kind="finding")
            if promotion.get("promoted"):
                self.add_artifact(rid, "promoted_adapter", promotion.get("adapter", "adapter"), promotion.get("adapter_sha256"))

    @_reported
    def sync_storage(self, runs_root: str | Path) -> int:
        """Import every run directory under ``runs_root`` that changed since the ledger's row (its
        ``manifest.json``, ``config.json``, ``metrics.jsonl`` or ``submissions.json`` is newer than the row's ``updated_at``).

        A run with a provenance record (``manifest.json``) is imported from it; a submitted run
        whose trainer has not started yet (``config.json`` only) is recorded as ``submitted``.
        A run's ``updated_at`` is its own last change (the newest modification time of its
        ``metrics.jsonl``, ``manifest.json`` and ``config.json``), not the time of the sync.

        Returns:
            How many runs were (re)imported.
        """
        from hyperpod_rl.errors import CheckpointError
        from hyperpod_rl.runs import RunPaths, current_status, read_json, read_provenance, read_submissions

        root = Path(runs_root)
        self.synced_from = root
        if not root.is_dir():
            return 0
        known = {r["run_id"]: r["updated_at"] for r in self._conn.execute("SELECT run_id, updated_at FROM runs")}
        count = 0
        for run_dir in sorted(p for p in root.iterdir() if p.is_dir()):
            paths = RunPaths(run_dir)
            try:
                if not (paths.provenance.exists() or paths.config.exists()):
                    continue
                # the run's own last change, taken before reading (a write during the sync is newer)
                changed = max(f.stat().st_mtime for f in (paths.provenance, paths.config, paths.metrics, paths.submissions) if f.exists())
                if changed <= known.get(run_dir.name, -1.0):
                    continue
                manifest = read_provenance(run_dir)
                config = read_json(paths.config) if manifest is None else None
            except (OSError, CheckpointError):
                continue
            if manifest is not None:
                # the status of the run's newest submission (an older submission's end is not its end)
                manifest = {**manifest, "status": current_status(manifest, read_submissions(paths))}
                self.import_manifest(manifest, run_dir, updated_at=changed)
            elif isinstance(config, dict):
                self.record_run(run_dir.name, status="submitted", config=config, run_dir=run_dir, updated_at=changed)
            else:
                continue
            count += 1
        return count
