"""Sampling settings: explicit generation configs, and the base model's ``generation_config.json``.

A checkpoint's ``generation_config.json`` holds sampling defaults (``top_k``, ``top_p``,
``temperature``, ``repetition_penalty``, ...). transformers' ``generate`` fills every field a
caller leaves ``None`` from it (``GenerationUtils._prepare_generation_config``: "user-defined
kwargs > model.generation_config > global defaults", transformers 5), and vLLM applies it as
request defaults under ``--generation-config auto``. A file with ``top_k: 1`` thus turns sampling
at temperature 1.0 into greedy decoding, and a GRPO group into one repeated answer.

The project decides sampling from the run config only:

* :func:`explicit_generation_config` sets every sampling field of a transformers
  ``GenerationConfig`` (nothing is left ``None`` to be filled from the model's file, and
  transformers' global ``top_k=50`` default is switched off as well), for the reference trainer,
  evaluation and local serving (:class:`~hyperpod_rl.model.policy.MazePolicy`);
* :func:`generation_config_overrides` names the sampling keys of a ``generation_config.json`` that
  differ from the settings asked for: the serving preflight's ``generation_config`` check and the
  load-time report (:func:`report_generation_config`, once per base model directory and process)
  both use it, so the rule lives in one place.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "SAMPLING_NEUTRAL",
    "explicit_generation_config",
    "generation_config_overrides",
    "read_generation_config",
    "report_generation_config",
]

log = logging.getLogger(__name__)

#: Sampling keys of a ``generation_config.json`` that change how tokens are drawn (vLLM
#: ``ModelConfig.get_diff_sampling_param``; transformers' logits processors), with the value that
#: means "off".
SAMPLING_NEUTRAL: dict[str, float] = {"temperature": 1.0, "top_p": 1.0, "top_k": 0, "min_p": 0.0, "repetition_penalty": 1.0}

_reported: set[str] = set()


def read_generation_config(model_dir: str | Path | None) -> dict[str, Any] | None:
    """The base model's ``generation_config.json`` as a dict; ``None`` when absent or unreadable."""
    if model_dir is None:
        return None
    path = Path(model_dir).expanduser() / "generation_config.json"
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def generation_config_overrides(
    generation_config: Mapping[str, Any] | None, requested: Mapping[str, float], *, greedy_ignores_temperature: bool = True
) -> list[str]:
    """The sampling keys of ``generation_config`` that differ from ``requested``.

    Args:
        generation_config: the base model's ``generation_config.json`` (:func:`read_generation_config`).
        requested: the sampling settings asked for; keys left out mean "off" (:data:`SAMPLING_NEUTRAL`).
        greedy_ignores_temperature: with ``requested["temperature"] == 0`` (greedy, which requests
            set explicitly) the file's temperature is not reported.

    Returns:
        ``["top_k=1 (requested 0)", ...]`` in :data:`SAMPLING_NEUTRAL` order; empty when nothing differs.
    """
    out: list[str] = []
    for key, neutral in SAMPLING_NEUTRAL.items():
        value = (generation_config or {}).get(key)
        if value is None:
            continue
        wanted = requested.get(key, neutral)
        if key == "temperature" and greedy_ignores_temperature and wanted == 0.0:
            continue
        try:
            differs = float(value) != float(wanted)
        except (TypeError, ValueError):
            differs = True
        if differs:
            out.append(f"{key}={value} (requested {wanted})")
    return out


def report_generation_config(model_dir: str | Path) -> list[str]:
    """Log, once per directory and process, the sampling keys of the model's ``generation_config.json``.

    The project's decoding sets every sampling field itself (:func:`explicit_generation_config`),
    so the file changes nothing here; the warning says so, and that a server started with
    vLLM ``--generation-config auto`` would apply them.

    Returns:
        The overrides found (:func:`generation_config_overrides` against :data:`SAMPLING_NEUTRAL`),
        also when they were already reported.
    """
    key = str(Path(model_dir).expanduser().resolve())
    found = generation_config_overrides(read_generation_config(model_dir), SAMPLING_NEUTRAL, greedy_ignores_temperature=False)
    if found and key not in _reported:
        _reported.add(key)
        log.warning(
            "base model %s: its generation_config.json sets %s; hyperpod-rl sets every sampling parameter from the run "
            "config, so training and evaluation ignore them (a vLLM server with --generation-config auto would apply them)",
            key,
            ", ".join(found),
        )
    return found


def explicit_generation_config(
    *,
    greedy: bool,
    temperature: float,
    max_new_tokens: int,
    eos_token_id: int,
    pad_token_id: int | None,
    suppress_tokens: Sequence[int] = (),
) -> Any:
    """A transformers ``GenerationConfig`` with every sampling field set from the arguments.

    Sampling is plain ancestral sampling at ``temperature`` over the whole vocabulary minus
    ``suppress_tokens`` (top-k, top-p, min-p, typical-p, epsilon/eta cutoffs, repetition and
    n-gram penalties all off, one beam), which is the distribution the trainer's log-probs are
    taken over. ``greedy`` is argmax decoding (penalties off, one beam; the sampling-only
    warpers do not act).

    Args:
        greedy: argmax instead of sampling.
        temperature: sampling temperature (> 0); ignored when greedy.
        max_new_tokens: response token limit.
        eos_token_id: the end-of-turn token.
        pad_token_id: the padding token.
        suppress_tokens: token ids that are never generated (the vision special tokens).

    Returns:
        ``transformers.GenerationConfig``.
    """
    from transformers import GenerationConfig

    # Warpers act only when sampling (transformers applies them under do_sample=True), so greedy
    # leaves them out: transformers flags them as invalid flags for greedy decoding.
    warpers = {} if greedy else {"top_k": 0, "top_p": 1.0, "min_p": 0.0, "typical_p": 1.0, "epsilon_cutoff": 0.0, "eta_cutoff": 0.0}
    return GenerationConfig(
        do_sample=not greedy,
        temperature=1.0 if greedy else float(temperature),
        **warpers,
        repetition_penalty=1.0,
        encoder_repetition_penalty=1.0,
        no_repeat_ngram_size=0,
        length_penalty=1.0,
        num_beams=1,
        num_beam_groups=1,
        num_return_sequences=1,
        min_new_tokens=0,
        max_new_tokens=int(max_new_tokens),
        suppress_tokens=list(suppress_tokens),
        begin_suppress_tokens=[],
        bad_words_ids=None,
        eos_token_id=eos_token_id,
        pad_token_id=pad_token_id,
        renormalize_logits=False,
    )
