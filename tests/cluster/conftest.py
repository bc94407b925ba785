"""Fixtures for tests/cluster: the real KubeRay v1.7 CRD from shared/data/kuberay-crds."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

# The shared data sits beside the repository checkout (CI keeps a copy at ../shared).
SHARED_CRDS = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "kuberay-crds"
GOLDEN = Path(__file__).resolve().parents[1] / "golden"
DATA = Path(__file__).resolve().parent / "data"


@cache
def _shared_schema() -> dict[str, Any]:
    crd = yaml.load((SHARED_CRDS / "ray.io_rayclusters.yaml").read_text(), Loader=yaml.CSafeLoader)
    (v1,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    return v1["schema"]["openAPIV3Schema"]


@pytest.fixture(scope="session")
def shared_schema() -> dict[str, Any]:
    """``openAPIV3Schema`` of ``v1`` in ../shared/data/kuberay-crds/ray.io_rayclusters.yaml."""
    assert SHARED_CRDS.is_dir(), f"KubeRay CRDs not found at {SHARED_CRDS.resolve()}"
    return _shared_schema()
