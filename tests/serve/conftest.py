"""Serving fixtures: real exported adapters (non-zero LoRA weights) on the tiny base model."""

from __future__ import annotations

from pathlib import Path

import pytest


def _export(tiny_setup, run_dir: Path, seed: int) -> Path:
    """Export an adapter with ``ReferenceTrainer.export_adapter`` after seeding LoRA B randomly.

    peft initialises B to zero (the adapter would equal the base model); random B makes the
    adapter's answers differ from the base model's, so serving it selects something real.
    """
    import torch

    from hyperpod_rl.quickstart import make_run_config
    from hyperpod_rl.train.reference import ReferenceTrainer

    config = make_run_config(
        tiny_setup["opts"],
        run_id=f"serve-test-{seed}",
        model_path=tiny_setup["model_dir"],
        revision=tiny_setup["revision"],
        data=tiny_setup["data"],
    )
    trainer = ReferenceTrainer(config, run_dir)
    trainer._build()
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in trainer.model.named_parameters():
            if "lora_B" in name:
                param.copy_(torch.randn(param.shape, generator=gen) * 0.5)
    return Path(trainer.export_adapter())


@pytest.fixture(scope="session")
def trained_adapter(tiny_setup, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One exported adapter plus the paths it belongs with.

    Returns:
        ``{"adapter", "model_dir", "revision", "heldout", "run_dir"}``.
    """
    run_dir = tmp_path_factory.mktemp("serve-run")
    adapter = _export(tiny_setup, run_dir, seed=7)
    return {
        "adapter": adapter,
        "model_dir": Path(tiny_setup["model_dir"]),
        "revision": tiny_setup["revision"],
        "heldout": Path(tiny_setup["data"].heldout),
        "run_dir": run_dir,
    }


@pytest.fixture(scope="session")
def second_adapter(tiny_setup, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Another adapter on the same base model (different LoRA weights), served side by side."""
    return _export(tiny_setup, tmp_path_factory.mktemp("serve-run-2"), seed=8)
