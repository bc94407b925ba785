"""The public surface of hyperpod_rl.cluster is pinned, and importing the spec stays light."""

from __future__ import annotations

import subprocess
import sys

from hyperpod_rl import cluster


def test_all_is_sorted_and_resolves() -> None:
    assert cluster.__all__ == sorted(cluster.__all__)
    for name in cluster.__all__:
        assert getattr(cluster, name) is not None


def test_public_api_signatures() -> None:
    spec_cls = cluster.ClusterSpec
    assert spec_cls.presets() == ["seed", "single-gpu"]
    spec = spec_cls.from_preset("seed", name="x")
    assert isinstance(spec.to_manifest(), dict)
    assert spec_cls.from_manifest(spec.to_manifest()).name == "x"


def test_importing_spec_does_not_import_io_libraries() -> None:
    code = (
        "import sys, hyperpod_rl.cluster.spec, hyperpod_rl.cluster.status; "
        "print(sorted(m for m in ('kubernetes', 'boto3', 'requests', 'ray') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"
