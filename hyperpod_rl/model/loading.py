"""Load and save base models: the embedded tiny Qwen3-VL or any local Qwen3-VL checkpoint.

``model.path='tiny'`` (the default of :class:`~hyperpod_rl.config.run.ModelConfig`) names the
embedded tiny model: :func:`resolve_base_model` builds it from ``model.tiny_hidden_size`` and
``model.tiny_layers`` into ``<run dir>/base-model/tiny-qwen3-vl-<revision>`` (content-hashed, so
a rebuild with the same sizes gives the same directory) and every reader of a run's base model
(the reference trainer, evaluation) resolves the path through it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal

from hyperpod_rl.base import load_user_data
from hyperpod_rl.config.sections import ModelConfig
from hyperpod_rl.errors import ConfigError, HyperpodRLError
from hyperpod_rl.model.revision import TINY_MODEL_ID, directory_revision
from hyperpod_rl.model.sampling import report_generation_config

# hyperpod_rl.model.tiny (transformers) is imported where a model or processor is built or loaded,
# so importing this module stays light (the CLI's start-up, docs/architecture.md).

__all__ = [
    "TINY_PATH",
    "hub_revision",
    "load_base_model",
    "load_processor",
    "resolve_base_model",
    "resolve_device",
    "revision_of",
    "save_tiny_base_model",
]

#: ``model.path`` value that names the embedded tiny model.
TINY_PATH = "tiny"
#: Sub-directory of a run directory that holds the built tiny model.
BASE_MODEL_SUBDIR = "base-model"

_COMMIT = re.compile(r"^[0-9a-f]{40}$")


def resolve_device(
    device: Literal["auto", "cpu", "cuda"] = "auto", dtype: Literal["auto", "float32", "bfloat16"] = "auto"
) -> tuple[Any, Any]:
    """The torch device and base-weight dtype a trainer uses.

    ``device="auto"`` takes the current CUDA device when torch sees one, else the CPU.
    ``dtype="auto"`` is bfloat16 on a CUDA GPU that supports it
    (``torch.cuda.is_bf16_supported()``: compute capability 8.0 and up) and float32 otherwise.

    Returns:
        ``(torch.device, torch.dtype)``.

    Raises:
        ConfigError: ``device="cuda"`` where torch sees no CUDA GPU, or bfloat16 asked for on a
            GPU without it.
    """
    import torch

    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda":
        if not torch.cuda.is_available():
            raise ConfigError(
                "trainer.device='cuda' but torch sees no CUDA GPU here: submit the job with a GPU (entrypoint_num_gpus) "
                "or set trainer.device='cpu'"
            )
        dev = torch.device("cuda", torch.cuda.current_device())
        bf16_ok = torch.cuda.is_bf16_supported()
        if dtype == "bfloat16" and not bf16_ok:
            raise ConfigError(f"trainer.dtype='bfloat16' but {torch.cuda.get_device_name(dev)} has no bfloat16: use 'float32'")
        chosen = torch.bfloat16 if dtype == "bfloat16" or (dtype == "auto" and bf16_ok) else torch.float32
        return dev, chosen
    return torch.device("cpu"), torch.bfloat16 if dtype == "bfloat16" else torch.float32


def save_tiny_base_model(
    root: str | Path,
    *,
    seed: int = 0,
    hidden_size: int = 128,
    num_layers: int = 2,
    vision_hidden_size: int = 64,
    vision_depth: int = 2,
    corpus: tuple[str, ...] = (),
    answer_words: tuple[str, ...] | None = None,
) -> tuple[Path, str]:
    """Build the tiny random-init Qwen3-VL and save it under ``root/tiny-qwen3-vl-<revision>``.

    The revision is the content hash of the saved files (:func:`directory_revision`), so the same
    seed and sizes (text and vision tower, as :func:`~hyperpod_rl.model.tiny.build_tiny_qwen3vl`)
    always give the same directory. Written to a temporary directory first and
    renamed, so a crash never leaves half a model behind.

    ``answer_words`` (the task's constrained-decoding vocabulary) become single tokens; None keeps
    the maze's four directions.

    Returns:
        ``(model_dir, revision)``.
    """
    import shutil
    import tempfile

    from hyperpod_rl.model.tiny import build_tiny_qwen3vl

    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    words = {} if answer_words is None else {"answer_words": answer_words}
    model, processor = build_tiny_qwen3vl(
        seed=seed,
        hidden_size=hidden_size,
        num_layers=num_layers,
        vision_hidden_size=vision_hidden_size,
        vision_depth=vision_depth,
        corpus=corpus,
        **words,
    )
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


def resolve_base_model(model: ModelConfig, run_dir: str | Path) -> Path:
    """The base model directory of a run: ``model.path``, or the tiny model built for ``'tiny'``.

    Args:
        model: the run's ``model`` section.
        run_dir: the run directory; ``'tiny'`` is built into ``<run_dir>/base-model/``.

    Returns:
        A directory :func:`load_base_model` loads.
    """
    if model.path != TINY_PATH:
        return Path(model.path).expanduser()
    root = Path(run_dir) / BASE_MODEL_SUBDIR
    wanted = (model.tiny_hidden_size, model.tiny_layers)
    for existing in sorted(root.glob("tiny-qwen3-vl-*")):
        try:
            text = load_user_data(existing / "config.json", "tiny model config.json", syntax="json")["text_config"]
        except (HyperpodRLError, KeyError, TypeError):  # a damaged copy: another is built
            continue
        if (text.get("hidden_size"), text.get("num_hidden_layers")) == wanted:
            return existing
    path, _ = save_tiny_base_model(root, hidden_size=model.tiny_hidden_size, num_layers=model.tiny_layers)
    return path


def load_processor(path: str | Path) -> Any:
    """The processor of a base model: a local directory (tiny or Qwen3-VL) or a hub id.

    Raises:
        ConfigError: transformers cannot load a processor from ``path``.
    """
    from hyperpod_rl.model.tiny import ImageOnlyQwen3VLProcessor

    root = Path(path).expanduser()
    if (root / "hyperpod_rl_model.json").is_file():
        return ImageOnlyQwen3VLProcessor.from_pretrained(root)
    from transformers import AutoProcessor

    try:
        return AutoProcessor.from_pretrained(str(path))
    except (OSError, ValueError) as err:
        raise ConfigError(
            f"cannot load the processor of model.path={str(path)!r} ({err}): pass a Qwen3-VL checkpoint directory or hub id"
        ) from None


def load_base_model(path: str | Path, *, torch_dtype: Any = None, device: Any = None) -> tuple[Any, Any, str]:
    """Load a Qwen3-VL model and processor from a local directory.

    Args:
        path: a directory saved by :func:`save_tiny_base_model` or a Hugging Face Qwen3-VL
            checkpoint (config.json, safetensors weights, processor and tokenizer files).
        torch_dtype: dtype for the weights (default: float32).
        device: where to put the weights (default: the CPU); weights are loaded straight onto
            a CUDA device (``device_map``), not through host memory first.

    Returns:
        ``(model, processor, model_id)``; the model is in eval mode.

    Raises:
        ConfigError: the directory is missing or is not a Qwen3-VL checkpoint.
    """
    from transformers import AutoProcessor, Qwen3VLForConditionalGeneration

    from hyperpod_rl.model.tiny import ImageOnlyQwen3VLProcessor

    root = Path(path).expanduser()
    if str(path) == TINY_PATH:
        raise ConfigError(
            "model.path='tiny' names the embedded tiny model, which is built per run: resolve it first "
            "(hyperpod_rl.model.loading.resolve_base_model(config.model, run_dir)), or build one with "
            "save_tiny_base_model(directory) and pass that directory"
        )
    if not (root / "config.json").is_file():
        raise ConfigError(f"model.path={str(root)!r} has no config.json: pass a Qwen3-VL checkpoint directory")
    config = load_user_data(
        root / "config.json", f"model.path={str(root)!r} config.json", syntax="json", repair="restore it from the checkpoint you downloaded"
    )
    if not isinstance(config, dict) or config.get("model_type") not in ("qwen3_vl",):
        raise ConfigError(
            f"model.path={str(root)!r} is a {config.get('model_type') if isinstance(config, dict) else None!r} model: hyperpod-rl trains Qwen3-VL (model_type 'qwen3_vl')"
        )
    marker = root / "hyperpod_rl_model.json"
    if marker.exists():
        processor = ImageOnlyQwen3VLProcessor.from_pretrained(root)
        fix = f"move the model folder aside (mv {root} {root}.damaged; nothing is deleted): the quickstart builds it again there"
        record = load_user_data(marker, "tiny model record", syntax="json", repair=fix)
        model_id = record.get("model_id", TINY_MODEL_ID) if isinstance(record, dict) else TINY_MODEL_ID
    else:
        try:
            processor = AutoProcessor.from_pretrained(root)
        except ImportError:  # Qwen3VLProcessor's video processor needs torchvision; images do not
            processor = ImageOnlyQwen3VLProcessor.from_pretrained(root)
        model_id = config.get("_name_or_path") or root.name
    on_gpu = device is not None and str(device).startswith("cuda")
    model = Qwen3VLForConditionalGeneration.from_pretrained(
        root, dtype=torch_dtype, attn_implementation="sdpa", **({"device_map": str(device)} if on_gpu else {})
    )
    model.eval()
    processor.tokenizer.padding_side = "left"
    report_generation_config(root)
    return model, processor, model_id


def hub_revision(path: str | Path) -> str | None:
    """The Hugging Face Hub commit a checkpoint directory was downloaded at, if it records one.

    Two layouts record it: the Hub cache (``.../models--Qwen--Qwen3-VL-8B-Instruct/snapshots/<commit>``,
    ``huggingface_hub.snapshot_download`` without ``local_dir``) and a ``local_dir`` download,
    which keeps ``.cache/huggingface/download/<file>.metadata`` files whose first line is the
    commit (huggingface_hub ``_local_folder.py``).

    Returns:
        The 40-hex commit, or ``None`` (a directory written by ``save_pretrained``, say).
    """
    root = Path(path).expanduser().resolve()
    if root.parent.name == "snapshots" and _COMMIT.fullmatch(root.name):
        return root.name
    meta = root / ".cache" / "huggingface" / "download"
    for file in sorted(meta.glob("*.metadata")) if meta.is_dir() else []:
        first = file.read_text().splitlines()[:1]
        if first and _COMMIT.fullmatch(first[0].strip()):
            return first[0].strip()
    return None


def revision_of(path: str | Path) -> str:
    """The base model revision: the Hub commit when the directory records one, else its content hash."""
    return hub_revision(path) or directory_revision(path)
