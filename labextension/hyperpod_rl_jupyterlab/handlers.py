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
the XSRF token on every non-GET request. Errors: unknown run -> 404; no storage root -> 503; a store
root that cannot be read -> 503; all with ``{"message": ..., "reason": ...}``. Every request value
is checked before any work starts, and a bad one is a 400 (``bad-request``) that says what to send
instead: a ``store`` or tutorial ``folder`` longer than a path may be (:data:`PATH_MAX_BYTES`),
holding a name longer than a file name may be (:data:`NAME_MAX_BYTES`) or a control character; a
``lines`` that is not a whole number; a ``preferred`` kernel name over :data:`MAX_NAME_CHARS`; a
body over :data:`MAX_BODY_BYTES`, that is not JSON, nests deeper than :data:`MAX_BODY_DEPTH`
levels, or is not a JSON object of the fields the route takes. Nothing returned or logged
carries a token, cookie or secret: every answer goes through one redactor (:mod:`._redact`,
the copy of ``hyperpod_rl.redact``: AWS credentials, presigned-URL signatures, the tokens this
server reads in their encodings).
"""

from __future__ import annotations

import json
import sys
from typing import Any

import tornado
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join

from ._redact import redact_json
from .kernels import KernelProbe
from .ray_api import RayAPIError
from .service import NotFound, RunsService, StoreMissing
from .tutorial import _maybe, copy_tutorial

__all__ = ["BadRequest", "MAX_BODY_BYTES", "MAX_BODY_DEPTH", "MAX_NAME_CHARS", "NAME_MAX_BYTES", "PATH_MAX_BYTES", "setup_handlers"]

RUN_ID = r"(?P<run_id>[^/]+)"

#: Longest file or folder name, and longest path, Linux file systems take (``NAME_MAX``, ``PATH_MAX``), bytes.
NAME_MAX_BYTES = 255
PATH_MAX_BYTES = 4096
#: Longest kernel name (``?preferred=``, the tutorial's ``kernel.name``) or display name, characters.
MAX_NAME_CHARS = 255
#: Most bytes of a POST body read (the tutorial route's ``{"folder", "kernel"}`` is well under 1 KiB).
MAX_BODY_BYTES = 64 * 1024
#: Deepest nesting of objects and arrays in a POST body (the tutorial's body nests 2 levels).
MAX_BODY_DEPTH = 8
#: Most characters of ``?lines=`` (a log line count).
MAX_LINES_CHARS = 9

_TUTORIAL_BODY = '{"folder": "hyperpod-rl-tutorial", "kernel": {"name": "python3"}}'


class BadRequest(Exception):
    """A request value the route cannot take: the route answers 400 with this message (what to send instead)."""


class NoTutorial(Exception):
    """This build ships no tutorial notebooks: the tutorial route answers 503."""


def path_problem(value: str, what: str) -> str | None:
    """Why ``value`` cannot be a path on this server (too long, a name too long, a control character), or ``None``."""
    bad = next((c for c in value if ord(c) < 32 or ord(c) == 127), None)
    if bad is not None:
        return f"{what} holds the control character {bad!r}: give a plain path"
    size = len(value.encode("utf-8", "surrogatepass"))
    if size > PATH_MAX_BYTES:
        return f"{what} is {size} bytes long; a path may be at most {PATH_MAX_BYTES} bytes: give a shorter path"
    for name in value.split("/"):
        length = len(name.encode("utf-8", "surrogatepass"))
        if length > NAME_MAX_BYTES:
            return (
                f"{what} holds a name of {length} bytes ({name[:24]!r}...); a file or folder name may be at most "
                f"{NAME_MAX_BYTES} bytes: give a path of shorter names"
            )
    return None


def json_depth(value: Any) -> int:
    """How deep objects and arrays nest in parsed JSON (a scalar: 0, ``{}``: 1), without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


class _Base(APIHandler):
    @property
    def service(self) -> RunsService:
        return self.settings["hyperpod_rl_service"]

    def store(self) -> str | None:
        """The ``?store=`` path, or ``None`` (raises :class:`BadRequest` for a path no file system takes)."""
        value = self.get_query_argument("store", None) or None
        if value is not None and (problem := path_problem(value, "store")):
            raise BadRequest(f"{problem} (the store root setting, Settings > Hyperpod RL)")
        return value

    def text_query(self, name: str, default: str, *, max_chars: int, example: str) -> str:
        """A short query value (raises :class:`BadRequest` naming the limit when it is longer)."""
        value = self.get_query_argument(name, default)
        if len(value) > max_chars:
            raise BadRequest(f"{name} is {len(value)} characters long; it may be at most {max_chars}: send e.g. ?{name}={example}")
        return value

    def json_object_body(self, example: str) -> dict[str, Any]:
        """The body as a JSON object (an empty body: ``{}``), bounded in size and nesting before use.

        Raises:
            BadRequest: over :data:`MAX_BODY_BYTES`, not JSON, nested deeper than
                :data:`MAX_BODY_DEPTH`, or not an object; the message shows ``example``.
        """
        raw = self.request.body or b""
        if len(raw) > MAX_BODY_BYTES:
            raise BadRequest(f"the body is {len(raw)} bytes; at most {MAX_BODY_BYTES} are read: send a small JSON object such as {example}")
        if not raw.strip():
            return {}
        deep = f"the body nests JSON deeper than {MAX_BODY_DEPTH} levels: send a flat JSON object such as {example}"
        try:
            body = json.loads(raw)
        except RecursionError:
            raise BadRequest(deep) from None
        except ValueError as err:
            if "digits" in str(err) and not isinstance(err, json.JSONDecodeError):  # valid JSON, a number json refuses
                raise BadRequest(
                    f"the body holds a number of more than {sys.get_int_max_str_digits()} digits: send a JSON object such as {example}"
                ) from None
            raise BadRequest(f"the body is not JSON (UTF-8): send a JSON object such as {example}") from None
        if json_depth(body) > MAX_BODY_DEPTH:
            raise BadRequest(deep)
        if body is None:
            return {}
        if not isinstance(body, dict):
            raise BadRequest(f"the body must be a JSON object such as {example}, got a {type(body).__name__}")
        return body

    def reply(self, data: Any) -> None:
        """Answer ``data`` as JSON, every string in it redacted (:func:`._redact.redact_json`)."""
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(redact_json(data, self.service.secrets())))

    async def guarded(self, produce) -> None:
        try:
            data = await produce()
        except BadRequest as err:
            self.set_status(400)
            return self.reply({"message": str(err), "reason": "bad-request"})
        except NotFound as err:
            self.set_status(404)
            return self.reply({"message": str(err), "reason": "not-found"})
        except StoreMissing as err:
            self.set_status(503)
            return self.reply({"message": str(err), "reason": "store-missing"})
        except NoTutorial as err:
            self.set_status(503)
            return self.reply({"message": str(err), "reason": "no-tutorial"})
        except RayAPIError as err:
            self.set_status(502)
            return self.reply({"message": str(err), "reason": "ray-api"})
        except OSError as err:  # the store root (or a file in it) cannot be read: permissions, a lost mount
            self.set_status(503)
            where = err.filename or "the store root"
            return self.reply(
                {
                    "message": f"cannot read {where} ({err.strerror or err}): check the store root setting (Settings > Hyperpod RL), "
                    "that the storage is mounted, and that this server's user may read it",
                    "reason": "store-unreadable",
                }
            )
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
        async def produce():
            text = self.text_query("lines", "200", max_chars=MAX_LINES_CHARS, example="200")
            try:
                lines = int(text)
            except ValueError:
                raise BadRequest("lines must be a whole number of log lines, e.g. ?lines=200") from None
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
            preferred = self.text_query("preferred", "", max_chars=MAX_NAME_CHARS, example="python3")
            specs = await _maybe(self.kernel_spec_manager.get_all_specs())
            return (await self.settings["hyperpod_rl_kernels"].kernels(specs, preferred)).to_json()

        await self.guarded(produce)


class TutorialHandler(_Base):
    @tornado.web.authenticated
    async def post(self) -> None:
        async def produce():
            body = self.json_object_body(_TUTORIAL_BODY)
            folder, kernel = tutorial_request(body)
            sources = self.service.tutorial_sources
            if sources is None or not any(sources[0].glob("*.ipynb")):
                raise NoTutorial("this build of hyperpod-rl-jupyterlab ships no tutorial notebooks")
            return (await copy_tutorial(self.contents_manager, sources[0], sources[1], folder, kernel=kernel)).to_json()

        await self.guarded(produce)


def tutorial_request(body: dict[str, Any]) -> tuple[str, dict[str, str] | None]:
    """``(folder, kernel)`` of a tutorial request body, each checked.

    ``folder`` (default ``hyperpod-rl-tutorial``) is a relative path inside the server's root,
    without ``..``, that a file system takes (:func:`path_problem`); ``kernel`` is ``None`` or
    ``{"name", "display_name"}`` texts of at most :data:`MAX_NAME_CHARS` characters.

    Raises:
        BadRequest: naming the field and what to send.
    """
    folder = body.get("folder") or "hyperpod-rl-tutorial"
    if not isinstance(folder, str):
        raise BadRequest(f'folder must be text such as "hyperpod-rl-tutorial", got a {type(folder).__name__}')
    if folder.startswith("/") or ".." in folder.split("/"):
        raise BadRequest(f"folder {folder[:80]!r} must be a path inside the server's root, without '..'")
    if problem := path_problem(folder, "folder"):
        raise BadRequest(problem)
    kernel = body.get("kernel")
    if kernel is None:
        return folder, None
    if not isinstance(kernel, dict):
        raise BadRequest(
            f'kernel must be an object such as {{"name": "python3", "display_name": "Python 3"}}, got a {type(kernel).__name__}'
        )
    out: dict[str, str] = {}
    for key in ("name", "display_name"):
        value = kernel.get(key)
        if value is None:
            continue
        if not isinstance(value, str) or len(value) > MAX_NAME_CHARS:
            shown = f"{len(value)} characters" if isinstance(value, str) else f"a {type(value).__name__}"
            raise BadRequest(f"kernel.{key} must be text of at most {MAX_NAME_CHARS} characters (a kernel's name), got {shown}")
        out[key] = value
    return folder, out or None


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
