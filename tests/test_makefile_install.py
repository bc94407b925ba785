"""``make venv``'s install line: the default takes everything from PyPI; ``TORCH_INDEX_URL`` adds
PyTorch's CPU wheel index as an extra index (README: the install takes about 8 GB, most of it
the CUDA build of torch). Read with ``make -n``, which prints the recipe without running it.

Every install byte-compiles what it installs: with ``PYTHONDONTWRITEBYTECODE`` set (this machine's
shells, CI) no process writes a ``.pyc``, and uv compiles nothing unless asked, so after the move
from pip to uv every job driver, Ray worker and kernel compiled torch, transformers and Ray from
source at each import. The last test checks the environment the suite runs in."""

from __future__ import annotations

import importlib.util
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _install_lines(tmp_path: Path, *variables: str) -> list[str]:
    venv = tmp_path / "venv"
    proc = subprocess.run(
        ["make", "-n", "-B", f"VENV={venv}", *variables, f"{venv}/.installed"], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not venv.exists()  # -n: nothing ran
    return [line for line in proc.stdout.splitlines() if "pip install" in line and '".[dev,studio]"' in line]


def test_uv_installs_into_the_venv_with_pip_beside_it(tmp_path: Path) -> None:
    """uv (pinned) does the install, into the venv's own Python; pip is put there first (uv with it)."""
    venv = tmp_path / "venv"
    proc = subprocess.run(["make", "-n", "-B", f"VENV={venv}", f"{venv}/.installed"], cwd=REPO, capture_output=True, text=True, timeout=120)
    lines = proc.stdout.splitlines()
    assert f"{venv}/bin/python -m pip install -q --upgrade pip uv==0.13.9" in lines, lines
    assert f"{venv}/bin/uv pip install -q --compile-bytecode -p {venv}/bin/python --no-deps -e examples/shapes-task" in lines, lines


def test_the_default_install_takes_torch_from_pypi_and_the_variable_adds_the_cpu_index(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    default = f'{venv}/bin/uv pip install -q --compile-bytecode -p {venv}/bin/python -e ".[dev,studio]"'
    assert _install_lines(tmp_path) == [default]
    assert _install_lines(tmp_path, "TORCH_INDEX_URL=") == [default]
    cpu = "https://download.pytorch.org/whl/cpu"
    assert _install_lines(tmp_path, f"TORCH_INDEX_URL={cpu}") == [
        f'{venv}/bin/uv pip install -q --compile-bytecode -p {venv}/bin/python --extra-index-url {cpu} -e ".[dev,studio]"'
    ]


def test_the_studio_env_install_compiles_too(tmp_path: Path) -> None:
    venv, studio = tmp_path / "venv", tmp_path / "lab45"
    proc = subprocess.run(
        ["make", "-n", "-B", f"VENV={venv}", f"STUDIO_ENV={studio}", f"{studio}/.installed"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    uv_lines = [line for line in proc.stdout.splitlines() if "/bin/uv pip install" in line]
    assert uv_lines and all("--compile-bytecode" in line for line in uv_lines), uv_lines


@pytest.mark.parametrize(
    "module",
    ["torch", "transformers.modeling_utils", "ray.dashboard.modules.job.job_head", "ray.serve", "hyperpod_rl.train.reference"],
)
def test_the_environment_the_suite_runs_in_is_byte_compiled(module: str) -> None:
    """Each module a job driver, Ray's dashboard or a Serve replica imports has its ``.pyc`` beside it, so
    no process compiles it again (the checkout's own modules are compiled by ``make venv`` too)."""
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin, module
    cached = Path(importlib.util.cache_from_source(spec.origin))
    assert cached.is_file(), f"{module} is not byte-compiled ({cached} missing): run `make venv`"


def _make_env(tmp_path: Path, **env: str) -> list[str]:
    """``MYPY_CACHE_DIR`` and ``TORCHINDUCTOR_CACHE_DIR`` as the Makefile exports them to its recipes."""
    clean = {k: v for k, v in os.environ.items() if k not in ("MYPY_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR", "XDG_CACHE_HOME")}
    proc = subprocess.run(
        ["make", "-s", "--eval", "show-caches: ; @echo $$MYPY_CACHE_DIR; echo $$TORCHINDUCTOR_CACHE_DIR", "show-caches"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        env={**clean, "HOME": str(tmp_path), **env},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout.split()


def test_mypy_and_inductor_caches_are_kept_on_the_machine_unless_the_environment_says(tmp_path: Path) -> None:
    """A fresh clone's second run reuses mypy's cache and TorchInductor's kernels (README, "make test")."""
    assert _make_env(tmp_path) == [f"{tmp_path}/.cache/hyperpod-rl/mypy", f"{tmp_path}/.cache/hyperpod-rl/torchinductor"]
    assert _make_env(tmp_path, XDG_CACHE_HOME="/c")[0] == "/c/hyperpod-rl/mypy"
    assert _make_env(tmp_path, TORCHINDUCTOR_CACHE_DIR="/ind")[1] == "/ind"
