"""Print one plain closing line for `make test`: the pytest and jest counts added up.

Usage: python .ci/summarize.py RESULTS_DIR   (reads pytest.xml from --junitxml and jest.json
from jest --json); exits non-zero when any test failed or a result file is missing.
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path


def main(results: Path) -> int:
    passed = failed = skipped = 0
    problems = []
    junit = results / "pytest.xml"
    if junit.is_file():
        root = ET.parse(junit).getroot()
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
