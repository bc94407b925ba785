"""A failed job, as a new user meets it from the shell (new-user trial):

1. a failed attempt left a provenance record without a config hash, and resubmitting the same
   config then failed inside the job ("trained with another config (hash None ...)");
2. ``runs list`` kept runs whose job FAILED at ``submitted`` forever; ``--status bogus`` printed
   an empty table;
3. missing dataset files and a ``--python`` that does not exist were only found inside the job
   on the local cluster;
4. ``job submit --follow`` buried the trainer's one-line ``error: ...`` under Ray's log tail with
   ANSI codes;
5. ``job status`` exited 0 for a FAILED job.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from hyperpod_rl.cli import app
from hyperpod_rl.cli._common import ERROR_PREFIX
from hyperpod_rl.errors import ConfigError, JobError
from tests.ray_jobs import wait_terminal

runner = CliRunner()
ENV = {"COLUMNS": "200"}


def _config(setup, run_id: str, **data):
    from hyperpod_rl.quickstart import make_run_config

    cfg = make_run_config(setup["opts"], run_id=run_id, model_path=setup["model_dir"], revision=setup["revision"], data=setup["data"])
    return cfg.model_copy(update={"trainer": cfg.trainer.model_copy(update={"steps": 1}), "data": cfg.data.model_copy(update=data)})


def _write(cfg, path: Path) -> Path:
    path.write_text(yaml.safe_dump(cfg.model_dump(mode="json")))
    return path


# ------------------------------------------------------------------ no cluster needed
def test_a_record_without_a_config_hash_is_no_other_config(tmp_path: Path) -> None:
    from hyperpod_rl.runs import RunPaths, config_conflict, record_final_status

    paths = RunPaths(tmp_path / "trial-ddp")
    paths.root.mkdir()
    # what a data-parallel attempt whose workers never started leaves (train/workers.py)
    record_final_status(paths, "failed", submission_id="hprl-trial-ddp-1", source="workers could not start", only_over_running=True)
    assert config_conflict(paths.root, "91366e99") is None
    (paths.root / "manifest.json").write_text('{"run_id": "trial-ddp", "config_hash": "aaaa", "status": "failed"}')
    assert config_conflict(paths.root, "aaaa") is None
    message = config_conflict(paths.root, "91366e99")
    assert message is not None and "hash aaaa, this one 91366e99" in message and "--fresh" in message


def test_error_line_is_the_trainers_last_error_without_ansi() -> None:
    from hyperpod_rl.jobs import error_line

    log = "\x1b[36m(pid=1)\x1b[0m starting\nerror: first\nTraceback ...\n\x1b[31merror: dataset file /d/t.parquet is missing\x1b[0m\n"
    assert error_line(log) == "error: dataset file /d/t.parquet is missing"
    assert error_line("no errors: here\n") is None


def test_runs_list_refuses_an_unknown_status() -> None:
    result = runner.invoke(app, ["runs", "list", "--status", "bogus"], env=ENV)
    assert result.exit_code == 2, result.output
    assert result.output.count(ERROR_PREFIX) == 1 and "'bogus' is not a run status" in result.stderr
    for status in ("created", "submitted", "running", "succeeded", "failed", "stopped"):
        assert status in result.stderr


def test_local_problems_name_missing_data_and_python(tiny_setup, tmp_path: Path) -> None:
    from hyperpod_rl.jobs import local_problems

    cfg = _config(tiny_setup, "no-data", train_path=str(tmp_path / "nope.parquet"))
    problems = local_problems(cfg, "/nonexistent/python")
    assert len(problems) == 2, problems
    assert f"data.train_path {tmp_path / 'nope.parquet'} does not exist" in problems[0]
    assert "--python /nonexistent/python is not an executable" in problems[1]
    assert local_problems(_config(tiny_setup, "all-there"), None) == []


def test_local_problems_check_a_model_folder_on_this_machine(tiny_setup, tmp_path: Path) -> None:
    """New-user try: a model folder whose config.json is not JSON was submitted and only the job
    failed; on the local cluster it is refused before submit, with the file and the fix. A hub id
    (not a folder here) is left to the job."""
    import shutil

    from hyperpod_rl.jobs import local_problems

    model = tmp_path / "model"
    shutil.copytree(tiny_setup["model_dir"], model)
    (model / "config.json").write_text('{"model_type": "qwen3_vl", ')
    cfg = _config(tiny_setup, "bad-model")
    for path, says in ((model, "config.json"), (tmp_path / "missing", "is not a directory")):
        problems = local_problems(cfg.model_copy(update={"model": cfg.model.model_copy(update={"path": str(path)})}), None)
        assert len(problems) == 1 and problems[0].startswith("model.path") and says in problems[0], problems
    assert (
        "is not valid JSON at line 1, column 28"
        in local_problems(cfg.model_copy(update={"model": cfg.model.model_copy(update={"path": str(model)})}), None)[0]
    )
    hub = cfg.model_copy(update={"model": cfg.model.model_copy(update={"path": "Qwen/Qwen3-VL-2B-Instruct"})})
    assert local_problems(hub, None) == []


def test_a_step_larger_than_the_training_set_is_named_with_its_fix(tiny_setup) -> None:
    """Issue 30 item 5e: data.prompts_per_step above the training set's rows was accepted at submit
    and the job then failed suggesting rollout.max_prompt_tokens; it is refused before submit,
    with the right fix (and the job says the same when the file is only readable there)."""
    from hyperpod_rl.jobs import dataset_problems
    from hyperpod_rl.tasks import count_rows

    rows = count_rows(tiny_setup["data"].train)
    assert dataset_problems(_config(tiny_setup, "fits", prompts_per_step=rows)) == []
    problems = dataset_problems(_config(tiny_setup, "too-big", prompts_per_step=rows + 1))
    assert problems == [
        f"data.prompts_per_step={rows + 1} is more than the {rows} rows of data.train_path {tiny_setup['data'].train} (each step draws "
        f"{rows + 1} distinct rows): set data.prompts_per_step to at most {rows}, or generate a larger training set"
    ]
    assert "max_prompt_tokens" not in problems[0]


# ------------------------------------------------------------------ the real local cluster
@pytest.mark.ray
@pytest.mark.job
def test_local_submit_checks_data_and_python_before_submitting(local_cluster, tiny_setup, tmp_path: Path) -> None:
    from hyperpod_rl.jobs import run_jobs, submit_run
    from hyperpod_rl.tasks import count_rows

    client = local_cluster.job_client()
    too_big = _config(tiny_setup, "trial-big-step", prompts_per_step=count_rows(tiny_setup["data"].train) + 1)
    with pytest.raises(ConfigError, match=r"cannot train: data.prompts_per_step=\d+ is more than the \d+ rows of data.train_path"):
        submit_run(client, too_big)
    assert run_jobs(client, "trial-big-step") == []
    cfg = _config(tiny_setup, "trial-no-data", heldout_path=str(tmp_path / "missing.parquet"))
    with pytest.raises(ConfigError, match=r"data.heldout_path .*missing.parquet does not exist"):
        submit_run(client, cfg)
    result = runner.invoke(
        app,
        ["job", "submit", str(_write(_config(tiny_setup, "trial-py"), tmp_path / "py.yaml")), "--python", "/nonexistent/python"],
        env=ENV,
    )
    assert result.exit_code == 2, result.output
    assert result.output.count(ERROR_PREFIX) == 1 and "--python /nonexistent/python is not an executable" in result.stderr
    assert run_jobs(client, "trial-no-data") == [] and run_jobs(client, "trial-py") == []


@pytest.mark.ray
@pytest.mark.job
def test_runs_list_records_a_job_that_failed_before_its_trainer_started(local_cluster, tiny_setup) -> None:
    from hyperpod_rl.jobs import RUN_ID_METADATA
    from hyperpod_rl.runs import add_submission, run_paths, summarize, write_config

    client = local_cluster.job_client()
    paths = run_paths("trial-early-fail")
    write_config(paths, _config(tiny_setup, "trial-early-fail"))
    # a job that dies before the trainer writes anything (e.g. its interpreter is missing on a remote cluster)
    sid = client.submit_job(entrypoint="exit 127", submission_id="hprl-trial-early-fail-1", metadata={RUN_ID_METADATA: "trial-early-fail"})
    add_submission(paths, sid)
    assert wait_terminal(client, sid, 120) == "FAILED"
    assert summarize(paths).status == "submitted"
    result = runner.invoke(app, ["runs", "list"], env=ENV)
    assert result.exit_code == 0, result.output
    assert summarize(paths).status == "failed"
    status = runner.invoke(app, ["job", "status", "trial-early-fail"], env=ENV)
    assert status.exit_code == 1 and "FAILED" in status.stdout, status.output


@pytest.mark.ray
@pytest.mark.job
def test_a_failed_run_shows_its_error_line_and_the_same_config_resubmits(local_cluster, tiny_setup, tmp_path: Path) -> None:
    from hyperpod_rl.jobs import run_jobs, submit_run
    from hyperpod_rl.runs import read_provenance, run_paths

    bad = tmp_path / "train.parquet"
    bad.write_text("not parquet")
    cfg = _config(tiny_setup, "trial-resubmit", train_path=str(bad))
    path = _write(cfg, tmp_path / "run.yaml")
    failed = runner.invoke(app, ["job", "submit", str(path), "--follow"], env=ENV)
    assert failed.exit_code == 1, failed.output
    assert f"ended FAILED: error: dataset file {bad} is not a readable parquet file" in failed.stdout, failed.stdout
    assert "hyperpod-rl job logs trial-resubmit" in failed.stdout and "\x1b[" not in failed.stdout
    assert "Traceback" not in failed.stdout
    status = runner.invoke(app, ["job", "status", "trial-resubmit"], env=ENV)
    assert status.exit_code == 1, status.output

    # the same config, its data fixed: resubmitting resumes cleanly
    shutil.copyfile(tiny_setup["data"].train, bad)
    again = runner.invoke(app, ["job", "submit", str(path), "--follow"], env=ENV)
    assert again.exit_code == 0, again.output
    assert (read_provenance(run_paths("trial-resubmit").root) or {}).get("config_hash") == cfg.config_hash()

    # another config is refused before anything is submitted
    before = run_jobs(local_cluster.job_client(), "trial-resubmit")
    other = cfg.model_copy(update={"trainer": cfg.trainer.model_copy(update={"seed": cfg.trainer.seed + 1})})
    with pytest.raises(JobError, match="trained with another config"):
        submit_run(local_cluster.job_client(), other)
    assert run_jobs(local_cluster.job_client(), "trial-resubmit") == before
