"""Client of the OpenAI-style ``/v1/chat/completions`` route (local Ray Serve or vLLM).

- :func:`chat`: one request, the answer text and its latency.
- :func:`image_url_part`: an image of your own (file, bytes or PIL image) as an ``image_url``
  part, transparency composited onto white first, so every server sees the same pixels.
- :func:`solve`: play one maze (or one item of any registered task) through the served model,
  turn by turn, with the task's skyrl-gym env scoring every answer exactly as in training and
  evaluation.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hyperpod_rl.errors import ServeError, TaskError
from hyperpod_rl.tasks import decode_image, make_env, metric_spec, task_of_row, to_rgb
from hyperpod_rl.tasks.maze import Maze

__all__ = ["SolveResult", "chat", "image_url_part", "maze_request", "solve"]


def image_url_part(image: Any) -> dict[str, Any]:
    """An OpenAI ``image_url`` content part (PNG data URL) for an image of your own.

    The image is decoded and converted with :func:`hyperpod_rl.tasks.to_rgb` before it is
    encoded, as in training, evaluation and the local serve route: transparent pixels become
    white, whatever the server does with alpha (older vLLM releases drop LA and palette alpha),
    and a 16-bit grayscale image is scaled to 8 bits (a 32-bit integer or float one is refused).

    Args:
        image: a path (``str`` or ``Path``), PNG/JPEG bytes, or a PIL image, of any mode.

    Returns:
        ``{"type": "image_url", "image_url": {"url": "data:image/png;base64,..."}}`` holding an
        RGB PNG.

    Raises:
        ServeError: the file cannot be read, or the image is not readable or is refused (:func:`hyperpod_rl.tasks.to_rgb`).
    """
    import base64
    import io
    from pathlib import Path

    from PIL import Image

    try:
        if isinstance(image, Image.Image):
            rgb = to_rgb(image)
        else:
            rgb = decode_image(Path(image).read_bytes() if isinstance(image, (str, Path)) else bytes(image))
    except OSError as err:
        raise ServeError(
            f"cannot read the image {image!s:.200} ({err.strerror or err}): pass a PNG or JPEG file, its bytes, or a PIL image"
        ) from None
    except TaskError as err:
        raise ServeError(f"{err}: pass a PNG or JPEG file, its bytes, or a PIL image") from None
    buf = io.BytesIO()
    rgb.save(buf, format="PNG")
    return {"type": "image_url", "image_url": {"url": "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")}}


def maze_request(row: dict[str, Any], *, model: str, temperature: float = 0.0) -> dict[str, Any]:
    """A chat-completions request for a dataset row's first observation (its ``prompt``)."""
    return {"model": model, "messages": list(row["prompt"]), "temperature": temperature}


def chat(
    endpoint: str, request: dict[str, Any], *, timeout_s: float = 60.0, session: Any = None, run_id: str | None = None
) -> tuple[str, float]:
    """POST one chat-completions request.

    Args:
        endpoint: base URL, e.g. ``http://127.0.0.1:8000``.
        request: the JSON body.
        timeout_s: HTTP timeout in seconds.
        session: a ``requests.Session`` to reuse connections.
        run_id: the run whose adapter is asked, for the fix an error names
            (``hyperpod-rl serve up <run_id>``; ``RUN_ID`` when not given).

    Returns:
        ``(answer text, latency in seconds)``.

    Raises:
        ServeError: non-2xx answer (its detail is in the message; a model the server does not
            serve, and no connection, also say how to serve it) or no connection.
    """
    import requests

    serve_up = f"hyperpod-rl serve up {run_id or 'RUN_ID'}"
    http = session or requests
    start = time.perf_counter()
    try:
        resp = http.post(f"{endpoint.rstrip('/')}/v1/chat/completions", json=request, timeout=timeout_s)
    except requests.RequestException as err:
        raise ServeError(f"cannot reach {endpoint}: {err.__class__.__name__}; is the server up? Serve the run: {serve_up}") from None
    latency = time.perf_counter() - start
    if resp.status_code >= 400:
        try:
            body = resp.json()
        except ValueError:
            body = None
        code = None
        if isinstance(body, dict) and isinstance(body.get("error"), dict):  # OpenAI's error shape (this server, vLLM)
            detail, code = body["error"].get("message"), body["error"].get("code")
        elif isinstance(body, dict) and "detail" in body:
            detail = body["detail"]
        else:
            detail = resp.text[:500]
        fix = f"; serve it: {serve_up}" if code == "model_not_found" else ""
        raise ServeError(f"{resp.status_code} from {endpoint}: {detail}{fix}")
    return resp.json()["choices"][0]["message"]["content"], latency


@dataclass
class SolveResult:
    """One maze played through a served model.

    Attributes:
        adapter: the ``model`` name the requests used.
        answers: the raw answer text of each turn, e.g. ``"<answer>up</answer>"``.
        moves: the parsed move of each turn (``None`` for an invalid answer).
        path: cells ``(row, col)`` the agent occupied: the start, then one per turn (maze;
            empty for tasks without an agent cell).
        reward: the episode return (sum of the env's step rewards).
        solved: whether the episode succeeded by the task's primary metric (the maze: reached
            the goal; doc_read: the answer is correct; see :func:`hyperpod_rl.tasks.metric_spec`).
        latencies_s: seconds per request, one per turn.
        metrics: the env's episode metrics (``solved``, ``optimal_move_rate``, ...).
        task: the registered task the item belongs to (``maze``, ``doc_read``, ...).
        steps: the env's step metadata of each turn (task-specific keys; the task's
            :func:`~hyperpod_rl.tasks.turn_columns` name the ones worth showing).
        rewards: the env's reward of each turn.
    """

    adapter: str
    answers: list[str] = field(default_factory=list)
    moves: list[str | None] = field(default_factory=list)
    path: list[tuple[int, int]] = field(default_factory=list)
    reward: float = 0.0
    solved: bool = False
    latencies_s: list[float] = field(default_factory=list)
    metrics: dict[str, float] = field(default_factory=dict)
    task: str = "maze"
    steps: list[dict[str, Any]] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)

    @property
    def turns(self) -> int:
        return len(self.answers)


def _context(system: list[dict[str, Any]], observation: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """System messages plus the latest observation: the context the policy sees in training
    (:mod:`hyperpod_rl.model.rollout`), so served and in-process answers agree."""
    return system + [m for m in observation if m.get("role") != "system"][-1:]


def solve(
    maze: Maze | Mapping[str, Any],
    endpoint: str,
    adapter: str,
    *,
    max_turns: int | None = None,
    env_config: Mapping[str, Any] | None = None,
    temperature: float = 0.0,
    seed: int | None = None,
    timeout_s: float = 60.0,
    session: Any = None,
    run_id: str | None = None,
) -> SolveResult:
    """Play one maze through the served model, one request per turn.

    Each turn sends the system prompt plus the latest observation (the maze image with the
    agent drawn in) as OpenAI ``image_url`` data-URL parts, and steps the skyrl-gym maze env
    (:class:`hyperpod_rl.tasks.maze.MazeEnv`) with the answer, until the goal or the turn limit.

    Args:
        maze: a :class:`~hyperpod_rl.tasks.maze.Maze`, or a dataset row of any registered task (its
            ``prompt`` and settings, e.g. ``prompt_style``, are used; the task comes from its
            ``env_class``).
        endpoint: base URL of the server, e.g. ``http://127.0.0.1:8000``.
        adapter: the ``model`` to ask: an adapter name, or ``"base"`` on the local server
            (``"<model_id>:<adapter>"`` on Ray Serve LLM).
        max_turns: turn limit (default: the row's, else ``2 * shortest path + 4``).
        env_config: env settings for a bare maze (``prompt_style``, ``render_style``, ...).
        temperature: 0 for greedy decoding.
        seed: request seed (sampling only).
        timeout_s: HTTP timeout per request, in seconds.
        session: a ``requests.Session`` to reuse connections.
        run_id: the run whose adapter is asked, for the fix an error names (:func:`chat`).

    Returns:
        :class:`SolveResult`.

    Raises:
        ServeError: a request failed (the server's detail is in the message).
        MazeError: the maze or its settings are invalid.
        TaskError: the row's task is not registered.
    """
    if isinstance(maze, Maze):
        from hyperpod_rl.tasks.maze.registry import ENV_CLASS

        extras: dict[str, Any] = {"maze": maze.to_json(), "env_class": ENV_CLASS}
        prompt: list[dict[str, Any]] | None = None
    else:
        extras = dict(maze)
        prompt = list(maze["prompt"]) if maze.get("prompt") is not None else None
    if max_turns is not None:
        extras["max_turns"] = max_turns
    env = make_env(None, extras, env_config)
    conversation, _ = env.init(prompt)
    system = [m for m in conversation if m.get("role") == "system"]
    context = _context(system, conversation)
    start = getattr(getattr(env, "maze", None), "start", None)
    task = task_of_row(extras)
    result = SolveResult(adapter=adapter, path=[tuple(start)] if start is not None else [], task=task.name)
    try:
        while True:
            request: dict[str, Any] = {"model": adapter, "messages": context, "temperature": temperature}
            if seed is not None:
                request["seed"] = seed
            answer, latency = chat(endpoint, request, timeout_s=timeout_s, session=session, run_id=run_id)
            out = env.step(answer)
            meta = out.get("metadata") or {}
            result.answers.append(answer)
            result.latencies_s.append(latency)
            result.moves.append(meta.get("move"))
            result.steps.append(dict(meta))
            result.rewards.append(float(out["reward"]))
            if result.path:
                result.path.append(tuple(meta.get("agent", result.path[-1])))
            result.reward += float(out["reward"])
            if out["done"]:
                break
            context = _context(system, out["observations"])
        result.metrics = {k: float(v) for k, v in env.get_metrics().items() if isinstance(v, (int, float))}
        spec = metric_spec(task)
        result.solved = bool(result.metrics.get(spec.episode_key[spec.primary], 0.0))
    finally:
        env.close()
    return result
