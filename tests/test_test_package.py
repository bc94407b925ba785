"""The suite collects with every extra installed (issue 30 item 5), and beside the SageMaker Python
SDK (Studio images have it; the studio extra brought it until it was dropped for its weight), whose
``smdebug_rulesconfig`` installs a top-level ``tests`` package. A regular
package anywhere on ``sys.path`` beats a namespace package, so while ``tests/`` had no
``__init__.py`` every module importing ``tests.<helper>`` failed to collect. Here a package
named ``tests`` stands on ``sys.path`` as that one does, and collection still finds this suite's
helpers."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: Modules that import this suite's helpers as ``tests.<module>`` (ray_jobs, fakes, ...).
IMPORTERS = ["tests/cli/test_job_failures.py", "tests/cluster/test_addresses.py", "tests/widgets/test_panels_offline.py"]


def test_every_test_directory_is_a_package() -> None:
    dirs = {p.parent for p in (REPO / "tests").rglob("test_*.py")}
    missing = sorted(str(d.relative_to(REPO)) for d in dirs if not (d / "__init__.py").is_file())
    assert not missing, f"add __init__.py to {missing}"


def test_collection_wins_over_an_installed_top_level_tests_package(tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "tests").mkdir(parents=True)
    (site / "tests" / "__init__.py").write_text("IMPOSTOR = True\n")  # what smdebug_rulesconfig installs
    probe = "import sys; sys.path.append(sys.argv[1]); import tests; print(tests.__file__)"
    where = subprocess.run([sys.executable, "-c", probe, str(site)], cwd=REPO, capture_output=True, text=True, check=True)
    assert where.stdout.strip() == str(REPO / "tests" / "__init__.py"), where.stdout
    code = f"import sys; sys.path.append({str(site)!r}); import pytest; sys.exit(pytest.main(['--collect-only', '-q', '-p', 'no:cacheprovider', *sys.argv[1:]]))"
    # its own run tag: the inner session's leftover check must not count this session's processes
    # (the local Ray cluster other tests share) as its own
    env = {**os.environ, "HPRL_RUN_TAG": f"collect-{uuid.uuid4().hex[:12]}"}
    proc = subprocess.run(
        [sys.executable, "-c", code, *IMPORTERS], cwd=REPO, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    collected = [line for line in proc.stdout.splitlines() if "::" in line]
    assert {line.split("::")[0] for line in collected} == set(IMPORTERS), proc.stdout[-3000:]
