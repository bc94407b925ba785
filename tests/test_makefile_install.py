"""``make venv``'s install line: the default takes everything from PyPI; ``TORCH_INDEX_URL`` adds
PyTorch's CPU wheel index as an extra index (README: the install takes about 8 GB, most of it
the CUDA build of torch). Read with ``make -n``, which prints the recipe without running it."""

from __future__ import annotations

import subprocess
from pathlib import Path

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
    assert f"{venv}/bin/uv pip install -q -p {venv}/bin/python --no-deps -e examples/shapes-task" in lines, lines


def test_the_default_install_takes_torch_from_pypi_and_the_variable_adds_the_cpu_index(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    default = f'{venv}/bin/uv pip install -q -p {venv}/bin/python -e ".[dev,studio]"'
    assert _install_lines(tmp_path) == [default]
    assert _install_lines(tmp_path, "TORCH_INDEX_URL=") == [default]
    cpu = "https://download.pytorch.org/whl/cpu"
    assert _install_lines(tmp_path, f"TORCH_INDEX_URL={cpu}") == [
        f'{venv}/bin/uv pip install -q -p {venv}/bin/python --extra-index-url {cpu} -e ".[dev,studio]"'
    ]
