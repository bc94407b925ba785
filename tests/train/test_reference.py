"""Reference GRPO backend in-process: artifacts, provenance, checkpoints and resume."""

from __future__ import annotations

import json
import shutil
import warnings

import pytest
from safetensors.torch import load_file

from hyperpod_rl.errors import CheckpointError, TaskError
from hyperpod_rl.metrics import read_metrics
from hyperpod_rl.model.tiny import directory_revision
from hyperpod_rl.quickstart import make_run_config
from hyperpod_rl.runs.files import file_sha256, latest_valid_checkpoint
from hyperpod_rl.train.reference import ReferenceTrainer, read_rows

SKYRL_NAMES = {
    "reward/avg_raw_reward",
    "policy/policy_loss",
    "policy/policy_kl",
    "policy/policy_entropy",
    "policy/grad_norm",
    "timing/generate",
    "timing/policy_train",
    "environment/optimal_move_rate",
}


def _config(setup, run_id: str, **trainer):
    cfg = make_run_config(setup["opts"], run_id=run_id, model_path=setup["model_dir"], revision=setup["revision"], data=setup["data"])
    data = cfg.model_dump(mode="json")
    data["trainer"].update(trainer)
    data["checkpoint"]["interval"] = 1
    data["checkpoint"]["keep"] = 3
    return type(cfg).build(data)


@pytest.fixture(scope="module")
def trained(tiny_setup, tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("run")
    cfg = _config(tiny_setup, "artifacts", steps=3)
    adapter = ReferenceTrainer(cfg, run_dir).train()
    return cfg, run_dir, adapter


def test_adapter_files_and_provenance(trained, tiny_setup):
    cfg, run_dir, adapter = trained
    assert sorted(p.name for p in adapter.iterdir()) == [
        "README.md",
        "adapter_config.json",
        "adapter_model.safetensors",
        "checksums.json",
        "provenance.json",
    ]
    prov = json.loads((adapter / "provenance.json").read_text())
    assert prov["base_model_id"] == "hyperpod-rl/tiny-qwen3-vl"
    assert prov["base_model_revision"] == tiny_setup["revision"] == directory_revision(tiny_setup["model_dir"])
    assert prov["config_hash"] == cfg.config_hash()
    assert prov["dataset_hashes"]["train"] == file_sha256(tiny_setup["data"].train)
    assert prov["adapter_sha256"] == file_sha256(adapter / "adapter_model.safetensors")
    assert prov["seeds"] == {"trainer": cfg.trainer.seed}
    assert prov["packages"]["peft"] and prov["packages"]["transformers"]
    assert set(prov["git"]) == {"commit", "dirty"}
    config = json.loads((adapter / "adapter_config.json").read_text())
    assert config["r"] == cfg.lora.rank and config["peft_type"] == "LORA"
    weights = load_file(str(adapter / "adapter_model.safetensors"))
    assert weights and all("lora_" in k for k in weights)
    assert not any("visual" in k for k in weights)  # the vision tower is excluded by default


def test_metrics_use_skyrl_names_one_record_per_step(trained):
    _, run_dir, _ = trained
    records = list(read_metrics(run_dir / "metrics.jsonl"))
    assert [r.step for r in records] == [1, 2, 3]
    assert SKYRL_NAMES <= set(records[0].values)


def test_resume_continues_from_the_latest_checkpoint_and_is_exact(tiny_setup, tmp_path):
    straight_dir, resumed_dir = tmp_path / "straight", tmp_path / "resumed"
    cfg = _config(tiny_setup, "resume", steps=3)
    straight = ReferenceTrainer(cfg, straight_dir).train()
    # Simulate a crash after step 2: copy the step-2 checkpoint and the metrics written so far.
    ReferenceTrainer(_config(tiny_setup, "resume", steps=3), resumed_dir)  # creates the dir
    shutil.copytree(straight_dir / "checkpoints" / "step_000002", resumed_dir / "checkpoints" / "step_000002")
    lines = (straight_dir / "metrics.jsonl").read_text().splitlines(keepends=True)
    (resumed_dir / "metrics.jsonl").write_text("".join(lines[:3]))  # one line too many: dropped on resume
    resumed = ReferenceTrainer(cfg, resumed_dir).train()
    a = load_file(str(straight / "adapter_model.safetensors"))
    b = load_file(str(resumed / "adapter_model.safetensors"))
    assert a.keys() == b.keys() and all((a[k] == b[k]).all() for k in a)
    assert [r.step for r in read_metrics(resumed_dir / "metrics.jsonl")] == [1, 2, 3]


def test_corrupt_latest_checkpoint_falls_back_with_a_warning(tiny_setup, tmp_path):
    cfg = _config(tiny_setup, "corrupt", steps=3)
    ReferenceTrainer(cfg, tmp_path).train()
    ckpts = tmp_path / "checkpoints"
    newest = sorted(ckpts.glob("step_*"))[-1]
    target = newest / "adapter_model.safetensors"
    target.write_bytes(target.read_bytes()[:100])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        found = latest_valid_checkpoint(ckpts)
    assert found is not None and found.name < newest.name
    assert any("truncated or corrupt" in str(w.message) for w in caught)
    for path in ckpts.glob("step_*"):
        (path / "training_state.pt").write_bytes(b"")
    with pytest.raises(CheckpointError, match="--fresh"), pytest.warns(UserWarning, match="is unusable .*falling back"):
        ReferenceTrainer(cfg, tmp_path).train()


def test_bad_dataset_files_are_clear_errors(tmp_path):
    with pytest.raises(TaskError, match="does not exist: generate it first"):
        read_rows(tmp_path / "missing.parquet")
    (tmp_path / "junk.parquet").write_bytes(b"not parquet")
    with pytest.raises(TaskError, match="is not a readable parquet file"):
        read_rows(tmp_path / "junk.parquet")
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"prompt": [[{"role": "user", "content": "hi"}]]}), tmp_path / "other.parquet")
    with pytest.raises(TaskError, match=r"lacks the columns \['env_class'\]"):
        read_rows(tmp_path / "other.parquet")
