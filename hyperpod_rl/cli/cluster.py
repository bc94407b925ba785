"""``hyperpod-rl cluster ...``: RayCluster presets, manifests, lifecycle and dashboard access.

A thin front-end over `hyperpod_rl.cluster`; every command calls the same functions the
notebook API uses. Secrets (tokens, cookies) are never printed.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
import yaml

from hyperpod_rl.base import load_user_data
from hyperpod_rl.cli._common import HprlGroup, fail, output_file, writing
from hyperpod_rl.cluster.crd import DEFAULT_KUBERAY, KUBERAY_VERSIONS
from hyperpod_rl.cluster.probe import PROBE_CHOICES
from hyperpod_rl.cluster.rules import check_manifest
from hyperpod_rl.cluster.spec import ClusterSpec
from hyperpod_rl.errors import ClusterError, ClusterNotReady, ClusterRefused, ClusterTimeout, ConfigError, HyperpodRLError

if TYPE_CHECKING:
    from hyperpod_rl.cluster.kube import ClusterReport

# The Kubernetes, AWS and HTTP clients (hyperpod_rl.cluster.access / kube / probe) are imported
# in the commands that talk to a cluster, so --help and the offline commands start at once.

__all__ = ["app"]

app = typer.Typer(
    cls=HprlGroup, help="Ray clusters on SageMaker HyperPod (KubeRay): presets, manifests, apply, wait, connect.", no_args_is_help=True
)

Name = Annotated[str, typer.Argument(help="RayCluster name")]
Namespace = Annotated[str, typer.Option("--namespace", "-n", help="Kubernetes namespace")]
Preset = Annotated[str, typer.Option(help="preset name (see `presets`)")]
SpecFile = Annotated[Path | None, typer.Option("--spec", help="ClusterSpec fields as YAML/JSON (overrides the preset)")]
FromManifest = Annotated[Path | None, typer.Option("--from-manifest", help="existing RayCluster YAML to import")]
EksCluster = Annotated[str | None, typer.Option(help="EKS cluster name: authenticate with IAM (no kubeconfig)")]
Region = Annotated[str | None, typer.Option(help="AWS region of the EKS cluster")]
Context = Annotated[str | None, typer.Option(help="kubeconfig context")]


def _api_client(eks_cluster: str | None, region: str | None, context: str | None) -> Any:
    """The Kubernetes client for a command (tests replace this function).

    ``--eks-cluster``, else ``--context``, else the HyperPod cluster named by
    ``HYPERPOD_RL_HYPERPOD_CLUSTER`` (IAM credentials only; ``discover --pick`` prints it), else the
    kubeconfig.
    """
    from hyperpod_rl.cluster.access import HYPERPOD_CLUSTER_ENV, eks_api_client, hyperpod_eks_api_client
    from hyperpod_rl.cluster.kube import load_api_client

    if eks_cluster:
        return eks_api_client(eks_cluster, region=region)
    if not context and os.environ.get(HYPERPOD_CLUSTER_ENV):
        return hyperpod_eks_api_client(os.environ[HYPERPOD_CLUSTER_ENV], region=region)
    return load_api_client(context=context)


def _fail(exc: HyperpodRLError) -> typer.Exit:
    """``error: ...``, exit 2 (bad input, an unreachable cluster), as in every other command;
    exit 1 only when a RayCluster was refused or did not become ready (``wait``'s answer, as a
    followed job that did not succeed)."""
    fail(exc, code=1 if isinstance(exc, (ClusterRefused, ClusterTimeout, ClusterNotReady)) else 2)


def _build_spec(preset: str, spec_file: Path | None, from_manifest: Path | None, name: str | None, namespace: str | None) -> ClusterSpec:
    if from_manifest is not None:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", FutureWarning)
            spec = ClusterSpec.from_manifest(_the_raycluster(from_manifest))
        for w in caught:
            typer.secho(f"warning: {w.message}", fg=typer.colors.YELLOW, err=True)
        for finding in spec.check().warnings:
            typer.secho(f"warning: {finding}", fg=typer.colors.YELLOW, err=True)
        if name:
            spec.name = name
        if namespace:
            spec.namespace = namespace
        return spec
    overrides: dict[str, Any] = {}
    if spec_file is not None:
        overrides = _spec_overrides(spec_file)
    if name:
        overrides["name"] = name
    if namespace:
        overrides["namespace"] = namespace
    return ClusterSpec.from_preset(preset, **overrides)


def _the_raycluster(path: Path) -> Any:
    """The one RayCluster document of a YAML file (other kinds, e.g. a Redis Deployment, are skipped)."""
    docs = _documents(path)
    found = [d for d in docs if isinstance(d, dict) and d.get("kind") == "RayCluster"]
    if len(found) != 1:
        raise ConfigError(f"{path} holds {len(found)} RayCluster documents; --from-manifest needs exactly one")
    return found[0]


def _gates(values: list[str]) -> dict[str, bool]:
    gates = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or value.lower() not in ("true", "false"):
            raise ConfigError(f"--feature-gate takes NAME=true|false, got {item!r}")
        gates[key] = value.lower() == "true"
    return gates


@app.command()
def presets() -> None:
    """List the cluster presets with their worker groups."""
    for preset in ClusterSpec.presets():
        spec = ClusterSpec.from_preset(preset)
        groups = ", ".join(f"{g.replicas} x {g.gpus_per_worker} GPU ({g.instance_type or 'any node'})" for g in spec.worker_groups)
        head = f"head {spec.head.cpus:g} CPU, {spec.head.memory_gib:g} GiB ({spec.head.instance_type or 'any node'})"
        typer.echo(f"{preset}: {head}, workers {groups}; {spec.total_gpus} GPUs total")


@app.command()
def render(
    preset: Preset = "seed",
    spec_file: SpecFile = None,
    from_manifest: FromManifest = None,
    name: Annotated[str | None, typer.Option(help="cluster name")] = None,
    namespace: Annotated[str | None, typer.Option("--namespace", "-n")] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="write here instead of stdout")] = None,
) -> None:
    """Print the RayCluster YAML for a preset, a spec file or an imported manifest (validated)."""
    try:
        spec = _build_spec(preset, spec_file, from_manifest, name, namespace)
        manifest = spec.to_manifest()  # checked with the KubeRay rule set
    except HyperpodRLError as exc:
        raise _fail(exc) from None
    text = yaml.safe_dump(manifest, sort_keys=False)
    if output is None:
        typer.echo(text, nl=False)
    else:
        with writing(output_file(output, "--output"), "--output"):
            output.write_text(text)
        typer.echo(f"wrote {output}")


@app.command()
def validate(
    path: Annotated[Path, typer.Argument(help="RayCluster YAML (one or more documents)")],
    strict: Annotated[bool, typer.Option(help="reject fields the CRD does not define")] = True,
    kuberay: Annotated[
        str, typer.Option("--kuberay-version", help=f"KubeRay whose CRD and operator rules apply: {', '.join(KUBERAY_VERSIONS)}")
    ] = DEFAULT_KUBERAY,
    feature_gate: Annotated[
        list[str] | None, typer.Option("--feature-gate", help="operator feature gate NAME=true|false (repeatable)")
    ] = None,
) -> None:
    """Check RayCluster YAML with the rule set of one KubeRay version (CRD schema after CRD defaults
    + the operator's rules); exit 1 listing every broken rule with its id, JSON path and fix.
    Documents of other API groups in the file (a Queue, a ConfigMap...) are skipped."""
    try:
        gates = _gates(feature_gate or [])
        docs = [(i, doc) for i, doc in enumerate(_documents(path)) if _is_ray_io(doc)]
        reports = [(i, doc, check_manifest(doc, kuberay=kuberay, strict=strict, feature_gates=gates)) for i, doc in docs]
    except HyperpodRLError as exc:
        raise _fail(exc) from None
    failed = not reports
    if not reports:
        fail(f"{path}: no ray.io document to validate: give a file with a RayCluster (apiVersion ray.io/v1)")
    for i, doc, report in reports:
        name = (doc.get("metadata") or {}).get("name", "?") if isinstance(doc, dict) else "?"
        rules = f"KubeRay {report.kuberay} rules ({report.tag})"
        for warning in report.warnings:
            typer.secho(f"{path}[{i}] {name}: warning: {warning}", fg=typer.colors.YELLOW, err=True)
        if report.ok:
            typer.echo(f"{path}[{i}] {name}: valid under {rules}")
        else:
            failed = True
            lines = "\n  ".join(str(v) for v in report.errors)
            typer.echo(f"{path}[{i}] {name}: invalid under {rules}, {len(report.errors)} broken:\n  {lines}")
    if failed:
        bad = sum(1 for _, _, report in reports if not report.ok)
        fail(f"{path}: {bad} of {len(reports)} RayCluster document(s) break the rules listed above", code=1)


def _is_ray_io(doc: Any) -> bool:
    """Documents of other API groups (a KAI/Kueue Queue, a ConfigMap...) in the same file are skipped."""
    return not isinstance(doc, dict) or str(doc.get("apiVersion", "")).split("/")[0] in ("ray.io", "")


def _documents(path: Path) -> list[Any]:
    return [d for d in load_user_data(path, "RayCluster YAML file", documents=True) if d is not None]


def _spec_overrides(path: Path) -> dict[str, Any]:
    """The ClusterSpec fields of a ``--spec`` file (YAML or JSON mapping)."""
    data = load_user_data(path, "cluster spec file", fix="give an existing YAML or JSON file of ClusterSpec fields")
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"cluster spec file {str(path)!r} holds a {type(data).__name__}, not a mapping: write ClusterSpec fields as keys")
    return dict(data)


@app.command()
def apply(
    preset: Preset = "seed",
    spec_file: SpecFile = None,
    from_manifest: FromManifest = None,
    name: Annotated[str | None, typer.Option(help="cluster name")] = None,
    namespace: Annotated[str | None, typer.Option("--namespace", "-n")] = None,
    eks_cluster: EksCluster = None,
    region: Region = None,
    context: Context = None,
) -> None:
    """Create or update a RayCluster (server-side apply)."""
    try:
        spec = _build_spec(preset, spec_file, from_manifest, name, namespace)
        from hyperpod_rl.cluster.access import HYPERPOD_CLUSTER_ENV
        from hyperpod_rl.cluster.kube import RayClusterClient

        hyperpod = os.environ.get(HYPERPOD_CLUSTER_ENV)
        if spec.hyperpod_cluster is None and hyperpod and not (eks_cluster or context):
            spec.hyperpod_cluster = hyperpod  # the label AWS's Ray sidebar lists clusters by
        RayClusterClient(_api_client(eks_cluster, region, context)).apply(spec)
    except HyperpodRLError as exc:
        raise _fail(exc) from None
    typer.echo(f"applied RayCluster {spec.namespace}/{spec.name}; next: hyperpod-rl cluster wait {spec.name} -n {spec.namespace}")


@app.command()
def status(
    name: Name,
    namespace: Namespace = "default",
    as_json: Annotated[bool, typer.Option("--json")] = False,
    eks_cluster: EksCluster = None,
    region: Region = None,
    context: Context = None,
) -> None:
    """Show conditions-based status, pods that are not ready and warning events."""
    from hyperpod_rl.cluster.kube import RayClusterClient

    try:
        report = RayClusterClient(_api_client(eks_cluster, region, context)).report(name, namespace)
    except HyperpodRLError as exc:
        raise _fail(exc) from None
    typer.echo(json.dumps(_report_json(report), indent=2) if as_json else report.summary())


def _report_json(report: ClusterReport) -> dict[str, Any]:
    return {
        "name": report.name,
        "namespace": report.namespace,
        "status": report.status.value,
        "message": report.reading.message,
        "ready_workers": report.reading.ready_workers,
        "desired_workers": report.reading.desired_workers,
        "pods": [vars(p) for p in report.pods],
        "events": [vars(e) for e in report.events],
    }


@app.command()
def wait(
    name: Name,
    namespace: Namespace = "default",
    timeout_s: Annotated[float, typer.Option(help="seconds before giving up")] = 900,
    poll_interval_s: Annotated[float, typer.Option(help="seconds between polls")] = 5,
    via: Annotated[
        str, typer.Option(help=f"dashboard probe: {', '.join(PROBE_CHOICES)} (endpoint = HyperPod Ray endpoint operator)")
    ] = "endpoint",
    address: Annotated[str | None, typer.Option(help="dashboard address for --via address (e.g. a port-forward)")] = None,
    eks_cluster: EksCluster = None,
    region: Region = None,
    context: Context = None,
) -> None:
    """Wait until HeadPodReady + RayClusterProvisioned and the dashboard answers /api/version."""
    from hyperpod_rl.cluster.kube import RayClusterClient
    from hyperpod_rl.cluster.probe import dashboard_probe

    try:
        api = _api_client(eks_cluster, region, context)
        probe = dashboard_probe(via, api, name, namespace, address=address)
        report = RayClusterClient(api).wait_ready(
            name,
            namespace,
            timeout_s=timeout_s,
            poll_interval_s=poll_interval_s,
            dashboard=probe,
            on_report=lambda r: typer.echo(f"{r.status.value}: {r.reading.message}", err=True),
        )
    except HyperpodRLError as exc:
        raise _fail(exc) from None
    typer.echo(f"ready: {report.summary()}")


@app.command()
def delete(
    name: Name,
    namespace: Namespace = "default",
    yes: Annotated[bool, typer.Option("--yes", "-y", help="do not ask")] = False,
    eks_cluster: EksCluster = None,
    region: Region = None,
    context: Context = None,
) -> None:
    """Delete a RayCluster and its pods."""
    if not yes:
        typer.confirm(f"delete RayCluster {namespace}/{name} and all its pods?", abort=True)
    from hyperpod_rl.cluster.kube import RayClusterClient

    try:
        existed = RayClusterClient(_api_client(eks_cluster, region, context)).delete(name, namespace)
    except HyperpodRLError as exc:
        raise _fail(exc) from None
    typer.echo(f"deleted RayCluster {namespace}/{name}" if existed else f"RayCluster {namespace}/{name} did not exist")


@app.command()
def connect(
    name: Annotated[str, typer.Argument(help="RayCluster name, or its address sagemaker_ray://<raycluster>/<namespace>")],
    namespace: Namespace = "default",
    eks_cluster: EksCluster = None,
    region: Region = None,
    context: Context = None,
) -> None:
    """Open an authenticated dashboard session through the HyperPod Ray Endpoint Operator.

    Prints the dashboard address and the Ray version it runs; never the token or cookie.
    """
    from hyperpod_rl.cluster.access import HyperPodDashboard

    try:
        if name.startswith("sagemaker_ray://"):
            from hyperpod_rl.cluster.access import parse_address

            parsed = parse_address(name)
            name, namespace = parsed.raycluster, parsed.namespace
        access = HyperPodDashboard(name, namespace, api_client=_api_client(eks_cluster, region, context))
        version = access.call(lambda c: c.get_version())
    except HyperpodRLError as exc:
        raise _fail(exc) from None
    typer.echo(
        f"connected to {access.address} (dashboard API version {version}); use "
        f"hyperpod_rl.cluster.access.HyperPodDashboard({name!r}, {namespace!r}, ...) to submit jobs"
    )


@app.command()
def discover(
    region: Region = None,
    cluster: Annotated[str | None, typer.Option("--cluster", help="HyperPod cluster: list its namespaces")] = None,
    namespace: Annotated[str | None, typer.Option("--namespace", "-n", help="namespace: list its RayClusters")] = None,
    pick: Annotated[
        bool, typer.Option("--pick", "-i", help="choose HyperPod cluster -> namespace -> RayCluster from numbered lists")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """HyperPod clusters (SageMaker API), then namespaces and RayClusters, as choices; no kubeconfig needed.

    Slurm clusters and clusters that are not InService are listed with the reason and not offered.
    Ends with the cluster address (sagemaker_ray://<raycluster>/<namespace>) to pass to --address.
    """
    from hyperpod_rl.aws.discovery import hyperpod_api_client, list_hyperpod_clusters, list_namespaces, list_rayclusters

    out: dict[str, Any] = {}
    try:
        clusters = list_hyperpod_clusters(region=region)
        out["hyperpod_clusters"] = [{**c.model_dump(), "offered": c.offered} for c in clusters]
        offered = [c for c in clusters if c.offered]
        if not as_json:
            for c in clusters:
                mark = f"{offered.index(c) + 1:>2}." if c in offered else " -"
                typer.echo(f"{mark} {c.name} ({c.status}, {c.orchestrator}{', EKS ' + c.eks_cluster_name if c.eks_cluster_name else ''})")
                if c.reason:
                    typer.echo(f"     not offered: {c.reason}")
        chosen = next((c for c in clusters if c.name == cluster), None) if cluster else None
        if cluster and chosen is None:
            raise ClusterError(f"no HyperPod cluster {cluster!r} here; choose one of: {', '.join(c.name for c in offered) or 'none'}")
        if chosen is None and pick and offered:
            chosen = offered[_choose("HyperPod cluster", len(offered)) - 1]
        if chosen is None:
            _echo_json(out, as_json)
            return
        out["hyperpod_cluster"] = chosen.name  # export HYPERPOD_RL_HYPERPOD_CLUSTER=<this> for sagemaker_ray:// addresses
        api = hyperpod_api_client(chosen)
        names, note = list_namespaces(api)
        out["namespaces"] = names
        if not as_json:
            typer.echo(f"namespaces of {chosen.name}:" + (f" ({note})" if note else ""))
            for i, n in enumerate(names, 1):
                typer.echo(f"{i:>2}. {n}")
        if namespace is None and pick and names:
            namespace = names[_choose("namespace", len(names)) - 1]
        if namespace is None:
            _echo_json(out, as_json)
            return
        rays = list_rayclusters(api, namespace)
        out["rayclusters"] = [{**r.model_dump(), "address": r.address} for r in rays]
        if not as_json:
            typer.echo(f"RayClusters in {namespace}:" + ("" if rays else " none (hyperpod-rl cluster apply creates one)"))
            for i, r in enumerate(rays, 1):
                who = f", created by {r.created_by}" if r.created_by else ""
                typer.echo(f"{i:>2}. {r.name} ({'ready' if r.ready else 'not ready'}{who})  {r.address}")
        if pick and rays and not as_json:
            choice = rays[_choose("RayCluster", len(rays)) - 1]
            typer.echo(
                f"address: {choice.address}\n"
                f"next (no kubeconfig needed): export HYPERPOD_RL_HYPERPOD_CLUSTER={chosen.name}; "
                f"hyperpod-rl job list --address {choice.address}"
            )
        _echo_json(out, as_json)
    except HyperpodRLError as exc:
        raise _fail(exc) from None


def _choose(what: str, count: int) -> int:
    choice = int(typer.prompt(f"{what} [1-{count}]", type=int, default=1))
    if not 1 <= choice <= count:
        raise typer.BadParameter(f"choose a {what} between 1 and {count}")
    return choice


def _echo_json(out: dict[str, Any], as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps(out, indent=1))
