"""Recovery in-process: corrupt newest checkpoint, finished runs, other configs, --fresh, the run lock."""

from __future__ import annotations

import fcntl
import json
import shutil
import warnings

import pytest
from safetensors.torch import load_file

from hyperpod_rl.errors import CheckpointError
from hyperpod_rl.ledger import Ledger
from hyperpod_rl.metrics import read_metrics
from hyperpod_rl.quickstart import make_run_config
from hyperpod_rl.tasks.maze import write_parquet
from hyperpod_rl.train.reference import ReferenceTrainer, read_rows

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
