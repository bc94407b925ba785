"""A colocated vLLM rollout engine for the reference backend (``rollout.engine: vllm``).

One offline ``vllm.LLM`` lives in the training process, on the training GPU, beside the policy
being trained (the layout of TRL's ``vllm_mode="colocate"`` and of SkyRL's ``colocate_all``):

* **Weights.** vLLM loads the base model from the run's base-model directory once; only the LoRA
  adapter changes. After every update the trainer writes the adapter into a sync folder (peft's
  ``adapter_config.json`` once, and ``get_peft_model_state_dict``'s tensors cast to the engine's
  bf16, the dtype vLLM casts LoRA weights to on load anyway, with safetensors: half the bytes of
  peft's float32 file, so nothing the engine computes changes) and the engine reloads it under one
  ``LoRARequest`` id
  with ``load_inplace=True`` (vLLM 0.23 ``vllm/lora/request.py``: "forces reloading the adapter
  even if one with the same lora_int_id already exists"), so no adapter piles up in the engine.
  vLLM 0.23 has no in-memory LoRA path for offline engines (its other loader is tensorizer's), so
  the sync goes through a file; :attr:`VLLMEngine.timings` records its seconds.
* **Memory.** With ``rollout.engine_sleep`` (the default) the engine is created with
  ``enable_sleep_mode=True``. Between the rollout and the policy update it sleeps at level 1
  (weights offloaded to pinned CPU memory, KV cache dropped), so the update has the GPU; it wakes
  before the next rollout. With ``engine_sleep: false`` it stays awake (TRL's colocate default):
  no sleep and wake each step, its memory held beside the update's. The memory fraction it may
  take is chosen by the trainer (:func:`hyperpod_rl.plan.memory.vllm_rollout_fraction`).
* **Sampling exactly as the run config says.** ``generation_config="vllm"``: the checkpoint's
  ``generation_config.json`` never changes sampling (vLLM's default ``"auto"`` would apply it as
  request defaults: :mod:`hyperpod_rl.model.sampling`). Every request sets temperature, ``top_p=1``,
  ``top_k=0``, ``min_p=0``, no penalties, ``max_tokens`` and the end-of-turn stop token, and a
  per-request seed drawn from the trainer's RNG (reproducible runs).
* **Vision tokens stay out of samples**: vision special tokens are ``bad_words`` (set to -inf
  before sampling), so a sampled response never holds ``<|image_pad|>``.
* **Log-probs of the sampled tokens** come back with every response (``logprobs=0``) in
  ``logprobs_mode="processed_logprobs"``: after the bad-words mask and temperature (vLLM 0.23
  ``vllm/config/model.py``: "Processed means the values after applying all processors, including
  temperature"), the same distribution the trainer scores (the vocabulary without vision tokens,
  at the rollout temperature; :meth:`hyperpod_rl.model.policy.MazePolicy.score`). The trainer
  compares the two per token (``rollout/logprob_gap_mean|max``) and corrects the difference with
  truncated importance weights (:mod:`hyperpod_rl.train.grpo`).
* **Prompts** are the chat-template text the policy's processor renders (the trainer's own
  template, so both sides see the same tokens) plus the observation images as
  ``multi_modal_data``; vLLM expands each image placeholder with its own copy of the checkpoint's
  image processor.

The engine core runs in this process (``VLLM_ENABLE_V1_MULTIPROCESSING=0``, as TRL's colocate
mode does): sleep, wake and the adapter reload act on the same CUDA context as the trainer.

Only :meth:`VLLMEngine.create` imports vLLM; everything else here (request building, the
conversion of vLLM outputs into :class:`~hyperpod_rl.model.policy.Action` objects) is plain Python
and tested on the CPU.
"""

from __future__ import annotations

import importlib.util
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import torch
from PIL import Image

from hyperpod_rl.errors import ConfigError
from hyperpod_rl.model.policy import Action, Conversation, split_images
from hyperpod_rl.model.tiny import VISION_SPECIAL_TOKENS

__all__ = ["EngineChoice", "VLLMEngine", "choose_engine", "save_adapter_for_engine", "vllm_importable"]

#: the one ``LoRARequest`` id the policy's adapter is served under (reloaded in place every step)
POLICY_LORA_ID = 1


def vllm_importable() -> bool:
    """Whether ``import vllm`` can work here (found on the path; not imported)."""
    return importlib.util.find_spec("vllm") is not None


@dataclass(frozen=True)
class EngineChoice:
    """Which rollout engine a reference run uses, and why (one line for the job log)."""

    engine: Literal["hf", "vllm"]
    reason: str


def choose_engine(
    requested: Literal["auto", "hf", "vllm"], *, device: torch.device, action_constraint: str, vllm_found: bool | None = None
) -> EngineChoice:
    """Resolve ``rollout.engine`` for a reference run.

    ``auto`` picks vLLM on a CUDA device where vLLM imports and the run generates freely
    (``action_constraint="none"``); otherwise the in-process transformers path (the constrained
    "directions" action is one forward pass, which vLLM would not speed up).

    Args:
        requested: the config's ``rollout.engine``.
        device: the training device.
        action_constraint: the config's ``rollout.action_constraint``.
        vllm_found: whether vLLM is importable (default: looked up).

    Raises:
        ConfigError: ``vllm`` asked for where it cannot run (no CUDA device, vLLM not installed,
            or constrained actions), naming the fix.
    """
    found = vllm_importable() if vllm_found is None else vllm_found
    if requested == "hf":
        return EngineChoice("hf", "rollout.engine=hf")
    problems = []
    if device.type != "cuda":
        problems.append(f"the trainer runs on {device.type}, and vLLM rollouts need a CUDA GPU")
    if not found:
        problems.append("vllm is not installed in the job's environment")
    if action_constraint != "none":
        problems.append(
            f"rollout.action_constraint={action_constraint!r} samples one answer word per forward pass (no decoding to speed up)"
        )
    if requested == "vllm" and problems:
        raise ConfigError(
            "rollout.engine=vllm cannot run here: " + "; ".join(problems) + ". Use rollout.engine=auto (or hf), "
            "or run on a CUDA GPU with vllm installed and rollout.action_constraint=none"
        )
    if problems:
        return EngineChoice("hf", "rollout.engine=auto: transformers in-process, because " + "; ".join(problems))
    return EngineChoice("vllm", f"rollout.engine={requested}: colocated vLLM engine")


def sampling_kwargs(
    *, greedy: bool, temperature: float, max_tokens: int, stop_token_id: int, seed: int | None, bad_words: Sequence[str]
) -> dict[str, Any]:
    """Every ``vllm.SamplingParams`` field that decides what is drawn, set from the run config alone.

    Nothing is left to a default that a model's ``generation_config.json`` could fill (vLLM's
    ``get_diff_sampling_param``); ``temperature=0`` is vLLM's greedy decoding.
    """
    return {
        "n": 1,
        "temperature": 0.0 if greedy else float(temperature),
        "top_p": 1.0,
        "top_k": 0,
        "min_p": 0.0,
        "presence_penalty": 0.0,
        "frequency_penalty": 0.0,
        "repetition_penalty": 1.0,
        "max_tokens": int(max_tokens),
        "stop_token_ids": [int(stop_token_id)],
        "seed": seed,
        "logprobs": 0,  # the sampled token's log-prob only
        "bad_words": list(bad_words),
        "skip_special_tokens": False,
        "detokenize": True,
    }


def to_action(token_ids: Sequence[int], logprobs: Sequence[Any] | None, text: str, *, eos_id: int) -> Action:
    """One vLLM ``CompletionOutput`` (its ``token_ids``, ``logprobs``, ``text``) as an :class:`Action`.

    ``logprobs`` is vLLM's per-position list of ``{token_id: Logprob}`` dicts (the sampled token is
    always among them with ``logprobs=0``); a plain float per position is accepted too. The
    response ends at its first end-of-turn token, kept (as the transformers path keeps it), and
    every response token is sampled (``loss_mask`` all True).

    Raises:
        ValueError: the log-prob list does not cover the tokens, or a position lacks the sampled token.
    """
    ids = [int(t) for t in token_ids]
    end = ids.index(eos_id) + 1 if eos_id in ids else len(ids)
    ids = ids[:end]
    token_lps: list[float] = []
    if logprobs is not None:
        if len(logprobs) < len(ids):
            raise ValueError(f"vLLM returned {len(logprobs)} log-prob positions for {len(ids)} tokens")
        for pos, (tok, entry) in enumerate(zip(ids, logprobs, strict=False)):
            if isinstance(entry, (int, float)):
                token_lps.append(float(entry))
                continue
            if tok not in entry:
                raise ValueError(f"vLLM's log-probs at position {pos} lack the sampled token {tok}")
            value = entry[tok]
            token_lps.append(float(getattr(value, "logprob", value)))
    text = text.replace("<|im_end|>", "")
    return Action(text=text, response_ids=ids, loss_mask=[True] * len(ids), logprob=float(sum(token_lps)), token_logprobs=token_lps or None)


def save_adapter_for_engine(model: Any, folder: Path, *, write_config: bool = True, dtype: torch.dtype = torch.bfloat16) -> int:
    """Write a peft model's active adapter as vLLM loads it: ``adapter_model.safetensors`` + ``adapter_config.json``.

    The tensors are peft's own (``get_peft_model_state_dict``: the keys ``save_pretrained`` writes;
    no embedding layers, which our adapters never train, so peft does not look the base model's
    config up on the Hub to decide) cast to ``dtype``, the engine's LoRA dtype (vLLM casts adapter weights to the model's dtype on
    load: vLLM 0.23 ``vllm/lora/worker_manager.py`` passes ``lora_config.lora_dtype``, the model dtype by default, to ``LoRAModel.from_local_checkpoint``), so the engine computes with the same numbers as from
    peft's float32 file, from half the bytes.

    Args:
        model: a peft ``PeftModel``.
        folder: the sync folder (created).
        write_config: also write ``adapter_config.json`` (needed once: the config never changes in a run).
        dtype: the engine's dtype.

    Returns:
        Bytes of tensors written.

    Raises:
        OSError: the folder cannot be written.
    """
    from peft import get_peft_model_state_dict
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    if write_config or not (folder / "adapter_config.json").exists():  # peft's own config file, as save_pretrained writes it
        model.save_pretrained(str(folder), save_embedding_layers=False)
    state = {
        k: v.detach().to(device="cpu", dtype=dtype).contiguous()
        for k, v in get_peft_model_state_dict(model, save_embedding_layers=False).items()
    }
    tmp = folder / "adapter_model.safetensors.tmp"
    save_file(state, str(tmp), metadata={"format": "pt"})
    tmp.replace(folder / "adapter_model.safetensors")
    return sum(t.numel() * t.element_size() for t in state.values())


@dataclass
class VLLMEngine:
    """The colocated engine: :meth:`act` has :meth:`MazePolicy.act`'s signature, so
    :func:`~hyperpod_rl.model.rollout.play_episodes` plays every episode of a turn through it in one
    ``generate`` call (all groups batched).

    Build it with :meth:`create`; ``llm`` is the ``vllm.LLM``.
    """

    llm: Any
    processor: Any
    max_new_tokens: int
    sync_dir: Path
    eos_id: int
    bad_words: list[str]
    lora_rank: int
    #: created with sleep mode (``rollout.engine_sleep``); without it :meth:`sleep` and :meth:`wake` do nothing
    sleep_mode: bool = True
    sleeping: bool = False
    adapter_version: int = 0
    #: the ``LoRARequest`` every request names (None until the first :meth:`sync_adapter`)
    lora_request: Any = None
    #: the in-place reload :meth:`act` applies once before its next ``generate`` (None: nothing pending)
    pending_reload: Any = None
    #: seconds (accumulated; callers reset): generate, adapter save + reload, sleep, wake
    timings: dict[str, float] = field(default_factory=lambda: {"generate_s": 0.0, "sync_s": 0.0, "sleep_s": 0.0, "wake_s": 0.0})
    #: tokens generated (accumulated with ``timings``)
    generated_tokens: int = 0
    start_s: float = 0.0

    @classmethod
    def create(
        cls,
        model_dir: str | Path,
        processor: Any,
        *,
        max_new_tokens: int,
        max_model_len: int,
        gpu_memory_utilization: float,
        lora_rank: int,
        max_num_seqs: int,
        seed: int,
        sync_dir: str | Path,
        sleep: bool = True,
    ) -> VLLMEngine:
        """Start the engine on the current CUDA device (about a minute: weights, torch.compile, CUDA graphs).

        Args:
            model_dir: the base model's Hugging Face checkpoint directory (the trainer's own).
            processor: the policy's processor (its chat template renders the prompts).
            max_new_tokens: response token limit per turn.
            max_model_len: longest prompt + response, tokens.
            gpu_memory_utilization: fraction of the GPU the engine may take while awake.
            lora_rank: the adapter's rank (``max_lora_rank``).
            max_num_seqs: sequences decoded together.
            seed: engine seed.
            sync_dir: where the adapter is saved for the engine to reload.
            sleep: create with sleep mode, so :meth:`sleep` frees the GPU for the update.

        Raises:
            ConfigError: vLLM is not importable.
        """
        os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # the engine core in this process (colocated)
        os.environ.setdefault("VLLM_NO_USAGE_STATS", "1")
        try:
            import vllm
        except ImportError as err:
            raise ConfigError(f"rollout.engine=vllm needs vllm in the job's environment ({err}); use rollout.engine=hf") from None
        t0 = time.perf_counter()
        llm = vllm.LLM(
            model=str(model_dir),
            tokenizer=str(model_dir),
            dtype="bfloat16",
            seed=seed,
            enable_lora=True,
            max_lora_rank=max(8, lora_rank),
            max_loras=1,
            gpu_memory_utilization=gpu_memory_utilization,
            max_model_len=max_model_len,
            max_num_seqs=max_num_seqs,
            enable_sleep_mode=sleep,
            enable_prefix_caching=True,
            generation_config="vllm",
            logprobs_mode="processed_logprobs",
            limit_mm_per_prompt={"image": 1, "video": 0},
        )
        tok = processor.tokenizer
        vocab = set(tok.get_vocab())
        engine = cls(
            llm=llm,
            processor=processor,
            max_new_tokens=max_new_tokens,
            sync_dir=Path(sync_dir),
            eos_id=tok.convert_tokens_to_ids("<|im_end|>"),
            bad_words=[t for t in VISION_SPECIAL_TOKENS if t in vocab],
            lora_rank=lora_rank,
            sleep_mode=sleep,
        )
        engine.start_s = time.perf_counter() - t0
        return engine

    # ------------------------------------------------------------------ weights
    def sync_adapter(self, model: Any) -> float:
        """Save the peft model's adapter and have the engine reload it in place; returns seconds.

        Raises:
            OSError: the sync folder cannot be written.
        """
        from vllm.lora.request import LoRARequest

        t0 = time.perf_counter()
        save_adapter_for_engine(model, self.sync_dir, write_config=self.adapter_version == 0)
        self.adapter_version += 1
        # reloaded once, in place, before the next generate; requests then name the same id without
        # load_inplace (with it, vLLM would reload the adapter from disk at every scheduler step)
        self.pending_reload = LoRARequest("policy", POLICY_LORA_ID, str(self.sync_dir), load_inplace=True)
        self.lora_request = LoRARequest("policy", POLICY_LORA_ID, str(self.sync_dir))
        dt = time.perf_counter() - t0
        self.timings["sync_s"] += dt
        return dt

    def sleep(self) -> None:
        """Free the GPU for the update (level 1: weights to CPU, KV cache dropped); nothing without sleep mode."""
        if self.sleeping or not self.sleep_mode:
            return
        t0 = time.perf_counter()
        self.llm.sleep(level=1)
        self.sleeping = True
        self.timings["sleep_s"] += time.perf_counter() - t0

    def wake(self) -> None:
        """Take the GPU back before a rollout (the trainer's cached blocks are released first)."""
        if not self.sleeping:
            return
        t0 = time.perf_counter()
        torch.cuda.empty_cache()
        self.llm.wake_up()
        self.sleeping = False
        self.timings["wake_s"] += time.perf_counter() - t0

    # ------------------------------------------------------------------ acting
    def requests(self, prompts: Sequence[Conversation]) -> list[dict[str, Any]]:
        """vLLM prompt dicts: the policy's chat-template text and the observation images.

        An image is decoded once per call however many prompts show it (a group's episodes share
        their first observation), and no image cache key is computed (vLLM hashes what it caches).
        """
        out = []
        decoded: dict[str, Image.Image] = {}
        for messages in prompts:
            tmpl, images = split_images(messages, decoded)
            text = self.processor.apply_chat_template(tmpl, add_generation_prompt=True, tokenize=False)
            req: dict[str, Any] = {"prompt": text}
            if images:
                req["multi_modal_data"] = {"image": images if len(images) > 1 else images[0]}
            out.append(req)
        return out

    def act(
        self,
        prompts: Sequence[Conversation],
        *,
        greedy: bool = False,
        temperature: float = 1.0,
        generator: torch.Generator | None = None,
    ) -> list[Action]:
        """Answer each of B observations in one ``generate`` call (see :meth:`MazePolicy.act`).

        Per-request seeds are drawn from ``generator`` (the trainer's), so a run is reproducible
        for a given engine build.
        """
        if not prompts:
            return []
        import vllm

        self.wake()
        seeds = torch.randint(0, 2**31 - 1, (len(prompts),), generator=generator).tolist()
        params = [
            vllm.SamplingParams(
                **sampling_kwargs(
                    greedy=greedy,
                    temperature=temperature,
                    max_tokens=self.max_new_tokens,
                    stop_token_id=self.eos_id,
                    seed=int(s),
                    bad_words=self.bad_words,
                )
            )
            for s in seeds
        ]
        lora = self.lora_request
        t0 = time.perf_counter()
        if self.pending_reload is not None:
            self.llm.llm_engine.add_lora(self.pending_reload)  # load_inplace: replaces the previous step's weights
            self.pending_reload = None
            self.timings["sync_s"] += time.perf_counter() - t0
            t0 = time.perf_counter()
        outs = self.llm.generate(self.requests(prompts), params, lora_request=lora, use_tqdm=False)
        self.timings["generate_s"] += time.perf_counter() - t0
        actions = [to_action(o.outputs[0].token_ids, o.outputs[0].logprobs, o.outputs[0].text, eos_id=self.eos_id) for o in outs]
        self.generated_tokens += sum(len(a.response_ids) for a in actions)
        return actions
