"""benchmarks/gpu/maze_curve.py (issue 40) at CPU smoke scale: SFT from scratch, GRPO with held-out
points, a paused call resumed by the same command, the state packed in parts, the picture, and
one-line errors for bad flags."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import jsonschema
import pytest

from hyperpod_rl.tasks.dataset import read_rows

REPO = Path(__file__).resolve().parents[1]
SCHEMA = json.loads((REPO / "benchmarks" / "result.schema.json").read_text())

#: tiny everything: 64x1 text, 32x1 vision (head size 32), 6 SFT steps at most, 4 GRPO steps, hf rollouts
SMOKE = [
    "--text", "64x1", "--vision", "32x1", "--head-dim", "32", "--train", "40", "--validation", "6", "--heldout", "8",
    "--heldout-small", "4", "--sft-rows-per-step", "2", "--sft-eval-every", "3", "--sft-target", "0",
    "--sft-max-steps", "6", "--grpo-steps", "4", "--eval-every", "2", "--lora-rank", "4", "--group-size", "2",
    "--prompts-per-step", "2", "--engine", "hf", "--set", "trainer.torch_threads=1",
]  # fmt: skip


def _cli(*args: str | Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HYPERPOD_RL_HOME": str(home), "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, "-m", "benchmarks.gpu.maze_curve", *map(str, args)], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
    )


@pytest.mark.slow
def test_smoke_run_pauses_resumes_packs_and_renders(tmp_path: Path) -> None:
    """Call 1 trains SFT to its (zero) target and pauses GRPO at step 2 (--until-step); call 2, the same
    command, keeps SFT and the points of call 1 and resumes GRPO from its step-2 checkpoint to step 4;
    the result follows the schema; the state packs into parts that unpack to the same files; the
    renderer draws the result.

    Slow: two benchmark processes (each imports the trainer and builds the model) and the PNG render, in one test
    because each step reads the state the one before left."""
    state, out = tmp_path / "state", tmp_path / "curve.json"
    first = _cli("run", "--state", state, "--out", out, *SMOKE, "--until-step", "2", home=tmp_path / "home")
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    one = json.loads(out.read_text())
    jsonschema.validate(one, SCHEMA)
    assert one["name"] == "curve"  # the file's stem (tests/test_results_data.py wants it for benchmarks/results/)
    sft = one["results"]["sft"]
    assert sft["done"] and sft["stop_step"] == 3 and sft["reached_target"], sft
    assert [p["step"] for p in sft["curve"]] == [3]
    assert [p["step"] for p in one["results"]["grpo"]["points"]] == [0, 2]
    assert "GRPO paused at step 2" in first.stdout
    sft_metrics = (state / "home" / "runs" / "curve-sft" / "metrics.jsonl").read_text()
    other = _cli("run", "--state", state, "--out", out, *SMOKE, "--engine", "auto", home=tmp_path / "home")
    assert other.returncode != 0 and "trains with --engine hf" in other.stderr, other.stderr[-2000:]

    second = _cli("run", "--state", state, "--out", out, *SMOKE, home=tmp_path / "home")
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    assert "SFT step" not in second.stdout and "resumed from step_000002" in second.stdout, second.stdout[-2000:]
    assert (state / "home" / "runs" / "curve-sft" / "metrics.jsonl").read_text() == sft_metrics  # SFT not trained again
    two = json.loads(out.read_text())
    jsonschema.validate(two, SCHEMA)
    points = two["results"]["grpo"]["points"]
    assert [p["step"] for p in points] == [0, 2, 4] and points[:2] == one["results"]["grpo"]["points"]
    assert two["results"]["grpo"]["done"] and two["results"]["grpo"]["engine"]["ran"] == "hf"
    for p in points:
        assert p["heldout"]["n"] == 8 and p["heldout_small"]["n"] == 4
        assert p["heldout"]["low"] <= p["heldout"]["value"] <= p["heldout"]["high"]
    assert two["results"]["model"]["parameters"]["total"] > 0

    parts = tmp_path / "parts"
    packed = _cli("pack", "--state", state, "--to", parts, home=tmp_path / "home")
    assert packed.returncode == 0, packed.stderr
    assert all(f.stat().st_size <= 15 * 2**20 for f in parts.iterdir())
    again = tmp_path / "again"
    assert _cli("unpack", "--from", parts, "--state", again, home=tmp_path / "home").returncode == 0
    assert json.loads((again / "state.json").read_text()) == json.loads((state / "state.json").read_text())
    model = sorted(p.name for p in (again / "home" / "runs" / "curve-sft" / "model").iterdir())
    assert "config.json" in model and any(n.endswith(".safetensors") for n in model), model

    # explore: greedy against sampled episodes of the SFT model and the GRPO adapter on the validation mazes
    explored = _cli("explore", "--state", state, "--out", tmp_path / "explore.json", "--samples", "3", home=tmp_path / "home")
    assert explored.returncode == 0, explored.stdout[-3000:] + explored.stderr[-3000:]
    ex = json.loads((tmp_path / "explore.json").read_text())
    jsonschema.validate(ex, SCHEMA)
    assert sorted(ex["results"]["policies"]) == ["grpo", "sft"] and ex["results"]["mazes"] == 6 and ex["results"]["grpo_steps"] == 4
    for pol in ex["results"]["policies"].values():
        per = pol["per_maze"]
        assert len(per["greedy"]) == len(per["sampled_solved"]) == 6 and all(0 <= n <= 3 for n in per["sampled_solved"])
        assert pol["sampled_solve"]["value"] <= pol["pass_at_3"]["value"]  # a maze's mean of 3 samples is at most their max
        # a maze greedy fails and a sample solves: counted from the per-maze outcomes
        found = sum(g == 0 and n > 0 for g, n in zip(per["greedy"], per["sampled_solved"], strict=True)) / 6
        assert pol["greedy_fails_a_sample_solves"]["value"] == pytest.approx(found, abs=1e-4)
    assert set(ex["results"]["grpo_minus_sft"]) == {"greedy", "sampled", "pass"}
    batches = ex["results"]["grpo_training_batches"]  # the smoke run's 4 steps: both windows hold all of them
    assert batches["group_size"] == 2 and batches["first"] == batches["last"] and 0 < batches["first"]["entropy"]
    missing = _cli("explore", "--state", tmp_path / "nowhere", "--out", tmp_path / "x.json", home=tmp_path / "home")
    assert missing.returncode == 2 and missing.stderr.startswith("error: ") and "no readable state.json" in missing.stderr

    png = tmp_path / "curve.png"
    drawn = _cli("render", out, "--png", png, home=tmp_path / "home")
    assert drawn.returncode == 0, drawn.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    # The SFT stage alone packed (the carry of a lever call), then a lever run through the batch driver: the
    # carried SFT state unpacked, GRPO from its model, read on validation, with its own learning rate; beside it
    # a job whose SFT options differ, refused in one line in its own log.
    carried, states = tmp_path / "carried", tmp_path / "states"
    assert _cli("pack", "--sft-only", "--state", state, "--to", carried / "s-sft", home=tmp_path / "home").returncode == 0
    with tarfile.open(fileobj=io.BytesIO((carried / "s-sft" / "maze_state.part00").read_bytes())) as tar:
        names = tar.getnames()
    assert names[0] == "state.json" and all(n.startswith("home/runs/curve-sft/model/") for n in names[1:]), names
    jobs = tmp_path / "jobs.json"
    start = [*SMOKE, "--grpo-steps", "2", "--sft-from", str(states / "s-sft")]
    lever = [*start, "--eval-split", "validation", "--set", "grpo.lr=1e-3"]
    diagnosis = [*start, "--grpo-train", "4", "--eval-split", "train"]  # GRPO on 4 train mazes, read on those 4
    jobs.write_text(
        json.dumps(
            [
                {"name": "lr", "record": "{gpu}_lever", "args": lever, "pack": True},
                {"name": "other", "record": "other", "args": [*lever, "--seed", "1"]},
                {"name": "diag", "record": "diag", "args": diagnosis},
            ]
        )
    )
    batch = subprocess.run(
        [sys.executable, "-m", "benchmarks.gpu.curve_batch", str(jobs), "--out", str(tmp_path / "b"), "--budget", "240",
         "--threads", "1", "--states", str(states), "--packed", str(carried)],
        cwd=REPO, env={**os.environ, "HYPERPOD_RL_HOME": str(tmp_path / "home")}, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert batch.returncode == 2 and "== lr: exit 0" in batch.stdout and "== other: exit 2" in batch.stdout, batch.stdout + batch.stderr
    with tarfile.open(tmp_path / "b" / "logs.tgz") as tar:  # the jobs' logs, one file of the call's eight
        logs = {m.name: tar.extractfile(m).read().decode() for m in tar.getmembers()}  # type: ignore[union-attr]
    assert sorted(logs) == ["diag.log", "lr.log", "other.log"] and not (tmp_path / "b" / "logs").exists()
    assert "== diag: exit 0" in batch.stdout, batch.stdout + logs["diag.log"][-3000:]
    diag = json.loads((tmp_path / "b" / "diag.json").read_text())["results"]["grpo"]
    assert diag["eval_split"] == "train" and [p["train"]["n"] for p in diag["points"]] == [4, 4], diag["points"]
    assert len(read_rows(states / "diag" / "home" / "datasets" / "grpo-train-4.parquet")) == 4
    assert "other SFT options (seed differ)" in logs["other.log"]
    assert not (states / "other").exists()  # refused before its state folder was made
    (record,) = (tmp_path / "b").glob("*_lever.json")
    lev = json.loads(record.read_text())
    jsonschema.validate(lev, SCHEMA)
    grpo = lev["results"]["grpo"]
    assert grpo["eval_split"] == "validation" and grpo["settings"]["grpo"]["lr"] == 1e-3
    assert [p["step"] for p in grpo["points"]] == [0, 2] and all(p["validation"]["n"] == 6 and "heldout" not in p for p in grpo["points"])
    # the training batch's window figures: rates, and a group counts as passed only with a solved episode in it
    for p in grpo["points"][1:] + diag["points"][1:]:
        assert 0.0 <= p["sampled_solve"] <= p["pass_at_group"] <= 1.0, p
    assert json.loads((states / "s-sft" / "state.json").read_text())["grpo"] == {"points": [], "done": False}
    assert lev["results"]["sft"]["revision"] == two["results"]["sft"]["revision"]
    assert lev["results"]["sft"]["from_state"] == str(states / "s-sft")
    assert (tmp_path / "b" / "state_lr" / "maze_state.json").is_file()  # packed, as asked
    assert _cli("render", record, "--png", tmp_path / "lever.png", home=tmp_path / "home").returncode == 0
    mixed = _cli("render", out, record, "--png", tmp_path / "mixed.png", home=tmp_path / "home")
    assert mixed.returncode == 2 and "different splits" in mixed.stderr, mixed.stderr


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--text", "100"], "is not HIDDENxLAYERS"),
        (["--text", "96x2", "--head-dim", "64"], "multiple of 32 and of --head-dim 64"),
        (["--heldout", "10", "--heldout-small", "20"], "--heldout-small 20 is more than --heldout 10"),
        (["--sft-target", "1.5"], "is not a solve rate"),
        (["--set", "grpo.nope=1"], "grpo.nope"),
        (["--engine", "tpu"], "invalid choice"),
        (["--time-budget", "nan"], "--time-budget must be positive seconds"),
    ],
)
def test_a_bad_flag_is_one_error_line(tmp_path: Path, args: list[str], says: str) -> None:
    done = _cli("run", "--state", tmp_path / "s", "--out", tmp_path / "o.json", *args, home=tmp_path / "home")
    assert done.returncode == 2 and done.stdout == "", done.stdout
    assert done.stderr.startswith("error: ") and done.stderr.count("\n") == 1 and says in done.stderr, done.stderr
    assert not (tmp_path / "s").exists()


@pytest.mark.parametrize(
    ("jobs", "says"),
    [
        ("[]", "lists no job"),
        ('[{"name": "a", "record": "r"}, {"name": "a", "record": "s"}]', "names job(s) a more than once"),
        ('[{"name": "a/b", "record": "r"}]', "0.name: String should match pattern"),
        ('[{"name": "a", "record": "r", "args": ["--out", "x"]}]', "passes --out: the batch sets"),
        ('[{"name": "a", "record": "r", "nope": 1}]', "0.nope: Extra inputs are not permitted"),
        ("{", "the file: Invalid JSON"),
        (json.dumps([{"name": f"j{n}", "record": f"r{n}"} for n in range(7)]), "lists 7 jobs: one device call brings back 8 files"),
    ],
)
def test_a_bad_jobs_file_is_one_error_line(tmp_path: Path, jobs: str, says: str, capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks.gpu.curve_batch import main

    (tmp_path / "jobs.json").write_text(jobs)
    assert main([str(tmp_path / "jobs.json"), "--out", str(tmp_path / "o"), "--budget", "10"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and says in err, err
    assert not (tmp_path / "o").exists()  # nothing started


def test_a_packed_state_goes_to_out_only_while_the_call_can_bring_it_back(tmp_path: Path) -> None:
    """One device call brings back 8 files and 64 MiB from $OUT: a state that would take it past
    either is packed beside the states instead, for a later call to return; one that fits goes to $OUT."""
    from benchmarks.gpu.curve_batch import OUT_BYTES, place_state

    states, out = tmp_path / "states", tmp_path / "out"
    (states / "a" / "home" / "runs").mkdir(parents=True)
    (states / "a" / "state.json").write_text("{}")
    (states / "a" / "home" / "runs" / "w.bin").write_bytes(os.urandom(1000))
    out.mkdir()
    for n in range(5):
        (out / f"r{n}.json").write_text("{}")
    assert place_state("a", states, out) == out / "state_a"  # 5 results and the state's parts: 7 files
    assert not (states / ".packed" / "state_a").exists()
    (out / "r5.json").write_text("{}")
    assert place_state("a", states, out) == states / ".packed" / "state_a"  # the same state again: 10 files
    assert len([f for f in out.rglob("*") if f.is_file()]) == 8  # out as it was: its own copy from the first call
    shutil.rmtree(out / "state_a")
    (out / "r0.json").write_bytes(b"0" * OUT_BYTES)
    for n in range(1, 6):
        (out / f"r{n}.json").unlink()
    assert place_state("a", states, out) == states / ".packed" / "state_a"  # 3 files, but past 64 MiB


def test_a_state_of_other_options_is_refused(tmp_path: Path) -> None:
    from benchmarks.gpu.maze_curve import CurveError, State

    State(tmp_path, {"seed": 0}).save()
    with pytest.raises(CurveError, match=r"other options \(seed differ\)"):
        State(tmp_path, {"seed": 1})


def test_unpack_refuses_a_damaged_part(tmp_path: Path) -> None:
    from benchmarks.gpu.maze_curve import CurveError, pack, unpack

    state = tmp_path / "state"
    (state / "home" / "runs").mkdir(parents=True)
    (state / "state.json").write_text("{}")
    (state / "home" / "runs" / "big.bin").write_bytes(os.urandom(1000))
    (state / "home" / "datasets").mkdir()
    (state / "home" / "datasets" / "rebuilt.parquet").write_bytes(b"x")
    files = pack(state, tmp_path / "parts")
    unpack(tmp_path / "parts", tmp_path / "ok")
    assert (tmp_path / "ok" / "home" / "runs" / "big.bin").read_bytes() == (state / "home" / "runs" / "big.bin").read_bytes()
    assert not (tmp_path / "ok" / "home" / "datasets").exists()  # rebuilt from the seed, never packed
    files[1].write_bytes(files[1].read_bytes()[:-1])
    with pytest.raises(CurveError, match="missing or damaged"):
        unpack(tmp_path / "parts", tmp_path / "bad")


def test_render_refuses_a_file_that_is_not_a_curve(tmp_path: Path) -> None:
    from benchmarks.gpu.maze_curve import CurveError, render

    (tmp_path / "x.json").write_text(json.dumps({"results": {"seed": 0}}))
    with pytest.raises(CurveError, match="is not a maze_curve result"):
        render([tmp_path / "x.json"], tmp_path / "x.png")


def test_the_default_vllm_engine_is_a_valid_grpo_config_and_answers_in_free_text(tmp_path: Path) -> None:
    """vLLM decodes free text, so the curve's default engine runs without the maze's one-word
    constraint (it was refused before any training: the hf smoke run did not cover it)."""
    from benchmarks.gpu.maze_curve import _check_run, _engine_settings, parser

    _check_run(parser().parse_args(["run", "--state", str(tmp_path / "s"), "--out", str(tmp_path / "o.json")]))
    assert _engine_settings("vllm") == {
        "rollout.engine": "vllm",
        "rollout.action_constraint": "none",
        "rollout.max_model_len": 4096,
        "rollout.max_input_tokens": 4096 - 32,
    }
    assert _engine_settings("vllm", {"rollout.max_new_tokens": 64})["rollout.max_input_tokens"] == 4096 - 64
    assert _engine_settings("hf") == {"rollout.engine": "hf"}
    _check_run(
        parser().parse_args(
            ["run", "--state", str(tmp_path / "s"), "--out", str(tmp_path / "o.json"), "--set", "rollout.max_new_tokens=64"]
        )
    )


def test_the_vllm_engine_asks_for_no_more_positions_than_the_model_has() -> None:
    """vLLM refuses a max_model_len beyond the model's positions: the run config's default (8224 tokens)
    stopped the engine on the GPU before GRPO's first step, and the run fell back to hf."""
    from benchmarks.gpu.maze_curve import MODEL_POSITIONS, _engine_settings
    from hyperpod_rl.model.tiny import build_tiny_qwen3vl

    model, _ = build_tiny_qwen3vl(seed=0, hidden_size=64, num_layers=1, vision_hidden_size=32, vision_depth=1, head_dim=32, vision_heads=1)
    assert model.config.text_config.max_position_embeddings == MODEL_POSITIONS
    assert _engine_settings("vllm")["rollout.max_model_len"] <= MODEL_POSITIONS


def test_a_state_that_is_a_file_and_a_manifest_that_is_not_json_are_one_line_each(tmp_path: Path) -> None:
    from benchmarks.gpu.maze_curve import CurveError, unpack

    (tmp_path / "afile").write_text("x")
    done = _cli("run", "--state", tmp_path / "afile", "--out", tmp_path / "o.json", *SMOKE, home=tmp_path / "home")
    assert done.returncode == 2 and done.stderr.startswith("error: ") and "is a file, not a folder" in done.stderr, done.stderr[-2000:]
    (tmp_path / "parts").mkdir()
    (tmp_path / "parts" / "maze_state.json").write_text("not json")
    with pytest.raises(CurveError, match="is not pack's manifest"):
        unpack(tmp_path / "parts", tmp_path / "st")


def test_the_training_notebook_shows_the_committed_curve() -> None:
    """The GRPO notebook carries docs/img/maze_curve.png as a cell attachment (a path would not resolve both in
    Jupyter and in the built site): it must be the committed picture, redrawn with `render` when a result changes."""
    import base64

    nb = json.loads((REPO / "notebooks" / "03-train-grpo.ipynb").read_text())
    shown = [c["attachments"]["maze_curve.png"]["image/png"] for c in nb["cells"] if "maze_curve.png" in c.get("attachments", {})]
    assert len(shown) == 1
    assert base64.b64decode(shown[0]) == (REPO / "docs" / "img" / "maze_curve.png").read_bytes()
