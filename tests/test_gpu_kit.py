"""The GPU kit (benchmarks/gpu/kit.py, stage.sh, run_skyrl.sh): the stack it carries is the production image's,
its call folders reassemble to the payloads, and its shell scripts are shellcheck-clean. CPU only, no downloads."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.gpu import kit

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "container" / "requirements.lock"


def _lock() -> dict[str, str]:
    pins = {}
    for line in LOCK.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            pins[name.split("[")[0].lower()] = version
    return pins


def test_kit_carries_the_images_stack():
    """One stack: what the GPU record runs is what the production image pins (container/requirements.lock)."""
    pins = _lock()
    carried = {s.partition("==")[0].lower(): s.partition("==")[2] for s in kit.SKYRL_NEEDS + kit.OWN_NEEDS}
    for name in ("skyrl", "transformers", "tokenizers", "peft", "vllm-router", "skyrl-gym"):
        assert carried[name] == pins[name], f"{name}: kit {carried[name]} vs lock {pins[name]}"
    assert kit.VLLM_VERSION == pins["vllm"] and kit.RAY_VERSION == pins["ray"]
    assert "ray/serve" not in kit.RAY_DROP  # vLLM 0.23.0's Ray metrics import ray.serve


def test_call_folders_reassemble_to_the_payloads(tmp_path):
    rng = __import__("random").Random(0)
    payloads = []
    for i, size in enumerate((5000, 123, 9000, 1)):
        p = tmp_path / "src" / f"p{i}.whl"
        p.parent.mkdir(exist_ok=True)
        p.write_bytes(bytes(rng.getrandbits(8) for _ in range(size)))
        payloads.append(kit.Payload(p.name, "site", p, sha256=kit.sha256(p)))
    calls = kit.lay_out(payloads, capacity=4096)
    assert calls == 4  # 14,124 bytes in 4,096-byte calls
    folders = kit.write_calls(payloads, calls, tmp_path / "kit")
    for f in folders:
        assert sum(x.stat().st_size for x in f.iterdir() if x.name != "MANIFEST.tsv") <= 4096
        assert (f / "MANIFEST.tsv").read_text() == (folders[0] / "MANIFEST.tsv").read_text()
    for p in payloads:
        joined = b"".join((tmp_path / "kit" / f"call{c}" / name).read_bytes() for c, name, _ in p.parts)
        assert hashlib.sha256(joined).hexdigest() == p.sha256


def test_stubs_and_standin_are_importable_python(tmp_path):
    for rel, text in {**kit.VLLM_STUBS, **kit.FLASH_ATTN_STANDIN}.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    code = (
        "import xgrammar.structural_tag, llguidance.torch, flash_attn.bert_padding, torch;"
        "from flash_attn.ops.triton.rotary import apply_rotary;"
        "from importlib.metadata import packages_distributions as pd;"
        "print(xgrammar.structural_tag.StructuralTag.__name__, pd()['flash_attn'])"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["StructuralTag", "['flash-attn-standin']"]


@pytest.mark.parametrize("script", ["stage.sh", "stage_env.sh", "run_skyrl.sh", "run_curve.sh", "run_sides.sh"])
def test_scripts_are_shellcheck_clean(script):
    shellcheck = shutil.which("shellcheck") or str(Path(sys.executable).parent / "shellcheck")
    result = subprocess.run([shellcheck, str(ROOT / "benchmarks" / "gpu" / script)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def test_e2e_metrics_count_the_sampled_tokens_of_either_backend(tmp_path: Path) -> None:
    """The e2e record's generated tokens/s: SkyRL's sampled tokens per episode, the reference backend's trained tokens."""
    from benchmarks.gpu.skyrl_e2e import _metrics

    skyrl = {"timing/step": 30.0, "timing/generate": 10.0, "generate/avg_assistant_tokens": 44.0, "policy/response_length": 220.0}
    reference = {"timing/step": 20.0, "timing/generate": 6.0, "trainer/num_tokens": 12288.0, "policy/response_length": 64.0}
    rows = []
    for step, values in enumerate((skyrl, reference), start=1):
        (tmp_path / "metrics.jsonl").write_text(json.dumps({"step": step, "values": values}) + "\n")
        rows += _metrics(tmp_path, 64)
    assert rows[0]["generated_tokens_per_s"] == 64 * 44 / 10 and rows[0]["samples_per_s"] == round(64 / 30, 3)
    assert "generated_tokens_per_s_est" not in rows[0]  # response_length counts observation tokens too: no rate from it
    assert rows[1]["generated_tokens_per_s"] == 2048.0 and rows[1]["trainer/num_tokens"] == 12288.0


def test_e2e_reads_either_backends_checkpoints_and_keeps_small_values(tmp_path: Path) -> None:
    """The reference phase's job passes once it checkpoints (``step_N`` directories, not SkyRL's step file),
    and a learning rate of 3e-5 is recorded as such, not rounded to 0."""
    from benchmarks.gpu.skyrl_e2e import _latest_ckpt, _metrics
    from hyperpod_rl.runs.files import write_dir_atomically

    assert _latest_ckpt(tmp_path) == 0
    for step in (1, 5):
        write_dir_atomically(tmp_path / "checkpoints" / f"step_{step:06d}", lambda d: (d / "state.pt").write_bytes(b"x"))
    assert _latest_ckpt(tmp_path) == 5
    (tmp_path / "checkpoints" / "latest_ckpt_global_step.txt").write_text("3\n")  # SkyRL's own file wins
    assert _latest_ckpt(tmp_path) == 3
    (tmp_path / "metrics.jsonl").write_text(json.dumps({"step": 1, "values": {"policy/policy_lr": 3e-5, "timing/step": 1.23456}}) + "\n")
    row = _metrics(tmp_path, 8)[0]
    assert row["policy/policy_lr"] == 3e-5 and row["timing/step"] == 1.2346
