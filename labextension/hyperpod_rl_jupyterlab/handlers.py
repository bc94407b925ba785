"""Tornado handlers: thin over :class:`.service.RunsService`; every verb is authenticated.

Routes, under the server's base URL (``/jupyterlab/default/`` in Studio):

=========================================== ======================================================
``GET  hyperpod-rl/status``                  what the extension sees (store, ledger, proxy, tutorial)
``GET  hyperpod-rl/runs``                    every run, newest first, and how many are running
``GET  hyperpod-rl/runs/<run_id>``           one run
``GET  hyperpod-rl/runs/<run_id>/logs``      tail of the latest job log (``?lines=N``, secrets redacted)
``POST hyperpod-rl/runs/<run_id>/stop``      stop the latest job through Ray's job API
``GET  hyperpod-rl/adapters``                trained adapters with their promotion decision
``GET  hyperpod-rl/clusters``                clusters with browser-openable dashboard links
``POST hyperpod-rl/clusters/<name>/token``   the cluster's Ray token, for the sidebar's Copy token
``GET  hyperpod-rl/kernels``                 kernels that can import hyperpod_rl, and the one to use
``POST hyperpod-rl/tutorial``                copy the tutorial notebooks into the user's folder
=========================================== ======================================================

Every route takes ``?store=<path>`` (the sidebar's "store root" setting). ``APIHandler`` checks
the XSRF token on every non-GET request. Errors: unknown run -> 404; no storage root -> 503; both
with ``{"message": ...}``; a body that is not a JSON object -> 400. Nothing returned or logged
carries a token, cookie or secret: every answer goes through one redactor (:mod:`._redact`,
the copy of ``hyperpod_rl.redact``: AWS credentials, presigned-URL signatures, the tokens this
server reads in their encodings).
"""

from __future__ import annotations

import json
from typing import Any

import tornado
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join

from ._redact import redact_json
from .kernels import KernelProbe
from .ray_api import RayAPIError
from .service import NotFound, RunsService, StoreMissing
from .tutorial import _maybe, copy_tutorial

__all__ = ["setup_handlers"]

RUN_ID = r"(?P<run_id>[^/]+)"


class _Base(APIHandler):
    @property
    def service(self) -> RunsService:
        return self.settings["hyperpod_rl_service"]

    def store(self) -> str | None:
        return self.get_query_argument("store", None) or None

    def reply(self, data: Any) -> None:
        """Answer ``data`` as JSON, every string in it redacted (:func:`._redact.redact_json`)."""
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(redact_json(data, self.service.secrets())))

    async def guarded(self, produce) -> None:
        try:
            data = await produce()
        except NotFound as err:
            self.set_status(404)
            return self.reply({"message": str(err), "reason": "not-found"})
        except StoreMissing as err:
            self.set_status(503)
            return self.reply({"message": str(err), "reason": "store-missing"})
        except RayAPIError as err:
            self.set_status(502)
            return self.reply({"message": str(err), "reason": "ray-api"})
        self.reply(data)


class StatusHandler(_Base):
    @tornado.web.authenticated
    async def get(self) -> None:
        async def produce():
            return self.service.status(self.store()).to_json()

        await self.guarded(produce)


class RunsHandler(_Base):
    @tornado.web.authenticated
    async def get(self) -> None:
        async def produce():
            return (await self.service.runs(self.store())).to_json()

        await self.guarded(produce)


class RunHandler(_Base):
    @tornado.web.authenticated
    async def get(self, run_id: str) -> None:
        async def produce():
            return (await self.service.run(run_id, self.store())).to_json()

        await self.guarded(produce)


class LogsHandler(_Base):
    @tornado.web.authenticated
    async def get(self, run_id: str) -> None:
        try:
            lines = int(self.get_query_argument("lines", "200"))
        except ValueError:
            self.set_status(400)
            return self.reply({"message": "lines must be a whole number of log lines, e.g. ?lines=200", "reason": "bad-request"})

        async def produce():
            return (await self.service.logs(run_id, lines=lines, store=self.store())).to_json()

        await self.guarded(produce)


class StopHandler(_Base):
    @tornado.web.authenticated
    async def post(self, run_id: str) -> None:
        async def produce():
            result = await self.service.stop(run_id, self.store())
            self.log.info("hyperpod-rl: stop requested for run %s (%s): stopped=%s", run_id, result.submission_id, result.stopped)
            return result.to_json()

        await self.guarded(produce)


class AdaptersHandler(_Base):
    @tornado.web.authenticated
    async def get(self) -> None:
        async def produce():
            return {"adapters": [a.to_json() for a in await self.service.adapters(self.store())]}

        await self.guarded(produce)


class ClustersHandler(_Base):
    @tornado.web.authenticated
    async def get(self) -> None:
        async def produce():
            return {"clusters": [c.to_json() for c in await self.service.clusters_info()]}

        await self.guarded(produce)


class TokenHandler(_Base):
    """The one route that returns a secret: POST (XSRF-checked), authenticated, never logged."""

    def reply(self, data: Any) -> None:
        """Answer ``data`` redacted as every route's, but for the ``token`` it exists to give."""
        token = data.pop("token", None) if isinstance(data, dict) else None
        answer = redact_json(data, self.service.secrets())
        if token is not None:
            answer["token"] = token
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(answer))

    @tornado.web.authenticated
    async def post(self, name: str) -> None:
        async def produce():
            return {"name": name, "token": self.service.cluster_token(name)}

        self.set_header("Cache-Control", "no-store")
        await self.guarded(produce)


class KernelsHandler(_Base):
    @tornado.web.authenticated
    async def get(self) -> None:
        async def produce():
            specs = await _maybe(self.kernel_spec_manager.get_all_specs())
            return (await self.settings["hyperpod_rl_kernels"].kernels(specs, self.get_query_argument("preferred", ""))).to_json()

        await self.guarded(produce)


class TutorialHandler(_Base):
    @tornado.web.authenticated
    async def post(self) -> None:
        body = self.get_json_body()
        body = {} if body is None else body  # no body: the default folder
        if not isinstance(body, dict):
            self.set_status(400)
            return self.reply(
                {
                    "message": f'the body must be a JSON object such as {{"folder": "hyperpod-rl-tutorial"}}, got a {type(body).__name__}',
                    "reason": "bad-request",
                }
            )
        folder = str(body.get("folder") or "hyperpod-rl-tutorial")
        if folder.startswith("/") or ".." in folder.split("/"):
            self.set_status(400)
            return self.reply(
                {"message": f"folder {folder!r} must be a path inside the server's root, without '..'", "reason": "bad-request"}
            )
        sources = self.service.tutorial_sources
        if sources is None or not any(sources[0].glob("*.ipynb")):
            self.set_status(503)
            return self.reply({"message": "this build of hyperpod-rl-jupyterlab ships no tutorial notebooks", "reason": "no-tutorial"})
        kernel = body.get("kernel") if isinstance(body.get("kernel"), dict) else None
        result = await copy_tutorial(self.contents_manager, sources[0], sources[1], folder, kernel=kernel)
        self.reply(result.to_json())


def setup_handlers(web_app: Any, service: RunsService) -> None:
    """Add the routes under the server's base URL."""
    web_app.settings["hyperpod_rl_service"] = service
    web_app.settings.setdefault("hyperpod_rl_kernels", KernelProbe())
    base = url_path_join(web_app.settings["base_url"], "hyperpod-rl")
    routes = [
        (url_path_join(base, "status"), StatusHandler),
        (url_path_join(base, "runs"), RunsHandler),
        (url_path_join(base, "runs", RUN_ID), RunHandler),
        (url_path_join(base, "runs", RUN_ID, "logs"), LogsHandler),
        (url_path_join(base, "runs", RUN_ID, "stop"), StopHandler),
        (url_path_join(base, "adapters"), AdaptersHandler),
        (url_path_join(base, "clusters"), ClustersHandler),
        (url_path_join(base, "clusters", r"(?P<name>[A-Za-z0-9_.-]+)", "token"), TokenHandler),
        (url_path_join(base, "kernels"), KernelsHandler),
        (url_path_join(base, "tutorial"), TutorialHandler),
    ]
    web_app.add_handlers(".*$", routes)
