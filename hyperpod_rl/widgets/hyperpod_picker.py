"""HyperPodPicker: choose HyperPod cluster -> namespace -> RayCluster from lists instead of typing names.

Thin over :mod:`hyperpod_rl.aws.discovery` (SageMaker ``ListClusters``/``DescribeCluster``, EKS, the
Kubernetes API with an EKS token: no kubeconfig needed) and :func:`hyperpod_rl.aws.access.check_access`.
Clusters that cannot be used (Slurm, not ``InService``) are shown with the reason, not offered.
Picking a RayCluster yields its address ``sagemaker_ray://<raycluster>/<namespace>``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ipywidgets as w

from hyperpod_rl.widgets._base import Panel, escape

__all__ = ["HyperPodPicker"]

_COLOURS = {"ok": "#2ca02c", "warn": "#b8860b", "fail": "#d62728", "skip": "#888"}


class HyperPodPicker(Panel):
    """Dropdowns for HyperPod cluster, namespace and RayCluster; a Check access button.

    Args:
        region: AWS region (default: the environment's).
        on_pick: called with ``(address, api_client)`` when a RayCluster is chosen.
        on_namespace: called with ``(hyperpod_cluster, namespace, api_client)`` when a namespace is
            chosen, before its RayClusters are listed (so a new RayCluster can be created there).
        list_clusters / api_client_for / check / observability: the discovery functions (defaults from
            :mod:`hyperpod_rl.aws`); tests pass functions bound to stubbed clients.

    Attributes:
        clusters: the last listing (``HyperPodCluster`` objects, offered first).
        address: the chosen RayCluster's address, ``""`` before a choice.
        api_client: the Kubernetes client of the chosen HyperPod cluster.
    """

    def __init__(
        self,
        *,
        region: str | None = None,
        on_pick: Callable[[str, Any], None] | None = None,
        on_namespace: Callable[[str, str, Any], None] | None = None,
        list_clusters: Callable[..., list[Any]] | None = None,
        api_client_for: Callable[[Any], Any] | None = None,
        check: Callable[..., list[Any]] | None = None,
        observability: Callable[..., Any] | None = None,
    ) -> None:
        super().__init__()
        from hyperpod_rl.aws import check_access, hyperpod_api_client, list_hyperpod_clusters, observability_endpoints

        self.region = region
        self.on_pick = on_pick
        self.on_namespace = on_namespace
        self._list = list_clusters or (lambda: list_hyperpod_clusters(region=self.region))
        self._api_for = api_client_for or hyperpod_api_client
        self._check = check or check_access
        self._observability = observability or observability_endpoints
        self.grafana_html = w.HTML("")
        self.clusters: list[Any] = []
        self.address = ""
        self.api_client: Any = None
        self.find_button = w.Button(description="Find HyperPod clusters", icon="search")
        self.hyperpod = w.Dropdown(options=[], description="HyperPod", disabled=True)
        self.namespace = w.Dropdown(options=[], description="namespace", disabled=True)
        self.raycluster = w.Dropdown(options=[], description="RayCluster", disabled=True)
        self.not_offered = w.HTML("")
        self.address_html = w.HTML("")
        self.check_button = w.Button(description="Check access", icon="user-check", disabled=True)
        self.checks_html = w.HTML("")
        self.find_button.on_click(self.guard(lambda _: self.background(self.find, name="hyperpod-find")))
        self.hyperpod.observe(
            self.guard(lambda ch: ch["new"] and self.background(lambda: self.choose_cluster(ch["new"]), name="hyperpod-ns")), "value"
        )
        self.namespace.observe(
            self.guard(lambda ch: ch["new"] and self.background(lambda: self.choose_namespace(ch["new"]), name="hyperpod-rc")), "value"
        )
        self.raycluster.observe(self.guard(lambda ch: ch["new"] and self.choose_raycluster(ch["new"])), "value")
        self.check_button.on_click(self.guard(lambda _: self.background(self.check_access, name="hyperpod-check")))
        self.children = (
            self.find_button,
            self.hyperpod,
            self.not_offered,
            self.namespace,
            self.raycluster,
            self.address_html,
            self.grafana_html,
            self.check_button,
            self.checks_html,
            self.errors_out,
        )

    def _chosen(self) -> Any:
        return next(c for c in self.clusters if c.name == self.hyperpod.value)

    def find(self) -> list[Any]:
        """List the HyperPod clusters; offer the usable ones, explain the others."""
        self.clear_errors()
        self.clusters = self._list()
        offered = [c for c in self.clusters if c.offered]
        self.not_offered.value = "".join(
            f"<div style='color:#888'>{escape(c.name)} ({escape(c.status)}): {escape(c.reason)}</div>"
            for c in self.clusters
            if not c.offered
        )
        self.hyperpod.options = [(f"{c.name} ({c.status})", c.name) for c in offered]
        self.hyperpod.disabled = not offered
        if not offered:
            self.address_html.value = "<i>no usable HyperPod cluster in this region</i>"
        elif len(offered) == 1:
            self.hyperpod.value = offered[0].name  # the only choice: go on to its namespaces
        return offered

    def choose_cluster(self, name: str) -> list[str]:
        """Connect to a HyperPod cluster's Kubernetes API and list its namespaces."""
        from hyperpod_rl.aws import list_namespaces

        self.api_client = self._api_for(next(c for c in self.clusters if c.name == name))
        names, note = list_namespaces(self.api_client)
        self.namespace.options = names
        self.namespace.disabled = not names
        self.check_button.disabled = False
        if note:
            self.address_html.value = f"<i>{escape(note)}</i>"
        self.show_grafana()
        return names

    def show_grafana(self) -> str:
        """The Grafana link of the chosen cluster's observability add-on (``""`` when not installed)."""
        from hyperpod_rl.errors import HyperpodRLError
        from hyperpod_rl.jupyter import browser_link

        cluster = self._chosen()
        try:
            obs = self._observability(cluster.eks_cluster_name, region=cluster.eks_region)
        except HyperpodRLError as err:  # a missing eks:DescribeAddon permission must not block the picker
            self.grafana_html.value = f"<span style='color:#888'>Grafana: {escape(err)}</span>"
            return ""
        url = obs.grafana_url if obs is not None else ""
        self.grafana_html.value = (
            browser_link(url, "Grafana (Ray dashboards)", note="filter by cluster, namespace and Ray cluster").html() if url else ""
        )
        return url

    def choose_namespace(self, namespace: str) -> list[Any]:
        """List the RayClusters of a namespace (ready ones first)."""
        from hyperpod_rl.aws import list_rayclusters

        if self.on_namespace is not None:
            self.on_namespace(self.hyperpod.value, namespace, self.api_client)
        rays = list_rayclusters(self.api_client, namespace)
        self.raycluster.options = [(f"{r.name} ({'ready' if r.ready else 'not ready'})", r.name) for r in rays]
        self.raycluster.disabled = not rays
        if not rays:
            self.address_html.value = f"<i>no RayCluster in {escape(namespace)}: create one with Apply</i>"
        elif len(rays) == 1:
            self.raycluster.value = rays[0].name
        return rays

    def choose_raycluster(self, name: str) -> str:
        """Choose a RayCluster: its address is shown and handed to ``on_pick``."""
        self.address = f"sagemaker_ray://{name}/{self.namespace.value}"
        self.address_html.value = f"address <code>{escape(self.address)}</code>"
        if self.on_pick is not None:
            self.on_pick(self.address, self.api_client)
        return self.address

    def check_access(self) -> list[Any]:
        """Run the access checks for the chosen cluster and namespace; one row each with the fix."""
        cluster = self._chosen()
        checks = self._check(
            cluster.eks_cluster_name, self.namespace.value or "default", region=cluster.eks_region, api_client=self.api_client
        )
        self.checks_html.value = (
            "<table>"
            + "".join(
                f"<tr><td style='color:{_COLOURS[c.status]}'><b>{c.status}</b></td><td>{escape(c.name)}</td><td>{escape(c.detail)}</td><td>{escape(c.fix)}</td></tr>"
                for c in checks
            )
            + "</table>"
        )
        return checks
