"""What a run asks its cluster for, against what a cluster has (``hyperpod_rl.config.resources``).

Field report (new-user trial): a ``trainer.device: cuda`` run on a cluster without a GPU stayed
PENDING forever, and ``trainer.workers: 2`` on a 2-CPU local cluster with one CPU taken waited
for its workers forever; ``submit_run`` now refuses what the cluster can never hold.
"""

from __future__ import annotations

import pytest

from hyperpod_rl.config.resources import fit_problems, run_resources
from hyperpod_rl.config.run import RunConfig

DATA = {"train_path": "/d/train.parquet", "heldout_path": "/d/heldout.parquet"}
LAPTOP = [{"CPU": 2.0, "memory": 1e10}]  # the local cluster of the trial: 2 CPUs, no GPU


def _build(trainer: dict, **top) -> RunConfig:
    return RunConfig.build({"run_id": "fit-run", "data": {**DATA, "prompts_per_step": 8}, "trainer": trainer, **top})


def test_cuda_run_on_a_cluster_without_gpus_is_refused_with_what_it_has_and_what_to_set():
    (problem,) = fit_problems(_build({"device": "cuda"}), LAPTOP)
    assert "run 'fit-run' needs 1 GPU(s) but the cluster has 0 GPU(s) and 2 CPU(s) on 1 node(s)" in problem
    assert "set trainer.device to 'auto'" in problem


def test_gpu_workers_beyond_the_clusters_gpus_are_refused():
    (problem,) = fit_problems(_build({"device": "cuda", "workers": 4}), [{"CPU": 32.0, "GPU": 2.0}])
    assert "needs 4 GPU(s) but the cluster has 2 GPU(s)" in problem and "set trainer.workers to at most 2" in problem


def test_gpu_workers_must_fit_on_one_node():
    nodes = [{"CPU": 16.0, "GPU": 1.0}, {"CPU": 16.0, "GPU": 1.0}]
    (problem,) = fit_problems(_build({"device": "cuda", "workers": 2}), nodes)
    assert "1 GPU each on one node (2 GPU)" in problem and "at most 1 GPU(s) and 16 CPU(s) on one node" in problem
    assert "set trainer.workers to 1" in problem


def test_cpu_workers_beyond_the_nodes_cpus_are_refused():
    (problem,) = fit_problems(_build({"workers": 4}), LAPTOP)
    assert "needs trainer.workers=4 workers of 1 CPU each on one node (4 CPU)" in problem
    assert "set trainer.workers to at most 2" in problem


def test_what_fits_is_not_refused():
    assert fit_problems(_build({"workers": 2}), LAPTOP) == []  # fits in total (it may still wait for free CPUs)
    assert fit_problems(_build({"device": "auto"}), LAPTOP) == []
    assert fit_problems(_build({"device": "cuda", "workers": 2}), [{"CPU": 8.0, "GPU": 2.0}]) == []


def test_skyrl_gpus_are_checked_too():
    cfg = RunConfig.from_preset("single-gpu", run_id="skyrl-fit")
    assert run_resources(cfg).gpus >= 1
    (problem,) = fit_problems(cfg, LAPTOP)
    assert "needs 1 GPU(s) but the cluster has 0 GPU(s)" in problem and "placement.nodes" in problem


@pytest.mark.parametrize(
    ("trainer", "entrypoint", "per_worker"),
    [
        ({"device": "cuda"}, 1, {}),
        ({"device": "auto"}, 0, {}),
        ({"workers": 2}, 0, {"CPU": 1.0}),
        ({"device": "cuda", "workers": 2}, 0, {"GPU": 1.0}),
    ],
)
def test_one_owner_for_the_entrypoint_and_the_workers(trainer, entrypoint, per_worker):
    from hyperpod_rl.jobs import entrypoint_gpus
    from hyperpod_rl.train.workers import scaling

    cfg = _build(trainer)
    assert entrypoint_gpus(cfg) == run_resources(cfg).entrypoint_gpus == entrypoint
    if cfg.trainer.workers > 1:
        assert scaling(cfg)["resources_per_worker"] == per_worker


@pytest.mark.parametrize(
    ("omp", "expected"),
    [("3", 3), (None, "cores"), ("0", "cores"), ("two", "cores"), ("-1", "cores"), ("", "cores")],
)
def test_a_jobs_default_threads_follow_the_submitters_omp_num_threads(monkeypatch, omp, expected):
    """``trainer.torch_threads`` unset: the submitting shell's OMP_NUM_THREADS when it is a positive count,
    else this machine's cores (Ray would otherwise leave the entrypoint at its supervisor's 1)."""
    import os

    from hyperpod_rl.jobs import _job_env, default_job_threads

    if omp is None:
        monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    else:
        monkeypatch.setenv("OMP_NUM_THREADS", omp)
    want = (os.cpu_count() or 1) if expected == "cores" else expected
    assert default_job_threads() == want
    assert _job_env(_build({}), str(default_job_threads()))["OMP_NUM_THREADS"] == str(want)
