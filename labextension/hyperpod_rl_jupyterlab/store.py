"""Read-only view of hyperpod-rl's run store, run ledger and local cluster state, without
importing ``hyperpod_rl`` (it is not installed in the Jupyter server's environment in Studio).

The formats read here are hyperpod-rl's documented on-disk contract (docs/labextension.md):

- data dir: ``$HYPERPOD_RL_HOME``, else ``platformdirs.user_data_dir("hyperpod-rl")``;
- storage root: ``$HYPERPOD_RL_STORAGE``, else ``<data dir>/storage``; runs in ``<root>/runs/<run_id>/``
  with ``config.json``, ``submissions.json`` (list of Ray submission ids, newest last),
  ``metrics.jsonl`` (one MetricRecord JSON object per line), ``manifest.json``,
  ``adapter/provenance.json``, ``eval/*.json``, ``promotion.json``;
- ledger: ``$HYPERPOD_RL_LEDGER``, else ``<data dir>/ledger.sqlite`` (SQLite, opened read-only);
- local cluster: ``<data dir>/local-cluster.json`` (mode 0600; holds the cluster token).

``tests/labextension/test_store_contract.py`` checks every reader here against hyperpod-rl's own
writers on a real run, so a format change fails there.

Nothing is created or written, unlike ``hyperpod_rl.paths`` (which creates its directories).
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from collections import deque
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = [
    "RUN_ID_PATTERN",
    "LocalClusterState",
    "RunFiles",
    "data_dir",
    "ledger_path",
    "ledger_runs",
    "local_cluster_state",
    "local_state_path",
    "storage_root",
]

#: hyperpod-rl's run id rule (``RunConfig.run_id``); anything else is not a run (404).
RUN_ID_PATTERN = re.compile(r"^[a-z0-9][a-z0-9-]{2,62}$")
#: The reward metric the sidebar shows (SkyRL's name).
REWARD_KEY = "reward/avg_raw_reward"
SPARKLINE_POINTS = 60


def data_dir() -> Path:
    """hyperpod-rl's data dir: ``$HYPERPOD_RL_HOME``, else ``user_data_dir("hyperpod-rl")``."""
    env = os.environ.get("HYPERPOD_RL_HOME")
    if env:
        return Path(env).expanduser()
    from platformdirs import user_data_dir

    return Path(user_data_dir("hyperpod-rl", appauthor=False))


def storage_root(override: str | None = None) -> Path:
    """The storage root: ``override`` (settings), ``$HYPERPOD_RL_STORAGE``, else ``<data dir>/storage``."""
    if override:
        return Path(override).expanduser()
    env = os.environ.get("HYPERPOD_RL_STORAGE")
    return Path(env).expanduser() if env else data_dir() / "storage"


def ledger_path(override: str | None = None) -> Path:
    """The ledger file: ``override``, ``$HYPERPOD_RL_LEDGER``, else ``<data dir>/ledger.sqlite``."""
    if override:
        return Path(override).expanduser()
    env = os.environ.get("HYPERPOD_RL_LEDGER")
    return Path(env).expanduser() if env else data_dir() / "ledger.sqlite"


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


@dataclass(frozen=True)
class LocalClusterState:
    """The parts of ``local-cluster.json`` the extension uses.

    ``token`` authenticates to the dashboard and job API; it stays in this process (never sent
    to the browser or logged).
    """

    dashboard_url: str
    token: str = ""

    def __repr__(self) -> str:  # never show the token
        return f"LocalClusterState(dashboard_url={self.dashboard_url!r})"

    @property
    def port(self) -> int | None:
        match = re.search(r":(\d+)/?$", self.dashboard_url)
        return int(match.group(1)) if match else None


def local_state_path() -> Path:
    """``<data dir>/local-cluster.json``: the local cluster's address and token (mode 0600)."""
    return data_dir() / "local-cluster.json"


def local_cluster_state(path: Path | None = None) -> LocalClusterState | None:
    """The local cluster recorded by ``hyperpod-rl local start``, or ``None``."""
    data = _read_json(path or local_state_path())
    if not isinstance(data, dict) or not isinstance(data.get("dashboard_url"), str):
        return None
    return LocalClusterState(dashboard_url=data["dashboard_url"].rstrip("/"), token=str(data.get("token") or ""))


class RunFiles:
    """One run directory, read on demand (every method tolerates missing or half-written files).

    Args:
        root: the run directory ``<storage root>/runs/<run_id>``.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.run_id = root.name

    def exists(self) -> bool:
        return self.root.is_dir()

    def manifest(self) -> dict[str, Any] | None:
        data = _read_json(self.root / "manifest.json")
        return data if isinstance(data, dict) else None

    def config(self) -> dict[str, Any] | None:
        data = _read_json(self.root / "config.json")
        return data if isinstance(data, dict) else None

    def submissions(self) -> list[str]:
        data = _read_json(self.root / "submissions.json")
        return [s for s in data if isinstance(s, str)] if isinstance(data, list) else []

    def latest_submission(self) -> str | None:
        subs = self.submissions()
        return subs[-1] if subs else None

    def metrics_tail(self, count: int = SPARKLINE_POINTS) -> tuple[list[dict[str, Any]], int]:
        """The last ``count`` metric records and the highest step seen (a cut-off last line is skipped).

        Returns:
            ``(records, total_steps)``; ``total_steps`` is the last record's planned steps (0 if none).
        """
        path = self.root / "metrics.jsonl"
        tail: deque[dict[str, Any]] = deque(maxlen=count)
        try:
            with path.open() as fh:
                for line in fh:
                    try:
                        rec = json.loads(line)
                    except ValueError:
                        continue
                    if isinstance(rec, dict) and isinstance(rec.get("step"), int) and isinstance(rec.get("values"), dict):
                        tail.append(rec)
        except OSError:
            return [], 0
        records = sorted(tail, key=lambda r: r["step"])
        total = int(records[-1].get("total_steps") or 0) if records else 0
        return records, total

    def provenance(self) -> dict[str, Any] | None:
        data = _read_json(self.root / "adapter" / "provenance.json")
        return data if isinstance(data, dict) else None

    def has_adapter(self) -> bool:
        return (self.root / "adapter" / "adapter_model.safetensors").is_file()

    def promotion(self) -> dict[str, Any] | None:
        data = _read_json(self.root / "promotion.json")
        return data if isinstance(data, dict) else None

    def comparison(self) -> dict[str, Any] | None:
        """``eval/comparison.json`` (``hyperpod_rl.eval.Comparison.save``), or ``None``."""
        data = _read_json(self.root / "eval" / "comparison.json")
        return data if isinstance(data, dict) else None

    def evals(self) -> dict[str, dict[str, float]]:
        """``{label: {metric: value}}`` from ``eval/*.json`` (numbers only; comparisons skipped)."""
        out: dict[str, dict[str, float]] = {}
        for path in sorted((self.root / "eval").glob("*.json")):
            data = _read_json(path)
            if isinstance(data, dict) and isinstance(data.get("metrics"), dict):
                label = str(data.get("label") or path.stem)
                out[label] = {k: float(v) for k, v in data["metrics"].items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
        return out

    def created_at(self, manifest: dict[str, Any] | None) -> float:
        """When the run started (Unix s): the manifest's ``created_at``, else ``config.json``'s mtime."""
        stamp = (manifest or {}).get("created_at")
        if isinstance(stamp, str):
            try:
                return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()
            except ValueError:
                pass
        for path in (self.root / "config.json", self.root):
            try:
                return path.stat().st_mtime
            except OSError:
                continue
        return 0.0

    def updated_at(self) -> float:
        newest = 0.0
        for name in ("metrics.jsonl", "manifest.json", "submissions.json", "config.json", "promotion.json"):
            try:
                newest = max(newest, (self.root / name).stat().st_mtime)
            except OSError:
                continue
        return newest


def ledger_runs(path: Path) -> dict[str, dict[str, Any]]:
    """``{run_id: {"status", "run_dir", "created_at", "updated_at"}}`` from the ledger's ``runs`` table.

    The database is opened read-only (``mode=ro``), so the extension never creates or locks it
    for writing; a missing or unreadable ledger gives ``{}``.
    """
    if not path.is_file():
        return {}
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=2.0)
    except sqlite3.Error:
        return {}
    try:
        rows = conn.execute("SELECT run_id, status, run_dir, created_at, updated_at FROM runs").fetchall()
    except sqlite3.Error:
        return {}
    finally:
        conn.close()
    return {r[0]: {"status": r[1], "run_dir": r[2], "created_at": r[3], "updated_at": r[4]} for r in rows}
