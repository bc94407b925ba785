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
    assert prov["workers"] == 1  # one process (trainer.workers)
    assert prov["packages"]["peft"] and prov["packages"]["transformers"]
    assert set(prov["git"]) == {"commit", "dirty"}
    config = json.loads((adapter / "adapter_config.json").read_text())
    assert config["r"] == cfg.lora.rank and config["peft_type"] == "LORA"
    weights = load_file(str(adapter / "adapter_model.safetensors"))
    assert weights and all("lora_" in k for k in weights)
    assert not any("visual" in k for k in weights)  # the vision tower is excluded by default
    # Issue 14 items 4 and 3: matched-module counts and the prompt filter are in the provenance.
    wrapped = {k.split(".lora_")[0] for k in weights}
    assert prov["lora_matched_modules"] == {leaf: sum(n.endswith("." + leaf) for n in wrapped) for leaf in prov["lora_matched_modules"]}
    assert set(prov["lora_matched_modules"]) == {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}
    assert prov["prompt_filter"] == {"limit": cfg.rollout.max_prompt_tokens, "kept": 64, "dropped": 0}
    assert config["target_modules"] == sorted(config["target_modules"])  # item 14: no set order


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
    with (
        pytest.raises(CheckpointError, match=r"move the folder aside .*nothing is deleted"),
        pytest.warns(UserWarning, match="is unusable .*falling back"),
    ):
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
    with pytest.raises(TaskError, match=r"lacks the columns env_class: it was not written by a task"):
        read_rows(tmp_path / "other.parquet")


def test_free_generation_run_with_kl_on_the_device_path(tiny_setup, tmp_path):
    """The code path a GPU run takes (batched KV-cache rollouts, KL through the adapter-disabled
    base model, per-turn samples), run with ``trainer.device='cpu'`` so CI covers it."""
    cfg = _config(tiny_setup, "free-kl", steps=2, device="cpu", eval_rows=2)
    data = cfg.model_dump(mode="json")
    data["rollout"].update(action_constraint="none", max_new_tokens=4, max_turns=2)
    data["grpo"].update(kl_coef=0.05)
    cfg = type(cfg).build(data)
    trainer = ReferenceTrainer(cfg, tmp_path / "run")
    adapter = trainer.train()
    assert trainer.device.type == "cpu" and trainer.model.dtype.is_floating_point
    records = list(read_metrics(tmp_path / "run" / "metrics.jsonl"))
    assert [r.step for r in records] == [1, 2]
    for r in records:
        v = r.values
        assert 1 <= v["policy/response_length"] <= 4
        assert v["policy/policy_kl"] >= 0.0
        # rollout log-probs come from the batched decode's scoring pass: the update agrees on CPU
        assert v["policy/rollout_train_logprobs_abs_diff_mean"] < 1e-3
        # SkyRL's name, SkyRL's meaning: the mean over sampled tokens (the engine-gap accounting's own mean)
        assert v["policy/rollout_train_logprobs_abs_diff_mean"] == v["rollout/logprob_gap_mean"]
        # the transformers engine samples from the trained weights: per-token gap ~0, no importance weight cut
        assert 0.0 <= v["rollout/logprob_gap_mean"] <= v["rollout/logprob_gap_max"] < 1e-3
        assert v["rollout/is_truncated_fraction"] == 0.0
    assert records[0].values["policy/policy_kl"] == pytest.approx(0.0, abs=1e-6)  # step 1: adapter B = 0
    assert (adapter / "adapter_model.safetensors").is_file()


def test_default_tiny_model_path_runs(tiny_setup, tmp_path):
    """Issue 14 item 13: the default model.path='tiny' validates, trains and evaluates."""
    from hyperpod_rl.config.run import RunConfig
    from hyperpod_rl.eval import evaluate_run
    from hyperpod_rl.runs import RunPaths
    from hyperpod_rl.runs.store import write_config

    data = tiny_setup["data"]
    cfg = RunConfig.build(
        {
            "run_id": "default-tiny",
            "data": {"train_path": str(data.train), "heldout_path": str(data.heldout), "prompts_per_step": 2},
            "grpo": {"group_size": 2},
            "rollout": {"max_turns": 2},
            "trainer": {"steps": 1, "eval_rows": 2},
            "checkpoint": {"interval": 0},
        }
    )
    assert cfg.model.path == "tiny"
    run_dir = tmp_path / "default-tiny"
    run_dir.mkdir()
    write_config(RunPaths(run_dir), cfg)
    adapter = ReferenceTrainer(cfg, run_dir).train()
    prov = json.loads((adapter / "provenance.json").read_text())
    built = sorted((run_dir / "base-model").glob("tiny-qwen3-vl-*"))
    assert len(built) == 1 and prov["base_model_id"] == "hyperpod-rl/tiny-qwen3-vl"
    assert prov["base_model_revision"] == directory_revision(built[0])
    result = evaluate_run(run_dir, max_mazes=2)
    assert result.num_mazes == 2 and result.model_path == str(built[0])
    assert sorted((run_dir / "base-model").glob("tiny-qwen3-vl-*")) == built  # resolved again, not rebuilt elsewhere


def test_rows_over_the_prompt_budget_are_dropped_and_reported(tiny_setup, tmp_path, capsys):
    """Issue 14 item 3, reference backend: the real prompt (text + image tokens) decides, and the drop is reported."""
    cfg = _config(tiny_setup, "budget-ref", steps=1)
    data = cfg.model_dump(mode="json")
    data["rollout"]["max_prompt_tokens"] = 40  # the images take 9-25 tokens; prompts are 30-46 tokens in all
    data["checkpoint"]["interval"] = 0
    data["trainer"]["eval_rows"] = 2
    adapter = ReferenceTrainer(type(cfg).build(data), tmp_path).train()
    prov = json.loads((adapter / "provenance.json").read_text())
    assert prov["prompt_filter"] == {"limit": 40, "kept": 41, "dropped": 23}
    assert "train: dropped 23 of 64 rows whose prompt (text + image tokens) exceeds rollout.max_prompt_tokens=40" in capsys.readouterr().out
