"""Client of the OpenAI-style ``/v1/chat/completions`` route (local Ray Serve or vLLM)."""

from __future__ import annotations

import time
from typing import Any

from hyperpod_rl.errors import ServeError

__all__ = ["chat", "maze_request"]


def maze_request(row: dict[str, Any], *, model: str, temperature: float = 0.0) -> dict[str, Any]:
    """A chat-completions request for a dataset row's first observation (its ``prompt``)."""
    return {"model": model, "messages": list(row["prompt"]), "temperature": temperature}


def chat(endpoint: str, request: dict[str, Any], *, timeout_s: float = 60.0, session: Any = None) -> tuple[str, float]:
    """POST one chat-completions request.

    Args:
        endpoint: base URL, e.g. ``http://127.0.0.1:8000``.
        request: the JSON body.
        timeout_s: HTTP timeout in seconds.
        session: a ``requests.Session`` to reuse connections.

    Returns:
        ``(answer text, latency in seconds)``.

    Raises:
        ServeError: non-2xx answer (its detail is in the message) or no connection.
    """
    import requests

    http = session or requests
    start = time.perf_counter()
    try:
        resp = http.post(f"{endpoint.rstrip('/')}/v1/chat/completions", json=request, timeout=timeout_s)
    except requests.RequestException as err:
        raise ServeError(f"cannot reach {endpoint}: {err.__class__.__name__}; is the server up (hyperpod-rl serve up)?") from None
    latency = time.perf_counter() - start
    if resp.status_code >= 400:
        try:
            detail = resp.json().get("detail")
        except ValueError:
            detail = resp.text[:500]
        raise ServeError(f"{resp.status_code} from {endpoint}: {detail}")
    return resp.json()["choices"][0]["message"]["content"], latency
