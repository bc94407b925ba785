"""``hyperpod-rl plan``: the planner's tables from a preset or a run config file, exit codes, JSON, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from hyperpod_rl.cli import app
from hyperpod_rl.config.run import RunConfig
from hyperpod_rl.plan import Plan, model_shape
from hyperpod_rl.plan.report import memory_parts
from hyperpod_rl.run_plan import plan_run


def _invoke(*args: str):
    return CliRunner().invoke(app, ["plan", *args])


def _line_with(output: str, label: str) -> str:
    lines = [line for line in output.splitlines() if label in line]
    assert lines, f"no line with {label!r} in:\n{output}"
    return lines[0]


def _write_config(path: Path, config: RunConfig) -> Path:
    path.write_text(yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False))
    return path


def _hf_config(size: str) -> dict:
    """A Qwen3-VL ``config.json`` of one of the planner's shapes."""
    s = model_shape(size)
    text = {
        "hidden_size": s.hidden_size,
        "intermediate_size": s.intermediate_size,
        "num_hidden_layers": s.num_hidden_layers,
        "num_attention_heads": s.num_attention_heads,
        "num_key_value_heads": s.num_key_value_heads,
        "head_dim": 128,
        "vocab_size": s.vocab_size,
    }
    return {"tie_word_embeddings": s.tie_word_embeddings, "text_config": text, "vision_config": s.vision.model_dump()}


def _assert_tables_show(output: str, expected: Plan) -> None:
    mem = expected.memory
    for field, label in memory_parts(expected).items():
        assert f"{getattr(mem, field):.2f}" in _line_with(output, label), field
    assert f"{mem.peak_gib:.2f}" in _line_with(output, "│ peak")
    assert f"{expected.gpu_memory_gib:.2f}" in _line_with(output, "GPU memory")
    vllm = expected.input.rollout_engine == "vllm"
    if vllm:
        kv = expected.kv_cache
        assert f"{kv.bytes_per_token:,}" in _line_with(output, "bytes per token")
        assert f"{kv.tokens:,}" in _line_with(output, "│ tokens")
        assert f"{kv.concurrent_sequences:,}" in _line_with(output, f"concurrent {expected.seq_len:,}-token sequences")
    else:  # the reference backend decodes in-process: no vLLM engine to size
        assert "bytes per token" not in output and "KV cache per engine" not in output
    step = expected.step
    assert f"{step.generate_s:.1f}" in _line_with(output, "generate (vLLM" if vllm else "generate (compiled decoding")
    assert f"{step.train_s:.1f}" in _line_with(output, "train (policy update)")
    assert f"{step.sync_s:.1f}" in _line_with(output, "sync (weights" if vllm else "sync (none")
    assert f"{step.train_tokens_per_s_per_gpu:,.0f}" in _line_with(output, "train tokens/s per GPU")
    for verdict in expected.verdicts:
        assert verdict in output


def test_preset_plan_shows_the_planners_numbers_and_exits_0():
    out = _invoke("--preset", "single-node-8gpu")
    expected = plan_run(RunConfig.from_preset("single-node-8gpu"), gpu="H200")
    assert expected.fits
    assert out.exit_code == 0, out.output
    _assert_tables_show(out.output, expected)
    assert "fits" in out.output.splitlines()[0] and "blocker" not in out.output


def test_config_file_with_overrides_matches_plan_run(tmp_path):
    path = _write_config(tmp_path / "run.yaml", RunConfig.from_preset("single-gpu", run_id="from-file"))
    out = _invoke("--config", str(path), "--gpu", "H100", "--image-px", "672x448", "--micro-batch", "16")
    expected = plan_run(RunConfig.from_file(path, **{"trainer.micro_batch_size": 16}), gpu="H100", image_px=(672, 448))
    assert expected.input.micro_train_batch_size_per_gpu == 16 and expected.input.image_px == (672, 448)
    assert out.exit_code == (0 if expected.fits else 1), out.output
    _assert_tables_show(out.output, expected)
    assert "NVIDIA H100" in out.output


def test_json_round_trips_into_a_plan(tmp_path):
    path = tmp_path / "run.json"
    path.write_text(RunConfig.from_preset("hyperpod-6gpu").model_dump_json())  # JSON files are read too
    out = _invoke("--config", str(path), "--json")
    assert out.exit_code == 0, out.output
    assert Plan.model_validate_json(out.stdout) == plan_run(RunConfig.from_preset("hyperpod-6gpu"))


def test_a_run_that_does_not_fit_exits_1_with_the_blocker(tmp_path):
    path = _write_config(tmp_path / "big.yaml", RunConfig.from_preset("single-gpu", run_id="too-big", **{"trainer.micro_batch_size": 64}))
    expected = plan_run(RunConfig.from_file(path), gpu="H100")
    assert not expected.fits and len(expected.blockers) == 1
    out = _invoke("--config", str(path), "--gpu", "H100")
    assert out.exit_code == 1, out.output
    assert "does NOT fit (1 blocker)" in out.output
    assert f"blocker: {expected.blockers[0]}" in out.output
    # in the RunConfig's own field names (the planner's are SkyRL's): what the user sets in big.yaml
    assert "trainer.micro_batch_size=64 needs about" in expected.blockers[0] and "micro_train_batch" not in out.output
    as_json = _invoke("--config", str(path), "--gpu", "H100", "--json")
    assert as_json.exit_code == 1
    assert json.loads(as_json.stdout)["blockers"] == expected.blockers


def test_a_preset_is_planned_on_its_own_gpu():
    """Reported: ``--preset hyperpod-6gpu`` (then ml.g5.12xlarge, A10G 24 GB) was planned, and said to fit, on H200s.
    Now on the walkthrough's ml.g7e.12xlarge (issue 29): its RTX PRO 6000, where it fits."""
    out = _invoke("--preset", "hyperpod-6gpu")
    expected = plan_run(RunConfig.from_preset("hyperpod-6gpu"), gpu="RTXPRO6000")
    first = out.output.splitlines()[0]
    assert "6 x NVIDIA RTX PRO 6000 Blackwell Server Edition" in first and "H200" not in first, first
    assert expected.fits and out.exit_code == 0, out.output
    assert first.endswith(": fits"), first
    _assert_tables_show(out.output, expected)
    assert "step time on NVIDIA RTX PRO 6000 Blackwell Server Edition is extrapolated" in out.output  # fitted on H200 only


def test_the_seed_preset_does_not_fit_the_a10g_and_the_blocker_says_what_would():
    """The planner's evidence that the published settings need the 96 GB card: on the A10G (24 GB) a TP1 engine at 0.45
    leaves no KV cache (exit 1), and the blocker's fix (TP 2 at a higher utilization) fits when applied."""
    out = _invoke("--preset", "hyperpod-6gpu", "--gpu", "A10G")
    assert out.exit_code == 1 and "6 x NVIDIA A10G" in out.output.splitlines()[0], out.output
    blocker = " ".join(_line_with(out.output, "blocker:").split())
    assert "rollout.gpu_memory_utilization=0.45 leaves 0.0 GiB for vLLM's KV cache" in blocker, blocker
    # named as the preset's RunConfig fields, which the fix below sets (the planner's own names are SkyRL's)
    assert blocker.endswith(
        "set placement.tensor_parallel_size=2 and placement.num_engines=3 with rollout.gpu_memory_utilization of at least 0.58"
    ), blocker
    fixed = RunConfig.from_preset(
        "hyperpod-6gpu", placement={"num_engines": 3, "tensor_parallel_size": 2}, **{"rollout.gpu_memory_utilization": 0.58}
    )
    assert plan_run(fixed, gpu="A10G").fits


@pytest.mark.parametrize("given", ["H200", "h200", " H200 "])
def test_gpu_given_overrides_the_presets_and_is_case_insensitive(given):
    out = _invoke("--preset", "hyperpod-6gpu", "--gpu", given, "--json")
    assert Plan.model_validate_json(out.stdout) == plan_run(RunConfig.from_preset("hyperpod-6gpu"), gpu="H200")
    lower = _invoke("--preset", "single-gpu", "--gpu", "a10g", "--json")
    assert Plan.model_validate_json(lower.stdout).input.gpu_spec().name == "NVIDIA A10G"


def test_a_config_file_says_which_gpu_it_is_planned_on(tmp_path):
    path = _write_config(tmp_path / "run.yaml", RunConfig.from_preset("single-node-8gpu", run_id="from-file"))
    out = _invoke("--config", str(path))
    text = " ".join(out.output.split())
    assert "a run config does not say which GPU its nodes have; planning for NVIDIA H200 (give --gpu to change it)" in text
    assert "planning for" not in " ".join(_invoke("--config", str(path), "--gpu", "H100").output.split())


def test_the_summary_counts_the_presets_real_sequence():
    """Reported: the CLI said 3,014-token sequences (one image, the whole max_prompt_tokens budget) where the
    presets' docstring says 2,404 (256 prompt text + one image per turn + 6 turns of 128 + 32 reply)."""
    first = _invoke("--preset", "single-node-8gpu").output.splitlines()[0]
    assert "2,404-token sequences (256 prompt text + 6 images x 198 + 6 turns x 160; 196 tokens per image)" in first, first


def test_a_blocked_micro_batch_gets_a_valid_suggestion():
    """Reported: ``--preset single-gpu --micro-batch 64 --gpu H100`` said "use 42", which does not divide the batch of 64."""
    out = _invoke("--preset", "single-gpu", "--micro-batch", "64", "--gpu", "H100")
    blocker = _line_with(out.output, "blocker:")
    suggested = int(blocker.split(": use ")[1].split()[0])
    assert suggested == 32 and 64 % suggested == 0, blocker
    fixed = plan_run(RunConfig.from_preset("single-gpu", **{"trainer.micro_batch_size": suggested}), gpu="H100")
    assert fixed.fits, fixed.verdicts


def test_single_gpu_memory_rows_are_labelled_by_what_runs(tmp_path):
    """Reported: a one-GPU plan labelled its rows "sharded" and "root unit" though nothing is sharded at world size 1."""
    out = _invoke("--preset", "single-gpu")
    memory = out.output.split("vLLM KV cache per engine")[0]
    assert "sharded over" not in memory and "root unit" not in memory
    assert "weights (bf16, whole model on 1 GPU)" in memory and "FSDP2 buffers (gathered layers)" in memory
    assert "exposed FSDP2 communication" not in out.output  # no collectives at world size 1
    # the reference backend's one-GPU path runs no FSDP2 at all: no FSDP2 row
    checkpoint = tmp_path / "qwen3-vl-2b"  # the reference backend takes a local checkpoint; the planner reads its config.json
    checkpoint.mkdir()
    (checkpoint / "config.json").write_text(json.dumps(_hf_config("2B")))
    data = {"train_path": "t.parquet", "heldout_path": "h.parquet"}
    reference = RunConfig.build({"run_id": "ref-run", "model": {"path": str(checkpoint)}, "data": data})
    assert not plan_run(reference).input.fsdp
    path = _write_config(tmp_path / "ref.yaml", reference)
    ref_out = _invoke("--config", str(path))
    assert "FSDP2 buffers" not in ref_out.output and "whole model, no FSDP2" in ref_out.output, ref_out.output
    _assert_tables_show(ref_out.output, plan_run(reference))


def test_help_states_the_exit_codes():
    out = _invoke("--help")
    text = " ".join(out.output.split())
    assert out.exit_code == 0
    assert "0 when the run fits its GPUs, 1 when it does not" in text and "2 on bad input" in text


BAD_INPUTS = [
    (["--preset", "nope"], "unknown run preset 'nope': use one of hyperpod-6gpu, hyperpod-6gpu-sft, single-node-8gpu, single-gpu"),
    (
        ["--preset", "hyperpod-6gpu-sft"],
        "stage='sft': the planner sizes GRPO runs (vLLM rollouts and the policy update), and an SFT stage has no rollouts: plan the GRPO run that starts from it",
    ),
    (["--config", "{tmp}/missing.yaml"], "give an existing YAML or JSON file"),
    (["--config", "{tmp}/broken.yaml"], "is not valid YAML or JSON at line 3, column 1: fix its syntax"),
    (["--config", "{tmp}/list.yaml"], "holds a list, not a mapping: write the RunConfig fields"),
    (["--config", "{tmp}/empty.yaml"], "holds nothing (it is empty), not a mapping: write the RunConfig fields"),
    (["--config", "{tmp}/bad-field.yaml"], "lora.rank: must be > 0"),
    (["--config", "{tmp}/bad-field.yaml"], "trainer.micro_batchsize: not a known field"),
    (["--preset", "single-gpu", "--gpu", "A100"], "gpu 'A100' is not known to the planner; use one of H200 (NVIDIA H200, 139.8 GiB), H100"),
    (["--preset", "single-gpu", "--gpu", "A100"], "A10G (NVIDIA A10G, 22 GiB)"),
    (["--preset", "single-gpu", "--image-px", "big"], "--image-px takes SIDE or HEIGHTxWIDTH in pixels"),
    (["--preset", "single-gpu", "--image-px", "0x448"], "--image-px must be positive pixels"),
    (["--preset", "single-gpu", "--micro-batch", "3"], "trainer.micro_batch_size=3 does not divide"),
    ([], "give either --preset NAME"),
    (["--preset", "single-gpu", "--config", "{tmp}/list.yaml"], "not both"),
]


@pytest.mark.parametrize(("args", "fix"), BAD_INPUTS)
def test_bad_input_exits_2_with_the_fix_and_no_traceback(tmp_path, args, fix):
    (tmp_path / "broken.yaml").write_text("run_id: x\ndata: [unclosed\n")
    (tmp_path / "list.yaml").write_text("- 1\n- 2\n")
    (tmp_path / "empty.yaml").write_text("")
    bad_field = RunConfig.from_preset("single-gpu").model_dump(mode="json")
    bad_field["lora"]["rank"] = -4
    bad_field["trainer"]["micro_batchsize"] = 2
    (tmp_path / "bad-field.yaml").write_text(yaml.safe_dump(bad_field))
    out = _invoke(*(a.format(tmp=tmp_path) for a in args))
    text = " ".join(out.output.split())
    assert out.exit_code == 2, out.output
    assert text.startswith("error:") and fix in text, out.output
    assert "Traceback" not in out.output and isinstance(out.exception, SystemExit)


def test_the_recorded_sessions_in_the_docs_are_what_the_command_prints_now():
    """docs/planner.md quotes benchmarks/results/plan_cli.json (tests/test_docs_figures.py checks that);
    this checks the file against the command, so a planner change asks for ``python -m benchmarks.plan_cli``."""
    from benchmarks._record import load_result
    from benchmarks.plan_cli import CASES, run_case

    recorded = load_result("plan_cli")["results"]
    assert set(recorded) == set(CASES)
    for name, args in CASES.items():
        assert run_case(args) == recorded[name], f"{name}: hyperpod-rl plan prints something else now; run python -m benchmarks.plan_cli"
    assert recorded["fits"]["exit_code"] == 0 and recorded["blocked"]["exit_code"] == 1 and recorded["own-gpu"]["exit_code"] == 0
    assert recorded["a10g"]["exit_code"] == 1
