"""Provenance of a trained adapter: enough to tell what it was trained from, and to rebuild it.

``provenance.json`` sits beside ``adapter_model.safetensors``. Serving preflight compares its
``base_model_id``/``base_model_revision`` with the server's base model and its
``adapter_sha256`` with the file on disk.
"""

from __future__ import annotations

import subprocess
import time
from importlib import metadata
from pathlib import Path
from typing import Any

__all__ = ["PACKAGES", "git_state", "package_versions", "provenance_record"]

#: Distributions whose versions are recorded.
PACKAGES = ("hyperpod-rl", "torch", "transformers", "peft", "ray", "skyrl-gym", "skyrl", "qwen-vl-utils", "numpy", "pillow")


def package_versions() -> dict[str, str | None]:
    """Installed version of each of :data:`PACKAGES` (``None`` if absent)."""
    out: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def git_state(path: str | Path | None = None) -> dict[str, Any]:
    """``{"commit": sha | None, "dirty": bool | None}`` of the checkout holding this package."""
    where = Path(path) if path else Path(__file__).resolve().parents[2]
    try:
        commit = subprocess.run(
            ["git", "-C", str(where), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        status = subprocess.run(
            ["git", "-C", str(where), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}
    return {"commit": commit or None, "dirty": bool(status.strip())}


def provenance_record(
    *,
    run_id: str,
    backend: str,
    base_model_id: str,
    base_model_revision: str,
    config_hash: str,
    dataset_hashes: dict[str, str],
    reward_version: str,
    seeds: dict[str, int],
    lora: dict[str, Any],
    adapter_sha256: str | None = None,
    steps: int | None = None,
) -> dict[str, Any]:
    """The provenance dict (JSON-serialisable)."""
    return {
        "run_id": run_id,
        "backend": backend,
        "base_model_id": base_model_id,
        "base_model_revision": base_model_revision,
        "config_hash": config_hash,
        "dataset_hashes": dataset_hashes,
        "reward_version": reward_version,
        "seeds": seeds,
        "lora": lora,
        "adapter_sha256": adapter_sha256,
        "steps": steps,
        "packages": package_versions(),
        "git": git_state(),
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
