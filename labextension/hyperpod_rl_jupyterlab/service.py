"""What the routes return, built from the run store, the ledger and the clusters' job APIs.

Framework-free (no tornado handler code here), so tests can call it directly; the handlers in
:mod:`.handlers` only translate requests and errors.
"""

from __future__ import annotations

import asyncio
import importlib.util
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import _redact
from .models import AdapterInfo, ClusterInfo, LogsResponse, RunsResponse, RunSummary, ServerStatus, StopResponse
from .ray_api import RayAPIError, RayJobAPI, hprl_jobs
from .status import derive_status
from .store import REWARD_KEY, RUN_ID_PATTERN, RunFiles, ledger_path, ledger_runs, local_cluster_state, local_state_path, storage_root

__all__ = ["ClusterEntry", "NotFound", "RunsService", "StoreMissing", "redact"]

#: Log lines returned at most by ``logs`` (the tail).
MAX_LOG_LINES = 2000


def _all_answered(errors: dict[str, str | None]) -> bool:
    """Whether every configured cluster's job API answered (``errors`` from ``_jobs``; none configured is not an answer)."""
    return bool(errors) and all(e is None for e in errors.values())


class NotFound(Exception):
    """No such run (or no submission to act on): the route answers 404."""


class StoreMissing(Exception):
    """The storage root does not exist: the route answers 503 with this message."""


@dataclass(frozen=True)
class ClusterEntry:
    """A cluster configured for the extension (``c.HyperpodRL.clusters``), e.g. a HyperPod RayCluster.

    Attributes:
        name: shown in the sidebar.
        kind: ``hyperpod`` (or ``local``).
        dashboard_url: the link the browser opens (e.g. the Ray endpoint operator's connection
            URL, or Grafana); ``None`` for none.
        api_url: the job API reachable from this server (e.g. a ``kubectl port-forward`` of the
            head service's 8265), or ``None`` to list the cluster without job status.
        token_file: a file holding the Ray token for ``api_url`` (read on each poll, never sent).
    """

    name: str
    kind: str = "hyperpod"
    dashboard_url: str | None = None
    api_url: str | None = None
    token_file: str | None = field(default=None, repr=False)


def redact(text: str, secrets: list[str]) -> str:
    """``text`` with every secret kind masked (AWS credentials, presigned-URL signatures, the
    given tokens verbatim, base64-encoded or split across lines): :func:`._redact.redact`, the
    identical copy of ``hyperpod_rl.redact``."""
    return _redact.redact(text, secrets)


def proxy_available() -> bool:
    """jupyter-server-proxy is importable in this server's environment."""
    return importlib.util.find_spec("jupyter_server_proxy") is not None


class RunsService:
    """The extension's view of runs, adapters and clusters.

    Args:
        base_url: the Jupyter server's base URL (``/jupyterlab/default/`` in Studio).
        clusters: configured clusters beside the local one.
        storage_override: storage root from the server config (``c.HyperpodRL.storage_root``).
        ledger_override: ledger file from the server config.
        timeout_s: per job-API request timeout, seconds.
        version: this package's version (for ``status``).
        tutorial_sources: ``(notebooks dir, docs dir)`` the tutorial route copies from.
    """

    def __init__(
        self,
        *,
        base_url: str = "/",
        clusters: list[ClusterEntry] | None = None,
        storage_override: str | None = None,
        ledger_override: str | None = None,
        timeout_s: float = 5.0,
        version: str = "",
        tutorial_sources: tuple[Path, Path] | None = None,
    ) -> None:
        self.base_url = base_url if base_url.endswith("/") else base_url + "/"
        self.clusters = list(clusters or [])
        self.storage_override = storage_override
        self.ledger_override = ledger_override
        self.timeout_s = timeout_s
        self.version = version
        self.tutorial_sources = tutorial_sources

    # ------------------------------------------------------------------ locations
    def root(self, store: str | None = None) -> Path:
        """The storage root for a request: the browser's setting, else the server config, else hyperpod-rl's rule."""
        return storage_root(store or self.storage_override)

    def runs_dir(self, store: str | None = None) -> Path:
        root = self.root(store)
        if not root.is_dir():
            raise StoreMissing(
                f"the hyperpod-rl storage root {root} does not exist on this server: train a run first "
                "(hyperpod-rl quickstart), or set the store root in Settings > Hyperpod RL "
                "(or HYPERPOD_RL_STORAGE for the server) to where your runs are, e.g. /fsx/hyperpod-rl"
            )
        return root / "runs"

    def secrets(self) -> list[str]:
        """Every secret this server reads: every route's answer is redacted with them (:mod:`._redact`)."""
        return self._secrets()

    def _secrets(self) -> list[str]:
        """Every secret this server reads (redacted from whatever it returns)."""
        out = []
        local = local_cluster_state()
        if local and local.token:
            out.append(local.token)
        for entry in self.clusters:
            token = self._token(entry)
            if token:
                out.append(token)
        return out

    @staticmethod
    def _token(entry: ClusterEntry) -> str:
        if not entry.token_file:
            return ""
        try:
            return Path(entry.token_file).expanduser().read_text().strip()
        except OSError:
            return ""

    def _apis(self) -> list[RayJobAPI]:
        apis = []
        local = local_cluster_state()
        if local is not None:
            apis.append(RayJobAPI("local", local.dashboard_url, local.token, self.timeout_s))
        for entry in self.clusters:
            if entry.api_url:
                apis.append(RayJobAPI(entry.name, entry.api_url, self._token(entry), self.timeout_s))
        return apis

    async def _jobs(self) -> tuple[dict[str, tuple[str, dict[str, Any]]], dict[str, str | None]]:
        """``({submission_id: (cluster, job)}, {cluster: error or None})`` over every reachable cluster."""
        apis = self._apis()
        results = await asyncio.gather(*(api.list_jobs() for api in apis), return_exceptions=True)
        jobs: dict[str, tuple[str, dict[str, Any]]] = {}
        errors: dict[str, str | None] = {}
        for api, result in zip(apis, results, strict=True):
            if isinstance(result, RayAPIError):
                errors[api.name] = str(result)
                continue
            if isinstance(result, BaseException):
                errors[api.name] = f"cluster {api.name!r}: {type(result).__name__}"
                continue
            errors[api.name] = None
            for sub, job in hprl_jobs(result).items():
                jobs[sub] = (api.name, job)
        return jobs, errors

    def _api_for(self, cluster: str) -> RayJobAPI:
        return next(api for api in self._apis() if api.name == cluster)

    # ------------------------------------------------------------------ runs
    def _run_files(self, run_id: str, store: str | None) -> RunFiles:
        """The run's directory, or :class:`NotFound` (ids outside hyperpod-rl's rule never touch the disk)."""
        if not RUN_ID_PATTERN.fullmatch(run_id):
            raise NotFound(f"no run {run_id!r}: run ids are lower-case letters, digits and '-' (3-63 characters)")
        files = RunFiles(self.runs_dir(store) / run_id)
        if not files.exists():
            raise NotFound(f"no run {run_id!r} under {files.root.parent}")
        return files

    def _summary(
        self,
        files: RunFiles | None,
        run_id: str,
        jobs: dict[str, tuple[str, dict[str, Any]]],
        ledger: dict[str, Any] | None,
        clusters_answered: bool = False,
    ) -> RunSummary:
        manifest = files.manifest() if files else None
        config = (manifest or {}).get("config") or (files.config() if files else None) or {}
        records, total = files.metrics_tail() if files else ([], 0)
        sub = files.latest_submission() if files else None
        cluster, job = jobs.get(sub, (None, None)) if sub else (None, None)
        ray_status = str(job.get("status")) if job else None
        status, detail = derive_status(
            ray_status=ray_status,
            manifest_status=(manifest or {}).get("status"),
            submitted=bool(sub),
            ledger_status=(ledger or {}).get("status"),
            has_run_dir=files is not None,
            clusters_answered=clusters_answered,
        )
        rewards = [float(r["values"][REWARD_KEY]) for r in records if isinstance(r["values"].get(REWARD_KEY), (int, float))]
        base = (manifest or {}).get("base_model") or {}
        model_cfg = config.get("model") or {}
        step = records[-1]["step"] if records else 0
        total = total or int((config.get("trainer") or {}).get("steps") or 0)
        created = files.created_at(manifest) if files else float((ledger or {}).get("created_at") or 0.0)
        updated = files.updated_at() if files else float((ledger or {}).get("updated_at") or 0.0)
        return RunSummary(
            run_id=run_id,
            status=status,
            status_detail=detail,
            step=int(step),
            total_steps=int(total),
            last_reward=rewards[-1] if rewards else None,
            rewards=rewards,
            base_model_id=base.get("id") or model_cfg.get("path"),
            base_model_revision=base.get("revision") or model_cfg.get("revision"),
            backend=(manifest or {}).get("backend") or config.get("backend"),
            cluster=cluster,
            submission_id=sub,
            ray_status=ray_status,
            created_at=created,
            updated_at=max(updated, created),
            run_dir=str(files.root) if files else (ledger or {}).get("run_dir"),
            has_adapter=files.has_adapter() if files else False,
            in_ledger=ledger is not None,
        )

    async def runs(self, store: str | None = None) -> RunsResponse:
        """Every run in the store and the ledger, newest first.

        Raises:
            StoreMissing: the storage root does not exist.
        """
        runs_dir = self.runs_dir(store)
        jobs, errors = await self._jobs()
        answered = _all_answered(errors)
        ledger = ledger_runs(ledger_path(self.ledger_override))
        found: dict[str, RunFiles | None] = {}
        if runs_dir.is_dir():
            for path in runs_dir.iterdir():
                if path.is_dir() and RUN_ID_PATTERN.fullmatch(path.name):
                    found[path.name] = RunFiles(path)
        for run_id, row in ledger.items():
            if run_id in found or not RUN_ID_PATTERN.fullmatch(run_id):
                continue
            elsewhere = Path(row["run_dir"]) if row.get("run_dir") else None
            found[run_id] = RunFiles(elsewhere) if elsewhere is not None and elsewhere.is_dir() else None
        summaries = [self._summary(files, run_id, jobs, ledger.get(run_id), answered) for run_id, files in found.items()]
        summaries.sort(key=lambda s: (s.created_at, s.run_id), reverse=True)
        return RunsResponse(
            runs=summaries,
            running=sum(1 for s in summaries if s.status == "running"),
            store_root=str(self.root(store)),
            generated_at=time.time(),
        )

    async def run(self, run_id: str, store: str | None = None) -> RunSummary:
        """One run.

        Raises:
            NotFound: no such run.
            StoreMissing: no storage root.
        """
        files = self._run_files(run_id, store)
        jobs, errors = await self._jobs()
        return self._summary(files, run_id, jobs, ledger_runs(ledger_path(self.ledger_override)).get(run_id), _all_answered(errors))

    async def logs(self, run_id: str, *, lines: int = 200, store: str | None = None) -> LogsResponse:
        """The tail of the latest submission's job log, secrets redacted."""
        files = self._run_files(run_id, store)
        sub = files.latest_submission()
        lines = max(1, min(int(lines), MAX_LOG_LINES))
        if sub is None:
            return LogsResponse(run_id=run_id, submission_id=None, lines=[], truncated=False, source="none")
        jobs, errors = await self._jobs()
        if sub not in jobs:
            why = "; ".join(e for e in errors.values() if e) or "no reachable cluster knows it"
            return LogsResponse(run_id=run_id, submission_id=sub, lines=[f"[job {sub} not found: {why}]"], truncated=False, source="none")
        cluster, _ = jobs[sub]
        try:
            text = await self._api_for(cluster).logs(sub)
        except RayAPIError as err:
            return LogsResponse(run_id=run_id, submission_id=sub, lines=[f"[{err}]"], truncated=False, source="none")
        all_lines = redact(text, self._secrets()).splitlines()
        return LogsResponse(
            run_id=run_id, submission_id=sub, lines=all_lines[-lines:], truncated=len(all_lines) > lines, source=f"ray:{cluster}"
        )

    async def stop(self, run_id: str, store: str | None = None) -> StopResponse:
        """Stop the run's latest submission through its cluster's job API.

        Raises:
            NotFound: no such run, or no reachable cluster knows its job.
        """
        files = self._run_files(run_id, store)
        sub = files.latest_submission()
        if sub is None:
            raise NotFound(f"run {run_id!r} has never been submitted: there is no job to stop")
        jobs, errors = await self._jobs()
        if sub not in jobs:
            why = "; ".join(e for e in errors.values() if e) or "no reachable cluster knows it"
            raise NotFound(f"job {sub} of run {run_id!r} is not on any reachable cluster ({why})")
        cluster, job = jobs[sub]
        stopped = await self._api_for(cluster).stop(sub)
        message = f"Ray is stopping {sub} on {cluster}" if stopped else f"{sub} had already ended ({job.get('status')})"
        return StopResponse(run_id=run_id, submission_id=sub, stopped=stopped, ray_status=str(job.get("status")), message=message)

    # ------------------------------------------------------------------ adapters and clusters
    async def adapters(self, store: str | None = None) -> list[AdapterInfo]:
        """Every run's exported adapter with its promotion decision, newest first."""
        runs_dir = self.runs_dir(store)
        out = []
        paths = sorted((p for p in runs_dir.glob("*/adapter") if p.is_dir()), key=lambda p: p.stat().st_mtime, reverse=True)
        for adapter_dir in paths:
            files = RunFiles(adapter_dir.parent)
            prov = files.provenance() or {}
            promo = files.promotion()
            comparison = files.comparison() or {}
            verdict = comparison.get("promote")
            out.append(
                AdapterInfo(
                    run_id=files.run_id,
                    path=str(adapter_dir),
                    sha256=prov.get("adapter_sha256"),
                    steps=prov.get("steps"),
                    base_model_id=prov.get("base_model_id"),
                    base_model_revision=prov.get("base_model_revision"),
                    promoted=bool(promo["promoted"]) if promo and "promoted" in promo else None,
                    promotion_reason=str(promo.get("reason")) if promo else None,
                    decided_at=promo.get("decided_at") if promo else None,
                    evals=files.evals(),
                    compared=verdict if isinstance(verdict, bool) else None,
                    comparison_reason=str(comparison["reason"]) if "reason" in comparison else None,
                )
            )
        return out

    def _proxy_link(self, url: str) -> tuple[str | None, str]:
        """A browser link for a dashboard on this server's loopback."""
        port = url.rstrip("/").rsplit(":", 1)[-1]
        if proxy_available() and port.isdigit():
            return f"{self.base_url}proxy/{port}/", "opens through jupyter-server-proxy; Ray asks for the cluster token"
        return None, "the dashboard listens on this server's loopback only: install jupyter-server-proxy to open it from the browser"

    async def clusters_info(self) -> list[ClusterInfo]:
        """The local cluster (when recorded) and the configured ones, each with a browser link."""
        jobs, errors = await self._jobs()
        running: dict[str, int] = {}
        for cluster, job in jobs.values():
            if job.get("status") == "RUNNING":
                running[cluster] = running.get(cluster, 0) + 1
        out = []
        local = local_cluster_state()
        if local is not None:
            link, note = self._proxy_link(local.dashboard_url)
            err = errors.get("local")
            out.append(
                ClusterInfo(
                    name="local",
                    kind="local",
                    reachable=err is None,
                    dashboard_url=link,
                    dashboard_note=note,
                    jobs_running=running.get("local", 0),
                    detail=err or "",
                    token_hint=(
                        f"Ray's dashboard asks for this cluster's token: it is the \"token\" field of {local_state_path()} "
                        "(mode 0600; `ray get-auth-token` does not know it). Copy token puts it on your clipboard."
                    ),
                    token_copyable=True,
                )
            )
        for entry in self.clusters:
            err = errors.get(entry.name) if entry.api_url else "no job API configured (api_url)"
            out.append(
                ClusterInfo(
                    name=entry.name,
                    kind=entry.kind,
                    reachable=entry.api_url is not None and err is None,
                    dashboard_url=entry.dashboard_url,
                    dashboard_note="opens the configured dashboard link" if entry.dashboard_url else "no dashboard link configured",
                    jobs_running=running.get(entry.name, 0),
                    detail=err or "",
                    token_hint=(
                        f"its Ray token is in {entry.token_file} (HyperpodRL.clusters token_file)"
                        if entry.token_file
                        else "no token_file configured for it (HyperpodRL.clusters)"
                    ),
                    token_copyable=bool(self._token(entry)),
                )
            )
        return out

    def cluster_token(self, name: str) -> str:
        """The Ray token of cluster ``name`` (``local``: ``local-cluster.json``; else its
        ``token_file``), for the sidebar's "Copy token" button. Only the ``POST
        clusters/<name>/token`` route returns it, to the authenticated Jupyter user, who can read
        the same file from a terminal; it is never logged.

        Raises:
            NotFound: no such cluster, or it has no token.
        """
        if name == "local":
            local = local_cluster_state()
            if local is None or not local.token:
                raise NotFound(f"no local cluster is recorded in {local_state_path()}: start one (hyperpod-rl local start)")
            return local.token
        entry = next((e for e in self.clusters if e.name == name), None)
        if entry is None:
            raise NotFound(f"no cluster {name!r}: the clusters are 'local' and those in HyperpodRL.clusters")
        token = self._token(entry)
        if not token:
            raise NotFound(f"cluster {name!r} has no readable token_file (HyperpodRL.clusters)")
        return token

    def status(self, store: str | None = None) -> ServerStatus:
        root = self.root(store)
        runs = root / "runs"
        ledger = ledger_path(self.ledger_override)
        count = sum(1 for p in runs.iterdir() if p.is_dir() and RUN_ID_PATTERN.fullmatch(p.name)) if runs.is_dir() else 0
        notebooks = sorted(p.name for p in self.tutorial_sources[0].glob("*.ipynb")) if self.tutorial_sources else []
        return ServerStatus(
            version=self.version,
            store_root=str(root),
            store_exists=root.is_dir(),
            run_count=count,
            ledger_path=str(ledger),
            ledger_exists=ledger.is_file(),
            proxy=proxy_available(),
            tutorial_notebooks=notebooks,
        )
