"""Evaluation: bootstrap intervals, breakdowns, text twins, ood split, comparison and promotion."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hyperpod_rl.errors import ConfigError
from hyperpod_rl.eval import (
    EvalResult,
    bootstrap_interval,
    compare,
    evaluate,
    ood_rows,
    text_twin_rows,
)
from hyperpod_rl.model.adapter import load_policy
from hyperpod_rl.tasks.maze import read_rows


def _synthetic(label: str, solved: list[int], invalid: list[float] | None = None) -> EvalResult:
    per_maze = []
    for i, s in enumerate(solved):
        m = {
            "layout_hash": f"h{i}",
            "size": [3 + i % 3, 3 + i % 3],
            "stratum": f"s{i % 2}",
            "solved": float(s),
            "optimal_move_rate": 0.5 + 0.4 * s,
            "invalid_move_rate": (invalid or [0.0] * len(solved))[i],
        }
        if s:
            m["steps_over_optimal"] = float(i % 3)
        per_maze.append(m)
    return EvalResult(
        label=label,
        model_path="m",
        adapter_path=None,
        num_mazes=len(solved),
        metrics={"solve_rate": float(np.mean(solved))},
        per_maze=per_maze,
    )


def test_bootstrap_interval_brackets_the_mean_with_the_binomial_width():
    values = np.array([1.0, 0.0] * 100)
    iv = bootstrap_interval(values, seed=1)
    assert iv.value == 0.5 and iv.n == 200
    assert iv.low < 0.5 < iv.high
    assert 0.10 < iv.high - iv.low < 0.18  # 2 * 1.96 * sqrt(0.25 / 200) = 0.139
    const = bootstrap_interval(np.ones(50))
    assert (const.low, const.high) == (1.0, 1.0)
    ratio = bootstrap_interval(np.array([np.nan, 2.0, np.nan, 4.0]))
    assert ratio.value == 3.0 and ratio.n == 2 and 2.0 <= ratio.low <= ratio.high <= 4.0
    assert bootstrap_interval(np.array([np.nan, np.nan])).n == 0


def test_compare_promotes_only_when_the_interval_says_so():
    rng = np.random.default_rng(0)
    base = _synthetic("base", list(rng.binomial(1, 0.2, 200)))
    better = _synthetic("adapter", list(rng.binomial(1, 0.6, 200)))
    result = compare(base, better)
    assert result.promote, result.reason
    d = result.deltas["solve_rate"]
    assert d.verdict == "better" and d.diff.low > 0
    assert abs(d.diff.value - (d.candidate.value - d.base.value)) < 1e-12
    same = compare(base, _synthetic("adapter", [int(m["solved"]) for m in base.per_maze]))
    assert not same.promote and same.deltas["solve_rate"].verdict == "same"
    assert "does not exclude 0" in same.reason
    sloppy = _synthetic("adapter", [int(m["solved"]) for m in better.per_maze], invalid=[0.9] * 200)
    guarded = compare(base, sloppy)
    assert not guarded.promote and "invalid_move_rate" in guarded.reason
    rows = guarded.table_rows()
    assert [r["metric"] for r in rows] == ["solve_rate", "optimal_move_rate", "invalid_move_rate", "steps_over_optimal"]
    assert rows[2]["verdict"] == "worse" and "[" in rows[0]["delta"]
    assert "plotly" in result._repr_html_() and "promote" in result._repr_html_()
    assert json.loads(json.dumps(result.to_json()))["promote"] is True


def test_compare_refuses_different_mazes_and_unknown_metrics():
    a, b = _synthetic("base", [1, 0, 1]), _synthetic("adapter", [1, 0])
    with pytest.raises(ConfigError, match="same mazes"):
        compare(a, b)
    with pytest.raises(ConfigError, match="primary='reward'"):
        compare(a, a, primary="reward")


def test_evaluate_tiny_model_with_intervals_breakdowns_and_text_twins(tiny_setup, tmp_path):
    rows = read_rows(tiny_setup["data"].heldout)
    policy = load_policy(tiny_setup["model_dir"])
    result = evaluate(tiny_setup["model_dir"], rows, policy=policy, label="base", text_twin=True)
    assert result.num_mazes == len(rows) == len(result.per_maze) and result.split == "heldout"
    for metric in ("solve_rate", "optimal_move_rate", "invalid_move_rate"):
        lo, hi = result.ci[metric]
        assert lo <= result.metrics[metric] <= hi
    assert sum(g["solve_rate"]["n"] for g in result.breakdown["size"].values()) == len(rows)
    assert set(result.breakdown["size"]) == {f"{m['size'][0]}x{m['size'][1]}" for m in result.per_maze}
    assert set(result.breakdown["stratum"]) == {r["stratum"] for r in rows}
    twin = result.text_twin
    assert twin is not None and twin.observation == "text"
    assert [m["layout_hash"] for m in twin.per_maze] == [m["layout_hash"] for m in result.per_maze]
    html_view = result._repr_html_()
    assert "plotly" in html_view and "stratum" in html_view
    saved = EvalResult.load(result.save(tmp_path / "base.json"))
    assert saved.ci == result.ci and saved.text_twin is not None and saved.text_twin.metrics == twin.metrics


def test_text_twin_rows_have_no_images_and_keep_the_maze(tiny_setup):
    rows = read_rows(tiny_setup["data"].heldout)[:3]
    twins = text_twin_rows(rows)
    for row, twin in zip(rows, twins, strict=True):
        parts = [p for m in twin["prompt"] for p in (m["content"] if isinstance(m["content"], list) else [])]
        assert not any(p.get("type") in ("image", "image_url") for p in parts)
        assert any(p.get("type") == "text" and p["text"].strip() for p in parts)
        assert (twin["layout_hash"], twin["observation"], twin["image_tokens"]) == (row["layout_hash"], "text", 0)


def test_ood_rows_are_larger_and_longer_than_the_training_distribution(tiny_setup):
    heldout = read_rows(tiny_setup["data"].heldout)
    spec = dict(tiny_setup["data"].spec, ood_sizes=[[6, 6]])
    ood = ood_rows(spec, 4, in_distribution=heldout)
    longest = max(r["shortest_path_length"] for r in heldout)
    assert len(ood) == 4 and all(r["split"] == "ood" and (r["rows"], r["cols"]) == (6, 6) for r in ood)
    assert all(r["shortest_path_length"] > longest for r in ood)
    assert not {r["layout_hash"] for r in ood} & {r["layout_hash"] for r in heldout}
    with pytest.raises(ConfigError, match="ood count"):
        ood_rows(spec, 0)


def test_recording_in_a_run_updates_its_provenance_and_the_ledger_imports_it(tmp_path, monkeypatch):
    from hyperpod_rl.eval.evaluate import _finish
    from hyperpod_rl.ledger import Ledger
    from hyperpod_rl.runs import RunPaths, record_eval
    from hyperpod_rl.runs.provenance import update_provenance

    monkeypatch.setenv("HYPERPOD_RL_LEDGER", str(tmp_path / "ledger.sqlite"))
    run_dir = tmp_path / "runs" / "eval-run"
    update_provenance(
        run_dir, lambda _: {"run_id": "eval-run", "status": "succeeded", "config": {"trainer": {"seed": 3}}, "config_hash": "h", "eval": {}}
    )
    result = _synthetic("adapter", [1, 0, 1, 1])
    _finish(result, n_resamples=200, seed=0)
    before = (run_dir / "manifest.json").read_bytes()
    result.save(run_dir / "eval" / "adapter.json")  # saving writes only its own file
    assert (run_dir / "manifest.json").read_bytes() == before
    record_eval(RunPaths(run_dir), "adapter", result.to_json())
    manifest = json.loads((run_dir / "manifest.json").read_text())
    entry = manifest["eval"]["adapter"]
    assert entry["ci"]["solve_rate"] == result.ci["solve_rate"] and entry["path"] == "eval/adapter.json" and "per_maze" not in entry
    with Ledger() as ledger:
        assert ledger.search("adapter.solve_rate=0.75") == []  # nothing writes the ledger behind the caller's back
        assert ledger.sync_storage(tmp_path / "runs") == 1
        assert {h.run_id for h in ledger.search("adapter.solve_rate=0.75")} == {"eval-run"}


def test_base_vs_trained_adapter_report_follows_the_intervals(tiny_setup, tmp_path, monkeypatch):
    """The quickstart's report path on real results: both models, intervals, a decision that follows them."""
    from hyperpod_rl.quickstart import make_run_config
    from hyperpod_rl.train.reference import ReferenceTrainer

    monkeypatch.setenv("HYPERPOD_RL_LEDGER", "off")
    cfg = make_run_config(
        tiny_setup["opts"],
        run_id="eval-adapter",
        model_path=tiny_setup["model_dir"],
        revision=tiny_setup["revision"],
        data=tiny_setup["data"],
    )
    cfg = type(cfg).build({**cfg.model_dump(mode="json"), "trainer": {**cfg.trainer.model_dump(mode="json"), "steps": 1, "eval_rows": 2}})
    adapter = ReferenceTrainer(cfg, tmp_path / "run").train()
    rows = read_rows(tiny_setup["data"].heldout)
    base = evaluate(tiny_setup["model_dir"], rows, label="base")
    tuned = evaluate(tiny_setup["model_dir"], rows, adapter_path=adapter, label="adapter")
    result = compare(base, tuned)
    assert result.num_mazes == len(rows)
    solve = result.deltas["solve_rate"]
    assert solve.base.value == base.metrics["solve_rate"] and solve.candidate.value == tuned.metrics["solve_rate"]
    guards_worse = any(result.deltas[g].verdict == "worse" for g in ("optimal_move_rate", "invalid_move_rate"))
    assert result.promote == (solve.diff.low > 0 and not guards_worse)
    for row in result.table_rows():
        assert row["base"] == "n/a" or "[" in row["base"]
    saved = json.loads(result.save(tmp_path / "run" / "eval" / "comparison.json").read_text())
    assert saved["promote"] == result.promote and set(saved["deltas"]) == {
        "solve_rate",
        "optimal_move_rate",
        "invalid_move_rate",
        "steps_over_optimal",
    }


def test_the_quickstart_table_and_runs_list_show_one_interval_per_figure(tmp_path, monkeypatch):
    """Field report: ``runs list`` and the quickstart table bootstrapped the same adapter
    separately (the comparison resampled the items sorted by hash), so their intervals differed in
    the last digit. Each model's interval is computed once, stored with its evaluation, and read."""
    from typer.testing import CliRunner

    from hyperpod_rl.cli import app
    from hyperpod_rl.cli._common import console
    from hyperpod_rl.eval.evaluate import _finish
    from hyperpod_rl.eval.stats import metric_values
    from hyperpod_rl.runs import RunPaths, record_eval
    from hyperpod_rl.runs.provenance import update_provenance

    rng = np.random.default_rng(3)
    order = rng.permutation(120)  # items in evaluation order, not sorted by hash
    base, tuned = (_synthetic(label, list(rng.binomial(1, p, 120))) for label, p in (("base", 0.3), ("adapter", 0.5)))
    for result in (base, tuned):
        for i, m in zip(order, result.per_maze, strict=True):
            m["layout_hash"] = f"h{i:03d}"
        _finish(result, n_resamples=2000, seed=0)  # what evaluate() stores
        result.metrics = {m: float(np.nanmean(metric_values(result.per_maze, m))) for m in result.ci}  # as the task aggregates them
    # the figures the comparison used to compute on its own (items sorted by hash) differ from the stored ones
    resorted = sorted(tuned.per_maze, key=lambda m: m["layout_hash"])
    assert any(
        bootstrap_interval(metric_values(resorted, m)).fmt() != tuned.reported_interval(m).fmt()
        for m in ("solve_rate", "optimal_move_rate")
    )
    rows = {r["metric"]: r for r in compare(base, tuned).table_rows()}
    for metric in tuned.ci:
        assert rows[metric]["candidate"] == tuned.reported_interval(metric).fmt()
        assert rows[metric]["base"] == base.reported_interval(metric).fmt()
    # runs list / runs show read the stored interval: the same text as the quickstart's table
    monkeypatch.setenv("HYPERPOD_RL_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(console, "width", 300)  # one table row per line (the console is made once, 80 columns off a terminal)
    paths = RunPaths(tmp_path / "home" / "storage" / "runs" / "one-interval")
    update_provenance(paths.root, lambda _: {"run_id": "one-interval", "status": "succeeded", "eval": {}})
    record_eval(paths, "base", base.to_json())
    record_eval(paths, "adapter", tuned.to_json())
    ledger = ["--ledger", str(tmp_path / "ledger.sqlite"), "--address", "http://127.0.0.1:9"]
    listed = CliRunner().invoke(app, ["runs", "list", *ledger], env={"COLUMNS": "300"})
    assert listed.exit_code == 0, listed.output
    assert f"solve_rate {rows['solve_rate']['candidate']}" in listed.output, listed.output
    shown = CliRunner().invoke(app, ["runs", "show", "one-interval", *ledger], env={"COLUMNS": "300"})
    assert shown.exit_code == 0, shown.output
    for metric in ("solve_rate", "optimal_move_rate"):
        assert rows[metric]["candidate"] in shown.output and rows[metric]["base"] in shown.output, (metric, shown.output)
