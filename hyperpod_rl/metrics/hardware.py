"""Hardware metrics per node: CPU, memory, GPU utilisation and GPU memory.

Three sources, one sample shape (node name -> :data:`NodeSample`):

- **Local cluster**: the dashboard's node summary, ``GET <dashboard>/nodes?view=summary`` with the
  cluster's token (:func:`parse_node_summary`, :class:`RayDashboardSource`): the figures each node's
  dashboard agent reports (``ray/dashboard/modules/reporter/reporter_agent.py``, Ray 2.56), read
  without making the agent collect its metrics. Scraping the agent's Prometheus port instead
  (``ray start --metrics-export-port``; :func:`parse_ray_metrics`, :class:`RayPrometheusSource`)
  can wedge the agent for good in Ray 2.56: a scrape racing the first export of a new metric (a
  job or a Serve app starting) deadlocks its ``OpenTelemetryMetricRecorder``
  (ray-project/ray#64946, fixed in Ray 2.57.0), after which every job submission times out. It
  took a CI run's local cluster down while the notebook panels scraped it every 5 s.
- **HyperPod through Amazon Managed Grafana**: ``POST <grafana>/api/ds/query`` with a
  service-account token and PromQL queries against the workspace's Prometheus data source
  (:func:`grafana_query_body`, :func:`parse_grafana_response`, :class:`GrafanaSource`).
- **HyperPod through Amazon Managed Prometheus**: ``GET <workspace>/api/v1/query`` signed with
  SigV4 for service ``aps`` (botocore's ``SigV4Auth``; :func:`amp_signed_request`,
  :func:`parse_prometheus_vector`, :class:`AMPSource`).

Ray's gauges (``ray/dashboard/modules/reporter/reporter_agent.py``, Ray 2.56):
``ray_node_cpu_utilization`` (percent of the node), ``ray_node_mem_used`` and
``ray_node_mem_total`` (bytes), ``ray_node_gpus_utilization`` (percent, one series per GPU,
label ``GpuIndex``) and ``ray_node_gram_used`` (declared "bytes" but filled with **megabytes**
by the GPU providers, ``gpu_providers.py``: ``memory_used=int(used) // MB``), all labelled with the
node's ``ip``. Secrets (tokens, AWS credentials) are held by the source objects only and never
appear in their ``repr``.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from hyperpod_rl.errors import HyperpodRLError

__all__ = [
    "PROMQL",
    "AMPSource",
    "GrafanaSource",
    "HardwareSource",
    "NodeSample",
    "RayDashboardSource",
    "RayPrometheusSource",
    "amp_signed_request",
    "grafana_query_body",
    "parse_grafana_response",
    "parse_node_summary",
    "parse_prometheus_vector",
    "parse_ray_metrics",
    "source_from_env",
]

#: node name (its IP) -> metric key -> value. Keys: ``cpu_percent`` (0-100 of the node),
#: ``mem_used_bytes``, ``mem_total_bytes``, ``gpu_percent`` (mean over the node's GPUs, 0-100),
#: ``gram_used_bytes`` (sum over the node's GPUs).
NodeSample = dict[str, dict[str, float]]

_MB = 1024 * 1024

#: PromQL per sample key, aggregated per node (label ``ip``); used for Grafana and AMP.
PROMQL: dict[str, str] = {
    "cpu_percent": "max by (ip) (ray_node_cpu_utilization)",
    "mem_used_bytes": "max by (ip) (ray_node_mem_used)",
    "mem_total_bytes": "max by (ip) (ray_node_mem_total)",
    "gpu_percent": "avg by (ip) (ray_node_gpus_utilization)",
    "gram_used_bytes": f"sum by (ip) (ray_node_gram_used) * {_MB}",
}


class HardwareSource(Protocol):
    """Anything that returns the current per-node hardware sample."""

    def sample(self) -> NodeSample:
        """Current values per node (raises :class:`HyperpodRLError` when unreachable)."""
        ...


def parse_ray_metrics(text: str) -> NodeSample:
    """Per-node hardware values from Ray's Prometheus text exposition.

    Args:
        text: body of ``GET http://<node>:<metrics export port>/metrics``.

    Returns:
        :data:`NodeSample`; GPU keys only for nodes that report GPUs. Series of other Ray
        sessions on the same port are not separated (one local cluster per port).
    """
    from prometheus_client.parser import text_string_to_metric_families

    out: NodeSample = {}
    gpu_util: dict[str, list[float]] = {}
    gram: dict[str, float] = {}
    simple = {
        "ray_node_cpu_utilization": "cpu_percent",
        "ray_node_mem_used": "mem_used_bytes",
        "ray_node_mem_total": "mem_total_bytes",
    }
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            node = s.labels.get("ip") or s.labels.get("instance") or "node"
            if s.name in simple:
                out.setdefault(node, {})[simple[s.name]] = float(s.value)
            elif s.name == "ray_node_gpus_utilization":
                gpu_util.setdefault(node, []).append(float(s.value))
            elif s.name == "ray_node_gram_used":
                gram[node] = gram.get(node, 0.0) + float(s.value) * _MB
    for node, values in gpu_util.items():
        out.setdefault(node, {})["gpu_percent"] = sum(values) / len(values)
    for node, used in gram.items():
        out.setdefault(node, {})["gram_used_bytes"] = used
    return out


def parse_node_summary(payload: Mapping[str, Any]) -> NodeSample:
    """Per-node hardware values from the dashboard's ``GET /nodes?view=summary``.

    Args:
        payload: its JSON body, ``{"data": {"summary": [node, ...]}}``; each node has ``ip``,
            ``cpu`` (percent of the node), ``mem`` (``[total, available, percent, used]``, bytes)
            and ``gpus`` (``utilizationGpu`` percent, ``memoryUsed`` **megabytes**), as the
            reporter agent sends them (Ray 2.56, ``reporter_agent.py`` and ``gpu_providers.py``).

    Returns:
        :data:`NodeSample` keyed by node IP, as :func:`parse_ray_metrics`; GPU keys only for nodes
        that report GPUs, and a node that has not reported yet (no ``cpu``) is left out.

    Raises:
        HyperpodRLError: the body is not a node summary (the message says what was found).
    """
    try:
        nodes = payload["data"]["summary"]
        out: NodeSample = {}
        for node in nodes:
            if node.get("cpu") is None or not node.get("mem"):
                continue
            values = out.setdefault(str(node["ip"]), {})
            values["cpu_percent"] = float(node["cpu"])
            values["mem_total_bytes"], values["mem_used_bytes"] = float(node["mem"][0]), float(node["mem"][3])
            gpus = node.get("gpus") or []
            if gpus:
                values["gpu_percent"] = sum(float(g.get("utilizationGpu") or 0.0) for g in gpus) / len(gpus)
                values["gram_used_bytes"] = sum(float(g.get("memoryUsed") or 0.0) for g in gpus) * _MB
        return out
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as err:
        found = (
            f"top-level keys: {', '.join(sorted(map(str, payload))[:5]) or 'none'}"
            if isinstance(payload, Mapping)
            else f"a JSON {type(payload).__name__}"
        )
        raise HyperpodRLError(f"not a Ray node summary ({err.__class__.__name__}: {err}); the body has {found}") from None


def _get_from_cluster(session: Any, url: str, timeout_s: float, what: str) -> Any:
    """``GET url`` on a local Ray cluster (``what``, e.g. ``"Ray metrics"``, names it in errors).

    Raises:
        HyperpodRLError: no answer (is the cluster running?), or a status other than 200.
    """
    import requests

    try:
        resp = session.get(url, timeout=timeout_s)
    except requests.RequestException as err:
        raise HyperpodRLError(f"cannot read {what} at {url}: {err.__class__.__name__}; is the cluster running?") from None
    if resp.status_code != 200:
        raise HyperpodRLError(f"{what} at {url} answered {resp.status_code}")
    return resp


class RayDashboardSource:
    """Sample a Ray cluster's nodes from its dashboard (:func:`parse_node_summary`).

    Args:
        dashboard_url: e.g. ``http://127.0.0.1:8265`` (``LocalCluster.dashboard_url``).
        headers: what authenticates to the dashboard (``LocalCluster.auth_headers()``); kept
            out of the ``repr``.
        timeout_s: HTTP timeout per sample, seconds.
    """

    def __init__(self, dashboard_url: str, *, headers: Mapping[str, str] | None = None, timeout_s: float = 5.0) -> None:
        import requests

        self.url = f"{dashboard_url.rstrip('/')}/nodes?view=summary"
        self.timeout_s = timeout_s
        self._session = requests.Session()
        self._session.headers.update(dict(headers or {}))

    def __repr__(self) -> str:
        return f"RayDashboardSource(url={self.url!r})"

    def sample(self) -> NodeSample:
        """One sample of every node that has reported.

        Raises:
            HyperpodRLError: the dashboard does not answer 200 with a node summary (the URL and
                status are in the message).
        """
        resp = _get_from_cluster(self._session, self.url, self.timeout_s, "the node summary")
        try:
            payload = resp.json()
        except ValueError:
            raise HyperpodRLError(f"the node summary at {self.url} is not JSON") from None
        return parse_node_summary(payload)


class RayPrometheusSource:
    """Scrape Ray's metrics export port(s) of the local cluster. With Ray 2.56, prefer
    :class:`RayDashboardSource`: a scrape can deadlock the dashboard agent (this module's docstring).

    Args:
        ports: metrics export ports on ``host`` (the head's is
            ``LocalCluster.state.metrics_export_port``).
        host: where the nodes run (``127.0.0.1`` locally).
        timeout_s: HTTP timeout per scrape, seconds.
    """

    def __init__(self, ports: Iterable[int], *, host: str = "127.0.0.1", timeout_s: float = 5.0) -> None:
        import requests

        self.urls = [f"http://{host}:{int(p)}/metrics" for p in ports]
        self.timeout_s = timeout_s
        self._session = requests.Session()

    def __repr__(self) -> str:
        return f"RayPrometheusSource(urls={self.urls!r})"

    def sample(self) -> NodeSample:
        """Scrape every port and merge the nodes.

        Raises:
            HyperpodRLError: a port does not answer 200 (the URL and status are in the message).
        """
        out: NodeSample = {}
        for url in self.urls:
            resp = _get_from_cluster(self._session, url, self.timeout_s, "Ray metrics")
            for node, values in parse_ray_metrics(resp.text).items():
                out.setdefault(node, {}).update(values)
        return out


# ----- Amazon Managed Grafana: POST /api/ds/query ------------------------------------------------


def grafana_query_body(
    datasource_uid: str,
    *,
    now_s: float | None = None,
    window_s: float = 300.0,
    step_s: float = 15.0,
) -> dict[str, Any]:
    """Body of Grafana's ``POST /api/ds/query`` asking for every :data:`PROMQL` query.

    Each query's ``refId`` is its sample key, so the answer maps back without guessing.
    Grafana's data source query API: ``{"queries": [{"refId", "datasource": {"uid"}, "expr",
    "intervalMs", "maxDataPoints", ...}], "from": <ms>, "to": <ms>}``.

    Args:
        datasource_uid: uid of the Prometheus (AMP) data source in Grafana.
        now_s: end of the range, Unix seconds (default now).
        window_s: range length, seconds.
        step_s: query resolution, seconds.
    """
    end = time.time() if now_s is None else now_s
    return {
        "queries": [
            {
                "refId": key,
                "datasource": {"type": "prometheus", "uid": datasource_uid},
                "expr": expr,
                "range": True,
                "instant": False,
                "intervalMs": int(step_s * 1000),
                "maxDataPoints": max(int(window_s / step_s), 1),
            }
            for key, expr in PROMQL.items()
        ],
        "from": str(int((end - window_s) * 1000)),
        "to": str(int(end * 1000)),
    }


def parse_grafana_response(body: Mapping[str, Any]) -> NodeSample:
    """Latest value per node and key from a ``/api/ds/query`` answer (data frames).

    Grafana answers ``{"results": {<refId>: {"status", "frames": [{"schema": {"fields": [time
    field, value field with "labels"]}, "data": {"values": [[times ms], [values]]}}], "error"?}}}``.

    Raises:
        HyperpodRLError: a query came back with an error (the refId and message are included).
    """
    out: NodeSample = {}
    for ref_id, result in (body.get("results") or {}).items():
        if result.get("error"):
            raise HyperpodRLError(f"Grafana query {ref_id!r} failed: {result['error']}")
        for frame in result.get("frames") or []:
            fields = frame.get("schema", {}).get("fields", [])
            values = frame.get("data", {}).get("values", [])
            for i, fld in enumerate(fields):
                if fld.get("type") == "time" or i >= len(values) or not values[i]:
                    continue
                labels = fld.get("labels") or {}
                node = labels.get("ip") or labels.get("instance") or "node"
                last = values[i][-1]
                if last is not None:
                    out.setdefault(node, {})[ref_id] = float(last)
    return out


class GrafanaSource:
    """Query Amazon Managed Grafana's ``/api/ds/query`` with a service-account token.

    Args:
        url: workspace URL, ``https://g-xxxx.grafana-workspace.<region>.amazonaws.com``.
        token: service-account token (kept here only; never in ``repr`` or widget state).
        datasource_uid: the Prometheus data source's uid.
        timeout_s: HTTP timeout, seconds.
    """

    def __init__(self, url: str, token: str, datasource_uid: str, *, timeout_s: float = 10.0) -> None:
        self.url = url.rstrip("/")
        self._token = token
        self.datasource_uid = datasource_uid
        self.timeout_s = timeout_s

    def __repr__(self) -> str:
        return f"GrafanaSource(url={self.url!r}, datasource_uid={self.datasource_uid!r})"

    def sample(self) -> NodeSample:
        """POST the queries and parse the frames.

        Raises:
            HyperpodRLError: no connection, a non-200 answer (401: the token is wrong or expired)
                or a failed query.
        """
        import requests

        try:
            resp = requests.post(
                f"{self.url}/api/ds/query",
                json=grafana_query_body(self.datasource_uid),
                headers={"Authorization": f"Bearer {self._token}"},
                timeout=self.timeout_s,
            )
        except requests.RequestException as err:
            raise HyperpodRLError(f"cannot reach Grafana at {self.url}: {err.__class__.__name__}") from None
        if resp.status_code != 200:
            hint = ": the service-account token is wrong or expired" if resp.status_code in (401, 403) else ""
            raise HyperpodRLError(f"Grafana {self.url}/api/ds/query answered {resp.status_code}{hint}")
        return parse_grafana_response(resp.json())


# ----- Amazon Managed Prometheus: SigV4-signed query API -----------------------------------------


def amp_signed_request(
    workspace_url: str,
    query: str,
    *,
    region: str,
    credentials: Any,
    now_s: float | None = None,
) -> tuple[str, dict[str, str]]:
    """A SigV4-signed ``GET <workspace>/api/v1/query`` for one PromQL expression.

    Signing follows AMP's documentation: service name ``aps``, the workspace's region, signed
    with botocore's ``SigV4Auth`` (the same signer the AWS CLI uses).

    Args:
        workspace_url: ``https://aps-workspaces.<region>.amazonaws.com/workspaces/<id>``.
        query: PromQL expression.
        region: AWS region of the workspace.
        credentials: botocore credentials (``boto3.Session().get_credentials()``).
        now_s: evaluation time, Unix seconds (default now).

    Returns:
        ``(url with query string, headers)`` ready for ``requests.get``; the headers carry the
        signature (``Authorization``, ``X-Amz-Date`` and, for temporary credentials,
        ``X-Amz-Security-Token``): keep them out of logs.
    """
    from urllib.parse import urlencode

    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest

    params = {"query": query, "time": f"{time.time() if now_s is None else now_s:.3f}"}
    url = f"{workspace_url.rstrip('/')}/api/v1/query?{urlencode(params)}"
    request = AWSRequest(method="GET", url=url)
    SigV4Auth(credentials, "aps", region).add_auth(request)
    return url, dict(request.headers.items())


def parse_prometheus_vector(body: Mapping[str, Any], key: str, out: NodeSample | None = None) -> NodeSample:
    """Merge one instant-query answer (``resultType: vector``) into a :data:`NodeSample`.

    The Prometheus HTTP API answers ``{"status": "success", "data": {"resultType": "vector",
    "result": [{"metric": {"ip": ...}, "value": [<unix s>, "<value>"]}]}}``.

    Raises:
        HyperpodRLError: ``status`` is not ``success`` (``errorType``/``error`` in the message).
    """
    sample: NodeSample = {} if out is None else out
    if body.get("status") != "success":
        raise HyperpodRLError(f"Prometheus query for {key!r} failed: {body.get('errorType', '')} {body.get('error', '')}".rstrip())
    for item in body.get("data", {}).get("result", []):
        labels = item.get("metric") or {}
        node = labels.get("ip") or labels.get("instance") or "node"
        sample.setdefault(node, {})[key] = float(item["value"][1])
    return sample


class AMPSource:
    """Query Amazon Managed Prometheus with SigV4 (service ``aps``).

    Args:
        workspace_url: ``https://aps-workspaces.<region>.amazonaws.com/workspaces/<id>``.
        region: AWS region.
        session: a ``boto3.Session`` (default: a new one from the environment); its credentials
            are read at every sample, so refreshed credentials are picked up.
        timeout_s: HTTP timeout per query, seconds.
    """

    def __init__(
        self,
        workspace_url: str,
        *,
        region: str,
        session: Any = None,
        timeout_s: float = 10.0,
    ) -> None:
        self.workspace_url = workspace_url.rstrip("/")
        self.region = region
        self._session = session
        self.timeout_s = timeout_s

    def __repr__(self) -> str:
        return f"AMPSource(workspace_url={self.workspace_url!r}, region={self.region!r})"

    def sample(self) -> NodeSample:
        """Run every :data:`PROMQL` query and merge the answers.

        Raises:
            HyperpodRLError: no AWS credentials, no connection, or a non-200 answer.
        """
        import requests

        if self._session is None:
            import boto3

            self._session = boto3.Session()
        creds = self._session.get_credentials()
        if creds is None:
            raise HyperpodRLError(
                "no AWS credentials for Amazon Managed Prometheus: configure a profile or role (aws configure / AWS_PROFILE)"
            )
        frozen = creds.get_frozen_credentials()
        out: NodeSample = {}
        for key, expr in PROMQL.items():
            url, headers = amp_signed_request(self.workspace_url, expr, region=self.region, credentials=frozen)
            try:
                resp = requests.get(url, headers=headers, timeout=self.timeout_s)
            except requests.RequestException as err:
                raise HyperpodRLError(f"cannot reach Amazon Managed Prometheus at {self.workspace_url}: {err.__class__.__name__}") from None
            if resp.status_code != 200:
                raise HyperpodRLError(f"Amazon Managed Prometheus answered {resp.status_code} for {key!r}: {resp.text[:300]}")
            parse_prometheus_vector(resp.json(), key, out)
        return out


def source_from_env(environ: Mapping[str, str] | None = None) -> HardwareSource | None:
    """The HyperPod hardware source that the environment configures, or ``None``.

    - ``HYPERPOD_RL_GRAFANA_URL``, ``HYPERPOD_RL_GRAFANA_TOKEN`` (service-account token) and
      ``HYPERPOD_RL_GRAFANA_DATASOURCE_UID``: :class:`GrafanaSource`;
    - else ``HYPERPOD_RL_AMP_WORKSPACE_URL`` with ``AWS_REGION`` (or ``AWS_DEFAULT_REGION``):
      :class:`AMPSource` with the default AWS credential chain.

    Raises:
        HyperpodRLError: a Grafana URL without its token or data source uid, or an AMP
            workspace without a region (the message names the missing variable).
    """
    import os

    env = os.environ if environ is None else environ
    if env.get("HYPERPOD_RL_GRAFANA_URL"):
        missing = [k for k in ("HYPERPOD_RL_GRAFANA_TOKEN", "HYPERPOD_RL_GRAFANA_DATASOURCE_UID") if not env.get(k)]
        if missing:
            raise HyperpodRLError(
                f"HYPERPOD_RL_GRAFANA_URL is set but {', '.join(missing)} is not: set it (service-account token / Prometheus data source uid)"
            )
        return GrafanaSource(
            env["HYPERPOD_RL_GRAFANA_URL"],
            env["HYPERPOD_RL_GRAFANA_TOKEN"],
            env["HYPERPOD_RL_GRAFANA_DATASOURCE_UID"],
        )
    if env.get("HYPERPOD_RL_AMP_WORKSPACE_URL"):
        region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
        if not region:
            raise HyperpodRLError("HYPERPOD_RL_AMP_WORKSPACE_URL is set but AWS_REGION is not: set it to the workspace's region")
        return AMPSource(env["HYPERPOD_RL_AMP_WORKSPACE_URL"], region=region)
    return None
