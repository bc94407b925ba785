"""The tutorial notebooks (notebooks/): stripped in git, one papermill-style parameters cell each,
and every one executed end to end with ``TARGET = "local"`` on the session's local Ray cluster.

Execution follows papermill's convention: a cell tagged ``injected-parameters`` is inserted after
the cell tagged ``parameters`` with the CI sizes (few steps, tiny data). The notebooks call
``hp.start_local_cluster()``, which reuses the cluster recorded under ``HYPERPOD_RL_HOME`` (the
session fixture's, inherited by every kernel), so all six share one cluster; the test checks that
none started its own. Before a cell tagged ``reattach`` the kernel is restarted for real and the
parameter cells run again, as the notebook tells a user to do.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import nbformat
import pytest
from jupyter_core.utils import run_sync
from nbclient import NotebookClient

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = REPO / "notebooks"
EXPECTED = [
    "01-quickstart-local",
    "02-hyperpod-cluster",
    "03-train-grpo",
    "04-monitor",
    "05-evaluate-and-serve",
    "06-resume-and-reproduce",
]
#: CI sizes per notebook (``SERVE_PORT`` is added where the notebook serves).
CI_PARAMETERS: dict[str, dict[str, object]] = {
    "01-quickstart-local": {
        "RUN_ID": "nb-quickstart",
        "STEPS": 3,
        "SFT_STEPS": 4,
        "TRAIN_ROWS": 48,
        "HELDOUT_ROWS": 6,
        "GROUP_SIZE": 2,
        "PROMPTS_PER_STEP": 2,
        "MAX_TURNS": 3,
        "SERVE": False,  # 05-evaluate-and-serve serves and plays in CI; one Serve deployment is enough
    },
    "02-hyperpod-cluster": {},
    "03-train-grpo": {"STEPS": 3},
    "04-monitor": {"STEPS": 3},
    "05-evaluate-and-serve": {"STEPS": 3, "MAZES": 1},
    "06-resume-and-reproduce": {"STEPS": 8, "CHECKPOINT_EVERY": 2, "STOP_AFTER": 3},
}
TIMINGS = REPO / ".test-results" / "notebooks.json"
#: Largest executed copy of a notebook, bytes (notebook 01 was 11 MB of plotly widget state, issue 32).
LIGHT = {"01-quickstart-local": 2_000_000}


def _tags(cell) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def _read(name: str):
    return nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)


def test_the_six_tutorial_notebooks_are_there():
    assert sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb")) == EXPECTED


@pytest.mark.parametrize("name", EXPECTED)
def test_notebook_is_stripped_and_has_one_parameters_cell(name):
    """Committed notebooks carry no outputs, execution counts or widget state (CI fails otherwise)."""
    nb = _read(name)
    nbformat.validate(nb)
    dirty = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and (c.outputs or c.execution_count is not None)]
    assert dirty == [], f"{name}: cells {dirty} have outputs: strip them (jupyter nbconvert --clear-output --inplace)"
    assert "widgets" not in nb.metadata, f"{name}: saved widget state in the notebook metadata"
    params = [c for c in nb.cells if "parameters" in _tags(c)]
    assert len(params) == 1, f"{name}: {len(params)} cells tagged 'parameters'"
    namespace: dict[str, object] = {}
    exec(params[0].source, namespace)  # plain assignments only
    assert namespace["TARGET"] == "local"
    assert {"CLUSTER_NAME", "NAMESPACE"} <= set(namespace)
    assert set(CI_PARAMETERS[name]) <= set(namespace), f"{name}: CI overrides a parameter the notebook lacks"
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    assert "import hyperpod_rl as hp" in code


def _inject(nb, values: dict[str, object]) -> None:
    """papermill's convention: an ``injected-parameters`` cell right after the ``parameters`` cell."""
    index = next(i for i, c in enumerate(nb.cells) if "parameters" in _tags(c))
    source = "# Parameters (injected by tests/test_notebooks.py)\n" + "\n".join(f"{k} = {v!r}" for k, v in values.items())
    cell = nbformat.v4.new_code_cell(source, metadata={"tags": ["injected-parameters"]})
    nb.cells.insert(index + 1, cell)


def execute_notebook(nb, cwd: Path, *, timeout_s: int = 600) -> None:
    """Run every cell; before a ``reattach`` cell, restart the kernel and re-run the parameter cells.

    Raises:
        nbclient.exceptions.CellExecutionError: a cell raised (the notebook's error and traceback).
    """
    client = NotebookClient(nb, timeout=timeout_s, kernel_name="python3", resources={"metadata": {"path": str(cwd)}})
    with client.setup_kernel():
        parameter_cells = [(i, c) for i, c in enumerate(nb.cells) if {"parameters", "injected-parameters"} & set(_tags(c))]
        for index, cell in enumerate(nb.cells):
            if "reattach" in _tags(cell):
                run_sync(client.km.restart_kernel)(now=True)
                run_sync(client.kc.wait_for_ready)(timeout=120)
                for i, params in parameter_cells:
                    client.execute_cell(params, i)
            client.execute_cell(cell, index)


def _outputs_text(nb) -> str:
    parts = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            parts.append(out.get("text", ""))
            parts.extend(str(v) for v in out.get("data", {}).values())
            parts.extend(out.get("traceback", []))
    return "\n".join(parts)


@pytest.mark.ray
@pytest.mark.slow
@pytest.mark.parametrize("name", EXPECTED)
@pytest.mark.job
def test_notebook_runs_end_to_end_locally(name, local_cluster, tmp_path):
    """Slow: a real kernel runs the notebook's training, monitoring or serving on the session's cluster
    (01: SFT, GRPO and evaluation)."""
    from hyperpod_rl.cluster.local import find_free_port

    nb = _read(name)
    values = dict(CI_PARAMETERS[name])
    if "SERVE_PORT" in _read(name).cells[next(i for i, c in enumerate(nb.cells) if "parameters" in _tags(c))].source:
        values["SERVE_PORT"] = find_free_port()
    _inject(nb, values)
    started = time.monotonic()
    execute_notebook(nb, tmp_path)
    wall_s = round(time.monotonic() - started, 1)

    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.output_type == "error"]
    assert errors == []
    if name in LIGHT:  # the executed copy, widget state included (nbclient keeps every widget's)
        size = len(nbformat.writes(nb))
        assert size < LIGHT[name], f"{name}'s executed copy is {size / 1e6:.1f} MB: keep its outputs light (static charts)"
    text = _outputs_text(nb)
    if name == "01-quickstart-local":  # the SFT warm start ran, and GRPO started from its adapter
        assert "SFT adapter: " in text and "starts from /" in text and "nb-quickstart-sft/adapter" in text, text[-3000:]
    assert local_cluster.state.token not in text, f"{name} printed the cluster's token"
    assert local_cluster.is_alive(), f"{name} stopped the shared local cluster"
    # The notebooks reused the session's cluster: the state file still names the fixture's head.
    from hyperpod_rl.cluster.local import current_local_cluster

    current = current_local_cluster()
    assert current is not None and current.dashboard_url == local_cluster.dashboard_url, f"{name} started another local cluster"
    TIMINGS.parent.mkdir(exist_ok=True)
    timings = json.loads(TIMINGS.read_text()) if TIMINGS.exists() else {}
    timings[name] = wall_s
    TIMINGS.write_text(json.dumps(timings, indent=1, sort_keys=True))
