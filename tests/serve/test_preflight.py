"""Preflight table: crafted bad adapters are refused (or warned about) with the expected message."""

from __future__ import annotations

import inspect
import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from hyperpod_rl.errors import ServeError
from hyperpod_rl.serve.preflight import (
    LOCAL_SERVER,
    BaseModelRef,
    ServerProfile,
    preflight,
    tokenizer_fingerprint,
    vllm_server,
)

VLLM = vllm_server(max_lora_rank=16)
WEIGHTS = "adapter_model.safetensors"


# ---------------------------------------------------------------------------- mutations
def _prov(d: Path, **changes) -> None:
    prov = json.loads((d / "provenance.json").read_text())
    for key, value in changes.items():
        if value is None:
            prov.pop(key, None)
        else:
            prov[key] = value
    (d / "provenance.json").write_text(json.dumps(prov))


def _config(d: Path, **changes) -> None:
    cfg = json.loads((d / "adapter_config.json").read_text())
    cfg.update(changes)
    (d / "adapter_config.json").write_text(json.dumps(cfg))


def _retrain_rank(d: Path, rank: int) -> None:
    """An adapter that was trained with another rank: config and provenance agree on it."""
    _config(d, r=rank)
    prov = json.loads((d / "provenance.json").read_text())
    _prov(d, lora={**prov["lora"], "rank": rank})


def _add_tensors(d: Path, tensors: dict) -> None:
    """Add tensors to the safetensors file and re-record its checksum (only the target check fails)."""
    from safetensors.torch import load_file, save_file

    from hyperpod_rl.runs.files import file_sha256

    weights = load_file(str(d / WEIGHTS))
    weights.update(tensors)
    save_file(weights, str(d / WEIGHTS))
    _prov(d, adapter_sha256=file_sha256(d / WEIGHTS))


def _vision_lora(module: str):
    import torch

    def mutate(d: Path) -> None:
        _add_tensors(
            d,
            {
                f"base_model.model.model.visual.{module}.lora_A.weight": torch.zeros(16, 64),
                f"base_model.model.model.visual.{module}.lora_B.weight": torch.zeros(64, 16),
            },
        )

    return mutate


def _full_weight(name: str, shape: tuple[int, int]):
    import torch

    return lambda d: _add_tensors(d, {name: torch.zeros(shape)})


def _truncate(d: Path) -> None:
    raw = (d / WEIGHTS).read_bytes()
    (d / WEIGHTS).write_bytes(raw[: len(raw) // 2])


def _flip_byte(d: Path) -> None:
    raw = bytearray((d / WEIGHTS).read_bytes())
    raw[-100] ^= 0xFF  # inside the tensor data: the header still parses
    (d / WEIGHTS).write_bytes(bytes(raw))


def _garbage_header(d: Path) -> None:
    raw = (d / WEIGHTS).read_bytes()
    (d / WEIGHTS).write_bytes((10**12).to_bytes(8, "little") + raw[8:])


def _own_tokenizer(d: Path) -> None:
    (d / "tokenizer.json").write_text(json.dumps({"model": {"vocab": {"a": 0, "b": 1}}}))


def _own_template(d: Path) -> None:
    (d / "chat_template.jinja").write_text("{% for m in messages %}{{ m['content'] }}{% endfor %}")


def _bad_gen_config(base: Path) -> None:
    (base / "generation_config.json").write_text(json.dumps({"temperature": 0.7, "top_k": 20, "top_p": 0.8, "eos_token_id": 2}))


# id, mutation of the adapter copy, mutation of the base model copy (or None), server, severity, check, message regex
BAD: list[tuple[str, Callable[[Path], None], Callable[[Path], None] | None, ServerProfile, str, str, str]] = [
    (
        "no-provenance",
        lambda d: (d / "provenance.json").unlink(),
        None,
        LOCAL_SERVER,
        "error",
        "provenance",
        r"provenance\.json is missing",
    ),
    (
        "provenance-not-json",
        lambda d: (d / "provenance.json").write_text("{not json"),
        None,
        LOCAL_SERVER,
        "error",
        "provenance",
        r"provenance\.json is not valid JSON",
    ),
    (
        "provenance-incomplete",
        lambda d: _prov(d, base_model_revision=None),
        None,
        LOCAL_SERVER,
        "error",
        "provenance",
        r"lacks base_model_revision\.",
    ),
    (
        "other-base-model-id",
        lambda d: _prov(d, base_model_id="Qwen/Qwen3-VL-8B-Instruct"),
        None,
        LOCAL_SERVER,
        "error",
        "base_model",
        r"trained on base model 'Qwen/Qwen3-VL-8B-Instruct' but the server loads 'hyperpod-rl/tiny-qwen3-vl'",
    ),
    (
        "other-base-revision",
        lambda d: _prov(d, base_model_revision="0123456789abcdef"),
        None,
        VLLM,
        "error",
        "base_model",
        r"revision '0123456789abcdef' but the server loads revision",
    ),
    (
        "rank-above-vllm-default",
        lambda d: _retrain_rank(d, 32),
        None,
        VLLM,
        "error",
        "lora_rank",
        r"LoRA rank is 32 but vLLM accepts at most 16.*--max-lora-rank 32",
    ),
    (  # issue 14 item 6: vLLM refuses --max-lora-rank 20; the fix names the next accepted value up
        "rank-between-vllm-values",
        lambda d: _retrain_rank(d, 20),
        None,
        VLLM,
        "error",
        "lora_rank",
        r"LoRA rank is 20 but vLLM accepts at most 16.*--max-lora-rank 32,",
    ),
    (
        "rank-above-vllm-largest",
        lambda d: _retrain_rank(d, 600),
        None,
        vllm_server(max_lora_rank=512),
        "error",
        "lora_rank",
        r"LoRA rank is 600 .* train with lora.rank <= 512 \(512 is the largest value of vLLM's --max-lora-rank\)",
    ),
    (
        "rank-pattern-above-max",
        lambda d: _config(d, rank_pattern={"q_proj": 64}),
        None,
        vllm_server(max_lora_rank=32),
        "error",
        "lora_rank",
        r"LoRA rank is 64 but vLLM accepts at most 32",
    ),
    (
        "vision-attention-lora",
        _vision_lora("blocks.0.attn.qkv"),
        None,
        VLLM,
        "error",
        "vision_tower",
        r"2 LoRA tensors sit on the vision tower .*visual\.blocks\.0\.attn\.qkv.*language model only",
    ),
    (
        "vision-merger-lora",
        _vision_lora("merger.linear_fc1"),
        None,
        VLLM,
        "error",
        "vision_tower",
        r"vision tower .*merger\.linear_fc1.*exclude_modules",
    ),
    (
        "modules-to-save",
        lambda d: _config(d, modules_to_save=["lm_head"]),
        None,
        VLLM,
        "error",
        "modules_to_save",
        r"modules_to_save=\['lm_head'\].*vLLM rejects",
    ),
    (
        "full-lm-head",
        _full_weight("base_model.model.lm_head.weight", (8, 128)),
        None,
        LOCAL_SERVER,
        "error",
        "extra_weights",
        r"1 tensors are not LoRA matrices \(e\.g\. base_model\.model\.lm_head\.weight\)",
    ),
    (
        "full-embeddings",
        _full_weight("base_model.model.model.language_model.embed_tokens.weight", (8, 128)),
        None,
        VLLM,
        "error",
        "extra_weights",
        r"not LoRA matrices .*embed_tokens\.weight",
    ),
    (
        "missing-safetensors",
        lambda d: (d / WEIGHTS).unlink(),
        None,
        LOCAL_SERVER,
        "error",
        "weights",
        r"adapter_model\.safetensors is missing",
    ),
    (
        "truncated-safetensors",
        _truncate,
        None,
        LOCAL_SERVER,
        "error",
        "weights",
        r"truncated or corrupt: tensor data ends at byte \d+ but the file has \d+ bytes",
    ),
    ("flipped-byte", _flip_byte, None, VLLM, "error", "weights", r"does not match the adapter_sha256"),
    ("garbage-header", _garbage_header, None, LOCAL_SERVER, "error", "weights", r"truncated or corrupt: the header claims"),
    (
        "no-checksum",
        lambda d: _prov(d, adapter_sha256=None),
        None,
        LOCAL_SERVER,
        "warning",
        "weights",
        r"no adapter_sha256, so the weights cannot be verified",
    ),
    (
        "own-tokenizer",
        _own_tokenizer,
        None,
        VLLM,
        "error",
        "tokenizer",
        r"tokenizer saved beside the adapter differs from the base model's",
    ),
    (
        "provenance-tokenizer-hash",
        lambda d: _prov(d, tokenizer_sha256="f" * 64),
        None,
        LOCAL_SERVER,
        "error",
        "tokenizer",
        r"tokenizer recorded in provenance\.json differs",
    ),
    ("own-chat-template", _own_template, None, LOCAL_SERVER, "error", "chat_template", r"chat template saved beside the adapter differs"),
    (
        "server-chat-template",
        lambda d: None,
        None,
        vllm_server(chat_template="{{ messages }}"),
        "error",
        "chat_template",
        r"vLLM overrides the chat template .*--chat-template",
    ),
    (
        "generation-config-overrides",
        lambda d: None,
        _bad_gen_config,
        vllm_server(generation_config="auto", sampling={"temperature": 0.0}),
        "warning",
        "generation_config",
        r"sets top_p=0\.8 \(requested 1\.0\), top_k=20 \(requested 0\).*--generation-config vllm",
    ),
    (
        "generation-config-temperature",
        lambda d: None,
        _bad_gen_config,
        vllm_server(generation_config="auto", sampling={"temperature": 1.0, "top_p": 0.8, "top_k": 20}),
        "warning",
        "generation_config",
        r"sets temperature=0\.7 \(requested 1\.0\);",
    ),
    (
        "no-adapter-config",
        lambda d: (d / "adapter_config.json").unlink(),
        None,
        LOCAL_SERVER,
        "error",
        "adapter_config",
        r"adapter_config\.json is missing",
    ),
    (
        "not-lora",
        lambda d: _config(d, peft_type="IA3"),
        None,
        LOCAL_SERVER,
        "error",
        "adapter_config",
        r"peft_type='IA3'; servers load LoRA adapters only",
    ),
    (
        "config-rank-not-provenance",
        lambda d: _config(d, r=8),
        None,
        LOCAL_SERVER,
        "error",
        "adapter_config",
        r"has r=8 but provenance\.json records lora\.rank=16: the config does not belong to these weights",
    ),
    (
        "config-alpha-not-provenance",
        lambda d: _config(d, lora_alpha=16.0),
        None,
        VLLM,
        "error",
        "adapter_config",
        r"has lora_alpha=16\.0 but provenance\.json records lora\.alpha=32\.0",
    ),
]


@pytest.fixture
def copies(trained_adapter, tmp_path: Path):
    """Copy the good adapter (and optionally the base model) so a case can damage its copy."""

    def make(mutate_adapter, mutate_base) -> tuple[Path, BaseModelRef]:
        adapter = tmp_path / "adapter"
        shutil.copytree(trained_adapter["adapter"], adapter)
        mutate_adapter(adapter)
        base_dir = trained_adapter["model_dir"]
        if mutate_base is not None:
            base_dir = tmp_path / "base"
            shutil.copytree(trained_adapter["model_dir"], base_dir)
            mutate_base(base_dir)
        # the id and revision of the original, so only the intended check can fail
        return adapter, BaseModelRef(model_id="hyperpod-rl/tiny-qwen3-vl", revision=trained_adapter["revision"], path=base_dir)

    return make


def test_the_table_covers_every_failure_class_with_variations():
    assert len(BAD) >= 12
    assert {case[5] for case in BAD} == {
        "provenance",
        "base_model",
        "lora_rank",
        "vision_tower",
        "modules_to_save",
        "extra_weights",
        "weights",
        "tokenizer",
        "chat_template",
        "generation_config",
        "adapter_config",
    }


@pytest.mark.parametrize(("case", "mutate", "mutate_base", "server", "severity", "check", "pattern"), BAD, ids=[c[0] for c in BAD])
def test_bad_adapter_is_refused_or_warned(copies, case, mutate, mutate_base, server, severity, check, pattern):
    adapter, base = copies(mutate, mutate_base)
    report = preflight(adapter, base, server)
    hits = [f for f in report.findings if f.check == check and f.severity == severity]
    assert hits, report.summary()
    assert any(re.search(pattern, f.message) for f in hits), report.summary()
    assert all(f.fix and "Fix: " in f.message for f in report.findings)
    if severity == "error":
        assert not report.ok
        with pytest.raises(ServeError, match=check):
            report.raise_for_errors()
    else:
        assert report.ok, report.summary()
        assert report.raise_for_errors() is report


_FLAG = re.compile(r"(--[a-z][a-z-]*)(?:[ =]([^\s,;()]+))?")


@pytest.mark.parametrize(("case", "mutate", "mutate_base", "server", "severity", "check", "pattern"), BAD, ids=[c[0] for c in BAD])
def test_every_vllm_flag_a_fix_suggests_is_one_vllm_accepts(copies, case, mutate, mutate_base, server, severity, check, pattern):
    """Issue 14 item 6, the whole kind: any ``--flag value`` a finding suggests passes
    check_vllm_args (vLLM's accepted values: ranks from MaxLoRARanks, --generation-config
    auto|vllm|folder, ...), and a flag named without a value is a known vLLM flag."""
    from hyperpod_rl.serve.cluster import VLLM_FLAGS, check_vllm_args

    adapter, base = copies(mutate, mutate_base)
    for finding in preflight(adapter, base, server).findings:
        for flag, value in _FLAG.findall(finding.fix):
            assert flag in VLLM_FLAGS, finding.fix
            if value:
                check_vllm_args(["vllm", "serve", "m", "--enable-lora", flag, value])


def test_exported_adapter_passes_locally_and_on_vllm(trained_adapter):
    base = BaseModelRef.from_dir(trained_adapter["model_dir"])
    assert base.model_id == "hyperpod-rl/tiny-qwen3-vl"
    assert base.revision == trained_adapter["revision"]
    for server in (LOCAL_SERVER, VLLM, vllm_server(max_lora_rank=16, generation_config="auto")):
        report = preflight(trained_adapter["adapter"], base, server)
        assert report.findings == [], report.summary()
        assert report.rank == 16
        assert "preflight passed" in report.summary()


@pytest.mark.parametrize(
    ("mutate", "mutate_base", "server"),
    [
        (lambda d: _retrain_rank(d, 32), None, vllm_server(max_lora_rank=32)),  # rank raised on the server
        (_vision_lora("blocks.0.attn.qkv"), None, LOCAL_SERVER),  # peft applies LoRA to the vision tower too
        (lambda d: None, _bad_gen_config, vllm_server(generation_config="vllm")),  # generation_config ignored
        (lambda d: None, _bad_gen_config, vllm_server(generation_config="auto", sampling={"temperature": 0.7, "top_k": 20, "top_p": 0.8})),
    ],
    ids=["rank-32-on-max-32", "vision-lora-locally", "gen-config-ignored", "gen-config-matches-request"],
)
def test_good_variants_are_accepted(copies, mutate, mutate_base, server):
    adapter, base = copies(mutate, mutate_base)
    report = preflight(adapter, base, server)
    assert report.ok and not report.warnings, report.summary()


def test_tokenizer_saved_with_the_adapter_is_fine_when_it_is_the_base_models(copies, trained_adapter):
    def same_files(d: Path) -> None:
        for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
            shutil.copy(trained_adapter["model_dir"] / name, d / name)

    adapter, base = copies(same_files, None)
    assert tokenizer_fingerprint(adapter) == tokenizer_fingerprint(trained_adapter["model_dir"])
    assert tokenizer_fingerprint(adapter)["chat_template_sha256"] is not None
    assert preflight(adapter, base, VLLM).findings == []


def test_several_failures_are_all_reported(copies):
    adapter, base = copies(
        lambda d: (_retrain_rank(d, 64), _config(d, modules_to_save=["lm_head"]), _prov(d, base_model_id="other/model")), None
    )
    report = preflight(adapter, base, VLLM)
    assert report.checks("error") == {"lora_rank", "modules_to_save", "base_model"}
    with pytest.raises(ServeError, match=r"3 error\(s\)"):
        report.raise_for_errors()


def test_base_model_without_local_files_skips_tokenizer_checks_with_a_warning(trained_adapter):
    report = preflight(
        trained_adapter["adapter"], BaseModelRef(model_id="hyperpod-rl/tiny-qwen3-vl", revision=trained_adapter["revision"]), VLLM
    )
    assert report.ok
    assert report.checks("warning") == {"tokenizer"}


def test_bad_paths_raise(tmp_path: Path, trained_adapter):
    with pytest.raises(ServeError, match="is not a directory"):
        preflight(tmp_path / "nope", trained_adapter["model_dir"])
    with pytest.raises(ServeError, match="is an empty folder"):
        preflight(trained_adapter["adapter"], tmp_path)
    base = tmp_path / "base"
    base.mkdir()
    (base / "weights.txt").write_text("x")
    with pytest.raises(ServeError, match="has no config.json"):
        preflight(trained_adapter["adapter"], base)
    # a copy of the real base whose config.json is damaged: that is the error, not a revision mismatch
    import shutil

    shutil.copytree(trained_adapter["model_dir"], base, dirs_exist_ok=True)
    (base / "config.json").write_text('{"model_type": "qwen3_vl", ')
    with pytest.raises(ServeError, match=r"base model config.json .* is not valid JSON at line 1, column 28"):
        preflight(trained_adapter["adapter"], base)


def _count_model_loads(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Spy on every way a model, processor or weight file is loaded; return the live call counts (calls go through)."""
    import safetensors.torch
    import torch
    import transformers
    from transformers.models.auto.auto_factory import _BaseAutoModelClass

    from hyperpod_rl.model import loading

    counts: dict[str, int] = {}

    def spy(owner: object, name: str, label: str, *, classmethod_: bool = False) -> None:
        # A classmethod is wrapped as one (its function called with the class it was called on).
        original = inspect.getattr_static(owner, name).__func__ if classmethod_ else getattr(owner, name)
        counts[label] = 0

        def wrapper(*args, **kwargs):
            counts[label] += 1
            return original(*args, **kwargs)

        monkeypatch.setattr(owner, name, classmethod(wrapper) if classmethod_ else wrapper)

    spy(loading, "load_base_model", "hyperpod_rl load_base_model")
    spy(loading, "load_processor", "hyperpod_rl load_processor")
    spy(transformers.PreTrainedModel, "from_pretrained", "PreTrainedModel.from_pretrained", classmethod_=True)
    spy(_BaseAutoModelClass, "from_pretrained", "AutoModel*.from_pretrained", classmethod_=True)
    spy(transformers.AutoProcessor, "from_pretrained", "AutoProcessor.from_pretrained", classmethod_=True)
    spy(transformers.ProcessorMixin, "from_pretrained", "ProcessorMixin.from_pretrained", classmethod_=True)
    spy(transformers.AutoTokenizer, "from_pretrained", "AutoTokenizer.from_pretrained", classmethod_=True)
    spy(safetensors.torch, "load_file", "safetensors.torch.load_file")
    spy(torch, "load", "torch.load")
    return counts


def test_preflight_loads_no_model(trained_adapter, monkeypatch: pytest.MonkeyPatch):
    """Preflight reads headers and config files only: 20 preflights load no model, processor, tokenizer or weights (a count,
    not a time). The spies are shown to count: one real ``load_processor`` call through them counts one."""
    base = BaseModelRef(model_id="hyperpod-rl/tiny-qwen3-vl", revision=trained_adapter["revision"], path=trained_adapter["model_dir"])
    counts = _count_model_loads(monkeypatch)
    for _ in range(20):
        assert preflight(trained_adapter["adapter"], base, VLLM).ok
    assert counts == dict.fromkeys(counts, 0), counts

    from hyperpod_rl.model import loading

    loading.load_processor(trained_adapter["model_dir"])
    assert counts["hyperpod_rl load_processor"] == 1 and counts["ProcessorMixin.from_pretrained"] >= 1


@pytest.mark.parametrize("mutate", [_flip_byte, _garbage_header], ids=["flipped-byte", "garbage-header"])
def test_damaged_weights_say_how_to_get_them_back_and_delete_nothing(copies, mutate, tmp_path: Path):
    """Reported: a flipped byte in a run's adapter weights was refused with 'copy the adapter again from the
    run directory', where the damaged file was. A copy is copied again from its run, its damaged file kept
    aside; a run's own adapter is exported again by resuming the run (:func:`hyperpod_rl.model.recovery.adapter_recovery`)."""
    adapter, base = copies(mutate, None)
    (fix,) = [f.fix for f in preflight(adapter, base, LOCAL_SERVER).findings if f.check == "weights" and f.severity == "error"]
    assert "copy it again from the run directory it came from" in fix and f"mv {adapter} {adapter}.damaged" in fix, fix
    (tmp_path / "config.json").write_text("{}")  # the adapter is its run's own now
    (fix,) = [f.fix for f in preflight(adapter, base, LOCAL_SERVER).findings if f.check == "weights" and f.severity == "error"]
    assert f"mv {adapter} {adapter}.damaged; nothing is deleted" in fix and f"hyperpod-rl job submit {tmp_path / 'config.json'}" in fix, fix
    assert not re.search(r"\bdelete\b", fix.replace("nothing is deleted", "")), fix
