"""Notebooks run top to bottom against the session's local Ray cluster (reduced parameters)."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

pytestmark = [pytest.mark.ray, pytest.mark.slow]

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def test_quickstart_notebook_runs(local_cluster, tmp_path):
    nb = nbformat.read(NOTEBOOKS / "01-quickstart.ipynb", as_version=4)
    params = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    params.source = 'STEPS = 4\nTRAIN_MAZES = 80\nHELDOUT_MAZES = 20\nRUN_ID = "notebook-ci"\nSERVE = False'
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = "".join(
        o.get("text", "") + str(o.get("data", {}).get("text/plain", "")) for c in nb.cells if c.cell_type == "code" for o in c.outputs
    )
    assert "ended SUCCEEDED" in outputs
    assert "held-out mazes: 20" in outputs
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors
    token = local_cluster.state.token
    assert token not in outputs
