"""Issue 31 item 6: every shared package the built extension asks JupyterLab for is satisfied by
what JupyterLab 4.5 ships (Studio: 4.5.10 and 4.5.11) and by 4.6 (this project's JupyterLab), so no
"Unsatisfied version" warning appears on either. The browser test on 4.5.11 checks the console too.

The requirements are read from the built ``remoteEntry`` (``requiredVersion`` of each shared
singleton); what a JupyterLab ships is its ``jupyterlab/staging/package.json`` ``resolutions``.
Needs ``make labextension`` (which builds ``make studio-server-env``, JupyterLab 4.5.11).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import jupyterlab
import pytest

from .conftest import REPO

BUILT = REPO / "labextension" / "hyperpod_rl_jupyterlab" / "labextension" / "static"
STUDIO_ENV = REPO / ".venv-lab45"


def required() -> dict[str, str]:
    entries = sorted(BUILT.glob("remoteEntry.*.js"))
    assert entries, "the extension is not built: run `make labextension`"
    text = entries[-1].read_text()
    found = dict(re.findall(r'"((?:@[\w.-]+/)?[\w.-]+)",import:null,requiredVersion:"([^"]+)"', text))
    assert "@jupyterlab/apputils" in found and "@jupyterlab/notebook" in found, found
    return found


def shipped(staging: Path) -> dict[str, str]:
    data = json.loads(staging.read_text())
    return {k: v.lstrip("~^") for k, v in {**data["dependencies"], **data["resolutions"]}.items()}


def version(text: str) -> tuple[int, int, int]:
    major, minor, patch = re.match(r"(\d+)\.(\d+)\.(\d+)", text).groups()
    return int(major), int(minor), int(patch)


def caret_ok(rng: str, have: str) -> bool:
    """npm's ``^A.B.C`` (A > 0): same major, at least A.B.C (a pre-release tag on the floor is ignored)."""
    assert rng.startswith("^"), rng
    low, got = version(rng[1:]), version(have)
    return got[0] == low[0] and got >= low


@pytest.mark.parametrize(
    "staging",
    [
        pytest.param(
            STUDIO_ENV / "lib" / "python3.12" / "site-packages" / "jupyterlab" / "staging" / "package.json", id="jupyterlab-4.5.11"
        ),
        pytest.param(Path(jupyterlab.__file__).parent / "staging" / "package.json", id=f"jupyterlab-{jupyterlab.__version__}"),
    ],
)
def test_every_shared_requirement_is_met(staging: Path) -> None:
    assert staging.is_file(), f"{staging} is missing: run `make studio-server-env`"
    have = shipped(staging)
    unmet = {pkg: (rng, have.get(pkg)) for pkg, rng in required().items() if pkg in have and not caret_ok(rng, have[pkg])}
    assert unmet == {}, unmet


def test_requirements_are_the_lowest_45_ones() -> None:
    """Built against 4.5.0's core: Studio's older 4.5.10 (SMD 4.0-4.4) satisfies them too."""
    req = required()
    assert req["@jupyterlab/notebook"] == "^4.5.0" and req["@jupyterlab/apputils"] == "^4.6.0"
    assert req["@jupyterlab/services"] == "^7.5.0" and req["@jupyterlab/coreutils"] == "^6.5.0"
