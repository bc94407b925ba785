"""SkyRL backend without GPUs: run-dir preparation, metric sink, adapter export, CLI dispatch."""

from __future__ import annotations

import json
import math

import pytest
import torch
from safetensors.torch import save_file
from typer.testing import CliRunner

from hyperpod_rl.config.run import RunConfig
from hyperpod_rl.errors import CheckpointError, ConfigError
from hyperpod_rl.metrics import parse_metric_line, read_metrics
from hyperpod_rl.runs.files import file_sha256, verify_checksums
from hyperpod_rl.train.skyrl_backend import (
    export_adapter,
    final_adapter_dir,
    prepare_run,
)
from hyperpod_rl.train.skyrl_metrics import MetricRecordSink, numeric_values

LM_KEY = "base_model.model.model.language_model.layers.0.self_attn.q_proj.lora_A.weight"


def _config(tmp_path, run_id="sky-run", **over):
    train, heldout = tmp_path / "train.parquet", tmp_path / "heldout.parquet"
    train.write_bytes(b"train rows")
    heldout.write_bytes(b"heldout rows")
    sections = {
        "data": {"train_path": str(train), "heldout_path": str(heldout)},
        "model": {"revision": "rev-123"},
        "storage": {"root": str(tmp_path / "storage")},
        **over,
    }
    return RunConfig.from_preset("single-gpu", run_id=run_id, **sections)


def fake_skyrl_checkpoint(run_dir, step, tensors=None, adapter_config=None):
    """The layout SkyRL 0.3.0 writes: global_step_N/policy/lora_adapter/ + latest_ckpt_global_step.txt last."""
    adapter = run_dir / "checkpoints" / f"global_step_{step}" / "policy" / "lora_adapter"
    adapter.mkdir(parents=True)
    save_file(
        tensors or {LM_KEY: torch.ones(4, 8)},
        str(adapter / "adapter_model.safetensors"),
    )
    (adapter / "adapter_config.json").write_text(
        json.dumps(
            adapter_config
            or {
                "peft_type": "LORA",
                "r": 32,
                "lora_alpha": 32,
                "target_modules": ["q_proj"],
            }
        )
    )
    (run_dir / "checkpoints" / "latest_ckpt_global_step.txt").write_text(str(step))
    return adapter


def test_prepare_run_paths_are_unique_per_run(tmp_path):
    a = prepare_run(_config(tmp_path, "run-a"), tmp_path / "runs" / "run-a")
    b = prepare_run(_config(tmp_path, "run-b"), tmp_path / "runs" / "run-b")
    assert a["trainer.ckpt_path"] == str(tmp_path / "runs" / "run-a" / "checkpoints")
    assert a["trainer.ckpt_path"] != b["trainer.ckpt_path"]
    for key in (
        "trainer.export_path",
        "trainer.policy.model.lora.lora_sync_path",
        "trainer.log_path",
    ):
        assert a[key].startswith(str(tmp_path / "runs" / "run-a"))
    assert a["trainer.resume_mode"] == "latest"


def test_prepare_run_without_flash_attn_uses_sdpa(tmp_path, monkeypatch):
    """SkyRL's trainer.flash_attn default (true) cannot load a policy where flash-attn is missing
    (the GPU test machine: the GPU kit does not carry flash-attn, and the SkyRL 0.3.0 records ran with sdpa); the overrides
    turn it off there and leave SkyRL's default where flash-attn is installed."""
    from skyrl.train.config import SkyRLTrainConfig

    from hyperpod_rl.train import skyrl_backend

    monkeypatch.setattr(skyrl_backend, "flash_attn_installed", lambda: False)
    cfg = _config(tmp_path)
    overrides = prepare_run(cfg, tmp_path / "runs" / "a")
    assert overrides["trainer.flash_attn"] is False
    assert SkyRLTrainConfig.from_cli_overrides(overrides).trainer.flash_attn is False
    monkeypatch.setattr(skyrl_backend, "flash_attn_installed", lambda: True)
    assert "trainer.flash_attn" not in prepare_run(cfg, tmp_path / "runs" / "a")


def test_flash_attn_installed_needs_the_compiled_extension(monkeypatch, tmp_path):
    """A flash_attn package without its distribution or compiled extension (a pure-Python stand-in) is not flash-attn."""
    from hyperpod_rl.train.skyrl_backend import flash_attn_installed

    standin = tmp_path / "flash_attn"
    standin.mkdir()
    (standin / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert flash_attn_installed() is False


def test_prepare_run_refuses_checkpoints_of_another_config(tmp_path):
    run_dir = tmp_path / "runs" / "sky-run"
    prepare_run(_config(tmp_path), run_dir)
    other = _config(tmp_path, grpo={"lr": 1e-6})
    with pytest.raises(CheckpointError, match="different config .* --fresh"):
        prepare_run(other, run_dir)
    prepare_run(other, run_dir, fresh=True)  # --fresh starts over
    assert (run_dir / "checkpoints" / "hprl_config_hash.txt").read_text() == other.config_hash()


def test_fresh_discards_checkpoints_and_metrics(tmp_path):
    cfg = _config(tmp_path)
    run_dir = tmp_path / "runs" / "sky-run"
    prepare_run(cfg, run_dir)
    fake_skyrl_checkpoint(run_dir, 4)
    (run_dir / "metrics.jsonl").write_text("{}\n")
    prepare_run(cfg, run_dir)  # resume: metrics kept
    assert (run_dir / "metrics.jsonl").exists()
    prepare_run(cfg, run_dir, fresh=True)
    assert not (run_dir / "metrics.jsonl").exists()
    assert not (run_dir / "checkpoints" / "global_step_4").exists()


def test_prepare_run_needs_a_skyrl_config(tmp_path):
    ref = RunConfig.build({"run_id": "ref-run", "data": {"train_path": "t", "heldout_path": "h"}})
    with pytest.raises(ConfigError, match="needs backend='skyrl'"):
        prepare_run(ref, tmp_path)


def test_metric_sink_writes_jsonl_and_log_lines(tmp_path, capsys):
    sink = MetricRecordSink("sky-run", 10, tmp_path / "metrics.jsonl")
    record = sink.write(
        {
            "reward/avg_raw_reward": 0.5,
            "policy/policy_loss": torch.tensor(-0.25),
            "note": "text",
            "bad": math.nan,
            "flag": True,
        },
        step=3,
    )
    assert record is not None and record.values == {
        "reward/avg_raw_reward": 0.5,
        "policy/policy_loss": -0.25,
        "flag": 1.0,
    }
    assert sink.write({"only": "strings"}, step=4) is None
    line = capsys.readouterr().out.strip()
    parsed = parse_metric_line("(_trainer_task pid=1) " + line)  # Ray prefixes forwarded task output
    assert parsed == record
    assert list(read_metrics(tmp_path / "metrics.jsonl")) == [record]


def test_numeric_values_drops_non_numbers():
    assert numeric_values({"a": 1, "b": "x", "c": [1], "d": None, "e": math.inf, "f": 2.5}) == {"a": 1.0, "f": 2.5}


def test_export_adapter_layout_and_provenance(tmp_path):
    cfg = _config(tmp_path)
    run_dir = tmp_path / "runs" / "sky-run"
    fake_skyrl_checkpoint(run_dir, 2)
    adapter = export_adapter(cfg, run_dir)
    assert sorted(p.name for p in adapter.iterdir()) == [
        "adapter_config.json",
        "adapter_model.safetensors",
        "checksums.json",
        "provenance.json",
    ]
    assert verify_checksums(adapter) is None
    prov = json.loads((adapter / "provenance.json").read_text())
    assert prov["backend"] == "skyrl" and prov["steps"] == 2
    assert prov["base_model_id"] == "Qwen/Qwen3-VL-8B-Instruct" and prov["base_model_revision"] == "rev-123"
    assert prov["adapter_sha256"] == file_sha256(adapter / "adapter_model.safetensors")
    assert prov["dataset_hashes"]["train"] == file_sha256(cfg.data.train_path)
    assert prov["lora"]["rank"] == 32 and prov["lora"]["exclude_modules"] == r".*visual.*"


def test_export_takes_the_latest_finished_step(tmp_path):
    run_dir = tmp_path / "run"
    fake_skyrl_checkpoint(run_dir, 2)
    newer = run_dir / "checkpoints" / "global_step_7" / "policy" / "lora_adapter"
    newer.mkdir(parents=True)  # step 7 never finished: latest_ckpt_global_step.txt still says 2
    path, step = final_adapter_dir(run_dir / "checkpoints")
    assert step == 2 and path.parent.parent.name == "global_step_2"


@pytest.mark.parametrize(
    ("tensors", "adapter_config", "message"),
    [
        (
            {"base_model.model.model.visual.blocks.0.attn.qkv.lora_A.weight": torch.ones(2, 2)},
            None,
            "vision-tower tensors",
        ),
        (
            None,
            {"peft_type": "LORA", "modules_to_save": ["lm_head"]},
            "modules_to_save",
        ),
    ],
)
def test_export_refuses_adapters_vllm_would_not_serve(tmp_path, tensors, adapter_config, message):
    run_dir = tmp_path / "run"
    fake_skyrl_checkpoint(run_dir, 1, tensors=tensors, adapter_config=adapter_config)
    with pytest.raises(CheckpointError, match=message):
        export_adapter(_config(tmp_path), run_dir)


def test_export_without_checkpoint_fails(tmp_path):
    with pytest.raises(CheckpointError, match="no finished SkyRL checkpoint"):
        export_adapter(_config(tmp_path), tmp_path / "empty")
    run_dir = tmp_path / "run"
    (run_dir / "checkpoints" / "global_step_3" / "policy" / "lora_adapter").mkdir(parents=True)
    (run_dir / "checkpoints" / "latest_ckpt_global_step.txt").write_text("3")
    with pytest.raises(CheckpointError, match="lacks adapter_model.safetensors, adapter_config.json"):
        export_adapter(_config(tmp_path), run_dir)


def test_cli_dispatches_skyrl_backend(tmp_path, monkeypatch):
    from hyperpod_rl.train.__main__ import app

    monkeypatch.delenv("RAY_OVERRIDE_JOB_RUNTIME_ENV", raising=False)
    ref = RunConfig.build({"run_id": "ref-run", "data": {"train_path": "t", "heldout_path": "h"}})
    path = tmp_path / "config.json"
    path.write_text(ref.model_dump_json())
    result = CliRunner().invoke(app, ["--config", str(path), "--backend", "skyrl"])
    assert isinstance(result.exception, ConfigError) and "needs backend='skyrl'" in str(result.exception)
    import os

    assert os.environ["RAY_OVERRIDE_JOB_RUNTIME_ENV"] == "1"  # set before anything reaches Ray
    bad = CliRunner().invoke(app, ["--config", str(path), "--backend", "megatron"])
    assert bad.exit_code != 0 and "unknown backend 'megatron'" in bad.output


def test_resume_drops_metric_records_after_the_checkpoint(tmp_path):
    cfg = _config(tmp_path)
    run_dir = tmp_path / "runs" / "sky-run"
    prepare_run(cfg, run_dir)
    sink = MetricRecordSink(cfg.run_id, 10, run_dir / "metrics.jsonl")
    for step in (1, 2, 3, 4, 5):
        sink.write({"reward/avg_raw_reward": float(step)}, step=step)
    fake_skyrl_checkpoint(run_dir, 3)
    prepare_run(cfg, run_dir)
    assert [r.step for r in read_metrics(run_dir / "metrics.jsonl")] == [1, 2, 3]


def test_trainer_task_writes_records_and_adapter(tmp_path, monkeypatch, tiny_setup):
    """The Ray task body with SkyRL's experiment replaced by a stand-in that logs and checkpoints.

    The stand-in calls the tracker exactly as SkyRL's trainer does (``tracker.log(payload,
    step=global_step, commit=True)``), computes advantages through SkyRL's own
    ``compute_advantages_and_returns`` with the configured estimator (as ``RayPPOTrainer`` does),
    and leaves a checkpoint in SkyRL's layout. The base model is the tiny Qwen3-VL (an absolute
    directory), so the task's prompt-length filter runs with a real processor.
    """
    import sys
    import types

    import numpy as np
    import skyrl_gym
    from skyrl.backends.skyrl_train.utils import ppo_utils
    from skyrl.train.config import SkyRLTrainConfig

    from hyperpod_rl.tasks.maze.registry import ENV_CLASS
    from hyperpod_rl.train.skyrl_backend import _trainer_task

    data = tiny_setup["data"]
    cfg = _config(
        tmp_path,
        model={"path": str(tiny_setup["model_dir"]), "revision": "rev-123"},
        data={"train_path": str(data.train), "heldout_path": str(data.heldout), "prompts_per_step": 2},
        grpo={"group_size": 8},
        trainer={"micro_batch_size": 2, "mini_batch_size": 2},
    )
    run_dir = tmp_path / "runs" / "sky-run"
    skyrl_cfg = SkyRLTrainConfig.from_cli_overrides(prepare_run(cfg, run_dir))
    seen = {}

    class FakeTrainer:
        def __init__(self, c):
            self.cfg, self.all_metrics = c, {}

        def compute_advantages_and_returns(self, batch):
            adv, _ = ppo_utils.compute_advantages_and_returns(
                token_level_rewards=batch["rewards"],
                response_mask=batch["mask"],
                index=batch["uids"],
                adv_estimator=self.cfg.trainer.algorithm.advantage_estimator,
                config=self.cfg.trainer.algorithm,
            )
            return adv

    class StandIn:
        def __init__(self, c):
            self.cfg = c

        def get_tracker(self):
            raise NotImplementedError  # the task must override it

        def get_trainer(self, **kwargs):
            return FakeTrainer(self.cfg)

        def run(self):
            assert ENV_CLASS in skyrl_gym.registry  # registered inside the task, before training
            seen["data"] = (list(self.cfg.data.train_data), list(self.cfg.data.val_data))
            tracker, trainer = self.get_tracker(), self.get_trainer()
            rewards = torch.zeros(16, 2)
            rewards[:8, -1] = 1.36  # a tied group
            rewards[8:, -1] = torch.tensor([1.0, 0, 0, 1, 0, 1, 1, 0])
            seen["adv"] = trainer.compute_advantages_and_returns(
                {"rewards": rewards, "mask": torch.ones(16, 2), "uids": np.array(["a"] * 8 + ["b"] * 8)}
            )
            for step in (1, 2):
                tracker.log(
                    {"reward/avg_raw_reward": 0.1 * step, "timing/step": 1.0, **trainer.all_metrics},
                    step=step,
                    commit=True,
                )
            fake_skyrl_checkpoint(run_dir, 2)

    monkeypatch.setitem(
        sys.modules,
        "skyrl.train.entrypoints.main_base",
        types.SimpleNamespace(BasePPOExp=StandIn),
    )
    adapter = _trainer_task(skyrl_cfg, cfg.model_dump_json(), str(run_dir))
    records = list(read_metrics(run_dir / "metrics.jsonl"))
    assert [(r.step, r.values["reward/avg_raw_reward"]) for r in records] == [
        (1, 0.1),
        (2, 0.2),
    ]
    assert records[0].run_id == "sky-run" and records[0].total_steps == cfg.trainer.steps
    # Item 1: the tie-safe estimator ran through SkyRL's registry inside the task: the tied group
    # got exactly 0, the other SkyRL's values; the share of tied groups is a step metric.
    assert torch.equal(seen["adv"][:8], torch.zeros(8, 2))
    assert seen["adv"][8:, 0].abs().min() > 0.9
    assert records[0].values["reward/tied_group_share"] == 0.5
    # Item 3: SkyRL reads the filtered copies (all rows fit the preset's 2048-token budget).
    assert seen["data"] == ([str(run_dir / "skyrl-data" / "train.parquet")], [str(run_dir / "skyrl-data" / "heldout.parquet")])
    prov = json.loads((run_dir / "adapter" / "provenance.json").read_text())
    assert prov["steps"] == 2
    assert prov["prompt_filter"] == {
        "heldout": {"limit": 2048, "kept": 16, "dropped": 0},
        "train": {"limit": 2048, "kept": 64, "dropped": 0},
    }
    assert prov["lora_matched_modules"] == {"q_proj": 1}  # the fake checkpoint wraps one q_proj
    assert adapter == str(run_dir / "adapter")


def test_eval_before_train_joins_the_first_step_record(tmp_path, capsys):
    sink = MetricRecordSink("sky-run", 10, tmp_path / "metrics.jsonl")
    assert sink.write({"eval/hyperpod_rl.maze/avg_score": 0.25}, step=0) is None
    first = sink.write({"reward/avg_raw_reward": 0.5, "eval/all/avg_score": 0.3}, step=1)
    assert first.step == 1
    assert first.values == {
        "eval/hyperpod_rl.maze/avg_score": 0.25,
        "eval/all/avg_score": 0.3,
        "reward/avg_raw_reward": 0.5,
    }
    second = sink.write({"reward/avg_raw_reward": 0.6}, step=2)
    assert second.values == {"reward/avg_raw_reward": 0.6}  # held values are used once
    assert [r.step for r in read_metrics(tmp_path / "metrics.jsonl")] == [1, 2]
    assert capsys.readouterr().out.count("HPRL_METRIC ") == 2


def test_exported_adapter_config_is_canonical(tmp_path):
    """Issue 14 item 14, SkyRL backend: the same adapter in any key/list order exports to the same bytes."""
    cfg = _config(tmp_path)
    outputs = []
    for i, order in enumerate((["q_proj", "v_proj", "k_proj"], ["k_proj", "q_proj", "v_proj"])):
        run_dir = tmp_path / "runs" / f"order-{i}"
        fake_skyrl_checkpoint(
            run_dir,
            1,
            adapter_config={"target_modules": order, "r": 32, "peft_type": "LORA"}
            if i
            else {"peft_type": "LORA", "r": 32, "target_modules": order},
        )
        outputs.append((export_adapter(cfg, run_dir, base_revision="rev") / "adapter_config.json").read_bytes())
    assert outputs[0] == outputs[1]
    assert json.loads(outputs[0])["target_modules"] == ["k_proj", "q_proj", "v_proj"]


def test_directions_constraint_reaches_vllm_as_allowed_answer_tokens(tmp_path, tiny_setup):
    """rollout.action_constraint='directions' on SkyRL: vLLM samples only the answer tokens, so every turn's text
    tokenizes back to the tokens sampled (SkyRL's VLM generator slices the next observation at that boundary; free
    tokens of a random model broke it on the GPU: "Image features and image tokens do not match")."""
    import random

    from skyrl.backends.skyrl_train.inference_servers.engine_utils import get_vllm_sampling_params
    from skyrl.train.config import SkyRLTrainConfig

    from hyperpod_rl.model.loading import load_processor

    data = tiny_setup["data"]
    cfg = _config(
        tmp_path,
        model={"path": str(tiny_setup["model_dir"]), "revision": "rev-123"},
        data={"train_path": str(data.train), "heldout_path": str(data.heldout)},
        rollout={"action_constraint": "directions"},
    )
    skyrl_cfg = SkyRLTrainConfig.from_cli_overrides(prepare_run(cfg, tmp_path / "runs" / "sky-run"))
    tok = load_processor(tiny_setup["model_dir"]).tokenizer
    want = sorted(tok.convert_tokens_to_ids(["up", "down", "left", "right", "<answer>", "</answer>", "<|im_end|>"]))
    for params in (skyrl_cfg.generator.sampling_params, skyrl_cfg.generator.eval_sampling_params):
        sent = get_vllm_sampling_params(params)  # what SkyRL sends to its vLLM servers
        assert sent["allowed_token_ids"] == want and sent["bad_words"]
    rng = random.Random(0)
    for _ in range(200):
        ids = [rng.choice(want) for _ in range(rng.randint(1, 40))]
        assert tok.encode(tok.decode(ids), add_special_tokens=False) == ids
    # free generation keeps the whole vocabulary
    free = _config(tmp_path, run_id="free", rollout={"action_constraint": "none"})
    overrides = prepare_run(free, tmp_path / "runs" / "free")
    assert "allowed_token_ids" not in overrides["generator.sampling_params.additional_kwargs"]


def test_answer_vocabulary_refuses_tokens_that_merge():
    from hyperpod_rl.errors import ConfigError
    from hyperpod_rl.model.policy import answer_vocabulary

    class Merging:
        """A tokenizer in which 'up' then 'up' reads back as one token 'upup'."""

        vocab = {"up": 1, "down": 2, "<answer>": 3, "</answer>": 4, "<|im_end|>": 5, "upup": 6}

        def encode(self, text, add_special_tokens=False):
            out, rest = [], text
            while rest:
                tok = max((t for t in self.vocab if rest.startswith(t)), key=len)
                out.append(self.vocab[tok])
                rest = rest[len(tok) :]
            return out

        def decode(self, ids):
            inv = {v: k for k, v in self.vocab.items()}
            return "".join(inv[i] for i in ids)

        def convert_tokens_to_ids(self, token):
            return self.vocab[token]

        def convert_ids_to_tokens(self, ids):
            inv = {v: k for k, v in self.vocab.items()}
            return [inv[i] for i in ids]

    with pytest.raises(ConfigError, match=r"the answer tokens \['up', 'up'\] merge .* use action_constraint='none'"):
        answer_vocabulary(Merging(), ("up", "down"))
