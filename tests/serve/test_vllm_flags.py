"""Issue 14, item 6: vLLM flags the project suggests or passes are values vLLM accepts.

vLLM's ``LoRAConfig.max_lora_rank`` is ``Literal[1, 8, 16, 32, 64, 128, 256, 320, 512]``
(``vllm/config/lora.py``, docs/references.md §3): ``--max-lora-rank 20`` is refused at engine
start, so suggestions name the next accepted value up and a configured value outside the set is
refused before anything starts.

vLLM is not importable in CI (it needs CUDA), so the CPU test of the accepted set is a
*transcription* check: it pins the project's copy to the values read from vLLM 0.23's source by
hand. The ``gpu``-marked test beside it imports ``vllm.config`` where vLLM is installed (the GPU
kit) and compares the copy, and the other facts ``_VLLM_MIN`` and ``VLLM_ENGINE_KWARGS`` transcribe,
with vLLM's own config classes.
"""

from __future__ import annotations

import typing

import pytest

from hyperpod_rl.config.validate import VLLM_LORA_RANKS
from hyperpod_rl.errors import ConfigError
from hyperpod_rl.serve.cluster import _VLLM_MIN, VLLM_ENGINE_KWARGS, check_vllm_args, validate_llm_config
from hyperpod_rl.serve.preflight import ServerProfile, vllm_lora_rank_for, vllm_server


def test_the_accepted_ranks_are_the_transcription_of_vllm_0_23_lora_config():
    """A transcription check, not a check against vLLM: ``vllm/config/lora.py`` of vLLM 0.23 declares
    ``MaxLoRARanks = Literal[1, 8, 16, 32, 64, 128, 256, 320, 512]``; the project's copy must say the same.
    ``test_the_copies_match_vllms_own_config_classes`` compares it with vLLM itself on a GPU machine."""
    assert VLLM_LORA_RANKS == (1, 8, 16, 32, 64, 128, 256, 320, 512)


def _lower_bound(field: typing.Any) -> tuple[str, float] | None:
    """``("ge" | "gt", value)`` of a pydantic FieldInfo's annotated_types bound, or None."""
    for meta in field.metadata:
        for kind in ("ge", "gt"):
            if getattr(meta, kind, None) is not None:
                return kind, getattr(meta, kind)
    return None


@pytest.mark.gpu
def test_the_copies_match_vllms_own_config_classes():
    """Against vLLM itself (importable on the GPU kit only): the accepted ranks are ``LoRAConfig``'s, the LoRA
    flags the package passes are ``LoRAConfig`` fields with the lower bounds ``_VLLM_MIN`` states, the
    ``--gpu-memory-utilization`` range is ``CacheConfig``'s, and every engine kwarg is an ``EngineArgs`` field."""
    import dataclasses

    lora_mod = pytest.importorskip("vllm.config.lora", reason="vLLM is not installed (the GPU kit has it)")
    from vllm.config.cache import CacheConfig
    from vllm.config.parallel import ParallelConfig
    from vllm.engine.arg_utils import EngineArgs

    fields = lora_mod.LoRAConfig.__pydantic_fields__
    assert tuple(typing.get_args(fields["max_lora_rank"].annotation)) == VLLM_LORA_RANKS
    assert {"max_lora_rank", "max_loras", "max_cpu_loras"} <= set(fields)
    assert fields["max_lora_rank"].default in VLLM_LORA_RANKS
    assert _lower_bound(fields["max_loras"]) == ("ge", _VLLM_MIN["--max-loras"])
    assert _lower_bound(ParallelConfig.__pydantic_fields__["tensor_parallel_size"]) == ("ge", _VLLM_MIN["--tensor-parallel-size"])
    gmu = CacheConfig.__pydantic_fields__["gpu_memory_utilization"]
    assert _lower_bound(gmu) == ("gt", 0) and any(getattr(m, "le", None) == 1 for m in gmu.metadata)
    engine_fields = {f.name for f in dataclasses.fields(EngineArgs)}
    assert VLLM_ENGINE_KWARGS <= engine_fields, sorted(VLLM_ENGINE_KWARGS - engine_fields)


@pytest.mark.parametrize(
    ("rank", "up"), [(1, 1), (2, 8), (9, 16), (16, 16), (20, 32), (33, 64), (257, 320), (321, 512), (512, 512), (513, None)]
)
def test_next_accepted_rank_up(rank, up):
    assert vllm_lora_rank_for(rank) == up


@pytest.mark.parametrize(
    ("configured", "hint"), [(20, "use 32, the next accepted value up"), (48, "use 64"), (600, "the largest accepted value is 512")]
)
def test_a_vllm_profile_with_a_rank_vllm_refuses_is_refused(configured, hint):
    with pytest.raises(ConfigError, match=rf"max_lora_rank={configured} is not a value vLLM starts with .*{hint}"):
        vllm_server(max_lora_rank=configured)


def test_every_accepted_rank_builds_a_profile_and_local_profiles_take_any_rank():
    assert [vllm_server(max_lora_rank=r).max_lora_rank for r in VLLM_LORA_RANKS] == list(VLLM_LORA_RANKS)
    assert ServerProfile(name="peft", max_lora_rank=20).max_lora_rank == 20  # no accepted set: any positive rank


def test_cli_preflight_refuses_a_max_lora_rank_vllm_refuses(trained_adapter):
    from typer.testing import CliRunner

    from hyperpod_rl.cli import app

    result = CliRunner().invoke(
        app,
        [
            "serve",
            "preflight",
            str(trained_adapter["adapter"]),
            "--base",
            str(trained_adapter["model_dir"]),
            "--server",
            "vllm",
            "--max-lora-rank",
            "20",
        ],
    )
    assert result.exit_code != 0
    assert "max_lora_rank=20 is not a value vLLM starts with" in result.output and "use 32" in result.output


@pytest.mark.parametrize(
    ("flag", "value", "pattern"),
    [
        ("--max-lora-rank", "20", r"--max-lora-rank 20: must be one of 1, 8, 16, 32, 64"),
        ("--generation-config", "greedy", r"must be 'auto', 'vllm' or an absolute folder path"),
        ("--max-loras", "0", r"--max-loras 0: must be >= 1"),
        ("--gpu-memory-utilization", "1.5", r"must be in \(0, 1\]"),
        ("--tensor-parallel-size", "0", r"must be >= 1"),
    ],
)
def test_check_vllm_args_refuses_values_vllm_refuses(flag, value, pattern):
    with pytest.raises(ConfigError, match=pattern):
        check_vllm_args(["vllm", "serve", "m", "--enable-lora", flag, value])


@pytest.mark.parametrize(
    ("flag", "value"),
    [("--generation-config", "vllm"), ("--generation-config", "auto"), ("--generation-config", "/fsx/gen"), ("--max-lora-rank", "320")],
)
def test_check_vllm_args_accepts_values_vllm_accepts(flag, value):
    check_vllm_args(["vllm", "serve", "m", "--enable-lora", flag, value])


def test_cluster_spec_refuses_a_rank_outside_the_set_and_names_the_next_one(trained_adapter):
    from hyperpod_rl.serve.cluster import ClusterServeSpec, vllm_serve_args

    spec = {"base_model": "Qwen/Qwen3-VL-8B-Instruct", "base_model_revision": "abc", "adapters": {"maze": str(trained_adapter["adapter"])}}
    with pytest.raises(ConfigError, match=r"max_lora_rank=20 is not one of vLLM's .*use 32, the next one up"):
        ClusterServeSpec.build({**spec, "max_lora_rank": 20})
    args = vllm_serve_args(spec)  # derived from the adapter's rank 16
    assert args[args.index("--max-lora-rank") + 1] == "16"
    with pytest.raises(ConfigError, match=r"max_lora_rank=8 is below the largest adapter rank 16: set max_lora_rank=16"):
        vllm_serve_args({**spec, "max_lora_rank": 8})


def test_llm_config_refuses_a_rank_outside_the_set():
    config = {
        "model_loading_config": {"model_id": "m", "model_source": "Qwen/Qwen3-VL-8B-Instruct"},
        "engine_kwargs": {"enable_lora": True, "max_lora_rank": 20},
        "lora_config": {"dynamic_lora_loading_path": "s3://bucket/adapters"},
    }
    with pytest.raises(ConfigError, match=r"max_lora_rank=20 is not one of vLLM's .*use 32"):
        validate_llm_config(config)


def test_run_config_refuses_a_serving_rank_vllm_refuses():
    from hyperpod_rl.config.presets import preset_dict
    from hyperpod_rl.config.run import RunConfig

    with pytest.raises(ConfigError, match=r"lora.max_serving_rank=48 is not a --max-lora-rank vLLM starts with .*use 64"):
        RunConfig.build(preset_dict("single-gpu", {"lora": {"max_serving_rank": 48}}))
