"""Load and save base models: the embedded tiny Qwen3-VL or any local Qwen3-VL checkpoint."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hyperpod_rl.errors import ConfigError
from hyperpod_rl.model.tiny import (
    TINY_MODEL_ID,
    ImageOnlyQwen3VLProcessor,
    build_tiny_qwen3vl,
    directory_revision,
)

__all__ = ["load_base_model", "save_tiny_base_model"]


def save_tiny_base_model(
    root: str | Path,
    *,
    seed: int = 0,
    hidden_size: int = 128,
    num_layers: int = 2,
    corpus: tuple[str, ...] = (),
    answer_words: tuple[str, ...] | None = None,
) -> tuple[Path, str]:
    """Build the tiny random-init Qwen3-VL and save it under ``root/tiny-qwen3-vl-<revision>``.

    The revision is the content hash of the saved files (:func:`directory_revision`), so the same
    seed and sizes always give the same directory. Written to a temporary directory first and
    renamed, so a crash never leaves half a model behind.

    ``answer_words`` (the task's constrained-decoding vocabulary) become single tokens; None keeps
    the maze's four directions.

    Returns:
        ``(model_dir, revision)``.
    """
    import shutil
    import tempfile

    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    words = {} if answer_words is None else {"answer_words": answer_words}
    model, processor = build_tiny_qwen3vl(seed=seed, hidden_size=hidden_size, num_layers=num_layers, corpus=corpus, **words)
    tmp = Path(tempfile.mkdtemp(prefix=".tiny-", dir=root))
    model.save_pretrained(tmp)
    processor.save_pretrained(tmp)
    (tmp / "hyperpod_rl_model.json").write_text(json.dumps({"model_id": TINY_MODEL_ID, "seed": seed}))
    revision = directory_revision(tmp)
    final = root / f"tiny-qwen3-vl-{revision}"
    if final.exists():
        shutil.rmtree(tmp)
    else:
        tmp.rename(final)
    return final, revision


def load_base_model(path: str | Path, *, torch_dtype: Any = None) -> tuple[Any, Any, str]:
    """Load a Qwen3-VL model and processor from a local directory.

    Args:
        path: a directory saved by :func:`save_tiny_base_model` or a Hugging Face Qwen3-VL
            checkpoint (config.json, safetensors weights, processor and tokenizer files).
        torch_dtype: dtype for the weights (default: fp32 on CPU).

    Returns:
        ``(model, processor, model_id)``; the model is in eval mode.

    Raises:
        ConfigError: the directory is missing or is not a Qwen3-VL checkpoint.
    """
    from transformers import AutoProcessor, Qwen3VLForConditionalGeneration

    root = Path(path).expanduser()
    if not (root / "config.json").is_file():
        raise ConfigError(f"model.path={str(root)!r} has no config.json: pass a Qwen3-VL checkpoint directory")
    config = json.loads((root / "config.json").read_text())
    if config.get("model_type") not in ("qwen3_vl",):
        raise ConfigError(
            f"model.path={str(root)!r} is a {config.get('model_type')!r} model: hyperpod-rl trains Qwen3-VL (model_type 'qwen3_vl')"
        )
    marker = root / "hyperpod_rl_model.json"
    if marker.exists():
        processor = ImageOnlyQwen3VLProcessor.from_pretrained(root)
        model_id = json.loads(marker.read_text()).get("model_id", TINY_MODEL_ID)
    else:
        processor = AutoProcessor.from_pretrained(root)
        model_id = config.get("_name_or_path") or root.name
    model = Qwen3VLForConditionalGeneration.from_pretrained(root, dtype=torch_dtype)
    model.eval()
    processor.tokenizer.padding_side = "left"
    return model, processor, model_id


def revision_of(path: str | Path) -> str:
    """The base model revision: the directory's content hash."""
    return directory_revision(path)
