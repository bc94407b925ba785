"""The promotion gate: promote only when the held-out evaluation beats the base model."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from hyperpod_rl.config.run import RunConfig
from hyperpod_rl.errors import ServeError
from hyperpod_rl.runs import RunPaths, write_config
from hyperpod_rl.serve.promote import PROMOTION_FILE, PromotionRefused, promote

N = 30


@pytest.fixture
def run(trained_adapter, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A run directory with the adapter, a config naming the base model, and a manifest."""
    from hyperpod_rl.runs.provenance import update_provenance

    monkeypatch.setenv("HYPERPOD_RL_LEDGER", str(tmp_path / "ledger.sqlite"))
    rdir = tmp_path / "runs" / "promo"
    shutil.copytree(trained_adapter["adapter"], rdir / "adapter")
    config = RunConfig.build(
        {
            "run_id": "promo",
            "model": {"path": str(trained_adapter["model_dir"])},
            "data": {"train_path": "t.parquet", "heldout_path": "h.parquet"},
        }
    )
    write_config(RunPaths(rdir), config)
    update_provenance(rdir, lambda _: {"run_id": "promo", "status": "succeeded"})
    return rdir


def _evaluation(rdir: Path, label: str, adapter: Path | None, solved: int):
    """An evaluation whose first ``solved`` of N mazes are solved (optimally), saved in the run."""
    from hyperpod_rl.eval import EvalResult

    per_maze = [
        {
            "layout_hash": f"maze-{i}",
            "solved": float(i < solved),
            "optimal_move_rate": 1.0 if i < solved else 0.25,
            "invalid_move_rate": 0.0,
        }
        for i in range(N)
    ]
    result = EvalResult(
        label=label,
        model_path="m",
        adapter_path=str(adapter) if adapter else None,
        num_mazes=N,
        metrics={"solve_rate": solved / N},
        per_maze=per_maze,
    )
    result.save(rdir / "eval" / f"{label}.json")
    return result


def _compare(rdir: Path, base_solved: int, adapter_solved: int):
    from hyperpod_rl.eval import compare

    base = _evaluation(rdir, "base", None, base_solved)
    cand = _evaluation(rdir, "adapter", rdir / "adapter", adapter_solved)
    return compare(base, cand)


def _ledger_run(rdir: Path):
    from hyperpod_rl.ledger import Ledger

    with Ledger(os.environ["HYPERPOD_RL_LEDGER"]) as ledger:
        ledger.sync_storage(rdir.parent)  # the ledger learns decisions from the run directory
        return ledger.get_run("promo")


def test_adapter_that_beats_the_base_model_is_promoted_and_recorded(run):
    cmp = _compare(run, base_solved=3, adapter_solved=25)
    assert cmp.promote
    decision = promote(run / "adapter", comparison=cmp)
    assert decision.promoted and decision.primary == "solve_rate" and decision.num_mazes == N
    assert decision.reason.startswith("promote: solve_rate improved")
    on_disk = json.loads((run / PROMOTION_FILE).read_text())
    assert on_disk["promoted"] is True and on_disk["adapter_sha256"] == decision.adapter_sha256
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["promotion"]["promoted"] is True and "comparison" not in manifest["promotion"]
    record = _ledger_run(run)
    assert any(a["kind"] == "promoted_adapter" and a["sha256"] == decision.adapter_sha256 for a in record.artifacts)
    assert any(n["kind"] == "finding" and n["text"].startswith("adapter promoted: promote: solve_rate improved") for n in record.notes)


def test_adapter_that_does_not_beat_the_base_model_is_refused_and_recorded(run):
    cmp = _compare(run, base_solved=14, adapter_solved=15)  # within noise: the interval includes 0
    with pytest.raises(PromotionRefused, match=r"not promoted: do not promote: the 95% interval of the solve_rate difference"):
        promote(run / "adapter", comparison=cmp)
    assert json.loads((run / PROMOTION_FILE).read_text())["promoted"] is False
    assert json.loads((run / "manifest.json").read_text())["promotion"]["promoted"] is False
    record = _ledger_run(run)
    assert not any(a["kind"] == "promoted_adapter" for a in record.artifacts)
    assert any(n["text"].startswith("adapter not promoted") for n in record.notes)


def test_worse_adapter_is_refused(run):
    cmp = _compare(run, base_solved=25, adapter_solved=3)
    with pytest.raises(PromotionRefused, match="does not exclude 0 on the better side"):
        promote(run / "adapter", comparison=cmp)


def test_saved_comparison_file_is_read_by_default(run):
    _compare(run, base_solved=2, adapter_solved=27).save(run / "eval" / "comparison.json")
    assert promote(run / "adapter").promoted


def test_missing_comparison_is_refused_with_the_fix(run):
    with pytest.raises(PromotionRefused, match=r"no held-out comparison for this run .*hyperpod_rl\.eval\.compare\(base, adapter\)"):
        promote(run / "adapter")
    assert json.loads((run / PROMOTION_FILE).read_text())["promoted"] is False


def test_comparison_of_another_adapter_is_refused(run, tmp_path):
    from hyperpod_rl.eval import compare

    other = tmp_path / "other-adapter"
    shutil.copytree(run / "adapter", other)
    cmp = compare(_evaluation(run, "base", None, 2), _evaluation(run, "adapter", other, 28))
    with pytest.raises(PromotionRefused, match=r"candidate 'adapter' evaluated .*other-adapter, not"):
        promote(run / "adapter", comparison=cmp)


def test_reference_must_be_the_base_model(run):
    from hyperpod_rl.eval import compare

    cmp = compare(_evaluation(run, "base", run / "adapter", 2), _evaluation(run, "adapter", run / "adapter", 28))
    with pytest.raises(PromotionRefused, match=r"reference 'base' was evaluated with adapter .*not the base model"):
        promote(run / "adapter", comparison=cmp)


def test_adapter_rewritten_after_its_evaluation_is_refused(run):
    cmp = _compare(run, base_solved=2, adapter_solved=28)
    later = time.time() + 5
    os.utime(run / "adapter" / "adapter_model.safetensors", (later, later))
    with pytest.raises(PromotionRefused, match="written after its evaluation"):
        promote(run / "adapter", comparison=cmp)


def test_adapter_failing_preflight_is_refused_before_the_comparison(run):
    cmp = _compare(run, base_solved=2, adapter_solved=28)
    weights = run / "adapter" / "adapter_model.safetensors"
    weights.write_bytes(weights.read_bytes()[:100])
    with pytest.raises(PromotionRefused, match=r"fails preflight: \[weights\]"):
        promote(run / "adapter", comparison=cmp)


def test_bad_inputs(run, tmp_path):
    with pytest.raises(ServeError, match="is not a directory"):
        promote(tmp_path / "nope")
    with pytest.raises(PromotionRefused, match=r"the comparison lacks base_label, candidate_label, "):
        promote(run / "adapter", comparison={"promote": True})
    with pytest.raises(PromotionRefused, match="must be a hyperpod_rl.eval.Comparison or its JSON dict, got int"):
        promote(run / "adapter", comparison=3)


def test_cli_promote_compares_saved_evaluations(run, monkeypatch):
    from typer.testing import CliRunner

    from hyperpod_rl.cli.serve import app

    monkeypatch.setenv("HYPERPOD_RL_STORAGE", str(run.parent.parent))
    _evaluation(run, "base", None, 4)
    _evaluation(run, "adapter", run / "adapter", 26)
    result = CliRunner().invoke(app, ["promote", "promo"])
    assert result.exit_code == 0, result.output
    assert "promoted" in result.output and "solve_rate" in result.output
    assert json.loads((run / "eval" / "comparison.json").read_text())["promote"] is True
    _evaluation(run, "adapter", run / "adapter", 4)
    refused = CliRunner().invoke(app, ["promote", "promo"])
    assert refused.exit_code == 1
    assert "not promoted: do not promote" in refused.output
    assert json.loads((run / PROMOTION_FILE).read_text())["promoted"] is False


def test_promote_on_real_evaluations_records_the_evaluations_decision(run, trained_adapter):
    """Real greedy evaluations of the base model and the adapter on the same held-out mazes."""
    from hyperpod_rl.eval import compare, evaluate
    from hyperpod_rl.tasks.maze import read_rows

    rows = read_rows(trained_adapter["heldout"])[:6]
    base = evaluate(trained_adapter["model_dir"], rows, label="base", n_resamples=200)
    base.save(run / "eval" / "base.json")
    tuned = evaluate(trained_adapter["model_dir"], rows, adapter_path=run / "adapter", label="adapter", n_resamples=200)
    tuned.save(run / "eval" / "adapter.json")
    cmp = compare(base, tuned, n_resamples=200)
    if cmp.promote:
        assert promote(run / "adapter", comparison=cmp).promoted
    else:
        with pytest.raises(PromotionRefused, match="do not promote"):
            promote(run / "adapter", comparison=cmp)
    recorded = json.loads((run / PROMOTION_FILE).read_text())
    assert recorded["promoted"] is cmp.promote and recorded["reason"] == cmp.reason and recorded["num_mazes"] == 6
