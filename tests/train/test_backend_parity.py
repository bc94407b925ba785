"""Both backends write the same metric names and the same artifact layout.

The reference side really trains (one tiny step). The SkyRL side is built from SkyRL 0.3.0's own
code, on CPU, without GPUs or Ray workers:

* the config is SkyRL's ``SkyRLTrainConfig``, built from the run's overrides (``prepare_run``);
* the step runs through the backend's own Ray-task body (``_trainer_task``), so the payload
  reaches ``metrics.jsonl`` through the backend's subclass of SkyRL's ``Tracking``;
* the payload is made by SkyRL's ``RayPPOTrainer`` methods: ``postprocess_generator_output``
  (the reward metrics, from a real rollout of the tiny model through the maze env) and
  ``train_critic_and_policy`` → ``_execute_training_step`` (``reduce_metrics``, ``grad_norm``, the
  ``policy/`` prefix, the ``policy_train`` timer). Only the GPU worker is stood in for: it returns
  the status dict whose keys are read from SkyRL's worker source (``PolicyWorkerBase._forward_backward_micro``)
  plus SkyRL's own log-prob-diff metrics;
* the few names ``trainer.train()``'s loop adds itself (``timing/generate``, ``timing/step``,
  ``trainer/epoch``, ``trainer/global_step``) are added the same way and checked against its source;
* the adapter is exported from a checkpoint laid out as SkyRL writes it.
"""

from __future__ import annotations

import ast
import inspect
import json
import shutil
import sys
import types
from pathlib import Path
from typing import Any

import pytest
import torch

from hyperpod_rl.config.run import RunConfig
from hyperpod_rl.metrics import read_metrics
from hyperpod_rl.quickstart import make_run_config
from hyperpod_rl.tasks.maze import read_rows
from hyperpod_rl.train.reference import ReferenceTrainer
from hyperpod_rl.train.skyrl_backend import _trainer_task, prepare_run
from hyperpod_rl.train.skyrl_metrics import core_metric_names

GROUP = 2  # tiny_setup's group size


def _worker_status_keys() -> list[str]:
    """Scalar keys of the status dict SkyRL's policy worker returns per micro batch (read from its source)."""
    from skyrl.backends.skyrl_train.workers import worker

    tree = ast.parse(inspect.getsource(worker))
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Dict)
            and any(isinstance(t, ast.Name) and t.id == "status" for t in node.targets)
        ):
            keys = [k.value for k in node.value.keys if isinstance(k, ast.Constant)]
            if "policy_loss" in keys:
                return [k for k in keys if k != "loss_fn_outputs"]
    raise AssertionError("SkyRL's policy worker no longer builds a status dict with policy_loss")


class _WorkerDispatch:
    """Stands in for SkyRL's ``WorkerDispatch`` (the GPU workers): one mini batch, one micro-batch status."""

    def __init__(self, status: dict[str, float]) -> None:
        self.status = status

    def stage_data(self, model: str, data: Any, boundaries: Any) -> list[list[str]]:
        return [["chunk"]]

    def forward_backward_from_staged(self, model: str, refs: Any) -> Any:
        return types.SimpleNamespace(metrics=dict(self.status))

    def optim_step(self, model: str) -> float:
        return 0.9

    def empty_cache(self) -> None:
        return None


def _skyrl_step(cfg: Any, tiny_setup: dict[str, Any]) -> dict[str, Any]:
    """One step's tracker payload, made by SkyRL's trainer code from a real rollout of the tiny model."""
    from skyrl.backends.skyrl_train.workers.worker_utils import compute_minibatch_rollout_logprob_diff_metrics
    from skyrl.train.trainer import RayPPOTrainer
    from skyrl.train.utils import Timer

    from hyperpod_rl.model.loading import load_base_model
    from hyperpod_rl.model.policy import MazePolicy
    from hyperpod_rl.model.rollout import play_episodes

    trainer = RayPPOTrainer.__new__(RayPPOTrainer)  # SkyRL's methods, without Ray workers or vLLM
    trainer.cfg, trainer.all_metrics, trainer.all_timings, trainer.global_step = cfg, {}, {}, 1
    rows = read_rows(tiny_setup["data"].train)[:2]
    model, processor, _ = load_base_model(tiny_setup["model_dir"])
    with Timer("generate", trainer.all_timings):
        episodes = play_episodes(MazePolicy(model, processor), rows, group_size=GROUP, generator=torch.Generator().manual_seed(0))
    responses = [[i for t in ep.turns for i in t.action.response_ids] for ep in episodes]
    generator_output = {
        "prompt_token_ids": [[0] for _ in episodes],
        "response_ids": responses,
        "rewards": [ep.total_return for ep in episodes],
        "loss_masks": [[1] * len(r) for r in responses],
        "stop_reasons": ["stop"] * len(episodes),
        "rollout_metrics": None,
        "rollout_logprobs": None,
    }
    trainer.postprocess_generator_output(generator_output, [str(ep.row_index) for ep in episodes])

    status = {key: 0.5 for key in _worker_status_keys()}
    logp = torch.tensor([[-0.7, -1.2]])
    status |= compute_minibatch_rollout_logprob_diff_metrics(logp, logp - 0.01, torch.ones_like(logp))
    trainer.dispatch = _WorkerDispatch(status)
    trainer._normalize_advantages = lambda data, boundaries, prompt_boundaries: data  # noqa: ARG005 - arithmetic only
    data = types.SimpleNamespace(metadata={"policy_mini_batch_boundaries": [(0, len(episodes))]})
    with Timer("step", trainer.all_timings):
        trainer.train_critic_and_policy(data)
    # What trainer.train()'s loop adds before tracker.log (checked against its source below).
    trainer.all_metrics.update({"trainer/epoch": 0, "trainer/global_step": trainer.global_step})
    return {**trainer.all_metrics, **{f"timing/{k}": v for k, v in trainer.all_timings.items()}}


def test_the_loop_lines_mirrored_here_are_skyrls() -> None:
    """The names _skyrl_step adds by hand are the ones RayPPOTrainer.train() adds."""
    from skyrl.train.trainer import RayPPOTrainer

    source = inspect.getsource(RayPPOTrainer.train)
    for fragment in (
        'Timer("generate"',
        'Timer("step"',
        '"trainer/epoch": epoch',
        '"trainer/global_step": self.global_step',
        'f"timing/{k}"',
    ):
        assert fragment in source, fragment
    assert "self.tracker.log(log_payload, step=self.global_step, commit=True)" in source


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
    from skyrl.train.config import SkyRLTrainConfig

    _, _, ref_adapter = reference_run
    run_dir = tmp_path_factory.mktemp("sky-run")
    cfg = RunConfig.from_preset(
        "single-gpu",
        run_id="parity-sky",
        grpo={"group_size": GROUP},
        data={
            "train_path": str(tiny_setup["data"].train),
            "heldout_path": str(tiny_setup["data"].heldout),
            "prompts_per_step": 2,
        },
        trainer={"mini_batch_size": 2, "micro_batch_size": 4},
        # an absolute directory on "the cluster": the task's prompt filter loads its processor
        model={"path": str(tiny_setup["model_dir"]), "revision": "rev-sky"},
    )
    skyrl_cfg = SkyRLTrainConfig.from_cli_overrides(prepare_run(cfg, run_dir))
    assert skyrl_cfg.generator.n_samples_per_prompt == GROUP

    class Experiment:  # SkyRL's BasePPOExp, reduced to one step made by SkyRL's trainer code
        def __init__(self, c: Any) -> None:
            self.cfg = c

        def get_tracker(self) -> Any:
            raise NotImplementedError  # the backend's task overrides it with its Tracking subclass

        def run(self) -> None:
            self.get_tracker().log(_skyrl_step(self.cfg, tiny_setup), step=1, commit=True)
            lora = run_dir / "checkpoints" / "global_step_1" / "policy" / "lora_adapter"
            lora.mkdir(parents=True)
            for name in ("adapter_model.safetensors", "adapter_config.json"):  # a real PEFT adapter, placed as SkyRL places it
                shutil.copyfile(ref_adapter / name, lora / name)
            (run_dir / "checkpoints" / "latest_ckpt_global_step.txt").write_text("1")

    mp = pytest.MonkeyPatch()
    mp.setitem(sys.modules, "skyrl.train.entrypoints.main_base", types.SimpleNamespace(BasePPOExp=Experiment))
    try:
        adapter = Path(_trainer_task(skyrl_cfg, cfg.model_dump_json(), str(run_dir)))
    finally:
        mp.undo()
    return cfg, run_dir, adapter


def test_same_core_metric_names(reference_run, skyrl_run):
    core = core_metric_names(GROUP)
    ref = list(read_metrics(reference_run[1] / "metrics.jsonl"))
    sky = list(read_metrics(skyrl_run[1] / "metrics.jsonl"))
    assert len(ref) == 1 and len(sky) == 1
    assert core <= set(ref[0].values), core - set(ref[0].values)
    assert core <= set(sky[0].values), core - set(sky[0].values)
    # Names outside the core follow the same SkyRL families in both.
    # (and "rollout": the reference engine's off-policy accounting, rollout/logprob_gap_*, issue 28; SkyRL
    # reports its own as policy/rollout_train_logprobs_abs_diff_mean)
    families = {"reward", "policy", "timing", "trainer", "environment", "generate", "rollout"}
    for rec in (ref[0], sky[0]):
        assert {name.split("/", 1)[0] for name in rec.values} <= families, {name.split("/", 1)[0] for name in rec.values}


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
