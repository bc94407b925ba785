"""The built wheel in a fresh virtual environment with JupyterLab 4.5 (Studio's line): the prebuilt
frontend is enabled and OK and the server extension is enabled, with no node and no hyperpod_rl.

The fresh environment sees the packages of ``.venv-lab45`` (``make studio-server-env``: JupyterLab
4.5.11 as SMD 4.5.3 ships it, cached) through a ``.pth`` file instead of downloading JupyterLab
again; the wheel itself is installed into it by pip."""

from __future__ import annotations

import os
import re
import subprocess
import venv
from pathlib import Path

import pytest

from .conftest import REPO

pytestmark = pytest.mark.slow


def _run(cmd: list[str], env: dict[str, str], cwd) -> str:
    # cwd: outside the checkout, so its hyperpod_rl/ folder is not importable by accident.
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, check=False, cwd=cwd)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout + proc.stderr)


def test_fresh_venv_lists_the_extension_enabled_and_ok(tmp_path):
    """Slow: a fresh virtual environment with pip, and the wheel installed into it."""
    wheels = sorted((REPO / "labextension" / "dist").glob("hyperpod_rl_jupyterlab-*.whl"))
    assert wheels, "no built wheel in labextension/dist: run `make labextension`"
    studio = REPO / ".venv-lab45"
    assert (studio / ".installed").is_file(), "run `make studio-server-env` (JupyterLab 4.5.11)"
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    py = str(env_dir / "bin" / "python")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "PYTHONPATH", "VIRTUAL_ENV"))}
    env["PATH"] = f"{env_dir / 'bin'}:/usr/bin:/bin"
    site = _run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], env, tmp_path).strip()
    lab45 = _run([str(studio / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], env, tmp_path).strip()
    Path(site, "_studio.pth").write_text(lab45 + "\n")
    _run([py, "-m", "pip", "install", "-q", "--no-index", str(wheels[-1])], env, tmp_path)
    assert _run([py, "-c", "import jupyterlab; print(jupyterlab.__version__)"], env, tmp_path).startswith("4.5.")
    out = _run([py, "-m", "jupyterlab.labextensions", "list"], env, tmp_path)
    assert re.search(r"hyperpod-rl-jupyterlab v\S+ enabled\s+OK", out), out
    out = _run([py, "-m", "jupyter_server.extension.serverextension", "list"], env, tmp_path)
    assert re.search(r"hyperpod_rl_jupyterlab enabled", out) and re.search(r"hyperpod_rl_jupyterlab \S+ OK", out), out
    probe = "import importlib.util as u, sys; sys.exit(bool(u.find_spec('hyperpod_rl') or u.find_spec('ray') or u.find_spec('torch')))"
    _run([py, "-c", probe], env, tmp_path)  # the server extension needs none of the training stack
