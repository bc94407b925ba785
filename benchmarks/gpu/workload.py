"""The measured workload: a Qwen3-VL-shaped LoRA policy and GRPO-style batches.

Builds a random-weight ``Qwen3VLForConditionalGeneration`` from a
:class:`hyperpod_rl.plan.ModelShape` (bf16, sdpa attention), puts peft LoRA
on every language-model linear (the vision tower stays frozen and adapter-free,
as docs/references.md §1 advises), and makes batches with the real input layout:

``[text | <|vision_start|> <|image_pad|> x n <|vision_end|> | text | response]``

with ``pixel_values`` (patches, 3 * 2 * 16 * 16), ``image_grid_thw`` (images, 3),
``mm_token_type_ids`` (1 at image tokens) and a response mask. The loss is
the GRPO policy-gradient surrogate ``-mean(advantage * log p(response token))``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import torch

from hyperpod_rl.model.logprobs import naive_response_logprobs, response_logprobs
from hyperpod_rl.plan import GPUS, ModelShape, image_patches

GIB = 2**30
#: Dense bf16 tensor-core rate of an H200 SXM (NVIDIA datasheet, also ``hyperpod_rl.plan.GPUS``), FLOP/s: the MFU denominator.
H200_BF16_DENSE_FLOPS = GPUS["H200"].bf16_flops
#: Short names of the measured shapes -> their Hub ids (the config numbers are in ``hyperpod_rl.plan.shapes``).
SHAPES = {"2B": "Qwen/Qwen3-VL-2B-Instruct", "4B": "Qwen/Qwen3-VL-4B-Instruct", "8B": "Qwen/Qwen3-VL-8B-Instruct"}

IMAGE_TOKEN_ID = 151655  # Qwen3-VL config.json image_token_id
VISION_START_ID = 151652  # vision_start_token_id
VISION_END_ID = 151653  # vision_end_token_id
CHUNK_TOKENS = 1024  # response_logprobs default
LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")

LogprobPath = Literal["naive", "chunked"]


@dataclass(frozen=True)
class BenchConfig:
    """One measured configuration (per-GPU micro batch)."""

    name: str
    batch: int
    image_px: int
    prompt_text_tokens: int
    response_tokens: int
    gradient_checkpointing: bool

    def image_tokens(self, merge: int = 2) -> int:
        t, h, w = image_patches(self.image_px, self.image_px)
        return t * h * w // merge**2

    def seq_len(self) -> int:
        return self.prompt_text_tokens + self.image_tokens() + 2 + self.response_tokens

    def to_json(self) -> dict[str, object]:
        return asdict(self) | {"seq_len": self.seq_len(), "image_tokens": self.image_tokens()}


def hf_config(shape: ModelShape, *, tiny: bool = False) -> object:
    """A ``Qwen3VLConfig`` with the shape's numbers (or a tiny one of the same layout for CPU smoke runs)."""
    from transformers import Qwen3VLConfig

    v = shape.vision
    vision = {
        "depth": v.depth,
        "hidden_size": v.hidden_size,
        "intermediate_size": v.intermediate_size,
        "out_hidden_size": shape.hidden_size,
        "num_heads": v.num_heads,
        "patch_size": v.patch_size,
        "spatial_merge_size": v.spatial_merge_size,
        "temporal_patch_size": v.temporal_patch_size,
        "num_position_embeddings": v.num_position_embeddings,
        "deepstack_visual_indexes": list(v.deepstack_visual_indexes),
        "hidden_act": "gelu_pytorch_tanh",
    }
    text = {
        "hidden_size": shape.hidden_size,
        "intermediate_size": shape.intermediate_size,
        "num_hidden_layers": shape.num_hidden_layers,
        "num_attention_heads": shape.num_attention_heads,
        "num_key_value_heads": shape.num_key_value_heads,
        "head_dim": shape.head_dim,
        "vocab_size": shape.vocab_size,
        "rope_theta": 5_000_000,
        "max_position_embeddings": 262144,
        "rope_scaling": {"rope_type": "default", "mrope_section": [24, 20, 20], "mrope_interleaved": True},
        "tie_word_embeddings": shape.tie_word_embeddings,
    }
    if tiny:
        vision |= {
            "depth": 2,
            "hidden_size": 64,
            "intermediate_size": 128,
            "num_heads": 4,
            "deepstack_visual_indexes": [0],
            "out_hidden_size": 128,
        }
        text |= {
            "hidden_size": 128,
            "intermediate_size": 256,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "head_dim": 32,
            "rope_scaling": {"rope_type": "default", "mrope_section": [8, 4, 4], "mrope_interleaved": True},
        }
    return Qwen3VLConfig(
        text_config=text,
        vision_config=vision,
        image_token_id=IMAGE_TOKEN_ID,
        video_token_id=151656,
        vision_start_token_id=VISION_START_ID,
        vision_end_token_id=VISION_END_ID,
        tie_word_embeddings=shape.tie_word_embeddings,
    )


def build_policy(shape: ModelShape, *, device: torch.device, lora_rank: int, tiny: bool = False) -> torch.nn.Module:
    """Random-weight bf16 Qwen3-VL with peft LoRA (rank ``lora_rank``, alpha = rank) on the language linears."""
    from peft import LoraConfig, get_peft_model
    from transformers import Qwen3VLForConditionalGeneration

    cfg = hf_config(shape, tiny=tiny)
    with torch.device(device):
        model = Qwen3VLForConditionalGeneration._from_config(cfg, dtype=torch.bfloat16, attn_implementation="sdpa")
    targets = r".*language_model.*\.(" + "|".join(LORA_TARGETS) + r")"
    lora = LoraConfig(r=lora_rank, lora_alpha=lora_rank, lora_dropout=0.0, target_modules=targets)
    return get_peft_model(model, lora)  # peft default: adapters in float32 (autocast_adapter_dtype=True)


class PolicyLogprobs(torch.nn.Module):
    """Root module: inputs -> GRPO loss, by the naive or the chunked log-prob path.

    Being the root lets FSDP2's root hooks gather the embedding and output head
    before the inner model and ``lm_head`` are called directly.
    """

    def __init__(self, peft_model: torch.nn.Module) -> None:
        super().__init__()
        self.policy = peft_model

    def hf_model(self) -> torch.nn.Module:
        return self.policy.base_model.model

    def forward(self, batch: dict[str, torch.Tensor], path: LogprobPath) -> torch.Tensor:
        inputs = {k: batch[k] for k in ("input_ids", "attention_mask", "pixel_values", "image_grid_thw", "mm_token_type_ids")}
        targets, mask = batch["input_ids"][:, 1:], batch["response_mask"][:, 1:]
        hf = self.hf_model()
        if path == "naive":
            logits = self.policy(**inputs).logits
            logp = naive_response_logprobs(logits[:, :-1], targets, mask)
        else:
            hidden = hf.model(**inputs, use_cache=False).last_hidden_state  # as the trainer scores
            logp = response_logprobs(hidden[:, :-1], hf.lm_head, targets, mask, chunk_tokens=CHUNK_TOKENS)
        adv = batch["advantages"][:, None]
        return -(adv * logp).sum() / mask.sum()


def make_batch(cfg: BenchConfig, *, device: torch.device, vocab: int, seed: int) -> dict[str, torch.Tensor]:
    """Random token ids and image patches in Qwen3-VL's input layout (see module docstring)."""
    gen = torch.Generator().manual_seed(seed)
    t, gh, gw = image_patches(cfg.image_px, cfg.image_px)
    n_img = t * gh * gw // 4
    head = cfg.prompt_text_tokens // 2
    seq = cfg.seq_len()
    ids = torch.randint(0, 151000, (cfg.batch, seq), generator=gen) % vocab
    ids[:, head] = VISION_START_ID
    ids[:, head + 1 : head + 1 + n_img] = IMAGE_TOKEN_ID
    ids[:, head + 1 + n_img] = VISION_END_ID
    mm = torch.zeros(cfg.batch, seq, dtype=torch.int32)
    mm[:, head + 1 : head + 1 + n_img] = 1
    resp = torch.zeros(cfg.batch, seq, dtype=torch.bool)
    resp[:, seq - cfg.response_tokens :] = True
    patch_dim = 3 * 2 * 16 * 16
    pixel_values = torch.randn(cfg.batch * t * gh * gw, patch_dim, generator=gen)
    grid = torch.tensor([[t, gh, gw]] * cfg.batch, dtype=torch.long)
    adv = torch.randn(cfg.batch, generator=gen)
    out = {
        "input_ids": ids,
        "attention_mask": torch.ones(cfg.batch, seq, dtype=torch.long),
        "pixel_values": pixel_values.to(torch.bfloat16),
        "image_grid_thw": grid,
        "mm_token_type_ids": mm,
        "response_mask": resp,
        "advantages": adv,
    }
    return {k: v.to(device) for k, v in out.items()}


def save_for_vllm(root: Path, model: Any, processor: Any) -> Path:
    """Save a random-init model and the tiny processor as a checkpoint directory vLLM and SkyRL can load.

    The tiny processor saves as ``ImageOnlyQwen3VLProcessor`` (no video part, for CPUs without
    torchvision); ``AutoProcessor`` (vLLM's and SkyRL's ``get_processor``) cannot resolve that name,
    and the stock ``Qwen3VLProcessor`` loads a video processor too. The GPU image has torchvision:
    name the stock class and write a video processor config, as real checkpoints have.
    """
    import json

    model.save_pretrained(root, safe_serialization=True)
    processor.save_pretrained(root)
    for name in ("processor_config.json", "tokenizer_config.json"):
        cfg = json.loads((root / name).read_text())
        if cfg.get("processor_class") == "ImageOnlyQwen3VLProcessor":
            cfg["processor_class"] = "Qwen3VLProcessor"
            (root / name).write_text(json.dumps(cfg, indent=2) + "\n")
    video = root / "video_preprocessor_config.json"
    if not video.exists():
        spec = {
            "video_processor_type": "Qwen3VLVideoProcessor",
            "patch_size": 16,
            "temporal_patch_size": 2,
            "merge_size": 2,
            "image_mean": [0.5, 0.5, 0.5],
            "image_std": [0.5, 0.5, 0.5],
        }
        video.write_text(json.dumps(spec, indent=2) + "\n")
    return root
