"""Local serving: a Ray Serve deployment with an OpenAI-style ``/v1/chat/completions`` route.

The deployment loads the base model once (transformers, CPU) and every adapter beside it with
peft (``load_adapter`` under its name); a request picks one with ``model``: the adapter name,
or ``"base"`` for the base model with adapters disabled. Image parts are OpenAI
``image_url`` parts carrying ``data:image/png;base64,...`` URLs.

The route speaks OpenAI's chat-completions format, so the official ``openai`` SDK works
against it unchanged (``tests/serve/test_openai_sdk.py``):

- the answer is an OpenAI ``chat.completion`` with ``usage`` = ``prompt_tokens`` (chat template
  text plus vision tokens), ``completion_tokens`` and ``total_tokens``;
- ``stream=True`` answers with server-sent events in OpenAI's ``chat.completion.chunk`` format
  (a role chunk, the content, a chunk with ``finish_reason``, a ``usage`` chunk when
  ``stream_options.include_usage`` is set, then ``data: [DONE]``). The move is computed in one
  forward pass (one token is sampled), so the content arrives in one chunk;
- every error body is OpenAI's ``{"error": {"message", "type", "code", "param"}}``.

Input is bounded before it is read. Bad requests get a 4xx with a message that says what to
fix and names the limit, and never take the replica down: 400 for malformed JSON or JSON nested
deeper than :data:`MAX_JSON_DEPTH` levels (measured without recursion before anything walks it),
sampling values at their extremes (a ``temperature`` other than 0 outside
:data:`~hyperpod_rl.config.sections.MIN_TEMPERATURE`..:data:`~hyperpod_rl.config.sections.MAX_TEMPERATURE`,
inf or nan, a ``seed`` outside signed 64-bit integers), a ``model`` name over
:data:`MAX_NAME_CHARS` characters, bad base64, a request without an image, more than :data:`MAX_IMAGES_PER_REQUEST` images (``too_many_images``),
a prompt over :data:`MAX_PROMPT_TOKENS` tokens or the model's context (``context_length_exceeded``),
``max_tokens`` beyond the model's room for the prompt (``max_tokens_too_large``) or below one
constrained answer (``max_tokens_too_small``), or ``n`` other than 1; 404 for an unknown model
(``model_not_found``); 413 for a body over :data:`MAX_BODY_BYTES` (from ``Content-Length``
before a byte is read, and while a chunked body streams in) or an image over
:data:`MAX_IMAGE_PX` px per side or :data:`MAX_IMAGE_PIXELS` pixels. The image size is read from
the image header before any pixel is decoded, so a small PNG that declares 20,000 x 20,000 px
is refused unread. ``max_tokens`` (or ``max_completion_tokens``) caps free decoding. A failure
inside the server is a 500 whose message carries only a request id (also the ``x-request-id``
header); the exception and its traceback go to the replica's log under that id, never to the
client. Images are decoded as in training (:func:`hyperpod_rl.tasks.to_rgb`): transparency is
composited onto white, as vLLM does; a 16-bit grayscale image is scaled to 8 bits, and a 32-bit
integer or floating-point one is refused with a 400 ``invalid_image`` that says so.

Every adapter passes :func:`hyperpod_rl.serve.preflight.preflight` (against
:data:`~hyperpod_rl.serve.preflight.LOCAL_SERVER`) before the deploy job is even submitted, and
again in the job before Serve starts.
"""

# No `from __future__ import annotations`: FastAPI must resolve the handlers' annotations.

import asyncio
import base64
import binascii
import json
import logging
import re
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from hyperpod_rl.base import Seed, json_problem, listed, nesting_depth
from hyperpod_rl.config.sections import MAX_TEMPERATURE, MIN_TEMPERATURE

__all__ = [
    "MAX_BODY_BYTES",
    "MAX_JSON_DEPTH",
    "MAX_NAME_CHARS",
    "MAX_IMAGES_PER_REQUEST",
    "MAX_IMAGE_PIXELS",
    "MAX_IMAGE_PX",
    "MAX_PROMPT_TOKENS",
    "APP_NAME_PATTERN",
    "SERVE_APP_NAME",
    "ChatRequest",
    "openai_error",
    "action_constraint_of",
    "build_app",
    "check_adapters",
    "deploy_local",
    "REPLICA_ENV",
    "bind_replica_grpc_to_loopback",
    "route_prefix",
    "run_app",
    "serve_run",
    "shutdown_local",
]

SERVE_APP_NAME = "hyperpod-rl"
#: What an application name may be (it is also its route prefix, ``/<name>``, unless the default).
APP_NAME_PATTERN = re.compile(r"[a-z0-9][a-z0-9-]{0,62}")


def route_prefix(app_name: str = SERVE_APP_NAME) -> str:
    """The HTTP route prefix of a serving app: ``/`` for :data:`SERVE_APP_NAME` (``hyperpod-rl serve up``),
    ``/<app_name>`` for any other, so apps of different owners (a notebook's, the CLI's) run side by
    side on one Serve instance (Ray Serve requires a distinct prefix per application).

    Raises:
        ConfigError: ``app_name`` is not lowercase letters, digits and ``-`` (at most 63).
    """
    from hyperpod_rl.errors import ConfigError

    if not APP_NAME_PATTERN.fullmatch(app_name):
        raise ConfigError(f"serving app name {app_name!r} must be lowercase letters, digits and '-' (at most 63), e.g. 'tutorial-01'")
    return "/" if app_name == SERVE_APP_NAME else f"/{app_name}"


#: Largest image side accepted, in pixels (maze images are 160-480 px).
MAX_IMAGE_PX = 2048
#: Most pixels of one image (width x height), checked from the image header before any pixel is
#: decoded, so a small file that declares a huge image (a decompression bomb) is refused unread.
MAX_IMAGE_PIXELS = MAX_IMAGE_PX * MAX_IMAGE_PX
#: Most images in one request (the client sends the latest observation: one image per turn).
MAX_IMAGES_PER_REQUEST = 8
#: Most prompt tokens (chat template text plus vision tokens) one request may hold; the model's
#: context length lowers it where it is shorter.
MAX_PROMPT_TOKENS = 8192
#: Largest request body accepted, in bytes: refused from the ``Content-Length`` header before
#: the body is read, and while it streams in when there is no such header.
MAX_BODY_BYTES = 16 * 1024 * 1024
#: Deepest nesting of objects and arrays in a request body (a chat request nests 5 levels; tool
#: schemas of OpenAI clients a few more): measured before the request is validated.
MAX_JSON_DEPTH = 32
#: Longest ``model`` name and content part ``type`` accepted, in characters.
MAX_NAME_CHARS = 256


class _Part(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: str = Field(..., max_length=MAX_NAME_CHARS)
    text: str | None = None
    image_url: dict[str, Any] | str | None = None


class _Message(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: Literal["system", "user", "assistant"]
    content: str | list[_Part]


class ChatRequest(BaseModel):
    """The subset of OpenAI's chat-completions request this server honours."""

    model_config = ConfigDict(extra="allow", allow_inf_nan=False)
    model: str = Field(..., max_length=MAX_NAME_CHARS, description="adapter name, or 'base'")
    messages: list[_Message] = Field(..., min_length=1)
    temperature: float = Field(0.0, ge=0.0, le=MAX_TEMPERATURE, description=f"0 = greedy; else from {MIN_TEMPERATURE} to {MAX_TEMPERATURE}")
    max_tokens: int | None = Field(None, gt=0, description="most completion tokens (refused beyond the model's room)")
    max_completion_tokens: int | None = Field(None, gt=0, description="OpenAI's newer name for max_tokens (wins when both are set)")
    seed: Seed | None = Field(None, description="sampling seed, a signed 64-bit integer")
    n: int = Field(1, description="choices per request; only 1 is served")
    stream: bool = Field(False, description="answer with server-sent events (chat.completion.chunk)")
    stream_options: dict[str, Any] | None = Field(None, description="{'include_usage': true} adds a usage chunk")

    @field_validator("temperature")
    @classmethod
    def _sampleable(cls, value: float) -> float:
        if 0 < value < MIN_TEMPERATURE:
            raise ValueError(
                "too small to sample with (the logits divided by it overflow): "
                f"send 0 for greedy decoding, or a temperature from {MIN_TEMPERATURE} to {MAX_TEMPERATURE}"
            )
        return value


#: OpenAI error ``type`` per HTTP status (``openai`` SDK: ``BadRequestError`` 400,
#: ``NotFoundError`` 404, ``UnprocessableEntityError`` 422, ``InternalServerError`` >= 500).
_ERROR_TYPES = {400: "invalid_request_error", 404: "invalid_request_error", 413: "invalid_request_error", 422: "invalid_request_error"}


def openai_error(status: int, message: str, code: str | None = None) -> dict[str, Any]:
    """The body of an error answer in OpenAI's shape.

    Args:
        status: the HTTP status (picks ``type``: ``invalid_request_error`` for 4xx,
            ``server_error`` for 5xx).
        message: what is wrong and what to change.
        code: a machine-readable code, e.g. ``"model_not_found"``.

    Returns:
        ``{"error": {"message", "type", "code", "param"}}`` (``param`` is always ``None``).
    """
    kind = _ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    return {"error": {"message": message, "type": kind, "code": code, "param": None}}


def _decode_images(req: ChatRequest) -> list[dict[str, Any]]:
    """Messages in the policy's format, with images decoded and checked (raises ValueError / LookupError)."""
    from PIL import Image

    from hyperpod_rl.errors import TaskError
    from hyperpod_rl.tasks import open_image, to_rgb

    out: list[dict[str, Any]] = []
    images = 0
    for msg in req.messages:
        if isinstance(msg.content, str):
            out.append({"role": msg.role, "content": msg.content})
            continue
        parts: list[dict[str, Any]] = []
        for part in msg.content:
            if part.type == "text":
                parts.append({"type": "text", "text": part.text or ""})
            elif part.type == "image_url":
                url = part.image_url.get("url") if isinstance(part.image_url, dict) else part.image_url
                if not isinstance(url, str) or not url.startswith("data:image/") or "," not in url:
                    raise ValueError("image_url must be a data URL: data:image/png;base64,<base64 bytes>")
                try:
                    raw = base64.b64decode(url.split(",", 1)[1], validate=True)
                except (binascii.Error, ValueError):
                    raise ValueError("image_url data is not valid base64: encode the PNG bytes with base64") from None
                if images >= MAX_IMAGES_PER_REQUEST:
                    raise OverflowError(
                        f"the request has more than {MAX_IMAGES_PER_REQUEST} images; the limit is {MAX_IMAGES_PER_REQUEST} per request: "
                        "send the latest observation only"
                    )
                try:
                    img = open_image(raw)  # reads the header only
                except Image.DecompressionBombError:  # PIL's own check, from the header: far above our limit
                    raise OverflowError(
                        f"image declares more than {2 * (Image.MAX_IMAGE_PIXELS or 0)} pixels; the limit is {MAX_IMAGE_PIXELS} pixels "
                        f"({MAX_IMAGE_PX} px per side): downscale it"
                    ) from None
                except TaskError as err:
                    raise ValueError(f"image_url data: {err}") from None
                width, height = img.size
                if max(width, height) > MAX_IMAGE_PX or width * height > MAX_IMAGE_PIXELS:
                    raise OverflowError(
                        f"image is {width}x{height} px; the limit is {MAX_IMAGE_PX} px per side and {MAX_IMAGE_PIXELS} pixels: downscale it"
                    )
                try:  # decoded as in training: 16-bit scaled to 8 bits or refused, transparency onto white (as vLLM)
                    parts.append({"type": "image", "image": to_rgb(img)})
                except TaskError as err:
                    raise ValueError(f"image_url data: {err}") from None
                images += 1
            else:
                raise ValueError(f"unsupported content part type {part.type!r}: use 'text' or 'image_url'")
        out.append({"role": msg.role, "content": parts})
    if images == 0:
        raise ValueError("the request has no image: add an image_url part with the maze image")
    return out


#: Environment of the serving replica: handles and the proxy reach replicas through Ray actor
#: calls, not the replica's own gRPC server (Ray Serve's default; stated so it cannot drift).
REPLICA_ENV = {"RAY_SERVE_USE_GRPC_BY_DEFAULT": "0", "RAY_SERVE_PROXY_USE_GRPC": "0"}


def bind_replica_grpc_to_loopback() -> None:
    """Make the Serve replica's inter-deployment gRPC server listen on 127.0.0.1 only.

    Ray Serve 2.56 starts that server in every replica with ``add_insecure_port("[::]:0")``
    (``ray/serve/_private/replica.py``, ``_on_initialized``): all interfaces, no token check, and
    it unpickles request bytes, so anyone who can reach the port on a shared host can run code
    in the replica. Ray has no setting for its address, and this app never uses it
    (:data:`REPLICA_ENV` keeps handles on Ray actor calls). So, in the replica process only and
    before Serve starts it, addresses on all interfaces given to ``grpc.aio`` servers are
    rewritten to ``127.0.0.1``. ``tests/serve/test_local_serving.py`` lists every listening socket of a
    serving local cluster and fails if any deserialising listener is reachable off loopback
    without the token.
    """
    import grpc.aio._server as grpc_server

    if getattr(grpc_server.Server.add_insecure_port, "_hprl_loopback", False):
        return
    original = grpc_server.Server.add_insecure_port

    def add_insecure_port(self: Any, address: str) -> int:
        host, _, port = address.rpartition(":")
        if host in ("[::]", "0.0.0.0", "", "[::0]"):
            address = f"127.0.0.1:{port}"
        return original(self, address)

    add_insecure_port._hprl_loopback = True  # type: ignore[attr-defined]
    grpc_server.Server.add_insecure_port = add_insecure_port  # type: ignore[method-assign]


def _new_lock(kind: str) -> Any:
    """A fresh, unlocked ``threading.Lock`` (``kind="lock"``) or ``threading.RLock`` (``"rlock"``)."""
    return threading.RLock() if kind == "rlock" else threading.Lock()


def _locks_pickle_as_fresh_locks() -> None:
    """Let Ray's cloudpickle carry the FastAPI app's thread locks (as fresh, unlocked locks).

    ``serve.ingress(app)`` pickles the app when the class is decorated and again for each replica.
    FastAPI 0.139.2 and later hold ``threading.Lock`` objects in the app (its router's route cache
    and its telemetry), which cloudpickle cannot pickle, so on Ray 2.56 every ``serve.ingress``
    of a FastAPI app fails with "cannot pickle '_thread.lock' object" (ray-project/ray#64939). Ray
    fixed it after 2.56 (ray-project/ray#64814, not in the 2.56.x wheels) the same way: a lock
    carries no state worth sending, and the app is pickled before it serves a request. Registered
    through Ray's public ``ray.util.register_serializer``, for Ray's cloudpickle only (the standard
    library's pickle still refuses locks); idempotent.
    """
    import ray

    for kind, lock in (("lock", threading.Lock()), ("rlock", threading.RLock())):
        ray.util.register_serializer(type(lock), serializer=lambda _lock, kind=kind: kind, deserializer=_new_lock)


def build_app(model_path: str, adapters: dict[str, str], *, num_cpus: float = 1.0, action_constraint: str = "directions"):
    """Build the Ray Serve application (not yet running).

    Args:
        model_path: base model directory.
        adapters: adapter name -> adapter directory (each with provenance.json).
        num_cpus: CPUs reserved by the replica.
        action_constraint: decoding mode of the policy (see :mod:`hyperpod_rl.model.policy`).

    Returns:
        A bound ``ray.serve`` application for ``serve.run``.
    """
    from fastapi import FastAPI, HTTPException, Request
    from fastapi.responses import JSONResponse, StreamingResponse
    from ray import serve
    from starlette.exceptions import HTTPException as StarletteHTTPException

    _locks_pickle_as_fresh_locks()  # before serve.ingress pickles the app (Ray 2.56 with FastAPI >= 0.139.2)
    api = FastAPI(title="hyperpod-rl local serving")

    def fail(status: int, code: str, message: str) -> HTTPException:
        return HTTPException(status_code=status, detail={"code": code, "message": message})

    @api.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        detail = exc.detail if isinstance(exc.detail, dict) else {"message": str(exc.detail), "code": None}
        if detail.get("code") is None and exc.status_code == 404:  # a path this server does not have
            detail = {
                "message": f"{request.url.path} is not a route of this server: use /v1/chat/completions or /v1/models",
                "code": "not_found",
            }
        return JSONResponse(openai_error(exc.status_code, detail["message"], detail["code"]), status_code=exc.status_code)

    @api.exception_handler(Exception)
    async def server_error(request: Request, exc: Exception) -> JSONResponse:
        # the exception's text and traceback go to the replica's log only, under an id the client gets.
        # Behind Serve's proxy that id is Serve's own request id (its RequestIdMiddleware puts it in the
        # request's x-request-id header, tags the replica's log lines with it and answers it in the
        # response's header), so the header is added here only when no proxy gave one.
        request_id = request.headers.get("x-request-id")
        headers = {} if request_id else {"x-request-id": (request_id := f"req-{uuid.uuid4().hex[:16]}")}
        logging.getLogger("ray.serve").error("request %s failed", request_id, exc_info=exc)
        message = f"the server failed on this request (request id {request_id}); its log has the details under that id"
        return JSONResponse(openai_error(500, message, "server_error"), status_code=500, headers=headers)

    @serve.deployment(
        name="MazeModelServer",
        num_replicas=1,
        ray_actor_options={"num_cpus": num_cpus, "runtime_env": {"env_vars": dict(REPLICA_ENV)}},
        max_ongoing_requests=32,
    )
    @serve.ingress(api)
    class MazeModelServer:
        def __init__(self, model_path: str, adapters: dict[str, str], action_constraint: str) -> None:
            bind_replica_grpc_to_loopback()  # before Serve starts the replica's gRPC server (after this constructor)
            import torch

            from hyperpod_rl.model.adapter import load_policy

            torch.set_num_threads(1)
            self.names = list(adapters)
            self.policy = load_policy(model_path, adapters or None, action_constraint=action_constraint)  # type: ignore[arg-type]
            self.model = self.policy.model
            self.lock = threading.Lock()
            self.started_at = time.time()
            config = getattr(self.model.config, "text_config", self.model.config)
            #: the model's context length in tokens (``max_position_embeddings`` of its text config)
            self.context_tokens = int(getattr(config, "max_position_embeddings", MAX_PROMPT_TOKENS))
            #: most prompt tokens of one request: MAX_PROMPT_TOKENS, or less where the context is shorter
            self.prompt_limit = min(MAX_PROMPT_TOKENS, self.context_tokens - 1)

        def _act(self, model: str, messages: list[dict[str, Any]], temperature: float, seed: int | None, max_tokens: int) -> Any:
            """One move from the named adapter (or the base model), at most ``max_tokens`` tokens
            (free decoding); one request at a time."""
            import contextlib

            import torch

            gen = torch.Generator().manual_seed(seed) if seed is not None else None
            with self.lock:
                if model == "base":
                    scope = self.model.disable_adapter() if self.names else contextlib.nullcontext()
                else:
                    self.model.set_adapter(model)
                    scope = contextlib.nullcontext()
                default = self.policy.max_new_tokens
                self.policy.max_new_tokens = max_tokens
                try:
                    with scope, torch.no_grad():
                        return self.policy.act([messages], greedy=temperature == 0, temperature=temperature or 1.0, generator=gen)[0]
                finally:
                    self.policy.max_new_tokens = default

        def _token_budget(self, prompt_tokens: int, requested: int | None) -> int:
            """The completion tokens this request may use (raises HTTPException 400 naming the limit)."""
            room = self.context_tokens - prompt_tokens

            def too_large(tokens: int) -> HTTPException:
                return fail(
                    400,
                    "max_tokens_too_large",
                    f"max_tokens={tokens} exceeds the model's room for this prompt: a context of {self.context_tokens} tokens "
                    f"less the prompt's {prompt_tokens} leaves {room}: send max_tokens <= {room}",
                )

            if requested is not None and requested > room:
                raise too_large(requested)
            if self.policy.action_constraint == "directions":
                need = len(self.policy.prefix_ids) + 1 + len(self.policy.suffix_ids)
                if requested is not None and requested < need:
                    raise fail(
                        400,
                        "max_tokens_too_small",
                        f"max_tokens={requested} is below the {need} tokens of one answer ('<answer>move</answer>' and the "
                        f"end-of-turn token, decoded as one constrained answer): send max_tokens >= {need} or leave it out",
                    )
                return need
            budget = requested if requested is not None else self.policy.max_new_tokens
            if budget > room:
                raise too_large(budget)
            return budget

        @api.get("/v1/models")
        def models(self) -> dict[str, Any]:
            return {"object": "list", "data": [{"id": n, "object": "model", "owned_by": "hyperpod-rl"} for n in ["base", *self.names]]}

        @api.get("/healthz")
        def healthz(self) -> dict[str, Any]:
            import os

            return {"status": "ok", "pid": os.getpid(), "started_at": self.started_at}

        @api.post("/v1/chat/completions")
        async def chat(self, request: Request) -> JSONResponse:
            from pydantic import ValidationError

            raw = await _read_body(request, fail)
            too_deep = f"the body nests JSON deeper than {MAX_JSON_DEPTH} levels; the limit is {MAX_JSON_DEPTH}: send an OpenAI chat-completions request"
            try:
                body = json.loads(raw)
            except RecursionError:  # nested thousands deep: refused, never walked
                raise fail(400, "invalid_json", too_deep) from None
            except ValueError as err:  # a syntax error, or a number past Python's digit limit
                raise fail(400, "invalid_json", f"the body {json_problem(err)}: send an OpenAI chat-completions request") from None
            if nesting_depth(body) > MAX_JSON_DEPTH:
                raise fail(400, "invalid_json", too_deep)
            try:
                req = ChatRequest.model_validate(body)
            except ValidationError as err:
                from hyperpod_rl.base import format_validation_error

                message = format_validation_error(err, what="chat-completions request", model=ChatRequest)
                raise fail(400, "invalid_request", " ".join(message.split())) from None
            if req.n != 1:
                raise fail(
                    400, "unsupported_n", f"n={req.n} is not served: this server answers one choice per request; send {req.n} requests"
                )
            if req.model != "base" and req.model not in self.names:
                raise fail(404, "model_not_found", f"unknown model {req.model!r}: use one of {listed(['base', *self.names])}")
            try:
                messages = _decode_images(req)
            except OverflowError as err:
                code = "too_many_images" if "images" in str(err).split(";")[0] else "image_too_large"
                raise fail(413 if code == "image_too_large" else 400, code, str(err)) from None
            except ValueError as err:
                raise fail(400, "invalid_image", str(err)) from None
            start = time.perf_counter()
            # the model runs in a worker thread: the replica's event loop keeps answering
            prompt_tokens = await asyncio.to_thread(self.policy.prompt_tokens, messages)
            if prompt_tokens > self.prompt_limit:
                raise fail(
                    400,
                    "context_length_exceeded",
                    f"the prompt is {prompt_tokens} tokens (text and image tokens); the limit is {self.prompt_limit}: "
                    "send fewer or smaller images, or less text",
                )
            budget = self._token_budget(prompt_tokens, req.max_completion_tokens or req.max_tokens)
            action = await asyncio.to_thread(self._act, req.model, messages, req.temperature, req.seed, budget)
            latency_ms = (time.perf_counter() - start) * 1000
            ids = action.response_ids
            finish = "length" if self.policy.action_constraint == "none" and (not ids or ids[-1] != self.policy.eos_id) else "stop"
            usage = {"prompt_tokens": prompt_tokens, "completion_tokens": len(ids), "total_tokens": prompt_tokens + len(ids)}
            head = {"id": f"chatcmpl-{uuid.uuid4().hex[:16]}", "created": int(time.time()), "model": req.model}
            if req.stream:
                return StreamingResponse(_sse_chunks(head, action.text, finish, usage, req.stream_options), media_type="text/event-stream")
            return JSONResponse(
                {
                    **head,
                    "object": "chat.completion",
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": action.text}, "finish_reason": finish}],
                    "usage": usage,
                    "latency_ms": latency_ms,
                }
            )

    return MazeModelServer.bind(model_path, adapters, action_constraint)


async def _read_body(request: Any, fail: Any) -> bytes:
    """The request body, at most :data:`MAX_BODY_BYTES`: refused from ``Content-Length`` before a
    byte is read, and while streaming (a chunked body has no length) as soon as it passes the limit.

    Raises:
        HTTPException: 413 ``request_too_large`` naming the limit; 400 for a bad ``Content-Length``.
    """
    too_large = f"the limit is {MAX_BODY_BYTES} bytes: send one downscaled maze image"
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.strip().isascii() or not declared.strip().isdigit():
            raise fail(400, "invalid_request", f"Content-Length {declared!r} is not a byte count")
        if int(declared) > MAX_BODY_BYTES:
            raise fail(413, "request_too_large", f"the request body is {int(declared)} bytes; {too_large}")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise fail(413, "request_too_large", f"the request body is over {MAX_BODY_BYTES} bytes; {too_large}")
        chunks.append(chunk)
    return b"".join(chunks)


def _sse_chunks(head: dict[str, Any], text: str, finish: str, usage: dict[str, int], options: dict[str, Any] | None):
    """Server-sent events of one answer in OpenAI's ``chat.completion.chunk`` format, ending
    with ``data: [DONE]`` (the format the ``openai`` SDK's ``Stream`` reads)."""

    def event(choices: list[dict[str, Any]], **extra: Any) -> str:
        return "data: " + json.dumps({**head, "object": "chat.completion.chunk", "choices": choices, **extra}) + "\n\n"

    include_usage = bool((options or {}).get("include_usage"))
    none = {"usage": None} if include_usage else {}
    yield event([{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}], **none)
    yield event([{"index": 0, "delta": {"content": text}, "finish_reason": None}], **none)
    yield event([{"index": 0, "delta": {}, "finish_reason": finish}], **none)
    if include_usage:
        yield event([], usage=usage)
    yield "data: [DONE]\n\n"


def check_adapters(model_path: str | Path, adapters: dict[str, str | Path], *, model_id: str | None = None) -> list[Any]:
    """Preflight every adapter against the base model for the local server.

    Args:
        model_path: base model directory (its revision is its content hash).
        adapters: adapter name -> adapter directory.
        model_id: the base model id when the run config names one (``model.model_id``);
            default: read from the directory as the trainer reads it.

    Returns:
        One :class:`~hyperpod_rl.serve.preflight.PreflightReport` per adapter (warnings only).

    Raises:
        ServeError: an adapter name is ``"base"`` (reserved) or not a valid name
            (:data:`~hyperpod_rl.serve.preflight.ADAPTER_NAME`), or any adapter fails a check; the
            message lists every finding of every failing adapter.
    """
    from hyperpod_rl.errors import ServeError
    from hyperpod_rl.serve.preflight import LOCAL_SERVER, BaseModelRef, adapter_name_problem, preflight

    if "base" in adapters:
        raise ServeError("adapter name 'base' is reserved for the base model: pick another name (NAME=PATH)")
    bad = [problem for name in adapters if (problem := adapter_name_problem(name))]
    if bad:
        raise ServeError("; ".join(bad) + ": rename it (NAME=PATH)")
    base = BaseModelRef.from_dir(model_path, model_id=model_id)
    reports = [preflight(path, base, LOCAL_SERVER) for path in adapters.values()]
    failed = [r for r in reports if not r.ok]
    if failed:
        raise ServeError("refusing to serve:\n" + "\n".join(r.summary() for r in failed))
    return reports


def action_constraint_of(adapters: dict[str, str | Path]) -> str:
    """The decoding mode the adapters were trained with (:func:`hyperpod_rl.model.adapter.action_constraint_of`),
    so serving decodes as training did.

    Raises:
        ServeError: the adapters were trained with different modes (one replica decodes one way).
    """
    from hyperpod_rl.errors import ConfigError, ServeError
    from hyperpod_rl.model.adapter import action_constraint_of as trained_with

    try:
        return trained_with(adapters)
    except ConfigError as err:
        raise ServeError(f"{err}; serve them in separate deployments") from None


def _serve_http_port() -> int | None:
    """The HTTP port of the running Serve instance, or None when Serve is not running."""
    from ray.serve.context import _get_global_client  # no public accessor in Ray 2.56

    client = _get_global_client(raise_if_no_controller_running=False)
    return None if client is None else int(client.http_config.port)


def run_app(
    model_path: str | Path,
    adapters: dict[str, str | Path],
    *,
    port: int = 8000,
    num_cpus: float = 1.0,
    model_id: str | None = None,
    app_name: str = SERVE_APP_NAME,
) -> None:
    """Deploy (or redeploy) the app from a driver already joined to the cluster.

    :func:`deploy_local` runs this inside a Ray Job (``python -m hyperpod_rl.serve up``), which
    inherits the cluster's token; Serve apps outlive the driver that deployed them. The HTTP
    proxy listens on 127.0.0.1 only. Serve binds one HTTP port per cluster: if it already runs
    on another port with no application, it is restarted on ``port``.

    Raises:
        ServeError: an adapter fails preflight, or Serve runs on another port with
            applications still deployed.
    """
    from ray import serve

    from hyperpod_rl.errors import ServeError

    check_adapters(model_path, adapters, model_id=model_id)
    constraint = action_constraint_of(adapters)
    current = _serve_http_port()
    if current is not None and current != port:
        apps = serve.status().applications
        if apps:
            raise ServeError(
                f"Ray Serve already listens on port {current} with applications {listed(sorted(apps))}: use --port {current}, or run hyperpod-rl serve down first"
            )
        serve.shutdown()
    serve.start(http_options={"host": "127.0.0.1", "port": port})
    app = build_app(str(model_path), {k: str(v) for k, v in adapters.items()}, num_cpus=num_cpus, action_constraint=constraint)
    serve.run(app, name=app_name, route_prefix=route_prefix(app_name), blocking=False)


def deploy_local(
    client: Any,
    model_path: str | Path,
    adapters: dict[str, str | Path],
    *,
    port: int = 8000,
    num_cpus: float = 1.0,
    timeout_s: float = 300.0,
    model_id: str | None = None,
    app_name: str = SERVE_APP_NAME,
) -> str:
    """Deploy the serving app on the cluster through a short Ray Job and wait until it answers.

    Example:
        >>> url = deploy_local(cluster.job_client(), model_dir, {"maze": run_dir / "adapter"})  # doctest: +SKIP

    Args:
        client: authenticated ``JobSubmissionClient``.
        model_path: base model directory.
        adapters: adapter name -> adapter directory.
        port: HTTP port on 127.0.0.1.
        num_cpus: CPUs of the replica.
        timeout_s: seconds to wait for the deploy job and the first healthy answer.
        model_id: the base model id the adapters' provenance must name, when the run config
            sets ``model.model_id``; default: read from the model directory.
        app_name: the Serve application; redeploying a name replaces only that application,
            and :func:`shutdown_local` with the same name deletes only it (default
            :data:`SERVE_APP_NAME`, what ``hyperpod-rl serve up`` deploys, at ``/``; another name
            is served at ``/<app_name>``, :func:`route_prefix`).

    Returns:
        ``http://127.0.0.1:<port>`` (plus ``/<app_name>`` for another app name); POST chat
        completions to ``<url>/v1/chat/completions``.

    Raises:
        ClusterError: ``port`` is inside Ray's worker port range (nothing is deployed).
        ServeError: an adapter fails preflight (nothing is deployed), the deploy job failed
            (its log tail is in the message) or the app did not answer within ``timeout_s``.
    """
    import shlex
    import sys

    import requests
    from ray.job_submission import JobStatus

    from hyperpod_rl.cluster.local import check_port_outside_ray_workers
    from hyperpod_rl.errors import ServeError

    check_port_outside_ray_workers(port, "--port")
    prefix = route_prefix(app_name)
    check_adapters(model_path, adapters, model_id=model_id)
    action_constraint_of(adapters)
    args = [
        sys.executable,
        "-m",
        "hyperpod_rl.serve",
        "up",
        "--model-path",
        str(model_path),
        "--port",
        str(port),
        "--num-cpus",
        str(num_cpus),
    ]
    if model_id:
        args += ["--model-id", model_id]
    if app_name != SERVE_APP_NAME:
        args += ["--app-name", app_name]
    for name, path in adapters.items():
        args += ["--adapter", f"{name}={path}"]
    submission_id = f"hprl-serve-{uuid.uuid4().hex[:8]}"
    client.submit_job(
        entrypoint=" ".join(shlex.quote(a) for a in args), submission_id=submission_id, metadata={"hyperpod_rl_serve": "deploy"}
    )
    deadline = time.monotonic() + timeout_s
    while not JobStatus(client.get_job_status(submission_id)).is_terminal():
        if time.monotonic() > deadline:
            raise ServeError(f"deploy job {submission_id} did not finish within {timeout_s:.0f} s")
        time.sleep(0.5)
    if client.get_job_status(submission_id) != JobStatus.SUCCEEDED:
        from hyperpod_rl.cluster.access import redact

        tail = "\n".join(redact(client.get_job_logs(submission_id)).splitlines()[-20:])
        raise ServeError(f"deploy job {submission_id} failed:\n{tail}")
    url = f"http://127.0.0.1:{port}" + ("" if prefix == "/" else prefix)
    while True:
        try:
            if requests.get(f"{url}/healthz", timeout=5).status_code == 200:
                return url
        except requests.RequestException:
            pass
        if time.monotonic() > deadline:
            raise ServeError(f"the serving app at {url} did not become healthy within {timeout_s:.0f} s")
        time.sleep(0.5)


def shutdown_local(client: Any, *, timeout_s: float = 120.0, app_name: str = SERVE_APP_NAME) -> bool:
    """Delete one serving app (``app_name``, default :data:`SERVE_APP_NAME`) through a short Ray
    Job, and no other; Serve itself stops (freeing its HTTP port) when no application is left.

    Returns:
        True if that app was deployed and is now deleted, False if it was not deployed.

    Raises:
        ServeError: the delete job did not end within ``timeout_s`` seconds, or failed.
    """
    import shlex
    import sys

    from ray.job_submission import JobStatus

    from hyperpod_rl.errors import ServeError

    submission_id = f"hprl-serve-{uuid.uuid4().hex[:8]}"
    client.submit_job(
        entrypoint=f"{shlex.quote(sys.executable)} -m hyperpod_rl.serve down --app-name {shlex.quote(app_name)}",
        submission_id=submission_id,
        metadata={"hyperpod_rl_serve": "delete"},
    )
    deadline = time.monotonic() + timeout_s
    while not JobStatus(client.get_job_status(submission_id)).is_terminal():
        if time.monotonic() > deadline:
            raise ServeError(f"the delete job {submission_id} did not end within {timeout_s:.0f} s: see its log in the Ray dashboard")
        time.sleep(0.5)
    from hyperpod_rl.cluster.access import redact

    lines = redact(client.get_job_logs(submission_id)).strip().splitlines()
    if client.get_job_status(submission_id) != JobStatus.SUCCEEDED:
        raise ServeError(f"the delete job {submission_id} failed:\n" + "\n".join(lines[-20:]))
    deleted = _deleted_report(lines)
    if deleted is None:
        raise ServeError(f"the delete job {submission_id} did not report what it deleted:\n" + "\n".join(lines[-20:]))
    return deleted


def _deleted_report(lines: list[str]) -> bool | None:
    """``deleted`` of the delete job's report, its last JSON line (Ray may append driver messages, such as
    autoscaler events, after it); None when there is none."""

    for line in reversed(lines):
        try:
            report = json.loads(line)
        except ValueError:
            continue
        if isinstance(report, dict) and "deleted" in report:
            return bool(report["deleted"])
    return None


def serve_run(
    client: Any, run: str | Path, *, port: int = 8000, name: str | None = None, extra_adapters: dict[str, str | Path] | None = None
) -> tuple[str, list[Any]]:
    """Serve a run's adapter (as ``name``, beside the base model as ``"base"``) on the local cluster.

    Args:
        client: authenticated ``JobSubmissionClient`` of the local cluster.
        run: run id or run directory; its adapter must exist.
        port: HTTP port on 127.0.0.1.
        name: model name of the run's adapter (default: the run's task name, e.g. ``doc_read``).
        extra_adapters: more ``{name: adapter directory}`` to serve beside it.

    Returns:
        ``(url, reports)``: the endpoint and one preflight report per adapter (warnings only).

    Raises:
        CheckpointError: the run has no config or no adapter yet.
        ServeError: see :func:`deploy_local`.
    """
    from hyperpod_rl.errors import CheckpointError
    from hyperpod_rl.runs import read_config, run_paths

    paths = run_paths(run)
    config = read_config(paths)
    if not (paths.adapter / "adapter_model.safetensors").is_file():
        raise CheckpointError(f"run {paths.run_id!r} has no adapter yet ({paths.adapter}): train it first")
    from hyperpod_rl.model.loading import resolve_base_model

    adapters: dict[str, str | Path] = {name or config.task.name: paths.adapter, **(extra_adapters or {})}
    base = resolve_base_model(config.model, paths.root)  # model.path='tiny': the run's built tiny model
    reports = check_adapters(base, adapters, model_id=config.model.model_id)
    url = deploy_local(client, base, adapters, port=port, model_id=config.model.model_id)
    return url, reports
