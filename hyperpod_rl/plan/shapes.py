"""Model shapes of Qwen3-VL checkpoints, and parameter counts derived from them.

The numbers below are the fields of the public ``config.json`` files of
``Qwen/Qwen3-VL-{2B,4B,8B,32B}-Instruct`` on the Hugging Face hub
(``text_config.{hidden_size, intermediate_size, num_hidden_layers,
num_attention_heads, num_key_value_heads, head_dim, vocab_size}``,
``tie_word_embeddings``, ``vision_config.{depth, hidden_size,
intermediate_size, out_hidden_size, patch_size, spatial_merge_size,
temporal_patch_size, deepstack_visual_indexes, num_position_embeddings}``).
The 8B total this gives, 8.77 B parameters, matches the model card.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field

from hyperpod_rl.base import Model
from hyperpod_rl.errors import ConfigError

__all__ = ["QWEN3_VL_SHAPES", "ModelShape", "VisionShape", "model_shape", "shape_from_hf_config"]


class VisionShape(Model):
    """Vision tower fields of a Qwen3-VL ``vision_config``."""

    depth: int = Field(gt=0)
    hidden_size: int = Field(gt=0)
    intermediate_size: int = Field(gt=0)
    out_hidden_size: int = Field(gt=0)
    num_heads: int = Field(default=16, gt=0)
    patch_size: int = Field(default=16, gt=0)
    spatial_merge_size: int = Field(default=2, gt=0)
    temporal_patch_size: int = Field(default=2, gt=0)
    in_channels: int = Field(default=3, gt=0)
    num_position_embeddings: int = Field(default=2304, gt=0)
    deepstack_visual_indexes: tuple[int, ...] = ()

    @property
    def params(self) -> int:
        """Vision parameters: blocks, patch embedding, position table and the (deepstack) mergers."""
        h, i = self.hidden_size, self.intermediate_size
        block = (h * 3 * h + 3 * h) + (h * h + h) + (h * i + i) + (i * h + h) + 4 * h
        patch = self.in_channels * self.temporal_patch_size * self.patch_size**2 * h + h
        merged = h * self.spatial_merge_size**2
        merger = 2 * merged + (merged * merged + merged) + (merged * self.out_hidden_size + self.out_hidden_size)
        return self.depth * block + patch + self.num_position_embeddings * h + merger * (1 + len(self.deepstack_visual_indexes))


class ModelShape(Model):
    """Language-model fields of a Qwen3-VL ``text_config`` plus its vision tower."""

    name: str
    hidden_size: int = Field(gt=0)
    intermediate_size: int = Field(gt=0)
    num_hidden_layers: int = Field(gt=0)
    num_attention_heads: int = Field(gt=0)
    num_key_value_heads: int = Field(gt=0)
    head_dim: int = Field(gt=0)
    vocab_size: int = Field(gt=0)
    tie_word_embeddings: bool
    vision: VisionShape

    @property
    def q_dim(self) -> int:
        return self.num_attention_heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        return self.num_key_value_heads * self.head_dim

    def linear_dims(self) -> dict[str, tuple[int, int]]:
        """(in_features, out_features) of each language-model linear, by module name."""
        h, i = self.hidden_size, self.intermediate_size
        return {
            "q_proj": (h, self.q_dim),
            "k_proj": (h, self.kv_dim),
            "v_proj": (h, self.kv_dim),
            "o_proj": (self.q_dim, h),
            "gate_proj": (h, i),
            "up_proj": (h, i),
            "down_proj": (i, h),
        }

    @property
    def layer_params(self) -> int:
        """Parameters of one text decoder layer (linears, two RMSNorms, q/k norms)."""
        return sum(a * b for a, b in self.linear_dims().values()) + 2 * self.hidden_size + 2 * self.head_dim

    @property
    def embed_params(self) -> int:
        return self.vocab_size * self.hidden_size

    @property
    def text_params(self) -> int:
        head = 0 if self.tie_word_embeddings else self.embed_params
        return self.num_hidden_layers * self.layer_params + self.embed_params + head + self.hidden_size

    @property
    def total_params(self) -> int:
        return self.text_params + self.vision.params


_SMALL_VISION = VisionShape(depth=24, hidden_size=1024, intermediate_size=4096, out_hidden_size=2048, deepstack_visual_indexes=(5, 11, 17))
_LARGE_VISION = {"depth": 27, "hidden_size": 1152, "intermediate_size": 4304, "deepstack_visual_indexes": (8, 16, 24)}

QWEN3_VL_SHAPES: dict[str, ModelShape] = {
    "Qwen/Qwen3-VL-2B-Instruct": ModelShape(
        name="Qwen/Qwen3-VL-2B-Instruct",
        hidden_size=2048,
        intermediate_size=6144,
        num_hidden_layers=28,
        num_attention_heads=16,
        num_key_value_heads=8,
        head_dim=128,
        vocab_size=151936,
        tie_word_embeddings=True,
        vision=_SMALL_VISION,
    ),
    "Qwen/Qwen3-VL-4B-Instruct": ModelShape(
        name="Qwen/Qwen3-VL-4B-Instruct",
        hidden_size=2560,
        intermediate_size=9728,
        num_hidden_layers=36,
        num_attention_heads=32,
        num_key_value_heads=8,
        head_dim=128,
        vocab_size=151936,
        tie_word_embeddings=True,
        vision=_SMALL_VISION.model_copy(update={"out_hidden_size": 2560}),
    ),
    "Qwen/Qwen3-VL-8B-Instruct": ModelShape(
        name="Qwen/Qwen3-VL-8B-Instruct",
        hidden_size=4096,
        intermediate_size=12288,
        num_hidden_layers=36,
        num_attention_heads=32,
        num_key_value_heads=8,
        head_dim=128,
        vocab_size=151936,
        tie_word_embeddings=False,
        vision=VisionShape(out_hidden_size=4096, **_LARGE_VISION),
    ),
    "Qwen/Qwen3-VL-32B-Instruct": ModelShape(
        name="Qwen/Qwen3-VL-32B-Instruct",
        hidden_size=5120,
        intermediate_size=25600,
        num_hidden_layers=64,
        num_attention_heads=64,
        num_key_value_heads=8,
        head_dim=128,
        vocab_size=151936,
        tie_word_embeddings=False,
        vision=VisionShape(out_hidden_size=5120, **_LARGE_VISION),
    ),
}


def model_shape(name: str) -> ModelShape:
    """Look up a known shape by hub id (``Qwen/Qwen3-VL-8B-Instruct``) or short name (``8B``).

    Raises:
        ConfigError: the name is not one of the known checkpoints.
    """
    for key, shape in QWEN3_VL_SHAPES.items():
        if name in (key, key.split("/")[1], key.split("-")[2], key.removesuffix("-Instruct"), key.split("/")[1].removesuffix("-Instruct")):
            return shape
    known = ", ".join(QWEN3_VL_SHAPES)
    raise ConfigError(f"model {name!r} is not a known Qwen3-VL shape; use one of {known}, or pass the checkpoint's config.json as a dict")


def shape_from_hf_config(config: Mapping[str, Any], *, name: str = "custom") -> ModelShape:
    """Build a :class:`ModelShape` from a Qwen3-VL ``config.json`` dict (``text_config`` + ``vision_config``).

    Raises:
        ConfigError: a required field is missing; the message names it.
    """
    text = config.get("text_config", config)
    vision = config.get("vision_config")
    if not isinstance(vision, Mapping):
        raise ConfigError("model config has no 'vision_config' mapping; pass a Qwen3-VL config.json")
    try:
        heads = int(text["num_attention_heads"])
        vis = VisionShape(**{k: vision[k] for k in VisionShape.model_fields if k in vision})
        return ModelShape(
            name=name,
            hidden_size=int(text["hidden_size"]),
            intermediate_size=int(text["intermediate_size"]),
            num_hidden_layers=int(text["num_hidden_layers"]),
            num_attention_heads=heads,
            num_key_value_heads=int(text.get("num_key_value_heads", heads)),
            head_dim=int(text.get("head_dim") or int(text["hidden_size"]) // heads),
            vocab_size=int(text["vocab_size"]),
            tie_word_embeddings=bool(config.get("tie_word_embeddings", text.get("tie_word_embeddings", False))),
            vision=vis,
        )
    except KeyError as exc:
        raise ConfigError(f"model config is missing text_config.{exc.args[0]}; pass the full Qwen3-VL config.json") from exc
