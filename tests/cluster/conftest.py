"""Fixtures for tests/cluster: KubeRay v1.7.0's RayCluster samples vendored under kuberay_samples/.

Nothing here reads outside the repository: the CRDs are the package's (``hyperpod_rl/cluster/crds``),
the samples are copied from ray-project/kuberay at tag v1.7.0 (see kuberay_samples/SOURCE.md).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
GOLDEN = HERE.parent / "golden"
DATA = HERE / "data"
SAMPLES = HERE / "kuberay_samples" / "v1.7.0"


@cache
def _samples() -> dict[str, dict[str, Any]]:
    out = {}
    for path in sorted(SAMPLES.glob("*.yaml")):
        docs = [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict) and d.get("kind") == "RayCluster"]
        for i, doc in enumerate(docs):
            out[path.name if len(docs) == 1 else f"{path.name}#{i}"] = doc
    return out


def sample_names() -> list[str]:
    """Every RayCluster document of the vendored samples (``file.yaml``, or ``file.yaml#i``)."""
    return list(_samples())


def sample(name: str) -> dict[str, Any]:
    """A fresh copy of one sample RayCluster."""
    return yaml.safe_load(yaml.safe_dump(_samples()[name]))
