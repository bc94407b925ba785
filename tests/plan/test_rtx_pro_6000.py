"""The RTX PRO 6000 Blackwell Server Edition in the planner (issue 29 item 5) and the walkthrough's settings on it."""

from __future__ import annotations

from hyperpod_rl.config.run import RunConfig
from hyperpod_rl.plan import GPUS
from hyperpod_rl.run_plan import plan_run


def test_rtx_pro_6000_figures_and_their_source():
    spec = GPUS["RTXPRO6000"]
    assert spec.name == "NVIDIA RTX PRO 6000 Blackwell Server Edition" and not spec.fitted
    assert (spec.memory_gib, spec.hbm_bytes_per_s, spec.bf16_flops) == (94.0, 1.792e12, 500e12)
    assert "derived" in spec.source and "not read" in spec.source  # says which figures are quoted and which are not


def test_walkthrough_settings_fit_on_rtx_pro_6000_but_not_on_a10g():
    """6 colocated engines at gpu_memory_utilization 0.45, up to 15 turns: KV room on a 96 GB card, none on a 24 GB one."""
    cfg = RunConfig.from_preset("hyperpod-6gpu", rollout={"gpu_memory_utilization": 0.45, "max_turns": 15}, trainer={"eval_interval": 10})
    rtx = plan_run(cfg, gpu="RTXPRO6000")
    assert rtx.fits and rtx.kv_cache.tokens > 100_000
    assert not plan_run(cfg, gpu="A10G").fits
