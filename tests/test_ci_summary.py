"""``.ci/summarize.py``, the closing lines of ``make test``: counts, exit status, and where the time went."""

from __future__ import annotations

import json
import subprocess
import sys
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
    files = lines[lines.index("pytest time: 10 s in 4 tests; slowest files:") + 1 : lines.index("slowest tests:")]
    assert [f.split()[-1] for f in files] == ["tests.cli.test_a", "tests.test_b"]  # a test class counts to its module
    assert files[0].split()[0] == "6"  # 5.5 + 1.0 s
    slow = lines[lines.index("slowest tests:") + 1 :][:3]
    assert [t.split()[-1] for t in slow] == ["tests.cli.test_a::test_x", "tests.test_b.TestC::test_z", "tests.cli.test_a::test_y"]


def test_a_missing_result_file_fails(tmp_path):
    (tmp_path / "jest.json").write_text(json.dumps({"numPassedTests": 1, "numFailedTests": 0, "numPendingTests": 0}))
    out = subprocess.run([sys.executable, str(REPO / ".ci" / "summarize.py"), str(tmp_path)], capture_output=True, text=True, check=False)
    assert out.returncode == 1 and f"error: no pytest results ({tmp_path / 'pytest.xml'})" in out.stdout
