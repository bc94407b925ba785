"""Acting and scoring with a Qwen3-VL policy: one move per observation.

Shared by the reference GRPO trainer (sampling and the policy update), evaluation (greedy) and
local serving, so all three decode the same way.

Action formats (``RolloutConfig.action_constraint``):

- ``"directions"``: constrained decoding. The response is ``<answer>`` + one sampled direction
  token + ``</answer>`` + end-of-turn. Only the direction token is sampled, from the policy's
  distribution restricted to the four direction tokens (softmax over their logits), and only
  its log-probability enters the loss. Tiny random models need this (docs/references.md §5:
  left free, they first have to learn the answer format and then collapse).
- ``"none"``: free generation with ``model.generate``, all B observations of a call in one
  left-padded batch decoded with the KV cache; vision special tokens are suppressed at sampling
  time and log-probs are taken over the vocabulary without them, so sampling and training see
  the same distribution. Every sampling parameter is set explicitly
  (:func:`~hyperpod_rl.model.sampling.explicit_generation_config`): the base model's
  ``generation_config.json`` (e.g. ``top_k: 1``, or Qwen3-VL's ``top_k=20, top_p=0.8``) and
  transformers' own ``top_k=50`` default never change what is sampled. The acting log-prob is
  taken by one batched scoring pass over prompt + response (the training computation, without
  gradients).

Compiled decoding (``decode="compiled"``, the default on CUDA through ``"auto"``): free generation
uses transformers' static KV cache, with which ``generate`` runs each decode step through
``torch.compile(mode="reduce-overhead")`` - CUDA graphs on a GPU, so one step costs a graph replay
instead of a kernel launch (and a Python call) per operation; peft's LoRA layers are captured with
the rest. The prefill stays eager. So that shapes repeat across calls, the batch is filled up to a
bucket (:func:`~hyperpod_rl.config.decoding.decode_batch_rows`, filler rows are copies of the first observation and are discarded) and
every row is left-padded to a multiple of ``DECODE_LENGTH_BUCKET`` tokens; transformers keeps the
cache length at the largest seen so far. The first call of each new shape compiles (tens of
seconds on a GPU); later calls replay. Sampled tokens and their log-probs are scored afterwards by
the same eager scoring pass either way.

Devices: the policy runs where the model's parameters are (CPU or one CUDA GPU). Inputs are
built on the CPU and moved there; with bf16 base weights on CUDA, forward passes run under
``torch.autocast(bfloat16)`` so the float32 LoRA weights compute in bf16 (peft keeps adapters in
float32 for the optimizer). Log-probs, entropies and sampling probabilities are float32.

Scoring (:meth:`MazePolicy.score`) refuses a response that holds a vision special token (e.g.
``<|image_pad|>``, which the model would take for an image placeholder and fail with "Image
features and image tokens do not match") or samples a token outside the allowed vocabulary, with
a :class:`~hyperpod_rl.errors.LogprobInputError` that names the sample, position and token.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import torch
from PIL import Image

from hyperpod_rl.config.decoding import DECODE_LENGTH_BUCKET, decode_batch_rows
from hyperpod_rl.errors import ConfigError, LogprobInputError
from hyperpod_rl.model.logprobs import response_entropy, response_logprobs
from hyperpod_rl.model.sampling import explicit_generation_config
from hyperpod_rl.model.tiny import DIRECTION_TOKENS, VISION_SPECIAL_TOKENS
from hyperpod_rl.tasks.vision import decode_image_part

__all__ = [
    "Action",
    "MazePolicy",
    "PolicyBatch",
    "answer_vocabulary",
    "answer_word_ids",
    "messages_to_template",
    "prompt_key",
    "split_images",
]

Conversation = list[dict[str, Any]]

#: At most this many bytes of image features are kept by :meth:`MazePolicy.reusing_image_features`
#: (a step of the tiny model keeps a few MB; a real Qwen3-VL's image features, deepstack layers included, can be far more).
IMAGE_FEATURE_BYTES = 512 * 2**20


def _compile_config(device: torch.device) -> Any:
    """transformers ``CompileConfig`` for the decode step; allowed on the CPU too (tests), where no graphs are captured."""
    from transformers import CompileConfig

    from hyperpod_rl.model.layers import raise_recompile_limit

    raise_recompile_limit()
    config = CompileConfig(fullgraph=False, dynamic=False, mode="reduce-overhead" if device.type == "cuda" else "default")
    config._compile_all_devices = device.type != "cuda"  # transformers compiles only on accelerators unless told
    return config


@dataclass
class Action:
    """One sampled (or greedy) response.

    Attributes:
        text: decoded response, e.g. ``"<answer>up</answer>"``.
        response_ids: token ids of the response (``R`` tokens, end-of-turn included).
        loss_mask: ``R`` bools, True for tokens that were sampled (enter the loss).
        logprob: sum of the sampled tokens' log-probs under the acting policy (nats).
        token_logprobs: the sampled tokens' log-probs one by one (nats, in response order, one
            per True in ``loss_mask``) as the engine that sampled them reported them; ``None``
            where only the sum is known (constrained decoding).
    """

    text: str
    response_ids: list[int]
    loss_mask: list[bool]
    logprob: float
    token_logprobs: list[float] | None = None


def answer_word_ids(tokenizer: Any, words: Sequence[str]) -> list[int]:
    """The token id of each answer word (``rollout.action_constraint='directions'``), in the order given.

    Raises:
        ConfigError: the task has no answer words, or a word is more than one token in this tokenizer.
    """
    if not words:
        raise ConfigError("rollout.action_constraint='directions' needs the task's answer words; this task has none: use 'none'")
    ids = []
    for word in words:
        enc = tokenizer.encode(word, add_special_tokens=False)
        if len(enc) != 1:
            raise ConfigError(
                f"rollout.action_constraint='directions' needs each answer word to be one token; "
                f"{word!r} is {len(enc)} tokens in this tokenizer: use action_constraint='none'"
            )
        ids.append(enc[0])
    return ids


def answer_vocabulary(tokenizer: Any, words: Sequence[str]) -> list[int]:
    """The tokens a vLLM engine may sample under ``action_constraint='directions'``: the answer words, the
    ``<answer>`` / ``</answer>`` tags and end-of-turn (sorted ids, for ``SamplingParams.allowed_token_ids``).

    The SkyRL backend's rollouts constrain this way: its VLM generator re-renders the conversation's text each
    turn and slices the observation's tokens at the end of the sampled ones, so a turn's text must tokenize back
    to the tokens sampled (a random-init model's free tokens almost never do: seen on the GPU as "Image features
    and image tokens do not match"). Every sequence of up to three of these tokens is checked to tokenize back
    to itself here (merges are local, so longer sequences follow).

    Raises:
        ConfigError: see :func:`answer_word_ids`; a tag is not one token; or some of these tokens merge when
            written one after another in this tokenizer.
    """
    ids = set(answer_word_ids(tokenizer, words))
    for tag in ("<answer>", "</answer>"):
        enc = tokenizer.encode(tag, add_special_tokens=False)
        if len(enc) != 1:
            raise ConfigError(
                f"rollout.action_constraint='directions' needs {tag!r} to be one token; it is {len(enc)} in this tokenizer: "
                "use action_constraint='none'"
            )
        ids.add(enc[0])
    ids.add(tokenizer.convert_tokens_to_ids("<|im_end|>"))
    out = sorted(ids)
    for seq in itertools.chain(itertools.product(out, repeat=2), itertools.product(out, repeat=3)):
        if tokenizer.encode(tokenizer.decode(list(seq)), add_special_tokens=False) != list(seq):
            raise ConfigError(
                f"rollout.action_constraint='directions': the answer tokens {tokenizer.convert_ids_to_tokens(list(seq))} merge "
                "when written one after another in this tokenizer, so a turn would not tokenize back to what was sampled: "
                "use action_constraint='none' with a model that writes well-formed answers"
            )
    return out


def prompt_key(messages: Conversation) -> str:
    """A stable key of a conversation (text and image bytes), for de-duplicating forward passes."""
    return hashlib.sha1(json.dumps(messages, sort_keys=True, default=str).encode()).hexdigest()


def split_images(messages: Conversation, decoded: dict[str, Image.Image] | None = None) -> tuple[Conversation, list[Image.Image]]:
    """Template-ready messages (image parts as ``{"type": "image"}``) and their images, in order.

    ``decoded`` maps an image part's data URL to its decoded image and is filled as it goes, so
    a URL seen before (the same observation in several prompts) is not decoded again. Parts that
    hold an image object or bytes are decoded each time.

    Raises:
        TaskError: an image part cannot be decoded (:func:`~hyperpod_rl.tasks.vision.decode_image_part`).
    """
    cache = {} if decoded is None else decoded
    images: list[Image.Image] = []
    out: Conversation = []
    for msg in messages:
        content = msg["content"]
        if isinstance(content, str):
            out.append({"role": msg["role"], "content": content})
            continue
        parts = []
        for part in content:
            if part.get("type") in ("image", "image_url"):
                url = part.get("image_url", {}).get("url") if isinstance(part.get("image_url"), dict) else None
                if url is None:
                    images.append(decode_image_part(part))
                else:
                    if url not in cache:
                        cache[url] = decode_image_part(part)
                    images.append(cache[url])
                parts.append({"type": "image"})
            else:
                parts.append(part)
        out.append({"role": msg["role"], "content": parts})
    return out, images


def _json_key(messages: Conversation) -> str | None:
    """A key of a conversation that is plain JSON (images as data URLs); ``None`` for one that holds
    objects (a PIL image, bytes), whose text form would not tell two of them apart."""
    try:
        return hashlib.sha1(json.dumps(messages, sort_keys=True).encode()).hexdigest()
    except (TypeError, ValueError):
        return None


def messages_to_template(messages: Conversation) -> tuple[Conversation, list[Image.Image], list[str]]:
    """Split chat messages into template-ready messages, their images and image cache keys."""
    out, images = split_images(messages)
    keys = [hashlib.sha1(img.tobytes() + bytes(str(img.size), "ascii")).hexdigest() for img in images]
    return out, images, keys


@dataclass
class PolicyBatch:
    """Scored samples.

    Attributes:
        indices: M sample indices (into the lists given to :meth:`MazePolicy.score`), row order.
        logprobs: (M, L) float32 log-probs of sampled tokens (with grad), 0 elsewhere.
        entropy: (M, L) float32 entropy of the policy at sampled positions (with grad).
        loss_mask: (M, L) bool, True at sampled tokens.
    """

    indices: list[int]
    logprobs: torch.Tensor
    entropy: torch.Tensor
    loss_mask: torch.Tensor


class MazePolicy:
    """A Qwen3-VL model plus processor that answers one move per observation.

    Args:
        model: ``Qwen3VLForConditionalGeneration`` (optionally wrapped by peft).
        processor: its processor (tokenizer + image processor + chat template).
        action_constraint: ``"directions"`` or ``"none"`` (see the module docstring).
        max_new_tokens: response token limit for ``"none"``.
        answer_words: the words ``"directions"`` decoding chooses from (the task's
            :attr:`~hyperpod_rl.tasks.Task.answer_words`; default the maze's four directions).

    Raises:
        ConfigError: ``"directions"`` with a tokenizer where an answer word is not one token, or no answer words.
    """

    def __init__(
        self,
        model: torch.nn.Module,
        processor: Any,
        *,
        action_constraint: Literal["directions", "none"] = "directions",
        max_new_tokens: int = 32,
        answer_words: Sequence[str] = DIRECTION_TOKENS,
        decode: Literal["auto", "eager", "compiled"] = "auto",
    ) -> None:
        self.model = model
        self.decode = decode
        self.answer_words = tuple(answer_words)
        self.processor = processor
        self.tokenizer = processor.tokenizer
        self.action_constraint = action_constraint
        self.max_new_tokens = max_new_tokens
        self._cache: dict[tuple[str, tuple[str, ...]], dict[str, torch.Tensor]] = {}
        #: a JSON conversation's :func:`_json_key` -> its key in ``_cache``
        self._keys: dict[str, tuple[str, tuple[str, ...]]] = {}
        tok = self.tokenizer
        vocab_size = self._lm_head().weight.shape[0]
        vision_ids = {tok.convert_tokens_to_ids(t) for t in VISION_SPECIAL_TOKENS} & set(range(vocab_size))
        self.eos_id = tok.convert_tokens_to_ids("<|im_end|>")
        if action_constraint == "directions":
            self.allowed_ids = torch.tensor(answer_word_ids(tok, self.answer_words))
            self.prefix_ids = tok.encode("<answer>", add_special_tokens=False)
            self.suffix_ids = tok.encode("</answer>", add_special_tokens=False) + [self.eos_id]
        else:
            self.allowed_ids = torch.tensor([i for i in range(vocab_size) if i not in vision_ids])
            self.prefix_ids, self.suffix_ids = [], []
        self._remap = torch.full((vocab_size,), -1, dtype=torch.long)
        self._remap[self.allowed_ids] = torch.arange(len(self.allowed_ids))
        self.suppress_ids = sorted(vision_ids)
        self._vocab_size = vocab_size
        self._allowed_on: dict[torch.device, torch.Tensor] = {}
        #: seconds spent in free generation, split into decoding and the acting log-prob pass
        #: (accumulated; callers reset it to measure a phase)
        self.timings: dict[str, float] = {"decode_s": 0.0, "rollout_score_s": 0.0}

    # ------------------------------------------------------------------ device
    @property
    def compiled_decode(self) -> bool:
        """Whether free generation uses the static KV cache and the compiled decode step (``decode``)."""
        return self.decode == "compiled" or (self.decode == "auto" and self.device.type == "cuda")

    def rollout_path(self) -> str:
        """One line saying how :meth:`act` produces answers here (the trainer logs it at start)."""
        if self.action_constraint == "directions":
            return "constrained: one forward pass per observation samples an answer word (no token-by-token decoding)"
        if self.compiled_decode:
            return f"free generation, compiled decoding (static KV cache, torch.compile'd step; rollout.decode={self.decode})"
        return f"free generation, eager decoding (dynamic KV cache; rollout.decode={self.decode})"

    @property
    def device(self) -> torch.device:
        """Where the model's parameters are (inputs are moved there)."""
        return next(self.model.parameters()).device

    def _autocast(self) -> contextlib.AbstractContextManager[None]:
        """bf16 autocast on CUDA when the base weights are bf16 (float32 LoRA computes in bf16)."""
        dev = self.device
        if dev.type == "cuda" and self._lm_head().weight.dtype == torch.bfloat16:
            return torch.autocast("cuda", dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def _allowed(self) -> torch.Tensor:
        """``allowed_ids`` on the model's device (cached)."""
        dev = self.device
        if dev not in self._allowed_on:
            self._allowed_on[dev] = self.allowed_ids.to(dev)
        return self._allowed_on[dev]

    @staticmethod
    def _to(inputs: dict[str, torch.Tensor], device: torch.device) -> dict[str, torch.Tensor]:
        return {k: v.to(device, non_blocking=True) for k, v in inputs.items()}

    # ------------------------------------------------------------------ model parts
    def _unwrapped(self) -> torch.nn.Module:
        model = self.model
        if hasattr(model, "get_base_model"):
            model = model.get_base_model()
        return model

    def _lm_head(self) -> torch.nn.Module:
        return self._unwrapped().lm_head

    def _hidden(self, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
        """Final hidden states (B, L, H) of the (possibly LoRA-wrapped) model, on its device."""
        with self._autocast():
            return self._unwrapped().model(**self._to(inputs, self.device), use_cache=False).last_hidden_state

    @contextlib.contextmanager
    def reusing_image_features(self, max_bytes: int = IMAGE_FEATURE_BYTES) -> Iterator[None]:
        """Within the block, the vision tower encodes a batch of images only when one of them is new.

        A GRPO step encodes each observation in its rollout and again in its update, with the same
        frozen vision weights. Inside this block a batch whose images were all encoded before (by their
        pixels and grid) takes their features from then; a batch with a new image is encoded whole, as
        outside it, and its features are kept (at most ``max_bytes`` of them; the first kept for an
        image stays). So a rollout turn runs as before, and the update, which only meets images its
        rollout encoded, runs no vision tower. The features leave with the block: what a step computes
        does not depend on the steps before it (a resumed run stays bit-identical).

        Does nothing where a vision parameter is trained (LoRA on the vision tower: its features need
        gradients and change with the adapter) or the model has no Qwen-VL vision tower.
        """
        inner = getattr(self._unwrapped(), "model", None)
        visual = getattr(inner, "visual", None)
        original = getattr(inner, "get_image_features", None)
        if visual is None or original is None or any(p.requires_grad for p in visual.parameters()):
            yield
            return
        merge = int(getattr(visual, "spatial_merge_size", 1)) ** 2
        kept: dict[tuple[tuple[int, ...], bytes], tuple[torch.Tensor, list[torch.Tensor]]] = {}
        kinds: list[type] = []  # the output class of the tower's first call
        held = 0

        def features(pixel_values: torch.Tensor, image_grid_thw: torch.Tensor, **kwargs: Any) -> Any:
            nonlocal held
            grids = [tuple(int(x) for x in g) for g in image_grid_thw.tolist()]
            rows = [g[0] * g[1] * g[2] for g in grids]
            starts = list(itertools.accumulate(rows, initial=0))
            keys = [
                (grid, hashlib.blake2b(pixel_values[a:b].detach().cpu().contiguous().numpy().tobytes(), digest_size=20).digest())
                for grid, a, b in zip(grids, starts, starts[1:], strict=False)
            ]
            if keys and kinds and all(k in kept for k in keys):
                layers = len(kept[keys[0]][1])
                return kinds[0](
                    pooler_output=tuple(kept[k][0] for k in keys),
                    deepstack_features=[torch.cat([kept[k][1][i] for k in keys]) for i in range(layers)],
                )
            out = original(pixel_values, image_grid_thw, **kwargs)
            if not isinstance(getattr(out, "pooler_output", None), tuple) or not hasattr(out, "deepstack_features"):
                return out  # not Qwen3-VL's per-image features: nothing is kept
            kinds[:] = [type(out)]
            sizes = [r // merge for r in rows]
            deep_parts = [torch.split(d, sizes) for d in (out.deepstack_features or [])]
            for i, (key, pooled_i) in enumerate(zip(keys, out.pooler_output, strict=True)):
                size = pooled_i.numel() * pooled_i.element_size() * (1 + len(deep_parts))
                if key not in kept and held + size <= max_bytes:
                    kept[key] = (pooled_i.detach(), [parts[i].detach() for parts in deep_parts])
                    held += size
            return out

        inner.get_image_features = features
        try:
            yield
        finally:
            del inner.get_image_features  # the class's method again

    # ------------------------------------------------------------------ encoding
    def _encode_prompt(self, messages: Conversation) -> dict[str, torch.Tensor]:
        return self._encode_prompts([messages])[0]

    def _encode_prompts(self, prompts: Sequence[Conversation]) -> list[dict[str, torch.Tensor]]:
        """The processor's inputs of each prompt (``input_ids``, ``attention_mask``, ``mm_token_type_ids``
        (1, L); ``pixel_values``, ``image_grid_thw`` of its images), from a cache keyed by the
        template text and the images' bytes (found without decoding the images again for a JSON
        conversation seen before, its images as data URLs: :func:`_json_key`).

        The prompts the cache lacks are encoded by one processor call: each call costs about 4 ms
        on top of its inputs' work (transformers validates its keyword arguments per call), and a
        rollout turn meets dozens of new observations. Each prompt's tensors are cut out of that
        batch and equal what a call with the prompt alone returns (the tokenizer and the image
        processor treat each text and image on its own; tests/model/test_prompt_encoding.py).
        """
        keyed: list[tuple[tuple[str, tuple[str, ...]], list[Image.Image]]] = []
        for messages in prompts:
            pkey = _json_key(messages)  # a conversation seen before: no image decoding, no template
            known = self._keys.get(pkey) if pkey is not None else None
            if known is not None and known in self._cache:
                keyed.append((known, []))
                continue
            tmpl, images, keys = messages_to_template(messages)
            text = self.processor.apply_chat_template(tmpl, add_generation_prompt=True, tokenize=False)
            keyed.append(((text, tuple(keys)), images))
            if pkey is not None:
                self._keys[pkey] = (text, tuple(keys))
        missing: dict[tuple[str, tuple[str, ...]], list[Image.Image]] = {}
        for key, images in keyed:
            if key not in self._cache:
                missing.setdefault(key, images)
        new = self._process(list(missing), list(missing.values())) if missing else {}
        out = [new[key] if key in new else self._cache[key] for key, _ in keyed]
        if len(self._cache) + len(new) > 20000:
            self._cache.clear()
            self._keys.clear()
        self._cache.update(new)
        return out

    def _process(
        self, keys: list[tuple[str, tuple[str, ...]]], images: list[list[Image.Image]]
    ) -> dict[tuple[str, tuple[str, ...]], dict[str, torch.Tensor]]:
        """One processor call over several (text, images) prompts, cut into each prompt's inputs."""
        if len(keys) == 1:
            enc = self.processor(text=[keys[0][0]], images=images[0] or None, return_tensors="pt")
            return {keys[0]: dict(enc.items())}
        flat = [img for imgs in images for img in imgs]
        enc = self.processor(text=[text for text, _ in keys], images=flat or None, padding=True, return_tensors="pt")
        mask = enc["attention_mask"]
        per_image = [k for k in ("pixel_values", "image_grid_thw") if k in enc]
        per_token = [k for k, v in enc.items() if k not in per_image and isinstance(v, torch.Tensor) and v.shape == mask.shape]
        if set(enc) - set(per_token) - set(per_image):  # a processor with other outputs: one call per prompt
            return {key: self._process([key], [imgs])[key] for key, imgs in zip(keys, images, strict=True)}
        rows_per_image = enc["image_grid_thw"].prod(-1).tolist() if flat else []
        out: dict[tuple[str, tuple[str, ...]], dict[str, torch.Tensor]] = {}
        image, row = 0, 0
        for i, (key, imgs) in enumerate(zip(keys, images, strict=True)):
            kept = mask[i].nonzero().flatten()
            first, end = int(kept[0]), int(kept[-1]) + 1  # padding sits on one side (tokenizer.padding_side)
            one = {k: enc[k][i : i + 1, first:end].clone() for k in per_token}
            if imgs:
                rows = sum(rows_per_image[image : image + len(imgs)])
                one["pixel_values"] = enc["pixel_values"][row : row + rows].clone()
                one["image_grid_thw"] = enc["image_grid_thw"][image : image + len(imgs)].clone()
                image, row = image + len(imgs), row + rows
            out[key] = one
        return out

    def prompt_tokens(self, messages: Conversation) -> int:
        """Tokens of one prompt as the model sees it: chat template text plus vision tokens
        (the encoding :meth:`act` uses, from the same cache)."""
        return int(self._encode_prompt(messages)["input_ids"].shape[1])

    def collate(
        self, prompts: Sequence[Conversation], prefixes: Sequence[Sequence[int]], *, length_multiple: int = 1
    ) -> tuple[dict[str, torch.Tensor], list[int]]:
        """Left-pad prompt + response-prefix tokens of B rows into model inputs.

        ``length_multiple`` pads every row on the left to the next multiple of that many tokens
        (compiled decoding keeps its shapes few that way).

        Returns:
            ``(inputs, starts)``: model inputs (``input_ids``, ``attention_mask``,
            ``mm_token_type_ids`` (B, L); ``pixel_values``, ``image_grid_thw``) and, per row, the
            position of its first response token (so the hidden state at ``starts[i] + j - 1``
            predicts response token j).
        """
        encs = self._encode_prompts(prompts)
        seqs = [torch.cat([e["input_ids"][0], torch.tensor(list(r), dtype=torch.long)]) for e, r in zip(encs, prefixes, strict=True)]
        length = -(-max(len(s) for s in seqs) // length_multiple) * length_multiple
        batch = len(seqs)
        input_ids = torch.full((batch, length), self.tokenizer.pad_token_id, dtype=torch.long)
        attention = torch.zeros((batch, length), dtype=torch.long)
        mm_types = torch.zeros((batch, length), dtype=torch.long)
        starts = []
        for i, (enc, seq) in enumerate(zip(encs, seqs, strict=True)):
            off = length - len(seq)
            input_ids[i, off:] = seq
            attention[i, off:] = 1
            plen = enc["input_ids"].shape[1]
            if "mm_token_type_ids" in enc:
                mm_types[i, off : off + plen] = enc["mm_token_type_ids"][0]
            starts.append(off + plen)
        inputs: dict[str, torch.Tensor] = {"input_ids": input_ids, "attention_mask": attention, "mm_token_type_ids": mm_types}
        pix = [e["pixel_values"] for e in encs if "pixel_values" in e]
        if pix:
            inputs["pixel_values"] = torch.cat(pix)
            inputs["image_grid_thw"] = torch.cat([e["image_grid_thw"] for e in encs if "image_grid_thw" in e])
        return inputs, starts

    @staticmethod
    def _prefix(response: Sequence[int], loss_mask: Sequence[bool]) -> tuple[int, ...]:
        """Response tokens that must be fed to the model: everything before the last sampled one."""
        last = max((j for j, s in enumerate(loss_mask) if s), default=0)
        return tuple(response[:last])

    def group_samples(
        self, contexts: Sequence[Conversation], responses: Sequence[Sequence[int]], loss_masks: Sequence[Sequence[bool]]
    ) -> list[list[int]]:
        """Group sample indices that share one forward pass (same observation, same fed prefix).

        Episodes of one GRPO group share many states (all of them at turn 1), and with
        ``action_constraint="directions"`` the sampled token itself is never fed to the model,
        so one forward serves every answer given in the same state.
        """
        groups: dict[tuple[str, tuple[int, ...]], list[int]] = {}
        for i, (ctx, resp, lm) in enumerate(zip(contexts, responses, loss_masks, strict=True)):
            groups.setdefault((prompt_key(ctx), self._prefix(resp, lm)), []).append(i)
        return list(groups.values())

    # ------------------------------------------------------------------ scoring
    def check_responses(
        self, responses: Sequence[Sequence[int]], loss_masks: Sequence[Sequence[bool]], indices: Sequence[int] | None = None
    ) -> None:
        """Refuse responses this policy cannot score, naming the sample, position and token.

        Args:
            responses, loss_masks: the samples, as for :meth:`score`.
            indices: the samples to check (default: all).

        Raises:
            LogprobInputError: see :meth:`score`.
        """
        vision = set(self.suppress_ids)
        if len(responses) != len(loss_masks):
            raise LogprobInputError(f"{len(responses)} responses but {len(loss_masks)} loss masks: pass one mask per response")
        for i in range(len(responses)) if indices is None else indices:
            resp, lm = responses[i], loss_masks[i]
            if len(resp) != len(lm):
                raise LogprobInputError(f"response {i} has {len(resp)} tokens but its loss mask {len(lm)}: pass one flag per token")
            for j, (tok, sampled) in enumerate(zip(resp, lm, strict=True)):
                tok = int(tok)
                if tok in vision:
                    name = self.tokenizer.convert_ids_to_tokens(tok)
                    raise LogprobInputError(
                        f"response {i} holds the vision token {name} (id {tok}) at position {j}: a vision token in a response "
                        "cannot be scored (the model takes it for an image placeholder); sample with vision tokens suppressed "
                        "(MazePolicy.act does; the SkyRL backend passes them to vLLM as bad_words)"
                    )
                if not 0 <= tok < self._vocab_size:
                    raise LogprobInputError(
                        f"response {i} holds token id {tok} at position {j}, outside the vocabulary (size {self._vocab_size})"
                    )
                if sampled and int(self._remap[tok]) < 0:
                    raise LogprobInputError(
                        f"response {i} samples token id {tok} ({self.tokenizer.convert_ids_to_tokens(tok)!r}) at position {j}, outside "
                        f"the tokens action_constraint={self.action_constraint!r} samples from: score responses this policy produced"
                    )

    def score(
        self,
        contexts: Sequence[Conversation],
        responses: Sequence[Sequence[int]],
        loss_masks: Sequence[Sequence[bool]],
        groups: Sequence[Sequence[int]] | None = None,
        *,
        temperature: float = 1.0,
    ) -> PolicyBatch:
        """Log-probs and entropies of the sampled tokens of N samples, with gradients.

        Args:
            contexts, responses, loss_masks: the samples (observation, response token ids,
                which response tokens were sampled).
            groups: index groups from :meth:`group_samples` (one forward each); default: all
                samples, grouped.
            temperature: the sampling temperature the log-probs are taken at.

        Returns:
            :class:`PolicyBatch` with ``logprobs`` and ``entropy`` (M, L) float32, zero outside
            ``loss_mask`` (M, L), for the M samples of ``groups`` in ``indices`` order; both over
            the allowed vocabulary (the four directions, or all but vision tokens).

        Raises:
            LogprobInputError: a response holds a vision special token, a token id outside the
                vocabulary, or samples a token outside the allowed vocabulary; or a response and
                its loss mask differ in length.
        """
        if not len(contexts) == len(responses) == len(loss_masks):
            raise LogprobInputError(
                f"{len(contexts)} contexts, {len(responses)} responses and {len(loss_masks)} loss masks: pass one of each per sample"
            )
        groups = list(groups) if groups is not None else self.group_samples(contexts, responses, loss_masks)
        self.check_responses(responses, loss_masks, [i for g in groups for i in g])
        reps = [g[0] for g in groups]
        inputs, starts = self.collate([contexts[i] for i in reps], [self._prefix(responses[i], loss_masks[i]) for i in reps])
        hidden = self._hidden(inputs)
        length = hidden.shape[1]
        indices = [i for g in groups for i in g]
        rows = torch.tensor([u for u, g in enumerate(groups) for _ in g])
        targets = torch.zeros((len(indices), length), dtype=torch.long)
        mask = torch.zeros((len(indices), length), dtype=torch.bool)
        k = 0
        for u, g in enumerate(groups):
            for i in g:
                for j, (tok, sampled) in enumerate(zip(responses[i], loss_masks[i], strict=True)):
                    if sampled:
                        targets[k, starts[u] + j - 1] = self._remap[tok]
                        mask[k, starts[u] + j - 1] = True
                k += 1
        dev = hidden.device
        targets, mask = targets.to(dev), mask.to(dev)
        weight = self._lm_head().weight[self._allowed()]
        # the head in the weights' dtype (bf16 on GPU, outside autocast: its custom backward has
        # no autocast); log-softmax, log-probs and entropies in float32
        hidden_n = hidden[rows.to(dev)].to(weight.dtype)
        logp = response_logprobs(hidden_n, weight, targets, mask, temperature=temperature)
        ent = response_entropy(hidden_n, weight, mask, temperature=temperature)
        return PolicyBatch(indices=indices, logprobs=logp, entropy=ent, loss_mask=mask)

    # ------------------------------------------------------------------ acting
    @torch.no_grad()
    def act(
        self,
        prompts: Sequence[Conversation],
        *,
        greedy: bool = False,
        temperature: float = 1.0,
        generator: torch.Generator | None = None,
    ) -> list[Action]:
        """Answer one move for each of B observations.

        Args:
            prompts: B conversations (system + user messages with image parts).
            greedy: argmax instead of sampling.
            temperature: sampling temperature (> 0).
            generator: torch RNG for reproducible sampling.

        Returns:
            B :class:`Action` objects, in order.
        """
        if not prompts:
            return []
        if self.action_constraint == "none":
            return self._act_free(prompts, greedy=greedy, temperature=temperature)
        prefix = list(self.prefix_ids)
        # One forward pass per distinct observation: episodes of a group often share a state.
        keys = [prompt_key(p) for p in prompts]
        first: dict[str, int] = {}
        uniq = [first.setdefault(k, len(first)) for k in keys]
        reps = [prompts[keys.index(k)] for k in first]
        inputs, _ = self.collate(reps, [prefix] * len(reps))
        hidden = self._hidden(inputs)[:, -1, :]  # predicts the direction token
        weight = self._lm_head().weight[self._allowed()]
        logits = (hidden.to(weight.dtype) @ weight.T).float().cpu() / temperature  # sampled on the CPU generator
        logp = torch.log_softmax(logits, dim=-1)[torch.tensor(uniq)]
        if greedy:
            choice = logp.argmax(dim=-1)
        else:
            choice = torch.multinomial(logp.exp(), 1, generator=generator).squeeze(-1)
        actions = []
        for i, c in enumerate(choice.tolist()):
            tok_id = int(self.allowed_ids[c])
            ids = prefix + [tok_id] + list(self.suffix_ids)
            actions.append(
                Action(
                    text=f"<answer>{self.answer_words[c]}</answer>",
                    response_ids=ids,
                    loss_mask=[False] * len(prefix) + [True] + [False] * len(self.suffix_ids),
                    logprob=float(logp[i, c]),
                    token_logprobs=[float(logp[i, c])],
                )
            )
        return actions

    def _act_free(self, prompts: Sequence[Conversation], *, greedy: bool, temperature: float) -> list[Action]:
        """Free generation for B observations in one left-padded batch, decoded with the KV cache.

        Sampling uses torch's global RNG on the model's device (``generate`` takes no
        generator). Each response ends at its first end-of-turn token (kept) or at
        ``max_new_tokens``; its log-prob is scored at ``temperature`` by :meth:`score` in one
        batch (the vocabulary without vision tokens, as sampled).
        """
        t0 = time.perf_counter()
        compiled = self.compiled_decode
        batch = decode_batch_rows(len(prompts)) if compiled else len(prompts)
        # compiled: filler rows (copies of the first observation, discarded) and left padding to a multiple of
        # DECODE_LENGTH_BUCKET tokens, so the static cache and the captured graphs see few distinct shapes
        rows = list(prompts) + [prompts[0]] * (batch - len(prompts))
        inputs, _ = self.collate(rows, [[]] * batch, length_multiple=DECODE_LENGTH_BUCKET if compiled else 1)
        plen = inputs["input_ids"].shape[1]
        gen = explicit_generation_config(
            greedy=greedy,
            temperature=temperature,
            max_new_tokens=self.max_new_tokens,
            eos_token_id=self.eos_id,
            pad_token_id=self.tokenizer.pad_token_id,
            suppress_tokens=self.suppress_ids,
        )
        if compiled:
            gen.cache_implementation = "static"
            gen.compile_config = _compile_config(self.device)
        with self._autocast():
            out = self.model.generate(**self._to(inputs, self.device), generation_config=gen)
        new = out[: len(prompts), plen:].cpu().tolist()  # waits for the GPU
        t1 = time.perf_counter()
        self.timings["decode_s"] += t1 - t0
        responses = []
        for ids in new:
            end = ids.index(self.eos_id) + 1 if self.eos_id in ids else len(ids)
            responses.append(ids[:end])
        masks = [[True] * len(r) for r in responses]
        scored = self.score(prompts, responses, masks, [[i] for i in range(len(prompts))], temperature=temperature)
        logps = scored.logprobs.sum(-1).float().cpu().tolist()
        per_token = scored.logprobs.float().cpu()
        token_mask = scored.loss_mask.cpu()
        self.timings["rollout_score_s"] += time.perf_counter() - t1
        actions = []
        for i, ids in enumerate(responses):
            text = self.tokenizer.decode([t for t in ids if t != self.eos_id], skip_special_tokens=False)
            token_lps = per_token[i][token_mask[i]].tolist()
            actions.append(Action(text=text, response_ids=ids, loss_mask=masks[i], logprob=float(logps[i]), token_logprobs=token_lps))
        return actions
