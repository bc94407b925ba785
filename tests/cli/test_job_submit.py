"""``hyperpod-rl job submit RUN.yaml``: a run config file submitted from a shell.

Field report (new-user trial): no command submitted a run config file; the notebook API
(``RunConfig.from_file`` + ``submit_run``) was the only way.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from hyperpod_rl.cli import app
from hyperpod_rl.cli._common import ERROR_PREFIX

runner = CliRunner()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (None, "cannot read run config file"),
        ("run_id: [unclosed\n", "is not valid YAML or JSON at line"),
        ("- just\n- a list\n", "holds a list, not a mapping"),
        ("run_id: Bad_Id\ndata: {train_path: /d/t.parquet, heldout_path: /d/h.parquet}\ntrainer: {steps: 0}\n", "trainer.steps"),
    ],
    ids=["missing", "not-yaml", "not-a-mapping", "bad-fields"],
)
def test_a_bad_config_file_is_one_error_line_and_exit_2(tmp_path: Path, text: str | None, message: str) -> None:
    path = tmp_path / "run.yaml"
    if text is not None:
        path.write_text(text)
    result = runner.invoke(app, ["job", "submit", str(path)], env={"COLUMNS": "200"})
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"{ERROR_PREFIX} ") and result.output.count(ERROR_PREFIX) == 1, result.output
    assert message in result.stderr, result.stderr
    assert "Traceback" not in result.output and "submitted" not in result.stdout


def _config_file(setup, tmp_path: Path, run_id: str, **trainer) -> Path:
    from hyperpod_rl.quickstart import make_run_config

    cfg = make_run_config(setup["opts"], run_id=run_id, model_path=setup["model_dir"], revision=setup["revision"], data=setup["data"])
    data = cfg.model_dump(mode="json")
    data["trainer"].update(steps=1, **trainer)
    path = tmp_path / f"{run_id}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.ray
@pytest.mark.job
def test_job_submit_follows_a_run_file_to_its_adapter(local_cluster, tiny_setup, tmp_path: Path) -> None:
    from hyperpod_rl.paths import run_dir

    path = _config_file(tiny_setup, tmp_path, "cli-submit")
    result = runner.invoke(app, ["job", "submit", str(path), "--follow"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "submitted hprl-cli-submit-1: run cli-submit" in result.stdout
    assert (run_dir("cli-submit") / "adapter" / "adapter_model.safetensors").is_file()
    assert json.loads((run_dir("cli-submit") / "submissions.json").read_text()) == ["hprl-cli-submit-1"]
    again = runner.invoke(app, ["job", "submit", str(path)], env={"COLUMNS": "200"})
    assert again.exit_code == 2 and "already finished" in again.stderr and "--fresh" in again.stderr


@pytest.mark.ray
@pytest.mark.job
def test_job_submit_refuses_a_cuda_run_on_a_cluster_without_gpus(local_cluster, tiny_setup, tmp_path: Path) -> None:
    from hyperpod_rl.cluster.resources import node_resources

    if any(n.get("GPU") for n in node_resources(local_cluster.job_client()) or []):
        pytest.skip("this check needs a cluster without GPUs")
    result = runner.invoke(
        app, ["job", "submit", str(_config_file(tiny_setup, tmp_path, "cli-cuda", device="cuda"))], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 2, result.output
    assert result.output.count(ERROR_PREFIX) == 1
    assert "needs 1 GPU(s) but the cluster has 0 GPU(s)" in result.stderr and "set trainer.device to 'auto'" in result.stderr
