"""The Studio lifecycle-configuration script: size limit, shellcheck, and two real runs (idempotent).

The runs use a temporary virtual environment standing in for Studio's server environment
(``/opt/conda``), a temporary home, and a stand-in ``restart-jupyter-server`` on ``PATH`` that
records its calls (the real command exists only in a Studio space). pip really installs: the
frontends (anywidget, jupyterlab_widgets; ``--no-deps`` keeps it to two small wheels) into the
"server" environment, and ipykernel plus a wheel of this repository (``--no-deps``: Ray and
torch would take minutes) into the kernel environment under the temporary home.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "container" / "studio" / "on-start.sh"
LIMIT = 16_384  # characters: SageMaker's limit for a lifecycle-configuration script


def test_script_fits_studio_and_is_shellcheck_clean() -> None:
    text = SCRIPT.read_text()
    assert len(text) <= LIMIT, f"{len(text)} characters, Studio takes at most {LIMIT}"
    shellcheck = shutil.which("shellcheck") or str(Path(sys.executable).parent / "shellcheck")
    result = subprocess.run([shellcheck, "--severity=style", str(SCRIPT)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "restart-jupyter-server" in text and "ipykernel install --user" in text


@pytest.mark.slow
def test_two_runs_install_register_restart_once(tmp_path: Path) -> None:
    """Slow: the lifecycle script runs twice, installing packages into a fresh environment."""
    base = getattr(sys, "_base_executable", sys.executable)
    server = tmp_path / "opt-conda"
    subprocess.run([base, "-m", "venv", str(server)], check=True)
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(ROOT)],
        check=True,
        cwd=tmp_path,
    )
    wheel = next(wheels.glob("hyperpod_rl-*.whl"))
    home = tmp_path / "home"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "restarts.txt"
    fake = bin_dir / "restart-jupyter-server"
    fake.write_text(f"#!/bin/sh\necho restarted >> {calls}\n")
    fake.chmod(0o755)
    env = {
        **os.environ,
        "HOME": str(home),
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "JUPYTER_DATA_DIR": str(home / ".local/share/jupyter"),
        "HPRL_SERVER_PREFIX": str(server),
        "HPRL_SERVER_PIP_ARGS": "--no-deps",
        "HPRL_PYTHON": base,
        "HPRL_PACKAGE": str(wheel),
        "HPRL_PIP_ARGS": "--no-deps",
        "HPRL_BACKGROUND": "0",
    }
    env.pop("VIRTUAL_ENV", None)
    overrides = server / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
    overrides.parent.mkdir(parents=True)
    overrides.write_text(json.dumps({"@jupyterlab/apputils-extension:themes": {"theme": "JupyterLab Dark"}}))
    first = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stdout + first.stderr
    labext = server / "share" / "jupyter" / "labextensions"
    assert (labext / "anywidget" / "package.json").is_file()
    assert (labext / "@jupyter-widgets" / "jupyterlab-manager" / "package.json").is_file()
    venv_py = home / ".venvs" / "hyperpod-rl" / "bin" / "python"
    check = subprocess.run(
        [str(venv_py), "-c", "import hyperpod_rl, sys; print(hyperpod_rl.__version__, sys.prefix)"], capture_output=True, text=True
    )
    assert check.returncode == 0 and check.stdout.split()[1] == str(home / ".venvs" / "hyperpod-rl"), check.stderr
    spec = json.loads((home / ".local/share/jupyter/kernels/hyperpod-rl/kernel.json").read_text())
    assert spec["argv"][0] == str(venv_py) and spec["display_name"] == "Python 3.12 (hyperpod-rl)"
    assert calls.read_text().splitlines() == ["restarted"]
    assert "server environment changed" in first.stdout and "registered the Jupyter kernel" in first.stdout
    # issue 31 items 1 and 4: the settings the set-up implies (the user's other overrides kept),
    # and the CLI on the PATH of Studio's terminals (the server environment's bin)
    venv_cli = home / ".venvs" / "hyperpod-rl" / "bin" / "hyperpod-rl"
    assert json.loads(overrides.read_text()) == {
        "@jupyterlab/apputils-extension:themes": {"theme": "JupyterLab Dark"},
        "hyperpod-rl-jupyterlab:plugin": {"kernelName": "hyperpod-rl", "cliPath": str(venv_cli)},
    }
    assert Path(shutil.which("hyperpod-rl", path=str(server / "bin")) or "").resolve() == venv_cli.resolve()
    assert f"hyperpod-rl command: {server / 'bin' / 'hyperpod-rl'} -> {venv_cli}" in first.stdout

    second = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stdout + second.stderr
    assert "server environment unchanged" in second.stdout and "kernel environment unchanged" in second.stdout
    assert "already registered" in second.stdout and "creating kernel environment" not in second.stdout
    assert calls.read_text().splitlines() == ["restarted"]  # no second restart: nothing changed
    assert "settings already in" in second.stdout
    log = (home / ".hyperpod-rl" / "on-start.log").read_text()
    assert log.count("hyperpod-rl on-start: start") == 2 and log.count(": done") == 2
    # the server environment got frontends only: no Ray, no torch
    listed = subprocess.run(
        [str(server / "bin" / "python"), "-m", "pip", "list", "--format=freeze"], capture_output=True, text=True
    ).stdout.lower()
    assert "anywidget==" in listed and "ray==" not in listed and "torch==" not in listed and "hyperpod-rl" not in listed
