"""The reference backend on several workers (``trainer.workers > 1``): Ray Train ``TorchTrainer`` + DDP.

On the session's real local Ray cluster, on CPU with Gloo:

* a 2-worker run submitted as a Ray Job like any run: 2 metric lines over the whole batch, an
  adapter, the worker count in the provenance; resubmitted after its adapter is removed, it
  resumes from its checkpoint and ends with a bitwise-identical adapter and the same metrics;
* one update of fixed episodes split over 2 workers gives the gradients and weights of one
  process updating on all of them.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from hyperpod_rl.jobs import entrypoint_gpus
from hyperpod_rl.metrics import read_metrics
from hyperpod_rl.metrics.schema import parse_metric_line
from hyperpod_rl.quickstart import make_run_config
from hyperpod_rl.train.reference import load_training_state

pytestmark = [pytest.mark.ray, pytest.mark.job]

TIMING = ("timing/", "trainer/tokens_per_second")


def _config(setup, run_id: str, **sections):
    cfg = make_run_config(setup["opts"], run_id=run_id, model_path=setup["model_dir"], revision=setup["revision"], data=setup["data"])
    data = cfg.model_dump(mode="json")
    for name, values in sections.items():
        data[name].update(values)
    return type(cfg).build(data)


def _wait_terminal(client, submission_id: str) -> str:
    from tests.ray_jobs import wait_terminal  # here, not at the top: this file is also a job's entrypoint script

    return wait_terminal(client, submission_id, timeout_s=600, poll_s=0.5)


def _submit(client, cfg, run_dir: Path):
    from tests.ray_jobs import submit

    return submit(client, cfg, run_dir)


def _numbers(run_dir: Path) -> list[dict[str, float]]:
    return [{k: v for k, v in r.values.items() if not k.startswith(TIMING)} for r in read_metrics(run_dir / "metrics.jsonl")]


def test_two_worker_job_trains_exports_and_resumes_bitwise(tiny_setup, local_cluster, tmp_path):
    """Slow: a 2-worker Ray Train job (two processes with their own model, Gloo), then its resubmission;
    about 90 s on 2 cores."""
    client = local_cluster.job_client()
    cfg = _config(
        tiny_setup,
        "dp-two",
        trainer={"workers": 2, "steps": 2, "torch_threads": 1, "eval_rows": 2},
        checkpoint={"interval": 1, "keep": 2},
    )
    assert (
        entrypoint_gpus(cfg) == 0
        and entrypoint_gpus(cfg.model_copy(update={"trainer": cfg.trainer.model_copy(update={"device": "cuda"})})) == 0
    )
    run_dir = tmp_path / "runs" / "dp-two"
    handle = _submit(client, cfg, run_dir)
    status = _wait_terminal(client, handle.submission_id)
    logs = client.get_job_logs(handle.submission_id)
    assert status == "SUCCEEDED", logs[-4000:]
    assert "training with 2 CPU workers (Ray Train TorchTrainer, gloo)" in logs
    assert any(parse_metric_line(line) for line in logs.splitlines())  # rank 0's metric lines reach the job log

    records = list(read_metrics(run_dir / "metrics.jsonl"))
    assert [r.step for r in records] == [1, 2]
    episodes = cfg.data.prompts_per_step * cfg.grpo.group_size  # the whole batch, both workers' groups
    for r in records:
        v = r.values
        # one sample per turn, one loss token per sample ('directions'): counted over all episodes
        assert v["trainer/num_samples"] == pytest.approx(v["generate/avg_num_turns"] * episodes)
        assert v["trainer/num_tokens"] == v["trainer/num_samples"]
        assert v["trainer/num_samples"] >= episodes
    adapter = run_dir / "adapter"
    prov = json.loads((adapter / "provenance.json").read_text())
    assert prov["workers"] == 2 and prov["steps"] == 2 and prov["config_hash"] == cfg.config_hash()
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "succeeded" and manifest["workers"] == 2
    assert manifest["config"]["trainer"]["workers"] == 2
    assert (run_dir / "ray-train").is_dir()
    training_state = load_training_state(run_dir / "checkpoints" / "step_000001" / "training_state.pt")  # weights_only=True
    ranks = training_state["ranks"]
    assert len(ranks) == 2 and not torch.equal(ranks[0]["sampling_rng"], ranks[1]["sampling_rng"])  # each worker samples its own

    # Resume: without its adapter the run is not finished; resubmitted, it goes on from step 1.
    first = load_file(str(adapter / "adapter_model.safetensors"))
    numbers = _numbers(run_dir)
    shutil.rmtree(adapter)
    again = _submit(client, cfg, run_dir)
    status = _wait_terminal(client, again.submission_id)
    logs = client.get_job_logs(again.submission_id)
    assert status == "SUCCEEDED", logs[-4000:]
    assert "resumed from step_000001 (step 1, epoch 0)" in logs
    second = load_file(str(adapter / "adapter_model.safetensors"))
    assert first.keys() == second.keys() and first
    assert all(first[k].numpy().tobytes() == second[k].numpy().tobytes() for k in first)  # bitwise
    assert _numbers(run_dir) == numbers
    assert [r["from_step"] for r in json.loads((run_dir / "manifest.json").read_text())["resumes"]] == [1]


def _update_on_workers(loop_config: dict) -> None:
    """A TorchTrainer worker: build the policy, update once on this worker's share of the episodes."""
    import pickle

    from hyperpod_rl.config.run import RunConfig
    from hyperpod_rl.train.reference import ReferenceTrainer
    from hyperpod_rl.train.workers import worker_place

    work = Path(loop_config["dir"])
    cfg = RunConfig.model_validate_json((work / "config.json").read_text())
    episodes, advantages = pickle.loads((work / "episodes.pkl").read_bytes())
    place = worker_place()
    trainer = ReferenceTrainer(cfg, work / f"rank{place.rank}", parallel=place)
    trainer._build()
    episodes, advantages = place.share(episodes), place.share(advantages)
    values = trainer._update(episodes, advantages)
    trainable = [(n, p) for n, p in trainer.model.named_parameters() if p.requires_grad]
    save_file({n: p.grad.detach().clone() for n, p in trainable}, str(work / f"grads{place.rank}.safetensors"))
    save_file({n: p.detach().clone() for n, p in trainable}, str(work / f"weights{place.rank}.safetensors"))
    tokens = sum(sum(t.action.loss_mask) for ep in episodes for t in ep.turns)
    (work / f"values{place.rank}.json").write_text(json.dumps({**values, "local_tokens": tokens}))


def _update_job(work: Path) -> None:
    """The Ray Job of :func:`test_two_worker_update_equals_one_process_update`: a 2-worker TorchTrainer."""
    import ray

    from hyperpod_rl.config.run import RunConfig
    from hyperpod_rl.train.workers import torch_trainer

    ray.init(logging_level="ERROR")
    cfg = RunConfig.model_validate_json((work / "config.json").read_text())
    torch_trainer(_update_on_workers, {"dir": str(work)}, cfg, work / "ray-train", name="dp-update").fit()


def test_two_worker_update_equals_one_process_update(tiny_setup, local_cluster, tmp_path):
    """Slow: a Ray Train group of 2 workers and one process, each building the tiny model and updating it."""
    import pickle

    from hyperpod_rl.model.rollout import play_episodes
    from hyperpod_rl.train.reference import ReferenceTrainer

    sections = {
        # several micro batches per worker (no_sync), the KL term through the unwrapped model, no clipping
        "trainer": {"micro_batch_size": 1, "torch_threads": 1},
        "grpo": {"kl_coef": 0.05, "entropy_coef": 0.01, "max_grad_norm": 1e6, "lr": 1e-2},
        "data": {"prompts_per_step": 4},
    }
    one = _config(tiny_setup, "dp-one", **sections)
    two = _config(tiny_setup, "dp-two-update", **{**sections, "trainer": {**sections["trainer"], "workers": 2}})

    single = ReferenceTrainer(one, tmp_path / "single")
    single._build()
    episodes = play_episodes(single.policy, single.rows[:4], group_size=2, temperature=1.0, max_turns=3, generator=single.generator)
    # worker 0's share (the first two mazes) gets fewer turns than worker 1's, so the shares' token
    # counts differ: normalising by a worker's own tokens (and averaging) would give other gradients
    episodes[0] = dataclasses.replace(episodes[0], turns=episodes[0].turns[:1])
    episodes[3] = dataclasses.replace(episodes[3], turns=episodes[3].turns[:2])
    # fixed, distinct advantages (no tied groups), the same for every turn of an episode
    advantages = [[(-1.0) ** i * (0.5 + 0.25 * i)] * len(ep.turns) for i, ep in enumerate(episodes)]
    work = tmp_path / "dp"
    work.mkdir()
    (work / "config.json").write_text(two.model_dump_json())
    (work / "episodes.pkl").write_bytes(pickle.dumps((episodes, advantages)))
    values = single._update(episodes, advantages)
    trainable = [(n, p) for n, p in single.model.named_parameters() if p.requires_grad]
    grads = {n: p.grad.detach().clone() for n, p in trainable}
    weights = {n: p.detach().clone() for n, p in trainable}

    client = local_cluster.job_client()
    job = client.submit_job(
        entrypoint=f"exec {sys.executable} {Path(__file__).resolve()} {work}",
        runtime_env={"env_vars": {"PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1"}},
    )
    status = _wait_terminal(client, job)
    assert status == "SUCCEEDED", client.get_job_logs(job)[-4000:]

    got = [json.loads((work / f"values{r}.json").read_text()) for r in (0, 1)]
    assert got[0]["local_tokens"] != got[1]["local_tokens"]  # unequal shares: a per-worker token normalisation would show
    assert got[0]["local_tokens"] + got[1]["local_tokens"] == values["trainer/num_tokens"]
    assert any(float(t.abs().max()) > 1e-4 for t in grads.values())  # a real gradient
    for rank in (0, 1):
        g = load_file(str(work / f"grads{rank}.safetensors"))
        w = load_file(str(work / f"weights{rank}.safetensors"))
        assert g.keys() == grads.keys() and grads
        for name in grads:
            torch.testing.assert_close(g[name], grads[name], rtol=1e-5, atol=1e-6, msg=f"gradient of {name}, rank {rank}")
            torch.testing.assert_close(w[name], weights[name], rtol=1e-5, atol=1e-6, msg=f"updated {name}, rank {rank}")
        for key in ("policy/policy_loss", "policy/policy_kl", "policy/policy_entropy", "policy/grad_norm"):
            assert got[rank][key] == pytest.approx(values[key], rel=1e-5, abs=1e-7), key
        for key in ("trainer/num_samples", "trainer/num_tokens", "trainer/num_forward_rows"):
            assert got[rank][key] == values[key], key


if __name__ == "__main__":  # the Ray Job of the update test
    _update_job(Path(sys.argv[1]))
