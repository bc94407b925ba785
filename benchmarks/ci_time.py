"""Where one CI run's time went (``.ci/run``, which is ``make test``): ``ci_time.json``.

Usage: ``python -m benchmarks.ci_time RESULTS_DIR`` (``make test`` runs it after pytest, on its
``.test-results/``). It reads ``phases.jsonl`` (``.ci/phase.py``: the run's start and load average,
then each phase's seconds and exit status) and ``pytest.xml`` (each test's seconds, file and marks,
read by ``.ci/summarize.py``'s own reader) and writes, through :class:`benchmarks._record.Recording`
(git commit, date, machine, packages), ``RESULTS_DIR/ci_time.json``; with ``HPRL_CI_RECORD=1`` it
writes the committed record, ``benchmarks/results/ci_time.json``, instead. Refresh that record from
a fresh clone on a quiet machine (``HPRL_CI_RECORD=1 bash .ci/run``) whenever the suite's shape
changes; issue 43's budget is 35 minutes for the run and 20 for pytest, on the 2-core machine.

Results: ``phases`` (name, seconds, exit status), ``total_s`` (start to the recording),
``pytest`` (counts and seconds), ``slowest_tests`` and ``slowest_files`` (the 25 slowest, seconds),
``marks`` (tests and seconds per mark; a test with several marks counts in each).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from types import ModuleType
from typing import Any

from benchmarks._record import REPO, Recording

#: How many of the slowest tests and files the record keeps.
SLOWEST = 25


def _summarize() -> ModuleType:
    """``.ci/summarize.py``, whose junit reader this uses (one reader for the log and the record)."""
    name = "hprl_ci_summarize"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, REPO / ".ci" / "summarize.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up there
        spec.loader.exec_module(module)
    return sys.modules[name]


def ci_time(results: Path) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The record's results and the run's start line (``{"start", "load_avg"}``, or None) from ``results``.

    Raises:
        FileNotFoundError: ``results`` has no ``phases.jsonl``.
    """
    lines = [json.loads(line) for line in (results / "phases.jsonl").read_text().splitlines() if line.strip()]
    start = next((line for line in lines if "start" in line), None)
    phases = [{"phase": p["phase"], "seconds": p["seconds"], "rc": p["rc"]} for p in lines if "phase" in p]
    out: dict[str, Any] = {"phases": phases, "total_s": round(time.time() - start["start"], 1) if start else None}
    junit = results / "pytest.xml"
    if junit.is_file():
        root = ET.parse(junit).getroot()
        cases = _summarize().read_cases(root)
        failed = sum(int(s.get("failures", 0)) + int(s.get("errors", 0)) for s in root.iter("testsuite"))
        skipped = sum(int(s.get("skipped", 0)) for s in root.iter("testsuite"))
        files: dict[str, float] = {}
        marks: dict[str, dict[str, float]] = {}
        for case in cases:
            files[case.file] = files.get(case.file, 0.0) + case.seconds
            for mark in case.marks or ("(no mark)",):
                entry = marks.setdefault(mark, {"tests": 0, "seconds": 0.0})
                entry["tests"] += 1
                entry["seconds"] += case.seconds
        out["pytest"] = {
            "tests": len(cases),
            "failed": failed,
            "skipped": skipped,
            "seconds": round(sum(c.seconds for c in cases), 1),
        }
        out["slowest_tests"] = [
            {"test": c.nodeid, "seconds": round(c.seconds, 1), "marks": list(c.marks)}
            for c in sorted(cases, key=lambda c: -c.seconds)[:SLOWEST]
        ]
        out["slowest_files"] = [{"file": f, "seconds": round(s, 1)} for f, s in sorted(files.items(), key=lambda kv: -kv[1])[:SLOWEST]]
        out["marks"] = {m: {"tests": int(v["tests"]), "seconds": round(v["seconds"], 1)} for m, v in sorted(marks.items())}
    return out, start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, help="the run's results directory (.test-results)")
    args = parser.parse_args(argv)
    results, start = ci_time(args.results)
    record = os.environ.get("HPRL_CI_RECORD") == "1"
    path = None if record else args.results / "ci_time.json"
    with Recording(
        "ci_time",
        params={"pytest_args": os.environ.get("PYTEST_ARGS", ""), "xdist": os.environ.get("XDIST", ""), "ci": os.environ.get("CI", "")},
        script="benchmarks/ci_time.py",
        notes="one `make test` (.ci/run) from install to pytest's end; phases timed by .ci/phase.py",
        path=path,
        started_at=start["start"] if start else None,
        load_avg_start=start["load_avg"] if start else None,
    ) as rec:
        rec.results = results
    return 0


if __name__ == "__main__":
    sys.exit(main())
