"""``.ci/summarize.py``, the closing lines of ``make test``: counts, exit status, and where the time went."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="0" failures="1" skipped="1"
tests="4" time="12.0"><testcase classname="tests.cli.test_a" name="test_x" time="5.5"/><testcase classname="tests.cli.test_a"
name="test_y" time="1.0"/><testcase classname="tests.test_b.TestC" name="test_z" time="3.25"><failure message="x"/></testcase>
<testcase classname="tests.test_b" name="test_s" time="0.1"><skipped message="y"/></testcase></testsuite></testsuites>"""


def _summarize(tmp_path: Path, jest_failed: int = 0) -> subprocess.CompletedProcess[str]:
    (tmp_path / "pytest.xml").write_text(JUNIT)
    (tmp_path / "jest.json").write_text(json.dumps({"numPassedTests": 2, "numFailedTests": jest_failed, "numPendingTests": 0}))
    return subprocess.run([sys.executable, str(REPO / ".ci" / "summarize.py"), str(tmp_path)], capture_output=True, text=True, check=False)


def test_counts_and_status(tmp_path):
    out = _summarize(tmp_path)
    assert out.returncode == 1, out.stdout  # one pytest failure
    assert "pytest: 2 passed, 1 failed, 1 skipped" in out.stdout
    assert out.stdout.rstrip().splitlines()[-1] == "total: 4 passed, 1 failed, 1 skipped"


def test_slowest_files_and_tests_come_first_with_their_seconds(tmp_path):
    lines = _summarize(tmp_path).stdout.splitlines()
    files = lines[lines.index("pytest time: 10 s in 4 tests; slowest files:") + 1 : lines.index("slowest 4 tests:")]
    assert [f.split()[-1] for f in files] == ["tests/cli/test_a.py", "tests/test_b.py"]  # a test class counts to its module
    assert files[0].split()[0] == "6"  # 5.5 + 1.0 s
    slow = lines[lines.index("slowest 4 tests:") + 1 :][:3]
    assert [t.split()[-1] for t in slow] == ["tests/cli/test_a.py::test_x", "tests/test_b.py::TestC::test_z", "tests/cli/test_a.py::test_y"]


#: Cases with the properties tests/conftest.py writes: marks, and a docstring's ``Slow:`` reason.
MARKED = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="0" failures="0" skipped="0"
tests="4" time="300"><testcase classname="tests.test_e2e" name="test_quickstart" time="150.0"><properties>
<property name="marks" value="job ray slow"/><property name="slow_reason" value="80 GRPO steps"/></properties></testcase>
<testcase classname="tests.test_c" name="test_two_clusters@ray" time="70.0"><properties><property name="marks" value="cluster ray"/>
</properties></testcase><testcase classname="tests.test_c" name="test_fast" time="0.5"><properties><property name="marks" value=""/>
</properties></testcase><testcase classname="tests.browser.test_lab" name="test_ui" time="59.5"><properties>
<property name="marks" value="browser ray"/></properties></testcase></testsuite></testsuites>"""


def _summarize_marked(tmp_path, phases: list[dict] | None = None) -> subprocess.CompletedProcess[str]:
    (tmp_path / "pytest.xml").write_text(MARKED)
    (tmp_path / "jest.json").write_text(json.dumps({"numPassedTests": 1, "numFailedTests": 0, "numPendingTests": 0}))
    if phases is not None:
        (tmp_path / "phases.jsonl").write_text("".join(json.dumps(p) + "\n" for p in phases))
    return subprocess.run([sys.executable, str(REPO / ".ci" / "summarize.py"), str(tmp_path)], capture_output=True, text=True, check=False)


def test_seconds_per_mark_and_phases_come_before_the_closing_line(tmp_path):
    start = {"start": time.time() - 600, "load_avg": [1.5, 1.25, 0.5]}
    phases = [start, {"phase": "install (venv, pip)", "seconds": 301.4, "rc": 0}, {"phase": "jest", "seconds": 12.0, "rc": 1}]
    out = _summarize_marked(tmp_path, phases).stdout.splitlines()
    assert out[:3] == ["phases:", "      301 s  install (venv, pip)", "       12 s  jest  (exit 1)"]
    assert out[3].endswith("s  in all so far (load average at the start: 1.5 1.25 0.5)") and 599 <= int(out[3].split()[0]) <= 700
    marks = out[out.index("seconds per mark (a test with several marks counts in each):") + 1 :][:6]
    by_mark = {m.split("s  ", 1)[1]: int(m.split()[0]) for m in marks}
    assert by_mark == {
        "ray (3 tests)": 280,
        "job (1 tests)": 150,
        "slow (1 tests)": 150,
        "cluster (1 tests)": 70,
        "browser (1 tests)": 60,
        "(no mark) (1 tests)": 0,
    }
    assert marks[0].endswith("ray (3 tests)")  # the most time first
    assert out[-1].startswith("total: ")


def test_a_test_over_60_s_without_a_slow_reason_is_named_without_failing_the_run(tmp_path):
    """The over-60 s test with a ``Slow:`` reason is not listed; the one without is named in a warning (the 59.5 s
    one is under the line). A policy on the run's summary, never a failure: CI's seconds vary with its load."""
    out = _summarize_marked(tmp_path)
    assert out.returncode == 0, out.stdout
    warnings = [line for line in out.stdout.splitlines() if line.startswith("warning: ")]
    assert warnings == ["warning: tests/test_c.py::test_two_clusters took 70 s (over 60 s) and its docstring gives no 'Slow:' reason"]
    assert not [line for line in out.stdout.splitlines() if line.startswith("error: ")]
    (tmp_path / "pytest.xml").write_text(
        MARKED.replace('value="cluster ray"/>', 'value="cluster ray"/><property name="slow_reason" value="two ray starts"/>')
    )
    again = subprocess.run([sys.executable, str(REPO / ".ci" / "summarize.py"), str(tmp_path)], capture_output=True, text=True, check=False)
    assert again.returncode == 0, again.stdout
    assert again.stdout.rstrip().splitlines()[-1] == "total: 5 passed, 0 failed, 0 skipped"


def test_the_ci_time_record_follows_the_results_schema(tmp_path):
    """benchmarks/ci_time.py (make test runs it) records the phases, the load average at the run's
    start, the slowest tests with their files and the seconds per mark, as a result file."""
    import jsonschema

    start = time.time() - 100
    phases = [{"start": start, "load_avg": [0.25, 0.5, 0.75]}, {"phase": "pytest", "seconds": 90.0, "rc": 0}]
    _summarize_marked(tmp_path, phases)
    env = {k: v for k, v in os.environ.items() if k not in ("HPRL_CI_RECORD", "HPRL_RESULTS_DIR")}
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.ci_time", str(tmp_path)], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    record = json.loads((tmp_path / "ci_time.json").read_text())
    jsonschema.validate(record, json.loads((REPO / "benchmarks" / "result.schema.json").read_text()))
    assert record["name"] == "ci_time" and record["script"] == "benchmarks/ci_time.py"
    assert record["load_avg_start"] == [0.25, 0.5, 0.75] and record["wall_s"] >= 100
    assert record["date"] == time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(start))
    results = record["results"]
    assert results["phases"] == [{"phase": "pytest", "seconds": 90.0, "rc": 0}] and results["total_s"] >= 100
    assert results["pytest"] == {"tests": 4, "failed": 0, "skipped": 0, "seconds": 280.0}
    assert results["slowest_tests"][0] == {"test": "tests/test_e2e.py::test_quickstart", "seconds": 150.0, "marks": ["job", "ray", "slow"]}
    assert results["slowest_files"][0] == {"file": "tests/test_e2e.py", "seconds": 150.0}
    assert results["marks"]["ray"] == {"tests": 3, "seconds": 279.5} and results["marks"]["(no mark)"] == {"tests": 1, "seconds": 0.5}


def test_a_missing_result_file_fails(tmp_path):
    (tmp_path / "jest.json").write_text(json.dumps({"numPassedTests": 1, "numFailedTests": 0, "numPendingTests": 0}))
    out = subprocess.run([sys.executable, str(REPO / ".ci" / "summarize.py"), str(tmp_path)], capture_output=True, text=True, check=False)
    assert out.returncode == 1 and f"error: no pytest results ({tmp_path / 'pytest.xml'})" in out.stdout


def test_a_phase_is_timed_and_keeps_its_commands_exit_status(tmp_path):
    """``.ci/phase.py`` (each phase of make test): the command's exit status passes through, and one
    line per phase records its seconds and status after the run's start line with its load average."""
    record = tmp_path / "phases.jsonl"
    phase = [sys.executable, str(REPO / ".ci" / "phase.py"), str(record)]
    began = time.time()
    assert subprocess.run([*phase, "--start"], check=False).returncode == 0
    assert subprocess.run([*phase, "lint", "--", sys.executable, "-c", "import time; time.sleep(1.2)"], check=False).returncode == 0
    assert subprocess.run([*phase, "jest", "--", sys.executable, "-c", "raise SystemExit(3)"], check=False).returncode == 3
    start, lint, jest = (json.loads(line) for line in record.read_text().splitlines())
    assert began - 1 <= start["start"] <= time.time() and len(start["load_avg"]) == 3
    assert lint["phase"] == "lint" and lint["rc"] == 0 and lint["seconds"] >= 1.2  # the command's sleep, at least
    assert jest == {"phase": "jest", "seconds": jest["seconds"], "rc": 3}


def test_the_policy_judges_a_tests_own_call_not_the_session_fixture_it_started(tmp_path):
    """The first test to need the session's local cluster pays its start in its setup: 95 s in all,
    0.5 s of its own (``call_s``), so it needs no reason; one whose call took 70 s does."""
    junit = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="0" failures="0" skipped="0"
tests="2" time="190"><testcase classname="tests.test_c" name="test_first_ray" time="95.0"><properties><property name="marks"
value="ray"/><property name="call_s" value="0.50"/></properties></testcase><testcase classname="tests.test_c" name="test_long"
time="95.0"><properties><property name="marks" value="ray"/><property name="call_s" value="70.00"/></properties></testcase>
</testsuite></testsuites>"""
    (tmp_path / "pytest.xml").write_text(junit)
    (tmp_path / "jest.json").write_text(json.dumps({"numPassedTests": 0, "numFailedTests": 0, "numPendingTests": 0}))
    out = subprocess.run([sys.executable, str(REPO / ".ci" / "summarize.py"), str(tmp_path)], capture_output=True, text=True, check=False)
    warnings = [line for line in out.stdout.splitlines() if line.startswith("warning: ")]
    assert warnings == ["warning: tests/test_c.py::test_long took 70 s (over 60 s) and its docstring gives no 'Slow:' reason"]
    assert out.returncode == 0


def test_the_session_writes_each_tests_marks_reason_and_call_seconds_into_junit(tmp_path):
    """tests/conftest.py's hooks, in a real session: a test using a registered mark and a ``Slow:``
    docstring line gets the properties .ci/summarize.py reads."""
    test_file = tmp_path / "test_props.py"
    test_file.write_text(
        'import pytest\n@pytest.mark.job\ndef test_marked():\n    """Does a thing.\n\n    Slow: it waits for a reason."""\n'
    )
    junit = tmp_path / "out.xml"
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.conftest", "--rootdir", str(REPO)]
    cmd += ["-c", str(REPO / "pyproject.toml"), str(test_file), f"--junitxml={junit}"]
    # its own run tag and temp dir: with the outer session's tag it would find the outer session's
    # Ray cluster still running and fail its leftover check
    run_tmp = tmp_path / "tmp" / "hprl-t-nested"
    run_tmp.mkdir(parents=True)
    env = {**os.environ, "HPRL_RUN_TMPDIR": str(run_tmp), "HPRL_RUN_TAG": f"t-{uuid.uuid4().hex}"}
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    sys.path.insert(0, str(REPO / ".ci"))
    try:
        import summarize
    finally:
        sys.path.remove(str(REPO / ".ci"))
    import xml.etree.ElementTree as ET

    (case,) = summarize.read_cases(ET.parse(junit).getroot())
    assert case.name == "test_marked" and case.marks == ("job",) and case.slow_reason == "it waits for a reason."
    assert case.call_s is not None and 0 <= case.call_s <= case.seconds
