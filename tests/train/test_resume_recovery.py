"""Recovery in-process: corrupt newest checkpoint, finished runs, other configs, --fresh, the run lock."""

from __future__ import annotations

import fcntl
import json
import os
import pickle
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from hyperpod_rl.errors import CheckpointError
from hyperpod_rl.ledger import Ledger
from hyperpod_rl.metrics import read_metrics
from hyperpod_rl.quickstart import make_run_config
from hyperpod_rl.runs import RunPaths, write_config
from hyperpod_rl.runs.files import verify_checksums, write_checksums
from hyperpod_rl.tasks.maze import write_parquet
from hyperpod_rl.train import __main__ as train_job
from hyperpod_rl.train.reference import ReferenceTrainer, load_training_state, read_rows
from tests.storage_faults import PAGE, disk_fills_after, on_a_full_disk, pages, read_only

STEPS = 4


def _config(setup, tmp, run_id: str, **grpo):
    train = tmp / "train.parquet"
    if not train.exists():
        write_parquet(read_rows(setup["data"].train)[:4], train)
    cfg = make_run_config(setup["opts"], run_id=run_id, model_path=setup["model_dir"], revision=setup["revision"], data=setup["data"])
    data = cfg.model_dump(mode="json")
    data["data"]["train_path"] = str(train)
    data["trainer"].update(steps=STEPS, eval_rows=4, torch_threads=1)
    data["checkpoint"].update(interval=1, keep=3)
    data["grpo"].update(grpo)
    return type(cfg).build(data)


@pytest.fixture(scope="module")
def finished(tiny_setup, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("recovery")
    cfg = _config(tiny_setup, tmp, "recovery")
    run_dir = tmp / "run"
    adapter = ReferenceTrainer(cfg, run_dir).train()
    return cfg, run_dir, load_file(str(adapter / "adapter_model.safetensors")), tmp


def _same(a, b) -> bool:
    return a.keys() == b.keys() and all(a[k].numpy().tobytes() == b[k].numpy().tobytes() for k in a)


def test_truncated_newest_checkpoint_falls_back_to_the_previous_and_completes(finished, tmp_path):
    cfg, run_dir, weights, _ = finished
    crashed = tmp_path / "run"
    shutil.copytree(run_dir, crashed, ignore=shutil.ignore_patterns("adapter", "trainer.lock"))  # a crash before export
    ckpts = sorted((crashed / "checkpoints").glob("step_*"))
    assert [p.name for p in ckpts] == ["step_000001", "step_000002", "step_000003"]
    newest = ckpts[-1] / "adapter_model.safetensors"
    newest.write_bytes(newest.read_bytes()[: newest.stat().st_size // 2])
    (crashed / "checkpoints" / "step_000004.tmp-999999").mkdir()  # a write SIGKILL interrupted
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        adapter = ReferenceTrainer(cfg, crashed).train()
    assert any("step_000003 is unusable" in str(w.message) for w in caught)
    assert _same(load_file(str(adapter / "adapter_model.safetensors")), weights)
    assert [r.step for r in read_metrics(crashed / "metrics.jsonl")] == list(range(1, STEPS + 1))
    manifest = json.loads((crashed / "manifest.json").read_text())
    assert manifest["status"] == "succeeded" and manifest["resumes"][-1]["from_step"] == 2
    assert not (crashed / "checkpoints" / "step_000004.tmp-999999").exists()
    assert manifest["adapter"]["steps"] == STEPS and len(manifest["adapter"]["sha256"]) == 64


def test_finished_run_is_not_trained_again(finished):
    cfg, run_dir, _weights, _ = finished
    adapter = run_dir / "adapter" / "adapter_model.safetensors"
    before = adapter.stat().st_mtime_ns
    assert ReferenceTrainer(cfg, run_dir).train() == run_dir / "adapter"
    assert adapter.stat().st_mtime_ns == before


def test_manifest_records_what_rebuilds_the_run(finished, tiny_setup):
    cfg, run_dir, _, _ = finished
    m = json.loads((run_dir / "manifest.json").read_text())
    assert m["config"] == cfg.model_dump(mode="json") and m["config_hash"] == cfg.config_hash()
    assert set(m["git"]) == {"commit", "dirty"} and m["packages"]["torch"] and m["packages"]["python"]
    assert m["base_model"] == {"id": "hyperpod-rl/tiny-qwen3-vl", "revision": tiny_setup["revision"], "path": cfg.model.path}
    assert len(m["datasets"]["train"]["sha256"]) == 64 and m["datasets"]["heldout"]["spec"]["seed"] == tiny_setup["opts"].seed
    assert m["seeds"]["trainer"] == cfg.trainer.seed and "dataset" in m["seeds"]
    assert m["reward_version"] and m["image"] is None
    assert [c["step"] for c in m["checkpoints"]] == [1, 2, 3]
    assert all(len(sha) == 64 for c in m["checkpoints"] for sha in c["files"].values())
    base = json.loads((run_dir / "eval" / "base.json").read_text())
    assert base["adapter_path"] is None and base["num_mazes"] == 4 and m["eval"]["base"]["metrics"] == base["metrics"]
    with Ledger() as ledger:  # the trainer never writes the ledger: it is filled from the run directory
        assert ledger.get_run(cfg.run_id) is None
        assert ledger.sync_storage(run_dir.parent) >= 1
        rec = ledger.get_run(cfg.run_id)
        assert rec is not None and rec.status == "succeeded" and rec.config_hash == cfg.config_hash()
        assert {"checkpoint", "adapter"} <= {a["kind"] for a in rec.artifacts} and "base" in rec.evals


def test_other_config_needs_fresh_and_fresh_starts_over(finished, tiny_setup, tmp_path):
    _cfg, run_dir, weights, tmp = finished
    other_dir = tmp_path / "run"
    shutil.copytree(run_dir, other_dir, ignore=shutil.ignore_patterns("trainer.lock"))
    other = _config(tiny_setup, tmp, "recovery", lr=1e-3)
    with pytest.raises(CheckpointError, match="--fresh"):
        ReferenceTrainer(other, other_dir).train()
    ReferenceTrainer(other, other_dir, fresh=True).train()
    m = json.loads((other_dir / "manifest.json").read_text())
    assert m["config_hash"] == other.config_hash() and m["resumes"] == []
    assert not _same(load_file(str(other_dir / "adapter" / "adapter_model.safetensors")), weights)


def test_a_second_trainer_on_the_same_run_is_refused(finished):
    cfg, run_dir, _, _ = finished
    with open(run_dir / "trainer.lock", "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fh.write(json.dumps({"pid": 12345}))
        fh.flush()
        with pytest.raises(CheckpointError, match="being trained by"):
            ReferenceTrainer(cfg, run_dir).train()


# ---------------------------------------------------------------- untrusted run files (issue 30 items 1 and 5c)
def _crashed_before_export(run_dir, tmp_path, name: str = "run"):
    crashed = tmp_path / name
    shutil.copytree(run_dir, crashed, ignore=shutil.ignore_patterns("adapter", "trainer.lock"))
    return crashed


class _TouchesAFile:
    """A pickle payload: unpickling it creates ``path`` (what a planted training_state.pt would do)."""

    def __init__(self, path) -> None:
        self.path = str(path)

    def __reduce__(self):
        return (os.makedirs, (self.path,))


def test_a_planted_pickle_in_a_checkpoint_is_refused_and_never_run(finished, tmp_path):
    """Run directories live on shared storage: whoever can write one must not run code in the
    next trainer that resumes it. A training_state.pt whose pickle calls a function (checksums
    rewritten, as an attacker would) is refused with one clear error, and nothing of it runs."""
    cfg, run_dir, _, _ = finished
    crashed = _crashed_before_export(run_dir, tmp_path)
    live = tmp_path / "payload-is-live"
    pickle.loads(pickle.dumps(_TouchesAFile(live)))  # the payload really does act when unpickled
    assert live.is_dir()
    marker = tmp_path / "touched-by-the-checkpoint"
    newest = sorted((crashed / "checkpoints").glob("step_*"))[-1]
    torch.save({"optimizer": _TouchesAFile(marker)}, newest / "training_state.pt")
    write_checksums(newest)
    with pytest.raises(CheckpointError, match=r"training_state\.pt holds objects a checkpoint never holds and was refused unread") as info:
        ReferenceTrainer(cfg, crashed).train()
    said = str(info.value)
    assert "os.makedirs" in said and f"mv {newest} {crashed / (newest.name + '.damaged')}; nothing is deleted" in said, said
    assert "resumes from the checkpoint before it" in said and "--fresh" not in said, said
    assert not marker.exists()


def test_a_checkpoint_of_the_previous_format_resumes_bitwise(finished, tmp_path):
    """Checkpoints written before the NumPy RNG state became a tensor hold a NumPy array; they
    still load with weights_only=True (NumPy's array globals are allowed, nothing else) and
    resume to the same adapter."""
    cfg, run_dir, weights, _ = finished
    crashed = _crashed_before_export(run_dir, tmp_path)
    newest = sorted((crashed / "checkpoints").glob("step_*"))[-1]
    state = load_training_state(newest / "training_state.pt")
    rng = state["numpy_rng"]
    state["numpy_rng"] = (rng["bit_generator"], rng["key"].numpy().astype(np.uint32), rng["pos"], rng["has_gauss"], rng["cached_gaussian"])
    torch.save(state, newest / "training_state.pt")
    write_checksums(newest)
    assert "numpy.ndarray" in torch.serialization.get_unsafe_globals_in_checkpoint(newest / "training_state.pt")
    adapter = ReferenceTrainer(cfg, crashed).train()
    assert _same(load_file(str(adapter / "adapter_model.safetensors")), weights)


def test_resume_cleans_what_a_killed_writer_left_and_only_that(finished, tmp_path):
    """A SIGKILL during the final adapter export leaves ``adapter.tmp-<pid>/`` (and a record
    write leaves ``<file>.tmp-<pid>-<thread>``); the resume removes the leftovers of dead pids,
    restores an ``.old-<pid>`` copy whose original is gone, and leaves a live writer's alone."""
    cfg, run_dir, weights, _ = finished
    crashed = _crashed_before_export(run_dir, tmp_path)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True)
    dead_pid = int(dead.stdout)
    partial = crashed / f"adapter.tmp-{dead_pid}"
    partial.mkdir()
    (partial / "adapter_model.safetensors").write_bytes((run_dir / "adapter" / "adapter_model.safetensors").read_bytes()[:100])
    (crashed / f"metrics.jsonl.tmp-{dead_pid}-1").write_text("{")
    (crashed / "eval" / f"base.json.tmp-{dead_pid}-7").write_text("{")
    base = crashed / "eval" / "base.json"
    base.rename(crashed / "eval" / f"base.json.old-{dead_pid}")  # died between its two renames
    with subprocess.Popen(["sleep", "600"]) as writer:
        try:
            in_progress = crashed / f"adapter.tmp-{writer.pid}"
            in_progress.mkdir()
            adapter = ReferenceTrainer(cfg, crashed).train()
            assert in_progress.is_dir()  # a live writer's directory is not touched
        finally:
            writer.kill()
    assert _same(load_file(str(adapter / "adapter_model.safetensors")), weights)
    assert base.is_file() and json.loads(base.read_text())["num_mazes"] == 4
    left = sorted(
        p.name for d in (crashed, crashed / "checkpoints", crashed / "eval") for p in d.iterdir() if ".tmp-" in p.name or ".old-" in p.name
    )
    assert left == [in_progress.name], left


def test_a_read_only_run_directory_ends_the_job_with_one_error_line(finished, tmp_path):
    """Issue 30 item 5c: the job ends with one ``error:`` line naming the path and the fix, not a traceback."""
    cfg, run_dir, _, _ = finished
    crashed = _crashed_before_export(run_dir, tmp_path, cfg.run_id)
    write_config(RunPaths(crashed), cfg)
    argv = [sys.executable, "-m", "hyperpod_rl.train", "--config", str(crashed / "config.json")]
    repo = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(repo)}
    proc = subprocess.run(read_only(crashed, argv), capture_output=True, text=True, env=env, cwd=repo, timeout=600, check=False)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, proc.stderr[-3000:]
    assert str(crashed / "trainer.lock") in errors[0] and ("read-only" in errors[0] or "permission denied" in errors[0]), errors[0]
    assert "HYPERPOD_RL_STORAGE" in errors[0] or "write access" in errors[0], errors[0]


# ---------------------------------------------------------------- storage faults (issue 42 item 2)
def _trainer_argv(run_dir: Path) -> tuple[list[str], dict[str, str], Path]:
    repo = Path(__file__).resolve().parents[2]
    argv = [sys.executable, "-m", "hyperpod_rl.train", "--config", str(run_dir / "config.json")]
    return argv, {**os.environ, "PYTHONPATH": str(repo)}, repo


def _one_storage_error(proc: subprocess.CompletedProcess[str], path: Path) -> str:
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, proc.stderr[-3000:]
    assert f"cannot write {path}: no space left on that file system: free space or grow it" in errors[0], errors[0]
    return errors[0]


def _leftovers(run_dir: Path) -> list[str]:
    return sorted(str(p.relative_to(run_dir)) for p in run_dir.rglob("*") if ".tmp-" in p.name or ".old-" in p.name)


def test_a_full_disk_while_writing_a_checkpoint_loses_nothing(finished, tmp_path):
    """The kernel's own ENOSPC (a tmpfs with half a checkpoint free) while step 3's checkpoint is
    written: one error line naming it, no temporary left, step 2's checkpoint intact, and a
    resume on a disk with room ends with the uninterrupted run's adapter."""
    cfg, run_dir, weights, _ = finished
    crashed = _crashed_before_export(run_dir, tmp_path, cfg.run_id)
    shutil.rmtree(crashed / "checkpoints" / "step_000003")  # the job died after step 2's checkpoint
    write_config(RunPaths(crashed), cfg)
    checkpoint = pages(crashed / "checkpoints" / "step_000002")
    # room for the resume's record rewrites (each holds a temporary copy) and step 3's metric line, not for a checkpoint
    free = 2 * pages(crashed / "metrics.jsonl", crashed / "manifest.json") + 4 * PAGE + checkpoint // 2
    argv, env, repo = _trainer_argv(crashed)
    after = tmp_path / "after"
    proc = on_a_full_disk(crashed, argv, free=free, copy_to=after, env=env, cwd=repo)
    _one_storage_error(proc, crashed / "checkpoints" / "step_000003")
    assert _leftovers(after) == []
    assert sorted(p.name for p in (after / "checkpoints").iterdir()) == ["step_000001", "step_000002"]
    assert verify_checksums(after / "checkpoints" / "step_000002") is None
    adapter = ReferenceTrainer(cfg, after).train()  # the storage freed: resubmitting resumes
    assert _same(load_file(str(adapter / "adapter_model.safetensors")), weights)
    assert json.loads((after / "manifest.json").read_text())["resumes"][-1]["from_step"] == 2


def test_a_full_disk_while_writing_the_final_adapter_loses_nothing(finished, tmp_path):
    """ENOSPC while the adapter is exported after the last step: one error line naming adapter/,
    no adapter.tmp-<pid>/ left, every checkpoint intact, and the resume exports the same adapter."""
    cfg, run_dir, weights, _ = finished
    crashed = _crashed_before_export(run_dir, tmp_path, cfg.run_id)
    write_config(RunPaths(crashed), cfg)
    adapter_size = pages(run_dir / "adapter")
    free = 2 * pages(crashed / "metrics.jsonl", crashed / "manifest.json") + 4 * PAGE + adapter_size // 2
    argv, env, repo = _trainer_argv(crashed)
    after = tmp_path / "after"
    proc = on_a_full_disk(crashed, argv, free=free, copy_to=after, env=env, cwd=repo)
    _one_storage_error(proc, crashed / "adapter")
    assert _leftovers(after) == [] and not (after / "adapter").exists()
    assert all(verify_checksums(p) is None for p in (after / "checkpoints").glob("step_*"))
    adapter = ReferenceTrainer(cfg, after).train()
    assert _same(load_file(str(adapter / "adapter_model.safetensors")), weights)


def test_a_metrics_write_that_starts_failing_mid_run_ends_with_one_error_line(finished, tmp_path, monkeypatch, capsys):
    """New-user report: the disk fills between two steps, so writing step 2's metric line fails and
    the sink's close (which flushes the same bytes again) fails too; the job ends with one
    ``error:`` line naming metrics.jsonl, not a traceback with the close's raw error chained on
    it, step 1's checkpoint stays valid and a resubmission on a disk with room finishes the run."""
    cfg, run_dir, weights, _ = finished
    crashed = _crashed_before_export(run_dir, tmp_path, cfg.run_id)
    for step in (2, 3):
        shutil.rmtree(crashed / "checkpoints" / f"step_{step:06d}")  # the job died after step 1's checkpoint
    write_config(RunPaths(crashed), cfg)
    metrics = crashed / "metrics.jsonl"
    disk_fills_after(monkeypatch, metrics, 0)  # room for the resume's record rewrites, not for one more line
    monkeypatch.setattr(sys, "argv", ["hyperpod_rl.train", "--config", str(crashed / "config.json")])
    with pytest.raises(SystemExit) as exited:
        train_job.run()
    assert exited.value.code == 1
    out = capsys.readouterr()
    assert "Traceback" not in out.err + out.out and "During handling" not in out.err + out.out, out.err[-3000:]
    errors = [line for line in out.err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and f"cannot write {metrics}: no space left on that file system" in errors[0], errors
    assert _leftovers(crashed) == []
    assert sorted(p.name for p in (crashed / "checkpoints").iterdir()) == ["step_000001"]
    assert verify_checksums(crashed / "checkpoints" / "step_000001") is None
    assert json.loads((crashed / "manifest.json").read_text())["status"] == "failed"
    monkeypatch.undo()  # the storage freed: resubmitting resumes from step 1
    adapter = ReferenceTrainer(cfg, crashed).train()
    assert _same(load_file(str(adapter / "adapter_model.safetensors")), weights)
