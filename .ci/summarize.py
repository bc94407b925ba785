"""Print one plain closing line for `make test`: the pytest and jest counts added up.

Before it, the slowest pytest tests and the seconds per test file (from the junit times), so the
end of a CI log shows where its time went.

Usage: python .ci/summarize.py RESULTS_DIR   (reads pytest.xml from --junitxml and jest.json
from jest --json); exits non-zero when any test failed or a result file is missing.
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

SLOWEST = 15


def print_times(root: ET.Element) -> None:
    """The :data:`SLOWEST` slowest test cases and files of a junit tree, seconds (setup + call + teardown)."""
    cases = [(float(c.get("time") or 0), f"{c.get('classname', '')}::{c.get('name', '')}") for c in root.iter("testcase")]
    if not cases:
        return
    files: dict[str, float] = {}
    for seconds, name in cases:
        parts = name.split("::")[0].split(".")  # classname: the module "tests.cli.test_x", or "tests.cli.test_x.TestClass"
        key = ".".join(parts[:-1] if parts[-1][:1].isupper() else parts)
        files[key] = files.get(key, 0.0) + seconds
    print(f"pytest time: {sum(s for s, _ in cases):.0f} s in {len(cases)} tests; slowest files:")
    for key, seconds in sorted(files.items(), key=lambda kv: -kv[1])[:SLOWEST]:
        print(f"  {seconds:7.0f} s  {key}")
    print("slowest tests:")
    for seconds, name in sorted(cases, reverse=True)[:SLOWEST]:
        print(f"  {seconds:7.0f} s  {name}")


def main(results: Path) -> int:
    passed = failed = skipped = 0
    problems = []
    junit = results / "pytest.xml"
    if junit.is_file():
        root = ET.parse(junit).getroot()
        print_times(root)
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
