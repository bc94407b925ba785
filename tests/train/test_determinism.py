"""Issue 14 item 14: identical inputs write byte-identical files.

Two reference-backend runs of one config, each in its own interpreter with a different
``PYTHONHASHSEED`` (set order, which peft used for ``target_modules``, changes with it), must
write the same bytes: the adapter directory and every checkpoint file. Only fields that are
explicitly timestamps or run ids may differ (``provenance.json``'s ``created_at``; the
``checksums.json`` entry of ``provenance.json`` follows from it).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = """
import sys
from hyperpod_rl.config.run import RunConfig
from hyperpod_rl.train.reference import ReferenceTrainer
cfg = RunConfig.model_validate_json(open(sys.argv[1]).read())
ReferenceTrainer(cfg, sys.argv[2]).train()
"""

VOLATILE = {"provenance.json": {"created_at"}}  # explicit timestamps


def _digest(path: Path) -> str:
    if path.name in VOLATILE:
        data = json.loads(path.read_text())
        for key in VOLATILE[path.name]:
            data.pop(key, None)
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()
    if path.name == "checksums.json":
        data = {k: v for k, v in json.loads(path.read_text()).items() if k not in VOLATILE}
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _tree(root: Path, *subdirs: str) -> dict[str, str]:
    return {str(p.relative_to(root)): _digest(p) for sub in subdirs for p in sorted((root / sub).rglob("*")) if p.is_file()}


@pytest.mark.slow  # two trainings in fresh interpreters: about 2 minutes on 2 cores
def test_two_identical_runs_write_identical_adapters_and_checkpoints(tiny_setup, tmp_path):
    """Slow: two trainings in fresh interpreters (about 2 minutes on 2 cores)."""
    from hyperpod_rl.quickstart import make_run_config

    cfg = make_run_config(
        tiny_setup["opts"], run_id="same", model_path=tiny_setup["model_dir"], revision=tiny_setup["revision"], data=tiny_setup["data"]
    )
    data = cfg.model_dump(mode="json")
    data["lora"]["target_modules"] = ["v_proj", "q_proj", "k_proj", "o_proj"]  # a list peft turns into a set
    data["trainer"]["steps"] = 2
    data["checkpoint"].update({"interval": 1, "keep": 3})
    config = tmp_path / "config.json"
    config.write_text(json.dumps(data))
    runs = []
    for i, seed in enumerate(("1", "2")):
        run_dir = tmp_path / f"run{i}"
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", SCRIPT, str(config), str(run_dir)], env=env, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, done.stderr[-2000:]
        runs.append(run_dir)
    first, second = (_tree(r, "adapter", "checkpoints") for r in runs)
    assert first.keys() == second.keys() and "adapter/adapter_config.json" in first
    assert [k for k in first if first[k] != second[k]] == []
    # What the hashes stand for: the adapter_config.json bytes themselves are identical.
    assert (runs[0] / "adapter" / "adapter_config.json").read_bytes() == (runs[1] / "adapter" / "adapter_config.json").read_bytes()
    targets = json.loads((runs[0] / "adapter" / "adapter_config.json").read_text())["target_modules"]
    assert targets == ["k_proj", "o_proj", "q_proj", "v_proj"]
