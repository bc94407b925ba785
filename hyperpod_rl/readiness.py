"""``hyperpod-rl doctor`` / ``hyperpod_rl.doctor()``: is this notebook ready, and if not, what to do.

One line per check, ``ok`` / ``warn`` / ``fail`` / ``skip``, each with its fix:

- Python; JupyterLab (the server's version); widget frontends registered in the *server's*
  JupyterLab (ipywidgets' manager, anywidget for live charts, plotly's renderer, this project's
  extension); SageMaker Studio space;
- Ray client vs cluster (and Python vs cluster image) when a cluster address is given;
- AWS identity and region; HyperPod clusters visible; EKS access entry, ``ray.io`` RBAC and the Ray
  endpoint operator for one cluster; the observability add-on's Grafana;
- run storage writable (shared storage such as FSx when HyperPod runs read it); the local cluster.

AWS checks run only where AWS is configured (Studio, credentials in the environment or a profile,
or a cluster named); elsewhere they are ``skip``, so a laptop or CI gets a clean report without
any network call to AWS. ``hyperpod_rl.doctor()`` returns a :class:`DoctorReport` that renders as
an HTML table in a notebook; ``hyperpod-rl doctor --json`` prints it for scripts.
"""

from __future__ import annotations

import html
import json
import os
import sys
import uuid
from pathlib import Path
from typing import Any

from hyperpod_rl.checks import Check, worst

__all__ = ["FRONTENDS", "DoctorReport", "doctor"]

#: JupyterLab frontends this project's panels use: name -> (status when missing, why, fix).
FRONTENDS: dict[str, tuple[str, str]] = {
    "@jupyter-widgets/jupyterlab-manager": ("fail", "ipywidgets panels do not render"),
    "anywidget": ("warn", "live charts are off (MetricsPanel falls back to static charts)"),
    "jupyterlab-plotly": ("warn", "static plotly charts need plotly.js sent by the kernel (slower first draw)"),
}
_SERVER_FIX = (
    "install it into the Jupyter server's environment (Studio: run container/studio/on-start.sh, or "
    "/opt/conda/bin/pip install anywidget jupyterlab_widgets plotly), then restart-jupyter-server (docs/studio.md)"
)
_COLOURS = {"ok": "#2ca02c", "warn": "#b8860b", "fail": "#d62728", "skip": "#888"}


class DoctorReport:
    """The checks of one ``doctor()`` run.

    Attributes:
        checks: one :class:`~hyperpod_rl.checks.Check` per line, in the order run.
    """

    def __init__(self, checks: list[Check]) -> None:
        self.checks = checks

    @property
    def status(self) -> str:
        """The worst status (``fail`` > ``warn`` > ``ok`` > ``skip``)."""
        return worst(self.checks)

    @property
    def ok(self) -> bool:
        """True when no check failed."""
        return self.status != "fail"

    def __getitem__(self, name: str) -> Check:
        """The check called ``name``.

        Raises:
            KeyError: no such check.
        """
        for check in self.checks:
            if check.name == name:
                return check
        raise KeyError(name)

    def __str__(self) -> str:
        return "\n".join(c.line() for c in self.checks)

    def __repr__(self) -> str:
        return f"DoctorReport(status={self.status!r}, checks={len(self.checks)})"

    def to_json(self) -> str:
        """``{"status": ..., "checks": [{"name", "status", "detail", "fix"}, ...]}`` as JSON text."""
        return json.dumps({"status": self.status, "checks": [c.model_dump() for c in self.checks]}, indent=1)

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td style='color:{_COLOURS[c.status]};font-weight:bold'>{c.status}</td><td>{html.escape(c.name)}</td>"
            f"<td style='text-align:left'>{html.escape(c.detail)}</td><td style='text-align:left'>{html.escape(c.fix)}</td></tr>"
            for c in self.checks
        )
        return (
            f"<div class='hprl-doctor'><b>hyperpod-rl doctor: {html.escape(self.status)}</b><table>"
            "<tr><th></th><th>check</th><th>found</th><th>fix</th></tr>"
            f"{rows}</table></div>"
        )


# ----- checks --------------------------------------------------------------------------------------
def _python() -> Check:
    v = sys.version_info
    if v >= (3, 12):
        return Check(name="Python", status="ok", detail=f"{v.major}.{v.minor}.{v.micro} ({sys.executable})")
    return Check(
        name="Python", status="fail", detail=f"{v.major}.{v.minor}", fix="use Python 3.12 (the hyperpod-rl kernel of docs/studio.md)"
    )


def _jupyter(server: Any) -> list[Check]:
    from hyperpod_rl.jupyter import server_frontends

    if server is None:
        return [
            Check(
                name="JupyterLab",
                status="skip",
                detail="not running under a Jupyter server",
                fix="to check the server's widget frontends, run hp.doctor() in a notebook (or this command in a JupyterLab terminal)",
            )
        ]
    fronts = server_frontends(server)
    if fronts is None:
        return [
            Check(
                name="JupyterLab",
                status="warn",
                detail=f"server at base URL {server.base_url} found, but its page could not be read",
                fix="run doctor from a notebook cell of that server",
            )
        ]
    version = fronts.jupyterlab_version
    major_minor = tuple(int(x) for x in version.split(".")[:2] if x.isdigit())
    checks = [
        Check(name="JupyterLab", status="ok", detail=f"{version} at {server.base_url}")
        if major_minor >= (4, 5)
        else Check(
            name="JupyterLab", status="warn", detail=f"{version or 'unknown'}", fix="use JupyterLab >= 4.5 (SageMaker Distribution >= 4.0)"
        )
    ]
    missing = [n for n in FRONTENDS if not fronts.enabled(n)]
    if not missing:
        checks.append(Check(name="Widget frontends", status="ok", detail="ipywidgets, anywidget and plotly are registered in the server"))
    else:
        status = "fail" if any(FRONTENDS[n][0] == "fail" for n in missing) else "warn"
        what = "; ".join(f"{n} missing: {FRONTENDS[n][1]}" for n in missing)
        checks.append(Check(name="Widget frontends", status=status, detail=what, fix=_SERVER_FIX))
    ext = next((n for n in fronts.extensions if "hyperpod-rl" in n), None)
    checks.append(
        Check(name="hyperpod-rl JupyterLab extension", status="ok", detail=f"{ext} enabled")
        if ext and fronts.enabled(ext)
        else Check(
            name="hyperpod-rl JupyterLab extension",
            status="skip",
            detail="not installed (optional: Runs sidebar)",
            fix="pass HPRL_LABEXTENSION to container/studio/on-start.sh",
        )
    )
    return checks


def _studio() -> Check:
    from hyperpod_rl.jupyter import studio_space

    space = studio_space()
    if space is None:
        return Check(name="SageMaker Studio", status="skip", detail="not a Studio space (no resource-metadata.json)")
    return Check(
        name="SageMaker Studio",
        status="ok",
        detail=f"domain {space.domain_id}, space {space.space_name or '?'}, app {space.app_name or '?'}",
    )


def _ray(address: str | None, cluster: str | None = None, region: str | None = None) -> list[Check]:
    import ray

    from hyperpod_rl.cluster.local import current_local_cluster
    from hyperpod_rl.cluster.versions import checked_job_client
    from hyperpod_rl.errors import HyperpodRLError

    if address is None:
        local = current_local_cluster()
        if local is None or not local.is_alive(timeout_s=2.0):
            return [
                Check(
                    name="Ray client vs cluster",
                    status="skip",
                    detail=f"notebook Ray {ray.__version__}; no cluster given",
                    fix="pass --address sagemaker_ray://<raycluster>/<namespace> (hyperpod-rl cluster discover) to compare versions",
                )
            ]
        address = "local"
    from hyperpod_rl.cluster.access import cluster_access

    try:  # a sagemaker_ray:// address reaches EKS through the HyperPod cluster given with --cluster
        _client, checks = checked_job_client(cluster_access(address, hyperpod_cluster=cluster, region=region))
    except (HyperpodRLError, ConnectionError, RuntimeError) as err:
        text = str(err)
        return [
            Check(
                name="Ray client vs cluster",
                status="fail",
                detail=text if address in text else f"cannot reach {address}: {text}",
                fix="pass --cluster <HyperPod cluster> with a sagemaker_ray:// address, and check the address (hyperpod-rl cluster discover)"
                if address.startswith("sagemaker_ray://") and not cluster
                else "check the address and the access (hyperpod-rl cluster discover, then Check access)",
            )
        ]
    return checks


def _aws_configured(cluster: str | None) -> bool:
    from hyperpod_rl.jupyter import studio_space

    env = (
        "AWS_ACCESS_KEY_ID",
        "AWS_PROFILE",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
    )
    files = [
        Path(os.environ.get("AWS_SHARED_CREDENTIALS_FILE") or "~/.aws/credentials"),
        Path(os.environ.get("AWS_CONFIG_FILE") or "~/.aws/config"),
    ]
    return (
        bool(cluster) or studio_space() is not None or any(os.environ.get(v) for v in env) or any(f.expanduser().is_file() for f in files)
    )


def _aws(cluster: str | None, namespace: str, region: str | None, session: Any) -> list[Check]:
    from hyperpod_rl.aws.access import caller_principal, check_access
    from hyperpod_rl.aws.discovery import list_hyperpod_clusters
    from hyperpod_rl.aws.observability import observability_endpoints
    from hyperpod_rl.errors import HyperpodRLError
    from hyperpod_rl.jupyter import studio_space

    names = ("AWS identity", "HyperPod clusters", "EKS access entry", "Ray RBAC (ray.io)", "Ray endpoint operator", "Observability add-on")
    import boto3

    session = session or boto3.Session(region_name=region or os.environ.get("AWS_REGION") or None)
    region = region or session.region_name
    if not region:
        return [
            Check(name="AWS identity", status="fail", detail="no AWS region", fix="set AWS_REGION (Studio sets it from the domain)")
        ] + [Check(name=n, status="skip", detail="no AWS region") for n in names[1:]]
    space = studio_space()
    role = space.execution_role_arn if space else ""
    try:
        principal = caller_principal(session=session, region=region, execution_role_arn=role)
    except HyperpodRLError as err:
        return [Check(name="AWS identity", status="fail", detail=str(err), fix="configure AWS credentials")] + [
            Check(name=n, status="skip", detail="no AWS identity") for n in names[1:]
        ]
    checks = [Check(name="AWS identity", status="ok", detail=f"{principal.caller_arn} in {region}")]
    try:
        clusters = list_hyperpod_clusters(session=session, region=region)
    except HyperpodRLError as err:
        return checks + [Check(name="HyperPod clusters", status="fail", detail=str(err), fix="the role needs sagemaker:ListClusters")]
    offered = [c for c in clusters if c.offered]
    others = "; ".join(f"{c.name}: {c.reason}" for c in clusters if not c.offered)
    checks.append(
        Check(
            name="HyperPod clusters",
            status="ok" if offered else "warn",
            detail=f"{len(offered)} usable ({', '.join(c.name for c in offered) or 'none'})"
            + (f"; not offered: {others}" if others else ""),
            fix="" if offered else "create an EKS-orchestrated HyperPod cluster, or wait until one is InService",
        )
    )
    chosen = next((c for c in clusters if c.name == cluster), None) if cluster else (offered[0] if len(offered) == 1 else None)
    if chosen is None or not chosen.offered:
        why = f"HyperPod cluster {cluster!r} is not usable" if cluster else "several or no usable clusters: pass --cluster"
        return checks + [Check(name=n, status="skip", detail=why) for n in names[2:]]
    checks += check_access(chosen.eks_cluster_name, namespace, region=chosen.eks_region, session=session, principal=principal)[1:]
    try:
        obs = observability_endpoints(chosen.eks_cluster_name, session=session, region=chosen.eks_region)
    except HyperpodRLError as err:
        checks.append(
            Check(
                name="Observability add-on",
                status="warn",
                detail=str(err),
                fix="nothing needed for training; for the Grafana link and HyperPod hardware charts the role needs eks:DescribeAddon",
            )
        )
        return checks
    if obs is None:
        checks.append(
            Check(
                name="Observability add-on",
                status="skip",
                detail=f"not installed on {chosen.eks_cluster_name} (hardware charts use Ray's own metrics)",
            )
        )
    else:
        checks.append(
            Check(
                name="Observability add-on",
                status="ok",
                detail=f"{obs.status}; Grafana {obs.grafana_url or '?'}; AMP {obs.amp_workspace_url or '?'}",
            )
        )
    return checks


def _filesystem_type(path: Path) -> str:
    """The mount's file system type (``/proc/mounts``, longest matching mount point), ``""`` when unknown."""
    try:
        mounts = [line.split()[1:3] for line in Path("/proc/mounts").read_text().splitlines() if len(line.split()) > 2]
    except OSError:
        return ""
    real = str(path.resolve())
    best = max((m for m in mounts if real == m[0] or real.startswith(m[0].rstrip("/") + "/")), key=lambda m: len(m[0]), default=None)
    return best[1] if best else ""


def _storage(hyperpod: bool) -> Check:
    from hyperpod_rl.paths import storage_root

    try:
        root = storage_root()
        probe = root / f".doctor-{uuid.uuid4().hex}"
        probe.write_text("ok")
        probe.unlink()
    except OSError as err:
        return Check(
            name="Run storage", status="fail", detail=f"not writable: {err}", fix="set HYPERPOD_RL_STORAGE to a writable directory"
        )
    fs = _filesystem_type(root)
    shared = fs in ("lustre", "nfs", "nfs4", "efs")
    if hyperpod and not shared:
        return Check(
            name="Run storage",
            status="warn",
            detail=f"{root} is writable but on {fs or 'a local disk'}: HyperPod jobs cannot read it",
            fix="set HYPERPOD_RL_STORAGE to a directory on the FSx for Lustre mount the cluster also mounts (e.g. /fsx/hyperpod-rl)",
        )
    return Check(name="Run storage", status="ok", detail=f"{root} writable ({fs or 'local'})")


def _local_cluster() -> Check:
    from hyperpod_rl.cluster.local import current_local_cluster

    cluster = current_local_cluster()
    if cluster is None:
        return Check(name="Local cluster", status="skip", detail="none recorded", fix="hyperpod-rl local start (only for local runs)")
    if cluster.is_alive(timeout_s=2.0):
        from hyperpod_rl.jupyter import browser_link

        return Check(name="Local cluster", status="ok", detail=f"up, dashboard {browser_link(cluster.dashboard_url, 'dashboard').href}")
    return Check(
        name="Local cluster", status="warn", detail="recorded but not answering (stale)", fix="hyperpod-rl local start (restarts it)"
    )


def doctor(
    *,
    cluster: str | None = None,
    namespace: str = "default",
    address: str | None = None,
    region: str | None = None,
    aws: bool | None = None,
    session: Any = None,
) -> DoctorReport:
    """Run every readiness check; one line each with the fix.

    Example:
        >>> import hyperpod_rl as hp
        >>> hp.doctor(cluster="ml-cluster", namespace="hyperpod-ns-team-a")  # doctest: +SKIP

    Args:
        cluster: HyperPod cluster to check access to (default: the only usable one).
        namespace: Kubernetes namespace of your RayClusters.
        address: a cluster address to compare Ray versions with (``sagemaker_ray://...``, ``local``).
        region: AWS region (default: the environment's).
        aws: run the AWS checks (default: only where AWS is configured).
        session: a ``boto3.Session``.

    Returns:
        The :class:`DoctorReport` (an HTML table in a notebook).
    """
    from hyperpod_rl.jupyter import current_server

    checks = [_python(), *_jupyter(current_server()), _studio(), *_ray(address, cluster, region)]
    if aws if aws is not None else _aws_configured(cluster):
        checks += _aws(cluster, namespace, region, session)
    else:
        checks.append(
            Check(
                name="AWS identity",
                status="skip",
                detail="no AWS configuration here (only needed for HyperPod)",
                fix="for HyperPod: configure AWS credentials (aws sso login, AWS_PROFILE) and AWS_REGION, or pass --cluster",
            )
        )
    hyperpod = (
        bool(cluster)
        or (address or "").startswith("sagemaker_ray://")
        or any(c.name == "EKS access entry" and c.status != "skip" for c in checks)
    )  # a HyperPod cluster is in play: its jobs must read the run directory
    checks += [_storage(hyperpod=hyperpod), _local_cluster()]
    return DoctorReport(checks)
