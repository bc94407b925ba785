"""ClusterPanel: start, wait for and delete a Ray cluster, locally or on SageMaker HyperPod.

- **local**: the embedded cluster of :mod:`hyperpod_rl.cluster.local` (Apply starts it or
  reuses the running one, Wait probes its job API, Delete stops only its processes).
- **HyperPod**: a form generated from :class:`~hyperpod_rl.cluster.ClusterSpec` (presets,
  worker groups, storage); Apply server-side-applies the RayCluster with
  :class:`~hyperpod_rl.cluster.RayClusterClient`, Wait follows ``wait_ready`` on a background
  thread and shows the KubeRay conditions and pod phases, Delete deletes it.

The dashboard link shown is the address without credentials; tokens and cookies stay in Python.
Links open from the browser of this JupyterLab: a local port goes through the server's proxy
(``<base_url>proxy/<port>/``, :func:`hyperpod_rl.jupyter.browser_link`). In the HyperPod kind a
:class:`~hyperpod_rl.widgets.hyperpod_picker.HyperPodPicker` offers HyperPod cluster -> namespace ->
RayCluster; choosing a namespace sets the form's namespace, its ``hyperpod_cluster`` (the
``sagemaker.amazonaws.com/cluster-name`` label AWS's Ray sidebar reads) and the Kubernetes client, so
Apply creates a RayCluster there; picking a RayCluster also sets the name and the dashboard probe, and
hands its access to ``on_cluster`` (``studio()`` points the Run tab at it).
"""

from __future__ import annotations

from typing import Any, Literal

import ipywidgets as w

from hyperpod_rl.cluster.local import current_local_cluster
from hyperpod_rl.cluster.spec import ClusterSpec
from hyperpod_rl.widgets._base import Panel, escape
from hyperpod_rl.widgets._form import ModelForm

__all__ = ["ClusterPanel"]


class ClusterPanel(Panel):
    """Cluster lifecycle and live status.

    Args:
        kind: ``"local"`` or ``"hyperpod"``.
        spec: initial HyperPod spec (default: the ``seed`` preset).
        kube: a :class:`~hyperpod_rl.cluster.RayClusterClient` (HyperPod kind).
        dashboard: a dashboard probe for ``wait_ready`` (e.g. ``HyperPodDashboard(...).probe``);
            when None, ``via`` picks one with :func:`hyperpod_rl.cluster.dashboard_probe` (the
            CLI's ``--via`` choice).
        via: ``"endpoint"`` (HyperPod Ray endpoint operator), ``"address"`` (``address``, e.g. a
            port-forward) or ``"none"`` (conditions only, the default).
        address: dashboard URL for ``via="address"``.
        num_cpus: logical CPUs of the local head (default: all cores).
        wait_timeout_s: Wait gives up after this many seconds.
        on_cluster: called with the access object (``HyperPodDashboard``) of a picked RayCluster.

    Attributes:
        cluster: the running ``LocalCluster`` (local kind), else ``None``.
        report: the last ``ClusterReport`` (HyperPod kind), else ``None``.
        state: ``"stopped"``, ``"starting"``, ``"ready"``, or a KubeRay status value.
    """

    def __init__(
        self,
        kind: Literal["local", "hyperpod"] = "local",
        *,
        spec: ClusterSpec | None = None,
        kube: Any = None,
        dashboard: Any = None,
        via: str = "none",
        address: str | None = None,
        num_cpus: int | None = None,
        wait_timeout_s: float = 900.0,
        on_cluster: Any = None,
    ) -> None:
        super().__init__()
        self.on_cluster = on_cluster
        self.kube = kube
        self.dashboard = dashboard
        self.via = via
        self.address = address
        self.num_cpus = num_cpus
        self.wait_timeout_s = wait_timeout_s
        self.cluster: Any = None
        self.report: Any = None
        self.state = "stopped"
        self.kind = w.ToggleButtons(
            options=[("local", "local"), ("HyperPod", "hyperpod")],
            value=kind,
            description="kind",
        )
        self.preset = w.Dropdown(
            options=ClusterSpec.presets(),
            value="seed" if "seed" in ClusterSpec.presets() else None,
            description="preset",
        )
        self.form = ModelForm(
            ClusterSpec,
            spec or ClusterSpec.from_preset(self.preset.value),
            exclude=("source_manifest",),
        )
        self.apply_button = w.Button(description="Apply", icon="upload", button_style="primary")
        self.wait_button = w.Button(description="Wait", icon="hourglass")
        self.delete_button = w.Button(description="Delete", icon="trash", button_style="danger")
        self.status_html = w.HTML("")
        self.link = w.HTML("")
        self._picker: Any = None
        self.kind.observe(self.guard(lambda _: self._layout()), names="value")
        self.preset.observe(
            self.guard(
                lambda ch: self.form.set_value(
                    ClusterSpec.from_preset(
                        ch["new"],
                        **{k: self.form.to_dict()[k] for k in ("name", "namespace", "hyperpod_cluster", "created_by", "priority_class")},
                    )
                )
            ),
            names="value",
        )
        self.apply_button.on_click(self.guard(lambda _: self.apply()))
        self.wait_button.on_click(self.guard(lambda _: self.background(self.wait, name="cluster-wait")))
        self.delete_button.on_click(self.guard(lambda _: self.delete()))
        self._layout()

    def _layout(self) -> None:
        buttons = w.HBox([self.apply_button, self.wait_button, self.delete_button])
        spec_box = (
            [self.picker, self.preset, w.Accordion(children=[self.form], titles=("ClusterSpec",))] if self.kind.value == "hyperpod" else []
        )
        self.children = (
            self.kind,
            *spec_box,
            buttons,
            self.status_html,
            self.link,
            self.errors_out,
        )
        self.guard(self.refresh)()

    @property
    def picker(self) -> Any:
        """The HyperPod cluster -> namespace -> RayCluster picker (built on first use)."""
        if self._picker is None:
            from hyperpod_rl.widgets.hyperpod_picker import HyperPodPicker

            self._picker = HyperPodPicker(on_pick=self.guard(self.use_raycluster), on_namespace=self.guard(self.use_namespace))
        return self._picker

    def use_namespace(self, hyperpod_cluster: str, namespace: str, api_client: Any) -> None:
        """Work in a picked namespace of a HyperPod cluster: form namespace and ``hyperpod_cluster``, Kubernetes client."""
        from hyperpod_rl.cluster.kube import RayClusterClient

        self.kube = RayClusterClient(api_client)
        self.form.set_value({"namespace": namespace, "hyperpod_cluster": hyperpod_cluster or None})

    def use_raycluster(self, address: str, api_client: Any) -> None:
        """Work on a picked RayCluster: form name/namespace, Kubernetes client, endpoint-operator probe."""
        from hyperpod_rl.cluster.access import HyperPodDashboard, parse_address
        from hyperpod_rl.cluster.kube import RayClusterClient

        parsed = parse_address(address)
        self.address = address
        self.kube = RayClusterClient(api_client)
        access = HyperPodDashboard(parsed.raycluster, parsed.namespace, api_client=api_client)
        self.dashboard = access.probe
        self.form.set_value({"name": parsed.raycluster, "namespace": parsed.namespace})
        if self.on_cluster is not None:
            self.on_cluster(access)
        self.refresh()

    # ----- actions ----------------------------------------------------------------------------
    def spec(self) -> ClusterSpec:
        """The validated spec of the form (HyperPod kind).

        Raises:
            ConfigError: every invalid field, one line each.
        """
        return ClusterSpec.parse(self.form.to_dict())

    def _kube(self) -> Any:
        if self.kube is None:
            from hyperpod_rl.errors import ClusterError

            raise ClusterError("no Kubernetes client: pass kube=RayClusterClient(eks_api_client('<EKS cluster>')) to ClusterPanel")
        return self.kube

    def apply(self) -> None:
        """Local: start (or reuse) the embedded cluster. HyperPod: apply the RayCluster."""
        self.clear_errors()
        if self.kind.value == "local":
            from hyperpod_rl.cluster.local import start_local_cluster

            self._show("starting", "starting the local Ray cluster ...")
            self.cluster = start_local_cluster(num_cpus=self.num_cpus)
            self.refresh()
            return
        spec = self.spec()
        self._kube().apply(spec)
        self._show(
            "applied",
            f"applied RayCluster {escape(spec.namespace)}/{escape(spec.name)}; press Wait",
        )

    def wait(self) -> None:
        """Block (call it from a background thread; the Wait button does) until usable.

        Raises:
            ClusterError: the local job API does not answer, or the RayCluster fails/times out.
        """
        if self.kind.value == "local":
            from hyperpod_rl.cluster.local import wait_for_local_cluster

            self.cluster = wait_for_local_cluster(timeout_s=min(self.wait_timeout_s, 120.0))
            self.refresh()
            return
        spec = self.spec()
        kube = self._kube()
        dashboard = self.dashboard
        if dashboard is None:
            from hyperpod_rl.cluster.probe import dashboard_probe

            dashboard = dashboard_probe(self.via, kube.api_client, spec.name, spec.namespace, address=self.address)
        self.report = kube.wait_ready(
            spec.name,
            spec.namespace,
            timeout_s=self.wait_timeout_s,
            dashboard=dashboard,
            on_report=self._show_report,
        )
        self._show_report(self.report)

    def delete(self) -> None:
        """Local: stop this cluster's processes. HyperPod: delete the RayCluster."""
        self.clear_errors()
        if self.kind.value == "local":
            cluster = self.cluster or current_local_cluster()
            if cluster is not None:
                cluster.stop()
            self.cluster = None
            self.refresh()
            return
        spec = self.spec()
        gone = self._kube().delete(spec.name, spec.namespace)
        self._show(
            "deleting" if gone else "not found",
            f"RayCluster {escape(spec.namespace)}/{escape(spec.name)}: {'deleting' if gone else 'not found'}",
        )

    def refresh(self) -> None:
        """Re-read the status (local: state file + job API probe; HyperPod: one report)."""
        if self.kind.value == "local":
            cluster = self.cluster or current_local_cluster()
            if cluster is not None and cluster.is_alive(timeout_s=2.0):
                self.cluster = cluster
                self._show(
                    "ready",
                    f"local Ray cluster ready · GCS <code>{escape(cluster.address)}</code>",
                )
                from hyperpod_rl.jupyter import browser_link

                self.link.value = browser_link(
                    cluster.dashboard_url, "Ray dashboard", note="token auth: the token is in the state file"
                ).html()
            else:
                self._show("stopped", "no local cluster running: press Apply to start one")
                self.link.value = ""
        elif self.kube is not None:
            spec = self.spec()
            self._show_report(self.kube.report(spec.name, spec.namespace, dashboard=self.dashboard))

    def _show(self, state: str, html_text: str) -> None:
        self.state = state
        self.status_html.value = html_text

    def _show_report(self, report: Any) -> None:
        self.report = report
        cond = "".join(f"<li>{escape(c.type)}: {escape(c.status)} {escape(c.reason)}</li>" for c in report.reading.conditions)
        pods = "".join(
            f"<tr><td>{escape(p.name)}</td><td>{escape(p.node_type)}/{escape(p.group)}</td><td>{escape(p.phase)}</td><td>{'ready' if p.ready else escape(p.reason)}</td></tr>"
            for p in report.pods
        )
        hints = "".join(f"<li>{escape(h)}</li>" for h in report.hints())
        self._show(
            report.status.value,
            f"<b>{escape(report.status.value)}</b> · {escape(report.reading.message)}<ul>{cond}</ul><table>{pods}</table><ul>{hints}</ul>",
        )
