"""Fixtures shared by the CLI tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes import FakeHTTPServer, Response


@pytest.fixture
def empty_cluster() -> Iterator[str]:
    """A dashboard that answers and knows no job (its URL)."""
    with FakeHTTPServer() as server:
        server.route("GET", "/api/version", Response(200, {"version": "4", "ray_version": "2.56.0", "ray_commit": "x"}))
        server.route("GET", "/api/jobs/", Response(200, []))
        yield server.url
