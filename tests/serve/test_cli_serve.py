"""``hyperpod-rl serve preflight`` and ``serve cluster-config`` (no Ray needed)."""

from __future__ import annotations

import json
import shutil

import yaml
from typer.testing import CliRunner

from hyperpod_rl.cli.serve import app

runner = CliRunner()


def test_preflight_passes_a_good_adapter(trained_adapter):
    result = runner.invoke(app, ["preflight", str(trained_adapter["adapter"]), "--base", str(trained_adapter["model_dir"])])
    assert result.exit_code == 0, result.output
    assert "preflight passed" in result.output


def test_preflight_refuses_with_exit_1_and_names_problem_and_fix(trained_adapter, tmp_path):
    bad = tmp_path / "adapter"
    shutil.copytree(trained_adapter["adapter"], bad)
    cfg = json.loads((bad / "adapter_config.json").read_text())
    cfg["r"] = 32
    (bad / "adapter_config.json").write_text(json.dumps(cfg))
    prov = json.loads((bad / "provenance.json").read_text())
    prov["lora"]["rank"] = 32
    (bad / "provenance.json").write_text(json.dumps(prov))
    result = runner.invoke(app, ["preflight", str(bad), "--base", str(trained_adapter["model_dir"]), "--server", "vllm", "--json"])
    assert result.exit_code == 1, result.output
    out = json.loads(result.output)
    assert out["ok"] is False and out["rank"] == 32
    (finding,) = out["findings"]
    assert finding["check"] == "lora_rank" and "--max-lora-rank 32" in finding["fix"]
    # raising the server's limit accepts it
    ok = runner.invoke(
        app, ["preflight", str(bad), "--base", str(trained_adapter["model_dir"]), "--server", "vllm", "--max-lora-rank", "32"]
    )
    assert ok.exit_code == 0, ok.output


def test_preflight_needs_a_base_model(trained_adapter):
    result = runner.invoke(app, ["preflight", str(trained_adapter["adapter"])])
    assert result.exit_code == 2
    assert "--base" in result.output


def test_cluster_config_prints_a_vllm_job_and_a_serve_yaml(trained_adapter):
    common = [
        "--adapter",
        f"maze={trained_adapter['adapter']}",
        "--base-model",
        "Qwen/Qwen3-VL-8B-Instruct",
        "--revision",
        trained_adapter["revision"],
        "--base-model-id",
        "hyperpod-rl/tiny-qwen3-vl",
    ]
    job = runner.invoke(app, ["cluster-config", *common])
    assert job.exit_code == 0, job.output
    kwargs = json.loads(job.output)
    assert kwargs["entrypoint"].startswith("vllm serve Qwen/Qwen3-VL-8B-Instruct") and "--enable-lora" in kwargs["entrypoint"]
    llm = runner.invoke(app, ["cluster-config", *common, "--target", "ray-serve-llm", "--lora-uri", "s3://bucket/adapters"])
    assert llm.exit_code == 0, llm.output
    config = yaml.safe_load(llm.output)["applications"][0]["args"]["llm_configs"][0]
    assert config["lora_config"]["dynamic_lora_loading_path"] == "s3://bucket/adapters"
    wrong = runner.invoke(app, ["cluster-config", *common[:4], "--revision", "other", "--base-model-id", "hyperpod-rl/tiny-qwen3-vl"])
    assert wrong.exit_code == 2
    assert "base_model" in wrong.output and "revision" in wrong.output


def test_serve_down_without_a_local_cluster_says_nothing_is_deployed(tmp_path, monkeypatch):
    from hyperpod_rl.cli import app as root

    monkeypatch.setenv("HYPERPOD_RL_HOME", str(tmp_path))  # no local cluster recorded here
    result = runner.invoke(root, ["serve", "down"])
    assert result.exit_code == 0, result.output
    assert "nothing deployed on the local cluster: it is not running" in result.output
