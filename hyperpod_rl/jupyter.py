"""Where this notebook runs: the Jupyter server behind the kernel, SageMaker Studio, and links a browser can open.

- :func:`current_server` finds the Jupyter server that started this kernel (its
  ``jpserver-<pid>.json`` runtime file, matched by ``JPY_PARENT_PID``, which jupyter_client sets in
  every kernel's environment), so links know the server's base URL. The kernel and the server may
  live in different environments (in Studio the server runs from ``/opt/conda`` and this library
  in its own kernel venv); they share the user's runtime directory.
- :func:`studio_space` reads SageMaker Studio's ``/opt/ml/metadata/resource-metadata.json``
  (domain, space or user profile, app name, execution role when present). ``HYPERPOD_RL_STUDIO_METADATA``
  points elsewhere (tests).
- :func:`browser_link` turns a local address (``http://127.0.0.1:8265``, the Ray dashboard; the
  local Serve endpoint) into ``<base_url>proxy/<port>/``, the path jupyter-server-proxy serves on
  the JupyterLab origin. Absolute links to ``127.0.0.1`` do not open from a browser in Studio:
  the browser is not on the space's machine. Remote ``https`` links pass through unchanged.
- :func:`server_frontends` asks the server which JupyterLab extensions its page loads (the
  ``jupyter-config-data`` of ``<base_url>lab``), so a kernel can tell that anywidget's frontend
  is missing from the *server* environment even when the kernel has anywidget.

Facts (SageMaker Distribution 4.4-4.5, docs/studio.md): the Studio server runs with
``--ServerApp.base_url=/jupyterlab/default`` and jupyter-server-proxy 4.5.
"""

from __future__ import annotations

import html
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

__all__ = [
    "STUDIO_BASE_URL",
    "STUDIO_METADATA",
    "JupyterServer",
    "Link",
    "ServerFrontends",
    "StudioSpace",
    "browser_link",
    "current_server",
    "server_frontends",
    "studio_space",
]

STUDIO_METADATA = "/opt/ml/metadata/resource-metadata.json"
"""Where Studio writes the space's metadata (``HYPERPOD_RL_STUDIO_METADATA`` overrides)."""
STUDIO_BASE_URL = "/jupyterlab/default/"
"""Base URL of Studio's JupyterLab app."""
_LOOPBACK = {"127.0.0.1", "localhost", "::1", "0.0.0.0"}
_CONFIG_DATA = re.compile(r'<script id="jupyter-config-data" type="application/json">(.*?)</script>', re.S)


@dataclass(frozen=True)
class StudioSpace:
    """The Studio space this kernel runs in (from ``resource-metadata.json``).

    Attributes:
        domain_id: ``DomainId``, e.g. ``d-abc123``.
        space_name: ``SpaceName`` (or the ``UserProfileName`` in older layouts).
        app_name: ``ResourceName``, e.g. ``default``.
        execution_role_arn: ``ExecutionRoleArn`` when the metadata carries it, else ``""``.
        path: the metadata file read.
    """

    domain_id: str
    space_name: str
    app_name: str
    execution_role_arn: str
    path: str


def studio_space(path: str | os.PathLike[str] | None = None) -> StudioSpace | None:
    """The Studio space, or None outside Studio (no metadata file, or one that is not JSON).

    Args:
        path: metadata file; default ``HYPERPOD_RL_STUDIO_METADATA`` or :data:`STUDIO_METADATA`.
    """
    where = Path(path or os.environ.get("HYPERPOD_RL_STUDIO_METADATA") or STUDIO_METADATA)
    try:
        data = json.loads(where.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    return StudioSpace(
        domain_id=str(data.get("DomainId", "")),
        space_name=str(data.get("SpaceName") or data.get("UserProfileName") or ""),
        app_name=str(data.get("ResourceName", "")),
        execution_role_arn=str(data.get("ExecutionRoleArn", "")),
        path=str(where),
    )


@dataclass(frozen=True)
class JupyterServer:
    """The Jupyter server behind this kernel.

    Attributes:
        base_url: always starts and ends with ``/`` (``/jupyterlab/default/`` in Studio).
        url: the server's own address as it reports it (``http://127.0.0.1:8888/jupyterlab/default/``),
            reachable from this machine, not necessarily from the browser; ``""`` when unknown.
        token: the server's token (never shown; ``""`` in Studio).
        pid: the server's process id, 0 when unknown.
    """

    base_url: str
    url: str = ""
    token: str = ""
    pid: int = 0

    def __repr__(self) -> str:  # never show the token
        return f"JupyterServer(base_url={self.base_url!r}, url={self.url!r}, pid={self.pid})"

    def proxy_path(self, port: int) -> str:
        """``<base_url>proxy/<port>/``: the jupyter-server-proxy path of a local port."""
        return f"{self.base_url}proxy/{int(port)}/"


def _norm_base(base: str) -> str:
    base = "/" + base.strip("/")
    return base if base == "/" else base + "/"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _runtime_dir() -> Path:
    try:
        from jupyter_core.paths import jupyter_runtime_dir

        return Path(jupyter_runtime_dir())
    except ImportError:
        return Path(os.environ.get("JUPYTER_RUNTIME_DIR") or Path.home() / ".local/share/jupyter/runtime")


def current_server(*, runtime_dir: str | os.PathLike[str] | None = None) -> JupyterServer | None:
    """The Jupyter server that started this kernel, or None (a plain Python process or terminal).

    Order: ``HYPERPOD_RL_JUPYTER_BASE_URL`` (explicit); the runtime file of the server whose pid is
    ``JPY_PARENT_PID``; the only live server in the runtime directory; Studio's base URL when
    :func:`studio_space` finds Studio (a terminal in a Studio space).

    Args:
        runtime_dir: where ``jpserver-<pid>.json`` files are (default: Jupyter's runtime dir).
    """
    explicit = os.environ.get("HYPERPOD_RL_JUPYTER_BASE_URL")
    if explicit:
        return JupyterServer(base_url=_norm_base(explicit))
    folder = Path(runtime_dir) if runtime_dir else _runtime_dir()
    infos: list[dict[str, Any]] = []
    for path in sorted(folder.glob("jpserver-*.json")) if folder.is_dir() else []:
        try:
            info = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(info, dict) and isinstance(info.get("pid"), int) and _alive(info["pid"]):
            infos.append(info)
    parent = os.environ.get("JPY_PARENT_PID", "")
    chosen = next((i for i in infos if str(i["pid"]) == parent), None)
    if chosen is None and len(infos) == 1:
        chosen = infos[0]
    if chosen is not None:
        return JupyterServer(
            base_url=_norm_base(str(chosen.get("base_url") or "/")),
            url=str(chosen.get("url") or ""),
            token=str(chosen.get("token") or ""),
            pid=int(chosen["pid"]),
        )
    if studio_space() is not None:
        return JupyterServer(base_url=STUDIO_BASE_URL)
    return None


@dataclass(frozen=True)
class Link:
    """A link to show a person.

    Attributes:
        href: what the browser opens: a path on the JupyterLab origin (``/jupyterlab/default/proxy/8265/``)
            or an absolute ``https`` URL.
        label: the link text.
        note: a short hint shown beside it (e.g. how to log in), may be ``""``.
    """

    href: str
    label: str
    note: str = ""

    def html(self) -> str:
        """An ``<a target=_blank>`` element (escaped) with the note after it."""
        note = f" <span style='color:#666'>({html.escape(self.note)})</span>" if self.note else ""
        return f"<a href='{html.escape(self.href, quote=True)}' target='_blank' rel='noopener'>{html.escape(self.label)}</a>{note}"

    def text(self) -> str:
        """``label: href (note)`` for a terminal."""
        note = f" ({self.note})" if self.note else ""
        return f"{self.label}: {self.href}{note}"


def browser_link(address: str, label: str, *, note: str = "", server: JupyterServer | None | bool = True) -> Link:
    """A link to ``address`` that a browser showing this JupyterLab can open.

    Args:
        address: e.g. ``http://127.0.0.1:8265`` (Ray dashboard), ``http://127.0.0.1:8000/v1`` (Serve),
            or a remote ``https://...`` URL.
        label: link text.
        note: hint shown beside the link.
        server: the Jupyter server (default ``True``: :func:`current_server`); ``None``/``False``
            means no Jupyter server, so local links stay as they are (a terminal on a laptop).

    Returns:
        A :class:`Link`: a loopback address becomes ``<base_url>proxy/<port>/<path>`` when a
        Jupyter server is known; other addresses are returned unchanged.
    """
    if server is True:
        server = current_server()
    parts = urlsplit(address)
    if not server or parts.hostname not in _LOOPBACK or parts.port is None:
        return Link(address, label, note)
    rest = parts.path.lstrip("/")
    query = f"?{parts.query}" if parts.query else ""
    return Link(server.proxy_path(parts.port) + rest + query, label, note)


@dataclass(frozen=True)
class ServerFrontends:
    """What the server's JupyterLab page loads.

    Attributes:
        jupyterlab_version: the server's JupyterLab version (``appVersion``), ``""`` when not given.
        extensions: prebuilt (federated) extension name -> enabled.
    """

    jupyterlab_version: str
    extensions: dict[str, bool]

    def enabled(self, name: str) -> bool:
        """True when the extension is installed in the server and not disabled."""
        return self.extensions.get(name, False)


def server_frontends(server: JupyterServer | None = None, *, timeout_s: float = 5.0) -> ServerFrontends | None:
    """The JupyterLab extensions the server's page loads, and the server's JupyterLab version.

    Reads the ``jupyter-config-data`` JSON of ``GET <url>lab`` (``appVersion``,
    ``federated_extensions``, ``disabledExtensions``), the same list the browser gets. An
    extension named in ``disabledExtensions`` (``jupyter labextension disable``) counts as not
    enabled.

    Args:
        server: default :func:`current_server`; its ``url`` must be known.
        timeout_s: HTTP timeout in seconds.

    Returns:
        :class:`ServerFrontends`, or None when there is no reachable server.
    """
    import requests

    server = server or current_server()
    if server is None or not server.url:
        return None
    headers = {"Authorization": f"token {server.token}"} if server.token else {}
    try:
        resp = requests.get(server.url.rstrip("/") + "/lab", headers=headers, timeout=timeout_s)
    except requests.RequestException:
        return None
    match = _CONFIG_DATA.search(resp.text) if resp.status_code == 200 else None
    if match is None:
        return None
    try:
        data = json.loads(html.unescape(match.group(1)))
    except ValueError:
        return None
    disabled = data.get("disabledExtensions") or []
    if isinstance(disabled, dict):  # older page configs: {name: true}
        disabled = [k for k, v in disabled.items() if v]
    extensions: dict[str, bool] = {}
    for ext in data.get("federated_extensions") or []:
        name = str(ext.get("name", ""))
        extensions[name] = not any(name == d or str(d).startswith(name + ":") for d in disabled)
    return ServerFrontends(jupyterlab_version=str(data.get("appVersion") or ""), extensions=extensions)
