"""Cluster serving configs: vLLM flags, the Ray job, and Ray Serve LLM's own LLMConfig schema."""

from __future__ import annotations

import inspect
import json
import re
import shlex
import shutil

import pytest

from hyperpod_rl.errors import ConfigError, ServeError
from hyperpod_rl.serve.cluster import (
    VLLM_LORA_RANKS,
    check_vllm_args,
    preflight_cluster,
    ray_serve_llm_app,
    ray_serve_llm_config,
    validate_llm_config,
    vllm_job,
    vllm_serve_args,
)


@pytest.fixture
def spec(trained_adapter) -> dict:
    return {
        "base_model": "Qwen/Qwen3-VL-8B-Instruct",
        "base_model_id": "hyperpod-rl/tiny-qwen3-vl",  # what the test adapter's provenance names
        "base_model_revision": trained_adapter["revision"],
        "base_model_local": str(trained_adapter["model_dir"]),
        "adapters": {"maze": str(trained_adapter["adapter"])},
    }


def _flag(args: list[str], name: str) -> list[str]:
    return [args[i + 1] for i, a in enumerate(args) if a == name]


def test_vllm_command_enables_lora_with_the_adapters_rank(spec):
    args = vllm_serve_args(spec)
    assert args[:3] == ["vllm", "serve", "Qwen/Qwen3-VL-8B-Instruct"]
    assert "--enable-lora" in args
    assert _flag(args, "--max-lora-rank") == ["16"]
    assert _flag(args, "--max-loras") == ["1"]
    assert _flag(args, "--revision") == [spec["base_model_revision"]]
    assert _flag(args, "--generation-config") == ["vllm"]
    assert json.loads(_flag(args, "--limit-mm-per-prompt")[0]) == {"image": 1}
    assert json.loads(_flag(args, "--lora-modules")[0]) == {"name": "maze", "path": spec["adapters"]["maze"], "base_model_name": "qwen3-vl"}
    assert shlex.split(shlex.join(args)) == args  # survives the shell of a Ray job entrypoint


def test_max_lora_rank_is_raised_to_the_next_vllm_value(spec, tmp_path):
    big = tmp_path / "rank40"
    shutil.copytree(spec["adapters"]["maze"], big)
    cfg = json.loads((big / "adapter_config.json").read_text())
    cfg["r"] = 40
    (big / "adapter_config.json").write_text(json.dumps(cfg))
    prov = json.loads((big / "provenance.json").read_text())
    prov["lora"]["rank"] = 40
    (big / "provenance.json").write_text(json.dumps(prov))
    args = vllm_serve_args({**spec, "adapters": {"maze": spec["adapters"]["maze"], "big": str(big)}})
    assert _flag(args, "--max-lora-rank") == ["64"]
    assert _flag(args, "--max-loras") == ["2"]
    assert len(_flag(args, "--lora-modules")) == 2
    with pytest.raises(ConfigError, match=r"max_lora_rank=32 is below the largest adapter rank 40"):
        vllm_serve_args({**spec, "adapters": {"big": str(big)}, "max_lora_rank": 32})


@pytest.mark.parametrize(
    ("change", "pattern"),
    [
        ({"max_lora_rank": 24}, r"max_lora_rank.*not one of vLLM's"),
        ({"adapters": {}}, r"invalid cluster serving spec:\n  adapters: has 0 item\(s\); give at least 1"),
        ({"adapters": {"bad name": "/fsx/a"}}, r"adapter name 'bad name'"),
        ({"gpu_memory_utilization": 1.5}, r"\n  gpu_memory_utilization: must be <= 1.0 \(got 1.5\)"),
        ({"served_model_name": "has space"}, r"\n  served_model_name: must match the pattern"),
        ({"unknown": 1}, r"\n  unknown: not a known field"),
    ],
)
def test_bad_specs_name_the_field(spec, change, pattern):
    with pytest.raises(ConfigError, match=pattern):
        vllm_serve_args({**spec, **change})


@pytest.mark.parametrize(
    ("args", "pattern"),
    [
        (["python", "-m", "x"], r"must start with 'vllm serve MODEL'"),
        (["vllm", "serve", "m", "--max-lora-rank", "24", "--enable-lora"], r"--max-lora-rank 24: must be one of"),
        (["vllm", "serve", "m", "--enable-lora", "--lora-modules", '{"name": "a"}'], r"JSON must have 'name' and 'path'"),
        (["vllm", "serve", "m", "--enable-lora", "--lora-modules", "a"], r"neither name=path nor JSON"),
        (["vllm", "serve", "m", "--max-loras", "2"], r"--max-loras need --enable-lora"),
        (["vllm", "serve", "m", "--enable-lora", "--max-loras", "4", "--max-cpu-loras", "2"], r"--max-cpu-loras must be >= --max-loras"),
        (["vllm", "serve", "m", "--enable-loras"], r"'--enable-loras' is not a vLLM serve flag"),
        (["vllm", "serve", "m", "--port"], r"--port needs a value"),
        (["vllm", "serve", "m", "--port", "eighty"], r"must be an int"),
        (["vllm", "serve", "m", "--limit-mm-per-prompt", "image=1"], r"must be a JSON object"),
    ],
)
def test_check_vllm_args_refuses_bad_commands(args, pattern):
    with pytest.raises(ConfigError, match=pattern):
        check_vllm_args(args)


def test_check_vllm_args_accepts_the_old_name_path_form():
    check_vllm_args(["vllm", "serve", "m", "--enable-lora", "--lora-modules", "maze=/fsx/runs/r/adapter", "--max-lora-rank", "32"])


def test_vllm_job_fits_submit_job_and_preflights_adapters(spec, tmp_path):
    from ray.job_submission import JobSubmissionClient

    job = vllm_job(spec)
    params = inspect.signature(JobSubmissionClient.submit_job).parameters
    assert set(job) <= set(params)
    assert job["entrypoint"].startswith("vllm serve Qwen/Qwen3-VL-8B-Instruct ")
    assert job["entrypoint_num_gpus"] == 1
    assert job["submission_id"] == vllm_job(spec)["submission_id"]  # stable: a resubmission is refused, not doubled
    assert re.fullmatch(r"hprl-serve-vllm-qwen3-vl-[0-9a-f]{8}", job["submission_id"])
    # an adapter with vision-tower LoRA is refused for vLLM before anything is submitted
    import torch
    from safetensors.torch import load_file, save_file

    from hyperpod_rl.runs.files import file_sha256

    bad = tmp_path / "vision"
    shutil.copytree(spec["adapters"]["maze"], bad)
    weights = load_file(str(bad / "adapter_model.safetensors"))
    weights["base_model.model.model.visual.blocks.0.attn.qkv.lora_A.weight"] = torch.zeros(16, 64)
    save_file(weights, str(bad / "adapter_model.safetensors"))
    prov = json.loads((bad / "provenance.json").read_text())
    prov["adapter_sha256"] = file_sha256(bad / "adapter_model.safetensors")
    (bad / "provenance.json").write_text(json.dumps(prov))
    with pytest.raises(ServeError, match=r"(?s)refusing to serve on vLLM:.*\[vision_tower\]"):
        vllm_job({**spec, "adapters": {"vision": str(bad)}})
    assert len(preflight_cluster(spec)) == 1


def test_ray_serve_llm_config_validates_against_ray_llmconfig(spec):
    config = ray_serve_llm_config(spec, lora_uri="s3://my-bucket/hyperpod-rl/adapters/")
    parsed = validate_llm_config(config)
    assert type(parsed).__name__ == "LLMConfig"
    assert parsed.model_id == "qwen3-vl"
    assert parsed.lora_config.dynamic_lora_loading_path == "s3://my-bucket/hyperpod-rl/adapters"
    assert config["engine_kwargs"]["enable_lora"] is True
    assert config["engine_kwargs"]["max_lora_rank"] in VLLM_LORA_RANKS
    app = ray_serve_llm_app(spec, lora_uri="s3://my-bucket/adapters")
    assert app["applications"][0]["import_path"] == "ray.serve.llm:build_openai_app"
    assert app["applications"][0]["args"]["llm_configs"][0]["model_loading_config"]["model_id"] == "qwen3-vl"


def test_ray_serve_llm_refuses_local_adapter_paths_and_bad_fields(spec):
    with pytest.raises(ConfigError, match=r"lora_uri='/fsx/adapters': Ray Serve LLM loads adapters only from s3://"):
        ray_serve_llm_config(spec, lora_uri="/fsx/adapters")
    good = ray_serve_llm_config(spec, lora_uri="s3://b/a")
    with pytest.raises(ConfigError, match=r"LLMConfig.accelerator_type: Unsupported accelerator type"):
        validate_llm_config({**good, "accelerator_type": "NOT-A-GPU"})
    with pytest.raises(ConfigError, match=r"LLMConfig.engine_kwagrs: not a known field"):
        validate_llm_config({**good, "engine_kwagrs": {}})
    with pytest.raises(ConfigError, match=r"engine_kwargs enable_loras are not vLLM engine arguments"):
        validate_llm_config({**good, "engine_kwargs": {**good["engine_kwargs"], "enable_loras": True}})
    with pytest.raises(ConfigError, match=r"lora_config needs engine_kwargs.enable_lora=True"):
        validate_llm_config({**good, "engine_kwargs": {k: v for k, v in good["engine_kwargs"].items() if k != "enable_lora"}})
    with pytest.raises(ConfigError, match=r"max_lora_rank=12 is not one of"):
        validate_llm_config({**good, "engine_kwargs": {**good["engine_kwargs"], "max_lora_rank": 12}})


def test_the_vllm_paths_carry_the_local_routes_input_limits(spec):
    """Issue 30 item 2: the limits the local route enforces are set on the vLLM paths too:
    images per request (--limit-mm-per-prompt), prompt plus completion tokens (--max-model-len),
    pixels per image both from the header before decoding (VLLM_MAX_IMAGE_PIXELS) and for the
    processor (--mm-processor-kwargs max_pixels)."""
    from hyperpod_rl.serve.local import MAX_IMAGE_PIXELS

    custom = {**spec, "images_per_prompt": 2, "max_model_len": 4096, "max_image_pixels": 1024 * 1024}
    for given, pixels, images, context in ((spec, MAX_IMAGE_PIXELS, 1, 8192), (custom, 1024 * 1024, 2, 4096)):
        args = vllm_serve_args(given)
        assert json.loads(_flag(args, "--limit-mm-per-prompt")[0]) == {"image": images}
        assert _flag(args, "--max-model-len") == [str(context)]
        assert json.loads(_flag(args, "--mm-processor-kwargs")[0]) == {"max_pixels": pixels}
        assert vllm_job(given, check_adapters=False)["runtime_env"]["env_vars"]["VLLM_MAX_IMAGE_PIXELS"] == str(pixels)
        llm = ray_serve_llm_config(given, lora_uri="s3://b/a")
        assert llm["engine_kwargs"]["limit_mm_per_prompt"] == {"image": images} and llm["engine_kwargs"]["max_model_len"] == context
        assert llm["engine_kwargs"]["mm_processor_kwargs"] == {"max_pixels": pixels}
        assert llm["runtime_env"]["env_vars"]["VLLM_MAX_IMAGE_PIXELS"] == str(pixels)
