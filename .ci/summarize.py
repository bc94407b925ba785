"""Print one plain closing line for `make test`: the pytest and jest counts added up.

Before it, where the run's time went: the seconds of each phase (``phases.jsonl``, written by
``.ci/phase.py``: install, Debian packages, the extension's build, lint, jest, pytest), the
slowest test files, the :data:`SLOWEST` slowest tests with their files, and the seconds of the
tests of each mark (``ray``, ``cluster``, ``job``, ``browser``, ...; from the ``marks`` property
``tests/conftest.py`` writes into the junit file). Then the policy that keeps the suite cut: a
test whose own call (the ``call_s`` property: not the setup of a session fixture it was first to
need) took over :data:`LIMIT_S` seconds needs a ``Slow:`` line in its docstring saying why (the
``slow_reason`` property); those without one are listed as ``warning:`` lines. They do not fail
the run: a test's seconds on the shared 2-core CI machine vary by a factor of two from run to run,
and a submission must not turn red because the machine was busy (a speed target, which tests never
hold). The list is what review reads.

Usage: python .ci/summarize.py RESULTS_DIR   (reads pytest.xml from --junitxml, jest.json
from jest --json and phases.jsonl if present); exits non-zero when any test failed or a result file
is missing.
"""

from __future__ import annotations

import json
import re
import sys
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

#: How many of the slowest tests (and files) are listed.
SLOWEST = 25
#: Seconds above which a test needs a ``Slow:`` reason in its docstring.
LIMIT_S = 60.0


@dataclass(frozen=True)
class Case:
    """One junit test case: its seconds (setup + call + teardown), file, name, marks, slow reason,
    and the seconds of its own call (``call_s``; None where the junit file does not say)."""

    seconds: float
    file: str
    name: str
    marks: tuple[str, ...]
    slow_reason: str
    call_s: float | None = None

    @property
    def nodeid(self) -> str:
        return f"{self.file}::{self.name}"


def _file_of(classname: str) -> str:
    """The test file of a junit classname: ``tests.cli.test_x`` or ``tests.cli.test_x.TestClass`` -> ``tests/cli/test_x.py``."""
    parts = classname.split(".")
    if len(parts) > 1 and parts[-1][:1].isupper():
        parts = parts[:-1]
    return "/".join(parts) + ".py"


def read_cases(root: ET.Element) -> list[Case]:
    """The test cases of a junit tree."""
    cases = []
    for c in root.iter("testcase"):
        props = {p.get("name"): p.get("value") or "" for p in c.iter("property")}
        classname = c.get("classname", "")
        name = re.sub(r"@\w+$", "", c.get("name", ""))  # pytest-xdist's "@<group>" suffix (--dist loadgroup)
        if classname.split(".")[-1][:1].isupper():
            name = f"{classname.split('.')[-1]}::{name}"
        call_s = float(props["call_s"]) if props.get("call_s") else None
        marks = tuple(props.get("marks", "").split())
        cases.append(Case(float(c.get("time") or 0), _file_of(classname), name, marks, props.get("slow_reason", ""), call_s))
    return cases


def print_phases(phases_file: Path) -> None:
    """Each recorded phase's seconds, and the run's wall time so far with the load average at its start."""
    if not phases_file.is_file():
        return
    lines = [json.loads(line) for line in phases_file.read_text().splitlines() if line.strip()]
    start = next((line for line in lines if "start" in line), None)
    phases = [line for line in lines if "phase" in line]
    if not phases:
        return
    print("phases:")
    for p in phases:
        status = "" if p["rc"] == 0 else f"  (exit {p['rc']})"
        print(f"  {p['seconds']:7.0f} s  {p['phase']}{status}")
    if start is not None:
        print(
            f"  {time.time() - start['start']:7.0f} s  in all so far (load average at the start: {' '.join(map(str, start['load_avg']))})"
        )


def print_times(cases: list[Case]) -> None:
    """The slowest files and tests, and the seconds per mark."""
    if not cases:
        return
    files: dict[str, float] = {}
    for case in cases:
        files[case.file] = files.get(case.file, 0.0) + case.seconds
    print(f"pytest time: {sum(c.seconds for c in cases):.0f} s in {len(cases)} tests; slowest files:")
    for key, seconds in sorted(files.items(), key=lambda kv: -kv[1])[:SLOWEST]:
        print(f"  {seconds:7.0f} s  {key}")
    print(f"slowest {min(SLOWEST, len(cases))} tests:")
    for case in sorted(cases, key=lambda c: -c.seconds)[:SLOWEST]:
        print(f"  {case.seconds:7.0f} s  {case.nodeid}")
    marks: dict[str, list[float]] = {}
    for case in cases:
        for mark in case.marks or ("(no mark)",):
            marks.setdefault(mark, []).append(case.seconds)
    if any(c.marks for c in cases):
        print("seconds per mark (a test with several marks counts in each):")
        for mark, times in sorted(marks.items(), key=lambda kv: -sum(kv[1])):
            print(f"  {sum(times):7.0f} s  {mark} ({len(times)} tests)")


def _own_s(case: Case) -> float:
    """A test's own seconds: its call's where recorded (not the session fixture its setup started), else its total."""
    return case.call_s if case.call_s is not None else case.seconds


def unexplained_slow(cases: list[Case]) -> list[Case]:
    """Tests whose own call took over :data:`LIMIT_S` seconds and whose docstring has no ``Slow:`` reason, slowest first."""
    return sorted((c for c in cases if _own_s(c) > LIMIT_S and not c.slow_reason), key=lambda c: -_own_s(c))


def main(results: Path) -> int:
    passed = failed = skipped = 0
    problems = []
    print_phases(results / "phases.jsonl")
    junit = results / "pytest.xml"
    if junit.is_file():
        root = ET.parse(junit).getroot()
        cases = read_cases(root)
        print_times(cases)
        for case in unexplained_slow(cases):
            print(f"warning: {case.nodeid} took {_own_s(case):.0f} s (over {LIMIT_S:.0f} s) and its docstring gives no 'Slow:' reason")
        for suite in [root] if root.tag == "testsuite" else root.iter("testsuite"):
            total, fail = int(suite.get("tests", 0)), int(suite.get("failures", 0)) + int(suite.get("errors", 0))
            skip = int(suite.get("skipped", 0))
            passed, failed, skipped = passed + total - fail - skip, failed + fail, skipped + skip
        print(f"pytest: {passed} passed, {failed} failed, {skipped} skipped")
    else:
        problems.append(f"no pytest results ({junit})")
    jest = results / "jest.json"
    if jest.is_file():
        data = json.loads(jest.read_text())
        jp, jf, js = data["numPassedTests"], data["numFailedTests"] + data.get("numRuntimeErrorTestSuites", 0), data["numPendingTests"]
        print(f"jest: {jp} passed, {jf} failed, {js} skipped")
        passed, failed, skipped = passed + jp, failed + jf, skipped + js
    else:
        problems.append(f"no jest results ({jest})")
    for problem in problems:
        print(f"error: {problem}")
        failed += 1
    print(f"total: {passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
