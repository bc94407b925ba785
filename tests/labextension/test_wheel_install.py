"""The built wheel in a fresh virtual environment with JupyterLab 4.5 (Studio's line): the prebuilt
frontend is enabled and OK and the server extension is enabled, with no node and no hyperpod_rl."""

from __future__ import annotations

import os
import re
import subprocess
import venv

import pytest

from .conftest import REPO

pytestmark = pytest.mark.slow


def _run(cmd: list[str], env: dict[str, str], cwd) -> str:
    # cwd: outside the checkout, so its hyperpod_rl/ folder is not importable by accident.
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, check=False, cwd=cwd)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout + proc.stderr)


def test_fresh_venv_lists_the_extension_enabled_and_ok(tmp_path):
    wheels = sorted((REPO / "labextension" / "dist").glob("hyperpod_rl_jupyterlab-*.whl"))
    assert wheels, "no built wheel in labextension/dist: run `make labextension`"
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    py = str(env_dir / "bin" / "python")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "PYTHONPATH", "VIRTUAL_ENV"))}
    env["PATH"] = f"{env_dir / 'bin'}:/usr/bin:/bin"
    _run([py, "-m", "pip", "install", "-q", str(wheels[-1]), "jupyterlab>=4.5,<4.6"], env, tmp_path)
    out = _run([py, "-m", "jupyter", "labextension", "list"], env, tmp_path)
    assert re.search(r"hyperpod-rl-jupyterlab v\S+ enabled\s+OK", out), out
    out = _run([py, "-m", "jupyter", "server", "extension", "list"], env, tmp_path)
    assert re.search(r"hyperpod_rl_jupyterlab enabled", out) and re.search(r"hyperpod_rl_jupyterlab \S+ OK", out), out
    probe = "import importlib.util as u, sys; sys.exit(bool(u.find_spec('hyperpod_rl') or u.find_spec('ray') or u.find_spec('torch')))"
    _run([py, "-c", probe], env, tmp_path)  # the server extension needs none of the training stack
