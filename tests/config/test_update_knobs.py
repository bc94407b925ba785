"""The reference backend's update and decoding knobs, validated when the config is built.

``trainer.checkpoint_layers`` / ``checkpoint_policy`` / ``compile_layers`` and ``rollout.decode``
each apply to one path only; a config that sets one where it has no effect is refused with what to
change, and the trainer logs which rollout path runs.
"""

from __future__ import annotations

import pytest

from hyperpod_rl.config.run import RunConfig
from hyperpod_rl.errors import ConfigError
from hyperpod_rl.model.policy import MazePolicy
from hyperpod_rl.model.tiny import build_tiny_qwen3vl

DATA = {"train_path": "/d/train.parquet", "heldout_path": "/d/heldout.parquet"}


def _build(**sections) -> RunConfig:
    return RunConfig.build({"run_id": "knobs", "data": DATA, **sections})


@pytest.mark.parametrize(
    ("sections", "message"),
    [
        (
            {"trainer": {"gradient_checkpointing": False, "checkpoint_policy": "save_matmuls"}},
            r"trainer.checkpoint_policy='save_matmuls' shape gradient checkpointing, which is off: set "
            r"trainer.gradient_checkpointing=true or remove them",
        ),
        (
            {"trainer": {"gradient_checkpointing": False, "checkpoint_layers": 0.5, "compile_layers": True}},
            r"trainer.checkpoint_layers=0.5 shape gradient checkpointing, which is off",
        ),
        ({"trainer": {"checkpoint_layers": 1.5}}, r"trainer.checkpoint_layers: .*1"),
        (
            {"trainer": {"checkpoint_layers": float("nan")}},
            r"trainer.checkpoint_layers: give a finite number, not inf or nan .*e.g. 1.0 \(got nan\)",
        ),
        ({"trainer": {"checkpoint_policy": "some"}}, r"trainer.checkpoint_policy: .*'full'.*'save_matmuls'"),
        (
            {"rollout": {"decode": "compiled"}},
            r"rollout.decode='compiled' applies to free generation, but rollout.action_constraint='directions' samples one "
            r"answer word .*: remove rollout.decode or set action_constraint='none'",
        ),
    ],
    ids=[
        "policy-without-checkpointing",
        "share-without-checkpointing",
        "share-above-1",
        "share-nan",
        "unknown-policy",
        "decode-with-directions",
    ],
)
def test_knobs_where_they_do_nothing_are_refused(sections, message):
    with pytest.raises(ConfigError, match=message):
        _build(**sections)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            {"trainer": {"compile_layers": True}},
            r"trainer.compile_layers=True: this sets the reference backend's policy update; .*ignore it: remove it",
        ),
        ({"trainer": {"checkpoint_policy": "save_matmuls"}}, r"SkyRL's FSDP2 workers ignore it: remove it"),
        ({"rollout": {"decode": "eager"}}, r"rollout.decode='eager' sets the reference backend's decoding; SkyRL rolls out with vLLM"),
    ],
)
def test_skyrl_runs_refuse_reference_knobs(overrides, message):
    with pytest.raises(ConfigError, match=message):
        RunConfig.from_preset("single-gpu", run_id="skyrl-knobs", **overrides)


def test_valid_knobs_build():
    cfg = _build(
        trainer={"checkpoint_layers": 0.5, "checkpoint_policy": "save_matmuls", "compile_layers": True},
        rollout={"action_constraint": "none", "decode": "compiled"},
    )
    assert (cfg.trainer.checkpoint_layers, cfg.trainer.checkpoint_policy, cfg.rollout.decode) == (0.5, "save_matmuls", "compiled")


def test_the_rollout_path_line_names_what_runs():
    model, proc = build_tiny_qwen3vl(seed=0)
    assert "no token-by-token decoding" in MazePolicy(model, proc, action_constraint="directions").rollout_path()
    assert "eager decoding" in MazePolicy(model, proc, action_constraint="none").rollout_path()  # auto on the CPU
    assert "compiled decoding" in MazePolicy(model, proc, action_constraint="none", decode="compiled").rollout_path()
