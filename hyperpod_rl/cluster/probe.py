"""Which dashboard probe completes "ready": one choice for the CLI and the ClusterPanel.

``wait_ready`` trusts the KubeRay conditions only when the dashboard also answers
``GET /api/version`` with 200 (a submit right after "ready" can get 503). How to reach the
dashboard depends on the setup:

* ``endpoint`` -- through the HyperPod Ray Endpoint Operator (`HyperPodDashboard`, cookie auth);
* ``address`` -- a dashboard address you already reach (e.g. a ``kubectl port-forward``), with the
  cluster's Ray token when the operator created one (`PortForwardDashboard`), else without auth;
* ``none`` -- trust the conditions alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from hyperpod_rl.errors import ClusterError, ConfigError

if TYPE_CHECKING:
    from hyperpod_rl.cluster.kube import DashboardProbe

__all__ = ["PROBE_CHOICES", "ProbeVia", "dashboard_probe"]

ProbeVia = Literal["endpoint", "address", "none"]
PROBE_CHOICES: tuple[str, ...] = ("endpoint", "address", "none")


def dashboard_probe(
    via: str, api_client: Any, name: str, namespace: str = "default", *, address: str | None = None
) -> DashboardProbe | None:
    """The dashboard probe for ``wait_ready`` (None for ``via="none"``).

    Args:
        via: ``endpoint``, ``address`` or ``none`` (see the module docstring).
        api_client: the ``kubernetes.client.ApiClient`` of the cluster.
        name / namespace: the RayCluster.
        address: dashboard base URL for ``via="address"`` (e.g. ``http://127.0.0.1:8265``).

    Raises:
        ConfigError: unknown ``via``, or ``via="address"`` without an address.
    """
    from hyperpod_rl.cluster.access import HyperPodDashboard, PortForwardDashboard, read_ray_token
    from hyperpod_rl.cluster.kube import http_probe

    if via == "none":
        return None
    if via == "endpoint":
        return HyperPodDashboard(name, namespace, api_client=api_client).probe
    if via == "address":
        if not address:
            raise ConfigError("--via address needs --address, e.g. http://127.0.0.1:8265 from a port-forward")
        try:
            token = read_ray_token(api_client, name, namespace)
        except ClusterError:  # no operator-made token Secret: the dashboard has no token auth
            return http_probe(address)
        return PortForwardDashboard(address, ray_token=token).probe
    raise ConfigError(f"--via must be one of {', '.join(PROBE_CHOICES)}, got {via!r}")
