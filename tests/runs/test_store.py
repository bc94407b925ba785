"""The run directory module: one owner of the run's files, atomic and canonical writes, the store scan."""

from __future__ import annotations

import json
import multiprocessing as mp
import time
from pathlib import Path

import pytest

from hyperpod_rl.config.run import RunConfig
from hyperpod_rl.errors import CheckpointError, ConfigError, JobError
from hyperpod_rl.runs import (
    RunPaths,
    add_submission,
    check_run_id,
    list_runs,
    read_config,
    read_eval,
    read_submissions,
    record_eval,
    record_promotion,
    run_paths,
    submit_lock,
    update_provenance,
    write_config,
)


def _config(run_id: str = "store-run", steps: int = 10) -> RunConfig:
    return RunConfig.build(
        {"run_id": run_id, "data": {"train_path": "t.parquet", "heldout_path": "h.parquet"}, "trainer": {"steps": steps}}
    )


def test_run_ids_are_checked_and_paths_derived(tmp_path):
    paths = run_paths("good-run", storage=tmp_path)
    assert paths.root == tmp_path / "runs" / "good-run" and paths.provenance.name == "manifest.json"
    assert paths.eval_file("adapter") == paths.root / "eval" / "adapter.json"
    for bad in ("Bad_Run", "a", "../etc", "x" * 70):
        with pytest.raises(ConfigError, match="run id .* is invalid: use 3-63 lower-case letters"):
            check_run_id(bad)
    with pytest.raises(ConfigError, match="evaluation name '../x' is invalid"):
        paths.eval_file("../x")
    assert run_paths(tmp_path / "elsewhere").root == tmp_path / "elsewhere"


def test_config_round_trips_canonically_and_must_match_its_directory(tmp_path):
    paths = run_paths("store-run", storage=tmp_path)
    write_config(paths, _config())
    text = paths.config.read_text()
    assert list(json.loads(text)) == sorted(json.loads(text))  # sorted keys: the bytes depend only on the content
    assert read_config(paths) == _config()
    with pytest.raises(ConfigError, match="does not match the run directory"):
        write_config(paths, _config("other-run"))
    paths.config.write_text("{broken")
    with pytest.raises(CheckpointError, match="is not valid JSON"):
        read_config(paths)
    with pytest.raises(CheckpointError, match="has no config.json"):
        read_config(run_paths("never-made", storage=tmp_path))


def test_evaluations_and_promotions_reach_the_provenance_record(tmp_path):
    paths = run_paths("store-run", storage=tmp_path)
    update_provenance(paths.root, lambda _: {"run_id": "store-run", "status": "succeeded"})
    record_eval(paths, "adapter", {"label": "adapter", "num_mazes": 3, "metrics": {"solve_rate": 0.5}, "ci": {}, "per_maze": [1, 2, 3]})
    record = json.loads(paths.provenance.read_text())
    assert record["eval"]["adapter"]["metrics"] == {"solve_rate": 0.5} and "per_maze" not in record["eval"]["adapter"]
    assert read_eval(paths, "adapter")["per_maze"] == [1, 2, 3] and read_eval(paths, "base") is None
    record_promotion(paths, {"promoted": True, "reason": "better", "comparison": {"big": 1}})
    record = json.loads(paths.provenance.read_text())
    assert record["promotion"] == {"promoted": True, "reason": "better"}
    assert json.loads(paths.promotion.read_text())["comparison"] == {"big": 1}


def test_list_runs_summarises_the_store_newest_first(tmp_path):
    old, new = run_paths("old-run", storage=tmp_path), run_paths("new-run", storage=tmp_path)
    write_config(old, _config("old-run", steps=4))
    time.sleep(0.02)
    write_config(new, _config("new-run", steps=8))
    add_submission(new, "hprl-new-run-1")
    new.metrics.write_text(
        json.dumps({"run_id": "new-run", "step": 3, "total_steps": 8, "time_s": 1.0, "values": {"reward/avg_raw_reward": 0.25}}) + "\n"
    )
    (tmp_path / "runs" / "not-a-run").mkdir()
    runs = list_runs(tmp_path)
    assert [r.run_id for r in runs] == ["new-run", "old-run"]
    assert runs[0].status == "submitted" and runs[0].step == 3 and runs[0].total_steps == 8 and runs[0].last_reward == 0.25
    assert runs[1].status == "created" and runs[1].submission_id is None and not runs[1].has_adapter


def _hold_lock(root: str, held: mp.synchronize.Event, release: mp.synchronize.Event) -> None:  # pragma: no cover - child process
    with submit_lock(RunPaths(Path(root))):
        held.set()
        release.wait(10)


def test_submit_lock_serialises_submitters_across_processes(tmp_path):
    paths = run_paths("locked-run", storage=tmp_path)
    held, release = mp.Event(), mp.Event()
    child = mp.get_context("fork").Process(target=_hold_lock, args=(str(paths.root), held, release))
    child.start()
    try:
        assert held.wait(10)
        with pytest.raises(JobError, match="another submit of run 'locked-run' has held .* for 0 s"):
            with submit_lock(paths, timeout_s=0.2):
                pass
        release.set()
        with submit_lock(paths, timeout_s=10):  # free once the holder is done
            add_submission(paths, "hprl-locked-run-1")
    finally:
        release.set()
        child.join(10)
    assert read_submissions(paths) == ["hprl-locked-run-1"]
