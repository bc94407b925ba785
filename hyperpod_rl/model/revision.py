"""What a base model directory is, without loading it: its revision (content hash) and a check
that it holds a Qwen3-VL checkpoint. Standard library only (no torch, no transformers), so the
CLI and the quickstart's option checks stay fast; :mod:`hyperpod_rl.model.loading` loads models.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from hyperpod_rl.errors import ConfigError

__all__ = ["TINY_MODEL_ID", "check_model_dir", "directory_revision"]

#: Model id recorded in provenance for the embedded default base model.
TINY_MODEL_ID = "hyperpod-rl/tiny-qwen3-vl"

#: Weight files a Hugging Face checkpoint directory holds (one of them).
_WEIGHTS = ("*.safetensors", "*.bin")


def directory_revision(path: str | Path) -> str:
    """Content hash of a model directory, used as the base model revision.

    The hash covers every file's relative path and bytes (sha256, first 16 hex chars), so the
    same weights and processor files always give the same revision.

    Raises:
        ConfigError: the directory does not exist.
    """
    root = Path(path)
    if not root.is_dir():
        raise ConfigError(f"model path {root} is not a directory: pass a saved Qwen3-VL checkpoint directory")
    digest = hashlib.sha256()
    for file in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(str(file.relative_to(root)).encode())
        with file.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()[:16]


def check_model_dir(path: str | Path, what: str = "model path") -> Path:
    """Check that ``path`` is a Qwen3-VL checkpoint directory, before anything is built from it.

    A Hugging Face checkpoint directory holds ``config.json`` with ``model_type`` ``qwen3_vl``
    (transformers' ``Qwen3VLConfig.model_type``) and its weights as ``*.safetensors`` (or
    ``*.bin``) files; the file contents are not read beyond ``config.json``.

    Args:
        path: the directory (``~`` expanded).
        what: how the message names it, e.g. ``"--model-path"``.

    Returns:
        The resolved directory.

    Raises:
        ConfigError: it is not a directory, is empty, has no ``config.json``, an unreadable or
            non-JSON one, another ``model_type``, or no weight files (the message says which).
    """
    from hyperpod_rl.base import load_user_data

    root = Path(path).expanduser()
    fix = "pass a local Qwen3-VL checkpoint directory (config.json and *.safetensors, e.g. huggingface-cli download Qwen/Qwen3-VL-2B-Instruct --local-dir DIR)"
    if not root.is_dir():
        raise ConfigError(f"{what} {str(path)!r} is not a directory: {fix}")
    if not any(root.iterdir()):
        raise ConfigError(f"{what} {str(path)!r} is an empty folder: {fix}")
    if not (root / "config.json").is_file():
        raise ConfigError(f"{what} {str(path)!r} has no config.json: {fix}")
    config = load_user_data(root / "config.json", f"{what} config.json", syntax="json", repair=fix)
    if not isinstance(config, dict):
        raise ConfigError(f"{what} config.json {str(root / 'config.json')!r} holds a JSON {type(config).__name__}, not an object: {fix}")
    if config.get("model_type") != "qwen3_vl":
        kind = config.get("model_type")
        raise ConfigError(f"{what} {str(path)!r} is a {kind!r} model: hyperpod-rl trains Qwen3-VL (model_type 'qwen3_vl')")
    if not any(next(root.glob(pattern), None) for pattern in _WEIGHTS):
        raise ConfigError(f"{what} {str(path)!r} has no weights (*.safetensors): {fix}")
    return root.resolve()
