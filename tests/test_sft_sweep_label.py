"""``sft_sweep``'s result names its workload: the quickstart defaults only when ``--tiny`` and
``--options`` left them (reported: every result said "maze (quickstart defaults)", the 256x4 and
cell_px=48 runs too)."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.sft_sweep import task_label

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"


def test_the_label_names_the_options_that_differ_from_the_quickstart_defaults() -> None:
    assert task_label({"tiny_hidden_size": 128, "tiny_layers": 2}, {}) == "maze (quickstart defaults)"
    assert task_label({"tiny_hidden_size": 256, "tiny_layers": 4}, {"cell_px": 48}) == (
        "maze (quickstart defaults but cell_px=48, tiny_hidden_size=256, tiny_layers=4)"
    )


def test_each_recorded_sweep_is_labelled_by_its_own_options() -> None:
    checked = 0
    for path in sorted(RESULTS.glob("*.json")):
        data = json.loads(path.read_text())
        results = data.get("results")
        if data.get("script") == "benchmarks/sft_sweep.py" and isinstance(results, dict) and "task" in results:
            params = data["params"]
            assert results["task"] == task_label(params.get("tiny") or {}, params.get("options") or {}), path.name
            checked += 1
    assert checked >= 4
