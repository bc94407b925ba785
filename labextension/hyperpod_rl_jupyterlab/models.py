"""Wire models: what the server extension's routes return, one dataclass per JSON shape.

Each dataclass's fields are mirrored, name for name, by a TypeScript interface in
``src/models.ts`` (the test ``tests/test_models_match_ts.py`` diffs them), so the sidebar and the
server cannot drift apart. Times are Unix seconds, sizes bytes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

__all__ = [
    "RUN_STATUSES",
    "AdapterInfo",
    "ClusterInfo",
    "KernelInfo",
    "KernelsResponse",
    "LogsResponse",
    "RunStatus",
    "RunSummary",
    "RunsResponse",
    "ServerStatus",
    "StopResponse",
    "TutorialResponse",
]

RunStatus = Literal["created", "pending", "running", "succeeded", "failed", "stopped", "unknown"]
#: Every status a run can show (see ``status.derive_status`` for the rule).
RUN_STATUSES: tuple[str, ...] = ("created", "pending", "running", "succeeded", "failed", "stopped", "lost", "unknown")


class _Wire:
    def to_json(self) -> dict[str, Any]:
        """The JSON object sent to the browser (plain dicts, lists, strings and numbers)."""
        return asdict(self)  # type: ignore[call-overload]


@dataclass(frozen=True)
class RunSummary(_Wire):
    """One run as the sidebar lists it.

    Attributes:
        run_id: the run id (``<storage root>/runs/<run_id>``).
        status: created (never submitted) / pending / running / succeeded / failed / stopped / unknown.
        status_detail: why that status (which source decided it), one sentence.
        step: last step with metrics (0 before the first).
        total_steps: planned steps (0 when unknown).
        last_reward: ``reward/avg_raw_reward`` of the last step, or ``None``.
        rewards: the reward of the most recent steps (at most 60), oldest first, for the sparkline.
        base_model_id: base model id from the manifest (or the config's model path).
        base_model_revision: base model revision (hub commit or content hash), or ``None``.
        backend: ``reference`` or ``skyrl``.
        cluster: name of the cluster whose job API knows the run's latest submission, or ``None``.
        submission_id: latest Ray submission id (``hprl-<run_id>-<n>``), or ``None``.
        ray_status: Ray's job status of that submission (``PENDING``...), or ``None`` when no
            reachable cluster knows it.
        created_at: when the run started (Unix s).
        updated_at: last change seen (Unix s).
        run_dir: the run directory on this server's file system, or ``None`` (ledger only).
        has_adapter: the run exported an adapter.
        in_ledger: the run ledger has a row for it.
    """

    run_id: str
    status: str
    status_detail: str
    step: int
    total_steps: int
    last_reward: float | None
    rewards: list[float]
    base_model_id: str | None
    base_model_revision: str | None
    backend: str | None
    cluster: str | None
    submission_id: str | None
    ray_status: str | None
    created_at: float
    updated_at: float
    run_dir: str | None
    has_adapter: bool
    in_ledger: bool


@dataclass(frozen=True)
class AdapterInfo(_Wire):
    """A trained adapter and its promotion decision.

    Attributes:
        run_id: the run that trained it.
        path: the adapter directory.
        sha256: sha256 of ``adapter_model.safetensors`` (from ``provenance.json``), or ``None``.
        steps: training steps behind it.
        base_model_id: base model it was trained on.
        base_model_revision: that base model's revision.
        promoted: the promotion decision (``promotion.json``), or ``None`` when never gated.
        promotion_reason: the decision's one-sentence reason.
        decided_at: when it was decided (ISO 8601 UTC), or ``None``.
        evals: evaluation label -> metric -> value (``eval/*.json``).
        compared: the held-out comparison's verdict (``eval/comparison.json`` ``promote``, what
            ``hyperpod-rl eval compare`` prints as "promote" / "do not promote"), or ``None``
            when there is none. Shown when no promotion decision was recorded.
        comparison_reason: that comparison's one-sentence reason, or ``None``.
    """

    run_id: str
    path: str
    sha256: str | None
    steps: int | None
    base_model_id: str | None
    base_model_revision: str | None
    promoted: bool | None
    promotion_reason: str | None
    decided_at: str | None
    evals: dict[str, dict[str, float]] = field(default_factory=dict)
    compared: bool | None = None
    comparison_reason: str | None = None


@dataclass(frozen=True)
class ClusterInfo(_Wire):
    """A Ray cluster the project knows.

    Attributes:
        name: ``local`` or the configured name.
        kind: ``local`` or ``hyperpod``.
        reachable: its job API answered with the token within the timeout.
        dashboard_url: a link the browser can open: ``<base_url>proxy/<port>/`` for a local port
            when jupyter-server-proxy is installed, else the configured URL; ``None`` when the
            dashboard is only on this server's loopback and no proxy is installed.
        dashboard_note: what the link needs (e.g. the cluster's token), one sentence.
        jobs_running: hyperpod-rl jobs running on it now (0 when unreachable).
        detail: why it is unreachable, or an empty string.
        token_hint: where the token the dashboard asks for is, one sentence (never the token).
        token_copyable: ``POST clusters/<name>/token`` hands the token to this (authenticated)
            user for the sidebar's "Copy token" button.
    """

    name: str
    kind: str
    reachable: bool
    dashboard_url: str | None
    dashboard_note: str
    jobs_running: int
    detail: str
    token_hint: str = ""
    token_copyable: bool = False


@dataclass(frozen=True)
class RunsResponse(_Wire):
    """``GET runs``: every run, newest first, and the count running."""

    runs: list[RunSummary]
    running: int
    store_root: str
    generated_at: float


@dataclass(frozen=True)
class LogsResponse(_Wire):
    """``GET runs/<id>/logs``: the tail of the latest submission's job log (secrets redacted)."""

    run_id: str
    submission_id: str | None
    lines: list[str]
    truncated: bool
    source: str


@dataclass(frozen=True)
class StopResponse(_Wire):
    """``POST runs/<id>/stop``: Ray's answer to the stop request."""

    run_id: str
    submission_id: str
    stopped: bool
    ray_status: str | None
    message: str


@dataclass(frozen=True)
class TutorialResponse(_Wire):
    """``POST tutorial``: the notebooks copied (paths relative to the server root) and the one to open."""

    folder: str
    copied: list[str]
    existing: list[str]
    first: str


@dataclass(frozen=True)
class ServerStatus(_Wire):
    """``GET status``: what the server extension sees (for the sidebar's banners).

    Attributes:
        version: this package's version.
        store_root: the storage root in use.
        store_exists: it exists on this server.
        run_count: run directories under it.
        ledger_path: the ledger file in use.
        ledger_exists: it exists.
        proxy: jupyter-server-proxy is installed (local dashboards open through it).
        tutorial_notebooks: tutorial notebooks shipped in this package.
    """

    version: str
    store_root: str
    store_exists: bool
    run_count: int
    ledger_path: str
    ledger_exists: bool
    proxy: bool
    tutorial_notebooks: list[str]


@dataclass(frozen=True)
class KernelInfo(_Wire):
    """A registered Jupyter kernel and whether it can import ``hyperpod_rl``.

    Attributes:
        name: the kernelspec name (``hyperpod-rl``, ``python3``, ...).
        display_name: its display name.
        python: its interpreter (absolute path), or ``None`` for a non-Python kernel.
        has_hyperpod_rl: that interpreter finds ``hyperpod_rl`` (``importlib.util.find_spec``).
        detail: why, one sentence.
    """

    name: str
    display_name: str
    python: str | None
    has_hyperpod_rl: bool
    detail: str


@dataclass(frozen=True)
class KernelsResponse(_Wire):
    """``GET kernels``: every kernel and the one hyperpod-rl code runs in (``None``: none can, see ``message``)."""

    kernels: list[KernelInfo]
    chosen: str | None
    message: str
