"""Serving fixtures: a real exported adapter (non-zero LoRA weights) on the tiny base model."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def trained_adapter(tiny_setup, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """An adapter written by ``ReferenceTrainer.export_adapter``, with seeded random LoRA B.

    peft initialises B to zero (the adapter would equal the base model); random B makes the
    adapter's answers differ from the base model's, so serving it selects something real.

    Returns:
        ``{"adapter": Path, "model_dir": Path, "revision": str, "heldout": Path, "run_dir": Path}``.
    """
    import torch

    from hyperpod_rl.quickstart import make_run_config
    from hyperpod_rl.train.reference import ReferenceTrainer

    run_dir = tmp_path_factory.mktemp("serve-run")
    config = make_run_config(tiny_setup["opts"], run_id="serve-test", model_path=tiny_setup["model_dir"], revision=tiny_setup["revision"], data=tiny_setup["data"])
    trainer = ReferenceTrainer(config, run_dir)
    trainer._build()
    gen = torch.Generator().manual_seed(7)
    with torch.no_grad():
        for name, param in trainer.model.named_parameters():
            if "lora_B" in name:
                param.copy_(torch.randn(param.shape, generator=gen) * 0.5)
    adapter = trainer.export_adapter()
    return {"adapter": Path(adapter), "model_dir": Path(tiny_setup["model_dir"]), "revision": tiny_setup["revision"], "heldout": Path(tiny_setup["data"].heldout), "run_dir": run_dir, "config": config}
