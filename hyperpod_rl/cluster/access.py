"""Authenticated access to a RayCluster's dashboard and job API on SageMaker HyperPod.

Two routes, one interface (``job_client()``, ``call(fn)``, ``probe()``):

* `HyperPodDashboard`, the HyperPod Ray Endpoint Operator flow:
  EKS bearer token -> ``POST .../raydashboardconnections`` with ``spec.clusterName`` ->
  ``status.connectionUrl`` (``https://<host>/...?token=<JWT>``) -> ``GET https://<host>/bearer-auth?token=<JWT>``
  sets the ``ray_session`` cookie -> ``JobSubmissionClient(address, cookies=...)``. A 401 re-acquires
  the cookie once. A 403 on the connection means only the cluster's creator may connect.
* `PortForwardDashboard`, the fallback: ``kubectl port-forward`` of ``<name>-head-svc`` and Ray
  token auth (``Authorization: Bearer <token>``, token from the Secret KubeRay creates).

Cluster addresses (`parse_address`, `cluster_access`): ``sagemaker_ray://<raycluster>/<namespace>``
(the scheme AWS's ``toolkit-for-ray-on-sagemaker-ai`` registers for ``ray job --address``) resolves
to exactly ``HyperPodDashboard(<raycluster>, <namespace>, api_client=...)``; ``local`` (or the
local cluster's own dashboard URL) to the embedded local cluster; any other ``http(s)://`` URL to
`PortForwardDashboard`. The jobs API, the panels and the CLI accept all three.

Secrets (EKS token, JWT, cookie, Ray token) are held as ``pydantic.SecretStr``; they never
appear in a repr, an exception or a log line. urllib3 logs request URLs at DEBUG, so a
redacting filter on its logger masks ``token=`` query values and registered secrets.

Sources: docs/hyperpod-setup.md; Ray 2.56 ``ray/dashboard/modules/dashboard_sdk.py``
(cookies/headers, ``AuthenticationError`` on 401/403) and
``ray/_private/authentication/http_token_authentication.py`` (``Authorization`` and
``X-Ray-Authorization`` bearer headers); awscli ``customizations/eks/get_token.py`` (token format).
"""

from __future__ import annotations

import base64
import contextlib
import ipaddress
import json
import logging
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import parse_qs, urlsplit

import requests
from pydantic import SecretStr

from hyperpod_rl.errors import ClusterError

if TYPE_CHECKING:
    from kubernetes import client as k8s
    from kubernetes.client.exceptions import ApiException
    from ray.job_submission import JobSubmissionClient

# botocore and kubernetes are imported where they are used: the local cluster's job API (the
# embedded Ray cluster, e.g. on a GPU machine that has neither) goes through this module too.

__all__ = [
    "CONNECTION_GROUP",
    "SAGEMAKER_RAY_SCHEME",
    "ClusterAddress",
    "HyperPodDashboard",
    "PortForwardDashboard",
    "cluster_access",
    "job_client_of",
    "eks_api_client",
    "eks_token",
    "hyperpod_eks_api_client",
    "parse_address",
    "port_forward",
    "read_ray_token",
    "known_secrets",
    "redact",
]

log = logging.getLogger(__name__)
T = TypeVar("T")

CONNECTION_GROUP = "connection.access.sagemaker.amazonaws.com"
CONNECTION_VERSION = "v1alpha1"
CONNECTION_PLURAL = "raydashboardconnections"
SESSION_COOKIE = "ray_session"
EKS_TOKEN_PREFIX = "k8s-aws-v1."
EKS_TOKEN_TTL_S = 600  # EKS accepts a token for 15 minutes; renew well before that
_HELP = "see docs/hyperpod-setup.md"

# ----- redaction ---------------------------------------------------------------------------------
_SECRETS: set[str] = set()


def _remember(secret: str) -> SecretStr:
    if secret:
        _SECRETS.add(secret)
    return SecretStr(secret)


def known_secrets() -> tuple[str, ...]:
    """Every secret this process handed out or holds: the EKS and Ray tokens this module made,
    and the local cluster's token (from its state file); what :func:`redact` masks verbatim."""
    from hyperpod_rl.cluster.local import current_local_cluster

    local = current_local_cluster()
    return (*_SECRETS, *((local.state.token,) if local is not None and local.state.token else ()))


def redact(text: str) -> str:
    """Mask every secret kind :func:`hyperpod_rl.redact.redact` knows (AWS keys, presigned-URL
    signatures, ``token=`` query values, ...) and every secret this module handed out."""
    from hyperpod_rl.redact import redact as redact_kinds

    return redact_kinds(text, known_secrets())


class _RedactingFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, ()
        return True


# botocore.auth logs the SigV4 signature of the presigned EKS-token URL at DEBUG.
for _name in ("urllib3.connectionpool", "kubernetes.client.rest", "ray.dashboard.modules.dashboard_sdk", "botocore.auth", __name__):
    logging.getLogger(_name).addFilter(_RedactingFilter())


# ----- EKS token and API client --------------------------------------------------------------------
def eks_token(cluster_name: str, *, region: str | None = None, session: Any = None) -> SecretStr:
    """An EKS bearer token, built as ``aws eks get-token`` builds it.

    The token is ``k8s-aws-v1.`` + base64url(presigned STS ``GetCallerIdentity`` URL) with the
    ``x-k8s-aws-id: <cluster_name>`` header signed in; the URL is presigned for 60 s and EKS
    accepts the token for 15 minutes. No network call is made.

    Args:
        cluster_name: the EKS cluster behind the HyperPod cluster.
        region: AWS region; default: the session's.
        session: a ``boto3.Session`` (default: a new one, using the usual credential chain).

    Raises:
        ClusterError: no AWS credentials.
    """
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    session = session or boto3.Session(region_name=region or os.environ.get("AWS_REGION") or None)
    region = region or session.region_name
    sts = session.client("sts", region_name=region, endpoint_url=f"https://sts.{region}.amazonaws.com" if region else None)

    def add_header(request: Any, **_: Any) -> None:
        request.headers["x-k8s-aws-id"] = cluster_name

    sts.meta.events.register("before-sign.sts.GetCallerIdentity", add_header)
    try:
        url = sts.generate_presigned_url("get_caller_identity", Params={}, ExpiresIn=60, HttpMethod="GET")
    except (BotoCoreError, ClientError) as exc:  # NoCredentialsError and friends
        raise ClusterError(
            f"cannot build an EKS token: {type(exc).__name__}; configure AWS credentials "
            "(Studio execution role, aws sso login or AWS_PROFILE)"
        ) from None
    token = EKS_TOKEN_PREFIX + base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")
    return _remember(token)


def eks_api_client(cluster_name: str, *, region: str | None = None, session: Any = None) -> k8s.ApiClient:
    """A ``kubernetes`` ApiClient for an EKS cluster, from IAM credentials alone (no kubeconfig).

    Reads the endpoint and CA with ``eks:DescribeCluster``; the bearer token is renewed every
    10 minutes through the client's ``refresh_api_key_hook``. The caller's IAM role needs an
    EKS access entry (docs/hyperpod-setup.md).

    Raises:
        ClusterError: the cluster cannot be described (name, region or permissions).
    """
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError
    from kubernetes import client as k8s

    session = session or boto3.Session(region_name=region or os.environ.get("AWS_REGION") or None)
    eks = session.client("eks", region_name=region or session.region_name)
    try:
        info = eks.describe_cluster(name=cluster_name)["cluster"]
    except (BotoCoreError, ClientError) as exc:
        raise ClusterError(
            f"cannot describe EKS cluster {cluster_name!r}: {type(exc).__name__}: {redact(str(exc))}; "
            "check the name, the region and eks:DescribeCluster permission"
        ) from None
    if not info.get("endpoint") or not (info.get("certificateAuthority") or {}).get("data"):
        raise ClusterError(
            f"EKS cluster {cluster_name!r} is {info.get('status', 'not ready')} and has no API endpoint yet; wait until it is ACTIVE"
        )
    cfg = k8s.Configuration()
    cfg.host = info["endpoint"]
    cfg.ssl_ca_cert = str(_eks_ca_file(info["endpoint"], base64.b64decode(info["certificateAuthority"]["data"])))
    cfg.api_key_prefix = {"BearerToken": "Bearer"}
    issued = {"at": -1e18}

    def refresh(conf: k8s.Configuration) -> None:
        if time.monotonic() - issued["at"] > EKS_TOKEN_TTL_S:
            conf.api_key = {"BearerToken": eks_token(cluster_name, region=region, session=session).get_secret_value()}
            issued["at"] = time.monotonic()

    refresh(cfg)
    cfg.refresh_api_key_hook = refresh
    return k8s.ApiClient(cfg)


def _eks_ca_file(endpoint: str, pem: bytes) -> Path:
    """The cluster's CA certificate as the file the Kubernetes client reads (it takes a path, not bytes).

    One file per API endpoint under ``<data dir>/eks-ca/``, replaced atomically when the CA changes,
    so repeated connections reuse it instead of leaving a temporary file each (seen: one
    ``/tmp/eks-ca-*.crt`` per call). A CA certificate is public, but the file is still 0600.
    """
    import hashlib

    from hyperpod_rl.paths import data_dir

    folder = data_dir() / "eks-ca"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{hashlib.sha256(endpoint.encode()).hexdigest()[:16]}.crt"
    if path.is_file() and path.read_bytes() == pem:
        return path
    fd, tmp = tempfile.mkstemp(prefix=".eks-ca-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(pem)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path


# ----- shared dashboard access --------------------------------------------------------------------
def _is_loopback(host: str | None) -> bool:
    if host is None:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class _DashboardAccess:
    """Common job-client plumbing; subclasses supply credentials and re-authentication."""

    address: str
    verify: bool | str

    def _auth(self) -> tuple[dict[str, str], dict[str, str]]:  # (headers, cookies)
        raise NotImplementedError

    def _reauthenticate(self) -> None:
        raise ClusterError(f"the dashboard at {self.address} rejected the credentials")

    def job_client(self) -> JobSubmissionClient:
        """A ``ray.job_submission.JobSubmissionClient`` carrying the credentials.

        Raises:
            ClusterError: the dashboard rejects the credentials even after re-authenticating.
        """
        return self.call(lambda client: client)

    def call(self, fn: Callable[[JobSubmissionClient], T]) -> T:
        """Run ``fn(client)``; on 401/403 re-authenticate once and run it again.

        Example:
            >>> access.call(lambda c: c.get_job_status("maze-001"))  # doctest: +SKIP
        """
        from ray.exceptions import AuthenticationError
        from ray.job_submission import JobSubmissionClient

        for attempt in range(2):
            headers, cookies = self._auth()
            try:
                client = JobSubmissionClient(self.address, headers=headers or None, cookies=cookies or None, verify=self.verify)
                return fn(client)
            except ConnectionError:
                raise ClusterError(
                    f"cannot reach the dashboard at {self.address}; is the cluster ready and the port-forward or endpoint up?"
                ) from None
            except AuthenticationError:
                if attempt == 0:
                    log.info("dashboard at %s answered 401/403; re-authenticating", self.address)
                    self._reauthenticate()
        raise ClusterError(
            f"the dashboard at {self.address} still rejects the credentials after re-authenticating; "
            f"check that you may use this cluster ({_HELP})"
        )

    def probe(self) -> int:
        """HTTP status of ``GET /api/version`` (0 when unreachable); re-authenticates once on 401.

        A failed re-authentication returns the 401.

        Raises:
            ClusterError: no session could be opened at all (e.g. the endpoint operator's 403 for
                anyone but the cluster's creator); waiting would not help.

        Usable as ``RayClusterClient.wait_ready(dashboard=access.probe)``.
        """
        for attempt in range(2):
            headers, cookies = self._auth()
            try:
                code = requests.get(
                    f"{self.address}/api/version", headers=headers, cookies=cookies, timeout=10, verify=self.verify
                ).status_code
            except requests.RequestException:
                return 0
            if code != 401 or attempt == 1:
                return code
            try:
                self._reauthenticate()
            except ClusterError:
                return code
        return 401


class PortForwardDashboard(_DashboardAccess):
    """Dashboard through a port-forward (or any direct address) with Ray token auth.

    Args:
        address: e.g. ``http://127.0.0.1:8265`` (see `port_forward`).
        ray_token: the cluster's Ray auth token (`read_ray_token`); None for ``auth_mode="disabled"``.
        verify: TLS verification for https addresses.
    """

    def __init__(self, address: str, *, ray_token: SecretStr | str | None = None, verify: bool | str = True) -> None:
        self.address = address.rstrip("/")
        self.verify = verify
        self._token = _remember(ray_token) if isinstance(ray_token, str) else ray_token
        if self._token is not None:
            _SECRETS.add(self._token.get_secret_value())

    def __repr__(self) -> str:
        return f"PortForwardDashboard(address={self.address!r}, ray_token={'set' if self._token else None})"

    def _auth(self) -> tuple[dict[str, str], dict[str, str]]:
        if self._token is None:
            return {}, {}
        return {"Authorization": f"Bearer {self._token.get_secret_value()}"}, {}

    def _reauthenticate(self) -> None:
        raise ClusterError(
            f"the dashboard at {self.address} rejected the Ray token; read it again with "
            "read_ray_token() (KubeRay Secret key auth_token) or check auth_mode"
        )


def read_ray_token(
    api_client: k8s.ApiClient, cluster_name: str, namespace: str = "default", *, secret_name: str | None = None
) -> SecretStr:
    """The Ray auth token KubeRay stores for a cluster with ``authOptions.mode: token``.

    KubeRay v1.7 creates a Secret named after the RayCluster with the key ``auth_token``
    (``raycluster_controller.go`` ``createAuthSecret``), unless ``authOptions.secretName`` is set.

    Raises:
        ClusterError: Secret missing, key missing, or reading Secrets is forbidden.
    """
    from kubernetes import client as k8s
    from kubernetes.client.exceptions import ApiException

    name = secret_name or cluster_name
    try:
        secret = k8s.CoreV1Api(api_client).read_namespaced_secret(name, namespace, _preload_content=False)
    except ApiException as exc:
        if exc.status == 404:
            raise ClusterError(
                f"Secret {namespace}/{name} not found: is the RayCluster running with auth_mode='token'? "
                "KubeRay creates it on the first reconcile"
            ) from None
        if exc.status == 403:
            raise ClusterError(
                f"reading Secret {namespace}/{name} is forbidden; ask for `get secrets` in {namespace} "
                "or use the HyperPod dashboard connection instead"
            ) from None
        raise ClusterError(f"cannot read Secret {namespace}/{name}: HTTP {exc.status}") from None
    data = (json.loads(secret.data).get("data") or {}).get("auth_token")
    if not data:
        raise ClusterError(f"Secret {namespace}/{name} has no key 'auth_token'")
    return _remember(base64.b64decode(data).decode())


@contextlib.contextmanager
def port_forward(
    cluster_name: str, namespace: str = "default", *, local_port: int = 8265, kubectl: str = "kubectl", timeout_s: float = 20.0
) -> Iterator[str]:
    """Run ``kubectl port-forward svc/<name>-head-svc <local_port>:8265`` on 127.0.0.1 for the block.

    Yields:
        The local dashboard address, ``http://127.0.0.1:<local_port>``.

    Raises:
        ClusterError: kubectl missing, or it did not report forwarding within ``timeout_s`` seconds.
    """
    exe = shutil.which(kubectl)
    if exe is None:
        raise ClusterError(f"{kubectl!r} not found on PATH; install kubectl or use HyperPodDashboard")
    cmd = [exe, "port-forward", "-n", namespace, "--address", "127.0.0.1", f"svc/{cluster_name}-head-svc", f"{local_port}:8265"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + timeout_s
        stdout = proc.stdout
        if stdout is None:  # cannot happen with stdout=PIPE; keeps the type checker honest
            raise ClusterError("kubectl port-forward has no output pipe")
        while time.monotonic() < deadline:
            line = stdout.readline()
            if line.startswith("Forwarding from"):
                break
            if not line and proc.poll() is not None:
                raise ClusterError(
                    f"kubectl port-forward exited with {proc.returncode}; is {cluster_name}-head-svc in namespace {namespace}?"
                )
        else:
            raise ClusterError(f"kubectl port-forward did not start within {timeout_s:g} s")
        yield f"http://127.0.0.1:{local_port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


# ----- HyperPod Ray Endpoint Operator ---------------------------------------------------------------
class HyperPodDashboard(_DashboardAccess):
    """Dashboard and job API of a RayCluster through the HyperPod Ray Endpoint Operator.

    Args:
        cluster_name: the RayCluster's name (``spec.clusterName`` of the connection).
        namespace: its namespace.
        api_client: Kubernetes client authenticated as the user (e.g. `eks_api_client`).
        verify: TLS verification for the dashboard host (path to a CA bundle or bool).
        ray_token: also send the Ray auth token as ``X-Ray-Authorization: Bearer`` (needed when
            the cluster runs ``auth_mode="token"`` behind the proxy).
        wait_s: seconds to wait for ``status.connectionUrl``; poll_interval_s: between reads.

    Example:
        >>> access = HyperPodDashboard("maze", api_client=eks_api_client("hp-eks", region="us-west-2"))  # doctest: +SKIP
        >>> access.call(lambda c: c.submit_job(entrypoint="python -V"))  # doctest: +SKIP
    """

    def __init__(
        self,
        cluster_name: str,
        namespace: str = "default",
        *,
        api_client: k8s.ApiClient,
        verify: bool | str = True,
        ray_token: SecretStr | str | None = None,
        wait_s: float = 60.0,
        poll_interval_s: float = 1.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        from kubernetes import client as k8s

        self.cluster_name, self.namespace = cluster_name, namespace
        self.custom = k8s.CustomObjectsApi(api_client)
        self.verify = verify
        self.wait_s, self.poll_interval_s, self._sleep = wait_s, poll_interval_s, sleep
        self._ray_token = _remember(ray_token) if isinstance(ray_token, str) else ray_token
        self._cookie: SecretStr | None = None
        self.address = ""
        self.connection_name: str | None = None

    def __repr__(self) -> str:
        return (
            f"HyperPodDashboard(cluster_name={self.cluster_name!r}, namespace={self.namespace!r}, "
            f"address={self.address!r}, connected={self._cookie is not None})"
        )

    # -- steps ------------------------------------------------------------------------------------
    def connection_url(self) -> SecretStr:
        """Create a ``RayDashboardConnection`` and return its ``status.connectionUrl`` (holds a JWT).

        Raises:
            ClusterError: 403 (only the cluster creator may connect), endpoint operator not
                installed, RayCluster or namespace not found, or no URL within ``wait_s`` seconds.
        """
        from kubernetes.client.exceptions import ApiException

        body = {
            "apiVersion": f"{CONNECTION_GROUP}/{CONNECTION_VERSION}",
            "kind": "RayDashboardConnection",
            "metadata": {"generateName": f"{self.cluster_name}-"},
            "spec": {"clusterName": self.cluster_name},
        }
        try:
            obj = self.custom.create_namespaced_custom_object(
                CONNECTION_GROUP, CONNECTION_VERSION, self.namespace, CONNECTION_PLURAL, body, _preload_content=False
            )
            obj = json.loads(obj.data)
        except ApiException as exc:
            raise self._error(exc) from None
        self.connection_name = (obj.get("metadata") or {}).get("name")
        deadline = time.monotonic() + self.wait_s
        while True:
            url = (obj.get("status") or {}).get("connectionUrl")
            if url:
                return _remember(url)
            if time.monotonic() >= deadline or not self.connection_name:
                why = (obj.get("status") or {}).get("message") or "no status.connectionUrl"
                raise ClusterError(
                    f"RayDashboardConnection for {self.namespace}/{self.cluster_name} has no connection URL "
                    f"after {self.wait_s:g} s ({redact(str(why))}); is the HyperPod Ray Endpoint Operator "
                    f"running and the RayCluster ready? ({_HELP})"
                )
            self._sleep(self.poll_interval_s)
            try:
                raw = self.custom.get_namespaced_custom_object(
                    CONNECTION_GROUP, CONNECTION_VERSION, self.namespace, CONNECTION_PLURAL, self.connection_name, _preload_content=False
                )
                obj = json.loads(raw.data)
            except ApiException as exc:
                raise self._error(exc) from None

    def connect(self) -> None:
        """Get a fresh connection URL and exchange its JWT for the ``ray_session`` cookie.

        Raises:
            ClusterError: any step fails; the message names the step, never the secrets.
        """
        url = self.connection_url().get_secret_value()
        parts = urlsplit(url)
        jwt = (parse_qs(parts.query).get("token") or [""])[0]
        if not jwt:
            raise ClusterError(f"connection URL for {self.cluster_name} has no token parameter; update the endpoint operator")
        _SECRETS.add(jwt)
        if parts.scheme != "https" and not _is_loopback(parts.hostname):
            raise ClusterError(f"refusing to send a dashboard token over {parts.scheme}:// to {parts.hostname}")
        self.address = f"{parts.scheme}://{parts.netloc}"
        try:
            resp = requests.get(f"{self.address}/bearer-auth", params={"token": jwt}, allow_redirects=False, timeout=15, verify=self.verify)
        except requests.RequestException as exc:
            raise ClusterError(f"cannot reach the dashboard endpoint {self.address}: {type(exc).__name__}") from None
        cookie = resp.cookies.get(SESSION_COOKIE)
        if resp.status_code == 403:
            raise ClusterError(
                f"the dashboard endpoint refused the login (403): only the creator of RayCluster "
                f"{self.namespace}/{self.cluster_name} may connect; ask them, or use port_forward + Ray token"
            )
        if resp.status_code >= 400 or not cookie:
            raise ClusterError(
                f"dashboard login at {self.address}/bearer-auth answered {resp.status_code} without a "
                f"{SESSION_COOKIE!r} cookie; the token may have expired, retry connect()"
            )
        self._cookie = _remember(cookie)
        log.info("connected to the dashboard of %s/%s at %s", self.namespace, self.cluster_name, self.address)

    # -- _DashboardAccess --------------------------------------------------------------------------
    def _auth(self) -> tuple[dict[str, str], dict[str, str]]:
        if self._cookie is None:
            self.connect()
        if self._cookie is None:  # connect() sets it or raises
            raise ClusterError(f"no dashboard session for {self.namespace}/{self.cluster_name}")
        headers = {"X-Ray-Authorization": f"Bearer {self._ray_token.get_secret_value()}"} if self._ray_token else {}
        return headers, {SESSION_COOKIE: self._cookie.get_secret_value()}

    def _reauthenticate(self) -> None:
        self._cookie = None
        self.connect()

    def cluster_image(self) -> str | None:
        """The RayCluster's head container image (for the Python version check), None when unreadable."""
        from kubernetes.client.exceptions import ApiException

        try:
            raw = self.custom.get_namespaced_custom_object(
                "ray.io", "v1", self.namespace, "rayclusters", self.cluster_name, _preload_content=False
            )
            obj = json.loads(raw.data)
            containers = obj["spec"]["headGroupSpec"]["template"]["spec"]["containers"]
        except (ApiException, OSError, KeyError, TypeError, ValueError):
            return None
        return str(containers[0].get("image") or "") or None if containers else None

    def cookies(self) -> dict[str, str]:
        """``{"ray_session": ...}`` for other HTTP clients. Treat the value as a password."""
        return self._auth()[1]

    def _error(self, exc: ApiException) -> ClusterError:
        try:
            body = json.loads(exc.body or "{}")
        except ValueError:
            body = {}
        message = redact(str(body.get("message", "")))
        kind = (body.get("details") or {}).get("kind", "")
        where = f"{self.namespace}/{self.cluster_name}"
        if exc.status == 403:
            return ClusterError(
                f"not allowed to open the dashboard of RayCluster {where}: {message}; the HyperPod endpoint "
                "operator lets only the cluster's creator connect; ask them, or use port_forward + Ray token"
            )
        if exc.status == 404 and (kind == "namespaces"):
            return ClusterError(f"namespace {self.namespace!r} not found")
        if exc.status == 404 and (kind == CONNECTION_PLURAL or "could not find the requested resource" in message):
            return ClusterError(
                f"the RayDashboardConnection API ({CONNECTION_GROUP}/{CONNECTION_VERSION}) is not installed; "
                f"install the HyperPod Ray Endpoint Operator ({_HELP})"
            )
        if exc.status == 404:
            return ClusterError(f"RayCluster {where} not found: {message}")
        if exc.status == 401:
            return ClusterError("the Kubernetes API rejected the credentials (expired EKS token?); build a new client")
        return ClusterError(f"creating the dashboard connection for {where} failed: HTTP {exc.status}: {message}")


# ----- cluster addresses ---------------------------------------------------------------------------
SAGEMAKER_RAY_SCHEME = "sagemaker_ray"
HYPERPOD_CLUSTER_ENV = "HYPERPOD_RL_HYPERPOD_CLUSTER"
"""Environment variable naming the HyperPod cluster whose EKS API ``sagemaker_ray://`` addresses use
(IAM credentials only, no kubeconfig); ``hyperpod-rl cluster discover --pick`` prints it."""


def hyperpod_eks_api_client(
    hyperpod_cluster: str, *, region: str | None = None, session: Any = None, sagemaker: Any = None
) -> k8s.ApiClient:
    """A ``kubernetes`` ApiClient for a HyperPod cluster's EKS API, from IAM credentials alone.

    SageMaker ``DescribeCluster`` -> ``Orchestrator.Eks.ClusterArn`` -> :func:`eks_api_client` in the
    EKS cluster's region (from its ARN). ``hyperpod_rl.aws.hyperpod_api_client`` does the same for a
    cluster picked from ``list_hyperpod_clusters``; this one serves addresses in this layer.

    Args:
        hyperpod_cluster: the HyperPod cluster's name (or ARN).
        region: AWS region of the HyperPod cluster (default: the session's).
        session: a ``boto3.Session``; sagemaker: a boto3 ``sagemaker`` client (tests).

    Raises:
        ClusterError: no credentials or region, no such cluster, a Slurm-orchestrated cluster, or
            a cluster that is not ``InService`` (each message says what to do).
    """
    import boto3
    from botocore.config import Config
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        session = session or boto3.Session(region_name=region or os.environ.get("AWS_REGION") or None)
        sm = sagemaker or session.client(
            "sagemaker", region_name=region or session.region_name, config=Config(connect_timeout=5, read_timeout=20)
        )
        info = sm.describe_cluster(ClusterName=hyperpod_cluster)
    except ClientError as exc:
        code = str((exc.response.get("Error") or {}).get("Code", ""))
        if code in ("ResourceNotFound", "ValidationException"):
            raise ClusterError(
                f"no HyperPod cluster {hyperpod_cluster!r} in {sm.meta.region_name}: check {HYPERPOD_CLUSTER_ENV} and AWS_REGION "
                "(hyperpod-rl cluster discover lists the clusters)"
            ) from None
        raise ClusterError(
            f"cannot describe HyperPod cluster {hyperpod_cluster!r}: {code}; the role needs sagemaker:DescribeCluster"
        ) from None
    except BotoCoreError as exc:  # NoRegionError, NoCredentialsError, endpoint errors
        raise ClusterError(
            f"cannot describe HyperPod cluster {hyperpod_cluster!r}: {type(exc).__name__}; "
            "configure AWS credentials and AWS_REGION (Studio sets both)"
        ) from None
    eks_arn = str(((info.get("Orchestrator") or {}).get("Eks") or {}).get("ClusterArn", ""))
    if not eks_arn:
        raise ClusterError(
            f"HyperPod cluster {hyperpod_cluster!r} has no EKS orchestrator (Slurm?): "
            "sagemaker_ray:// addresses need an EKS-orchestrated cluster with KubeRay"
        )
    status = str(info.get("ClusterStatus", ""))
    if status != "InService":
        raise ClusterError(f"HyperPod cluster {hyperpod_cluster!r} is {status}: wait until it is InService")
    parts = eks_arn.split(":")
    eks_region = parts[3] if len(parts) > 3 and parts[3] else sm.meta.region_name
    return eks_api_client(eks_arn.rsplit("/", 1)[-1], region=eks_region, session=session)


_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


@dataclass(frozen=True)
class ClusterAddress:
    """A parsed cluster address (see `parse_address`); ``str()`` gives it back in canonical form.

    Attributes:
        kind: ``"sagemaker_ray"``, ``"local"`` or ``"http"``.
        raycluster / namespace: for ``sagemaker_ray`` addresses.
        url: for ``http`` addresses (no trailing slash).
    """

    kind: str
    raycluster: str = ""
    namespace: str = ""
    url: str = ""

    def __str__(self) -> str:
        if self.kind == SAGEMAKER_RAY_SCHEME:
            return f"{SAGEMAKER_RAY_SCHEME}://{self.raycluster}/{self.namespace}"
        return self.url or self.kind


def parse_address(address: str) -> ClusterAddress:
    """Parse a cluster address.

    Accepted: ``sagemaker_ray://<raycluster>/<namespace>`` (namespace optional, default
    ``default``), ``local``, and ``http(s)://host:port`` dashboard URLs.

    Raises:
        ConfigError: anything else, or names that are not valid Kubernetes names.
    """
    from hyperpod_rl.errors import ConfigError

    text = address.strip()
    if text in ("local", "local://"):
        return ClusterAddress("local")
    prefix = f"{SAGEMAKER_RAY_SCHEME}://"
    if text.startswith(prefix):  # "_" is not a URL scheme character, so urlsplit would not see it
        raycluster, _, namespace = text.removeprefix(prefix).rstrip("/").partition("/")
        namespace = namespace or "default"
        bad = [n for n in (raycluster, namespace) if not _DNS_LABEL.fullmatch(n) or len(n) > 63]
        if not raycluster or bad:
            raise ConfigError(
                f"bad cluster address {address!r}: expected sagemaker_ray://<raycluster>/<namespace> "
                "with lowercase Kubernetes names, e.g. sagemaker_ray://maze/hyperpod-ns-team-a"
            )
        return ClusterAddress(SAGEMAKER_RAY_SCHEME, raycluster=raycluster, namespace=namespace)
    parts = urlsplit(text)
    if parts.scheme in ("http", "https") and parts.hostname:
        return ClusterAddress("http", url=text.rstrip("/"))
    raise ConfigError(
        f"bad cluster address {address!r}: use sagemaker_ray://<raycluster>/<namespace>, local, "
        "or a dashboard URL like http://127.0.0.1:8265"
    )


def cluster_access(
    address: str | ClusterAddress,
    *,
    api_client: k8s.ApiClient | None = None,
    context: str | None = None,
    ray_token: SecretStr | str | None = None,
    hyperpod_cluster: str | None = None,
    region: str | None = None,
) -> Any:
    """The access object (``job_client()``, ``call``, ``probe``) a cluster address names.

    Example:
        >>> access = cluster_access("sagemaker_ray://maze/hyperpod-ns-team-a")  # doctest: +SKIP
        >>> access.job_client().list_jobs()  # doctest: +SKIP

    Args:
        address: see `parse_address`.
        api_client: Kubernetes client for ``sagemaker_ray://`` addresses. Default: when a HyperPod
            cluster is named (``hyperpod_cluster``, else the ``HYPERPOD_RL_HYPERPOD_CLUSTER``
            environment variable), its EKS API from IAM credentials alone
            (:func:`hyperpod_eks_api_client`, what a Studio space without a kubeconfig needs); else
            the kubeconfig (``context`` selects one), the way AWS's toolkit resolves them.
        ray_token: Ray auth token for an ``http(s)://`` address (default ``RAY_AUTH_TOKEN``).
        hyperpod_cluster: HyperPod cluster name for ``sagemaker_ray://`` addresses (see ``api_client``).
        region: AWS region of that HyperPod cluster (default: the environment's).

    Returns:
        `HyperPodDashboard` for ``sagemaker_ray://``, the ``LocalCluster`` for ``local`` (or its
        own dashboard URL), else `PortForwardDashboard`.

    Raises:
        ConfigError: a malformed address.
        ClusterError: ``local`` with no local cluster running, or no Kubernetes credentials.
    """
    parsed = address if isinstance(address, ClusterAddress) else parse_address(address)
    if parsed.kind == SAGEMAKER_RAY_SCHEME:
        hyperpod_cluster = hyperpod_cluster or os.environ.get(HYPERPOD_CLUSTER_ENV) or None
        if api_client is None and hyperpod_cluster:
            api_client = hyperpod_eks_api_client(hyperpod_cluster, region=region)
        elif api_client is None:
            from hyperpod_rl.cluster.kube import load_api_client

            try:
                api_client = load_api_client(context=context)
            except ClusterError:
                raise ClusterError(
                    f"cannot reach {parsed}: no HyperPod cluster named and no kubeconfig; set {HYPERPOD_CLUSTER_ENV}=<HyperPod "
                    "cluster> (hyperpod-rl cluster discover lists them; IAM credentials suffice), or write a kubeconfig with "
                    "`aws eks update-kubeconfig --name <EKS cluster>`"
                ) from None
        return HyperPodDashboard(parsed.raycluster, parsed.namespace, api_client=api_client)
    from hyperpod_rl.cluster.local import current_local_cluster

    local = current_local_cluster()
    if parsed.kind == "local" or (local is not None and parsed.url == local.dashboard_url.rstrip("/")):
        if local is None:
            raise ClusterError("no local Ray cluster is running: hyperpod-rl local start")
        return local
    return PortForwardDashboard(parsed.url, ray_token=ray_token or os.environ.get("RAY_AUTH_TOKEN") or None)


def job_client_of(client: Any) -> Any:
    """A ``JobSubmissionClient`` from anything that names a cluster's job API.

    Accepted: a ``JobSubmissionClient`` (returned as is); an access object with ``job_client()``
    (``LocalCluster``, `HyperPodDashboard`, `PortForwardDashboard`); or a cluster address string
    (``sagemaker_ray://<raycluster>/<namespace>``, ``local``, ``http(s)://...``; `cluster_access`).

    Raises:
        ConfigError: a malformed address. ClusterError: the cluster cannot be reached.
    """
    if isinstance(client, str):
        client = cluster_access(client)
    return client.job_client() if hasattr(client, "job_client") else client
