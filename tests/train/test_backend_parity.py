"""Both backends write the same metric names and the same artifact layout.

The reference side really trains (one tiny step). The SkyRL side runs its writing code without
GPUs: a tracker payload named as SkyRL 0.4's trainer names it (each name checked against SkyRL's
source) goes through :class:`MetricRecordSink`, and the adapter is exported from a checkpoint
laid out as SkyRL writes it.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

from hyperpod_rl.config.run import RunConfig
from hyperpod_rl.metrics import read_metrics
from hyperpod_rl.quickstart import make_run_config
from hyperpod_rl.train.reference import ReferenceTrainer
from hyperpod_rl.train.skyrl_backend import export_adapter
from hyperpod_rl.train.skyrl_metrics import MetricRecordSink, core_metric_names

GROUP = 2  # tiny_setup's group size


def _skyrl_payload(group: int) -> dict[str, float]:
    """One step's tracker payload with SkyRL's names; each name is checked against SkyRL's source."""
    # Read the source without importing it (the trainer module needs the GPU-side extras).
    root = Path(importlib.util.find_spec("skyrl").submodule_search_locations[0])
    trainer_src = (root / "train" / "trainer.py").read_text()
    worker_src = (root / "backends" / "skyrl_train" / "workers" / "worker.py").read_text()
    assert 'f"reward/avg_pass_at_{n_samples_per_prompt}"' in trainer_src
    assert '"reward/avg_raw_reward"' in trainer_src
    assert 'f"policy/{k}"' in trainer_src and '"trainer/epoch"' in trainer_src
    assert 'f"timing/{k}"' in trainer_src
    for timer in ("generate", "policy_train", "step", "sync_weights"):
        assert f'Timer("{timer}"' in trainer_src, timer
    for key in ("policy_loss", "policy_entropy", "policy_lr", "response_length"):
        assert f'"{key}"' in worker_src, key
    assert '"grad_norm"' in trainer_src
    return {
        "reward/avg_raw_reward": 0.4,
        f"reward/avg_pass_at_{group}": 0.5,
        "policy/policy_loss": -0.1,
        "policy/policy_entropy": 1.2,
        "policy/grad_norm": 0.9,
        "policy/policy_lr": 3e-5,
        "policy/response_length": 17.0,
        "timing/generate": 3.0,
        "timing/policy_train": 2.0,
        "timing/step": 6.0,
        "timing/sync_weights": 0.5,
        "trainer/epoch": 0,
        "trainer/global_step": 1,
        "trainer/tokens_per_second_per_gpu": 1000.0,
    }


@pytest.fixture(scope="module")
def reference_run(tiny_setup, tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("ref-run")
    cfg = make_run_config(
        tiny_setup["opts"],
        run_id="parity-ref",
        model_path=tiny_setup["model_dir"],
        revision=tiny_setup["revision"],
        data=tiny_setup["data"],
    )
    data = cfg.model_dump(mode="json")
    data["trainer"]["steps"] = 1
    data["checkpoint"]["interval"] = 0
    cfg = RunConfig.build(data)
    adapter = ReferenceTrainer(cfg, run_dir).train()
    return cfg, run_dir, adapter


@pytest.fixture(scope="module")
def skyrl_run(reference_run, tiny_setup, tmp_path_factory):
    _, _, ref_adapter = reference_run
    run_dir = tmp_path_factory.mktemp("sky-run")
    cfg = RunConfig.from_preset(
        "single-gpu",
        run_id="parity-sky",
        grpo={"group_size": GROUP},
        data={
            "train_path": str(tiny_setup["data"].train),
            "heldout_path": str(tiny_setup["data"].heldout),
            "mazes_per_step": 2,
        },
        trainer={"mini_batch_size": 2, "micro_batch_size": 4},
        model={"revision": "rev-sky"},
    )
    sink = MetricRecordSink(cfg.run_id, cfg.trainer.steps, run_dir / "metrics.jsonl")
    sink.write(_skyrl_payload(GROUP), step=1)
    lora = run_dir / "checkpoints" / "global_step_1" / "policy" / "lora_adapter"
    lora.mkdir(parents=True)
    for name in (
        "adapter_model.safetensors",
        "adapter_config.json",
    ):  # a real PEFT adapter, placed as SkyRL places it
        shutil.copyfile(ref_adapter / name, lora / name)
    (run_dir / "checkpoints" / "latest_ckpt_global_step.txt").write_text("1")
    adapter = export_adapter(cfg, run_dir)
    return cfg, run_dir, adapter


def test_same_core_metric_names(reference_run, skyrl_run):
    core = core_metric_names(GROUP)
    ref = list(read_metrics(reference_run[1] / "metrics.jsonl"))
    sky = list(read_metrics(skyrl_run[1] / "metrics.jsonl"))
    assert len(ref) == 1 and len(sky) == 1
    assert core <= set(ref[0].values), core - set(ref[0].values)
    assert core <= set(sky[0].values), core - set(sky[0].values)
    # Names outside the core follow the same SkyRL families in both.
    families = {"reward", "policy", "timing", "trainer", "environment", "generate"}
    for rec in (ref[0], sky[0]):
        assert {name.split("/", 1)[0] for name in rec.values} <= families


def test_same_artifact_layout(reference_run, skyrl_run):
    ref_files = {p.name for p in reference_run[2].iterdir()}
    sky_files = {p.name for p in skyrl_run[2].iterdir()}
    required = {
        "adapter_model.safetensors",
        "adapter_config.json",
        "provenance.json",
        "checksums.json",
    }
    assert required <= ref_files and required <= sky_files
    assert sky_files - {"README.md"} == ref_files - {"README.md"}  # peft's model card is the only extra
    ref_prov = json.loads((reference_run[2] / "provenance.json").read_text())
    sky_prov = json.loads((skyrl_run[2] / "provenance.json").read_text())
    assert set(ref_prov) == set(sky_prov)
    assert (ref_prov["backend"], sky_prov["backend"]) == ("reference", "skyrl")
    assert reference_run[2].name == skyrl_run[2].name == "adapter"
    assert reference_run[2].parent / "metrics.jsonl" == reference_run[1] / "metrics.jsonl"
