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


def test_the_default_install_takes_torch_from_pypi_and_the_variable_adds_the_cpu_index(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    assert _install_lines(tmp_path) == [f'{venv}/bin/python -m pip install -q -e ".[dev,studio]"']
    assert _install_lines(tmp_path, "TORCH_INDEX_URL=") == [f'{venv}/bin/python -m pip install -q -e ".[dev,studio]"']
    cpu = "https://download.pytorch.org/whl/cpu"
    assert _install_lines(tmp_path, f"TORCH_INDEX_URL={cpu}") == [
        f'{venv}/bin/python -m pip install -q --extra-index-url {cpu} -e ".[dev,studio]"'
    ]
