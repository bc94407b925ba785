"""hyperpod-rl for JupyterLab: the prebuilt frontend (Runs sidebar, status-bar item, tutorial
launcher card) and a light Jupyter server extension that reads hyperpod-rl's run store, run
ledger and local cluster state, and Ray's job REST API.

The server extension runs in the Jupyter server's environment (in SageMaker Studio: ``/opt/conda``,
not the kernel's) and imports neither ``hyperpod_rl`` nor torch, Ray or the training stack; see
docs/labextension.md for why it reads the files directly instead of calling the CLI.

Server configuration (``jupyter_server_config.py``)::

    c.HyperpodRL.storage_root = "/fsx/hyperpod-rl"          # default: HYPERPOD_RL_STORAGE, else hyperpod-rl's data dir
    c.HyperpodRL.ledger_path = "/fsx/hyperpod-rl/ledger.sqlite"
    c.HyperpodRL.clusters = [{"name": "hp-ray", "dashboard_url": "https://...", "api_url": "http://127.0.0.1:8266",
                              "token_file": "~/.hyperpod-rl/hp-ray.token"}]
"""

from __future__ import annotations

from typing import Any

from traitlets import Dict, Float, List, Unicode
from traitlets.config import Configurable

try:
    from ._version import __version__
except ImportError:  # a source checkout that was never built
    __version__ = "dev"

__all__ = ["HyperpodRL", "__version__"]


class HyperpodRL(Configurable):
    """Server-side settings of the extension (all optional)."""

    storage_root = Unicode(
        "", config=True, help="hyperpod-rl storage root (holds runs/). Empty: HYPERPOD_RL_STORAGE, else <HYPERPOD_RL_HOME>/storage."
    )
    ledger_path = Unicode("", config=True, help="run ledger file. Empty: HYPERPOD_RL_LEDGER, else <HYPERPOD_RL_HOME>/ledger.sqlite.")
    clusters = List(
        Dict(),
        config=True,
        help="Ray clusters besides the local one: [{name, kind, dashboard_url, api_url, token_file}] "
        "(api_url: the job API reachable from this server, e.g. a port-forward; token_file: its Ray token).",
    )
    request_timeout_s = Float(5.0, config=True, help="timeout of each Ray job API request, seconds.")


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    return [{"src": "labextension", "dest": "hyperpod-rl-jupyterlab"}]


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "hyperpod_rl_jupyterlab"}]


def _load_jupyter_server_extension(server_app: Any) -> None:
    """Register the routes (called by Jupyter Server when the extension is enabled)."""
    from .handlers import setup_handlers
    from .service import ClusterEntry, RunsService
    from .tutorial import tutorial_sources

    cfg = HyperpodRL(config=server_app.config)
    known = {"name", "kind", "dashboard_url", "api_url", "token_file"}
    clusters = []
    for raw in cfg.clusters:
        unknown = set(raw) - known
        if unknown or not raw.get("name"):
            server_app.log.warning(
                "hyperpod-rl: ignoring a HyperpodRL.clusters entry: it needs a 'name' and only %s (unknown: %s)",
                sorted(known),
                sorted(unknown),
            )
            continue
        clusters.append(ClusterEntry(**raw))
    service = RunsService(
        base_url=server_app.web_app.settings["base_url"],
        clusters=clusters,
        storage_override=cfg.storage_root or None,
        ledger_override=cfg.ledger_path or None,
        timeout_s=cfg.request_timeout_s,
        version=__version__,
        tutorial_sources=tutorial_sources(),
    )
    setup_handlers(server_app.web_app, service)
    server_app.log.info("hyperpod-rl: registered the hyperpod-rl server extension %s", __version__)
