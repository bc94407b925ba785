"""Ray's job REST API (``/api/jobs/``), called with tornado's ``AsyncHTTPClient`` (the Jupyter
server's own HTTP client; Ray's ``JobSubmissionClient`` is not installed in the server's environment).

Routes used (Ray 2.x dashboard job module, ``python/ray/dashboard/modules/job/job_head.py``):

- ``GET  /api/jobs/``                       -> list of JobDetails (``submission_id``, ``status``, ``metadata``...)
- ``GET  /api/jobs/{submission_id}/logs``   -> ``{"logs": str}``
- ``POST /api/jobs/{submission_id}/stop``   -> ``{"stopped": bool}``

Every request carries ``Authorization: Bearer <token>`` (Ray token auth, ``RAY_AUTH_MODE=token``).
The token never leaves this module's requests: error texts are built from status codes only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

from tornado.httpclient import AsyncHTTPClient, HTTPClientError

__all__ = ["RayJobAPI", "RayAPIError"]

RUN_ID_METADATA = "hyperpod_rl_run_id"


class RayAPIError(Exception):
    """The job API did not answer, refused the token, or answered an error (message has no secret)."""


@dataclass
class RayJobAPI:
    """One cluster's job API.

    Args:
        name: the cluster's name as the sidebar shows it.
        url: ``http://host:port`` of the dashboard / job API, reachable from this server.
        token: Ray auth token (``""`` for a cluster without token auth). Kept out of ``repr``.
        timeout_s: per-request timeout, seconds.
    """

    name: str
    url: str
    token: str = field(default="", repr=False)
    timeout_s: float = 5.0

    @property
    def shown_url(self) -> str:
        """``url`` as error messages show it: scheme, host, port and path only (a ``?token=``
        query or ``user:password@`` would be a secret)."""
        parts = urlsplit(self.url)
        host = parts.hostname or ""
        netloc = f"{host}:{parts.port}" if parts.port else host
        return urlunsplit((parts.scheme, netloc, parts.path, "", ""))

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    async def _call(self, method: str, path: str) -> Any:
        client = AsyncHTTPClient()
        try:
            resp = await client.fetch(
                self.url.rstrip("/") + path,
                method=method,
                headers=self._headers(),
                body=b"" if method == "POST" else None,
                request_timeout=self.timeout_s,
                connect_timeout=self.timeout_s,
            )
        except HTTPClientError as err:
            if err.code == 599:
                raise RayAPIError(f"cluster {self.name!r} is not answering at {self.shown_url}") from None
            raise RayAPIError(f"cluster {self.name!r} answered HTTP {err.code} to {method} {path.split('?')[0]}") from None
        except OSError as err:
            raise RayAPIError(f"cluster {self.name!r} is not answering at {self.shown_url} ({type(err).__name__})") from None
        try:
            return json.loads(resp.body or b"null")
        except ValueError:
            raise RayAPIError(f"cluster {self.name!r} sent a non-JSON answer to {method} {path}") from None

    async def list_jobs(self) -> list[dict[str, Any]]:
        """Every job the cluster knows (JobDetails dicts)."""
        data = await self._call("GET", "/api/jobs/")
        return [j for j in data if isinstance(j, dict)] if isinstance(data, list) else []

    async def logs(self, submission_id: str) -> str:
        """The job's whole log so far."""
        data = await self._call("GET", f"/api/jobs/{quote(submission_id, safe='')}/logs")
        return str((data or {}).get("logs") or "")

    async def stop(self, submission_id: str) -> bool:
        """Ask Ray to stop the job (SIGTERM, then SIGKILL after Ray's grace period); True if it was running."""
        data = await self._call("POST", f"/api/jobs/{quote(submission_id, safe='')}/stop")
        return bool((data or {}).get("stopped"))


def hprl_jobs(jobs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``{submission_id: job}`` for the jobs hyperpod-rl submitted (metadata ``hyperpod_rl_run_id``)."""
    out = {}
    for job in jobs:
        sub = job.get("submission_id")
        if sub and RUN_ID_METADATA in (job.get("metadata") or {}):
            out[str(sub)] = job
    return out
