"""Build a tiny random-init Qwen3-VL model, tokenizer and processor entirely in code.

This is the embedded default base model: no weights can be downloaded here, so tests and the
local quickstart build one in well under a second (facts from docs/references.md §5):

- transformers >= 5 ships ``Qwen3VLConfig`` / ``Qwen3VLForConditionalGeneration``;
- ``mrope_section`` must sum to ``head_dim / 2``; the vision ``num_position_embeddings`` must
  be a perfect square;
- ``Qwen3VLProcessor`` wants a video processor (torchvision), which does not import beside the
  PyPI CPU torch, so :class:`ImageOnlyQwen3VLProcessor` omits it and uses
  ``Qwen2VLImageProcessorPil``.

The tokenizer is a byte-level BPE trained on the maze prompts with the ``tokenizers`` library and
handed to ``transformers.Qwen2Tokenizer``, with the Qwen-VL special tokens added and every
direction word (and the ``<answer>`` tags) a single token.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from transformers import (
    Qwen2Tokenizer,
    Qwen2VLImageProcessorPil,
    Qwen3VLConfig,
    Qwen3VLForConditionalGeneration,
    Qwen3VLProcessor,
)

from hyperpod_rl.errors import ConfigError
from hyperpod_rl.model.revision import TINY_MODEL_ID, directory_revision


def quiet_transformers() -> None:
    """Turn off transformers' tqdm progress bars ("Loading weights", "Writing model shards", and
    the Hub's download bars): they would leak into the CLI's output and every job log.

    The one place that does it: called when this module is imported, which every loader and saver
    of a model in this package does (:mod:`hyperpod_rl.model.loading` imports it where it builds or loads one).
    """
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()


quiet_transformers()

__all__ = [
    "ANSWER_TOKENS",
    "DIRECTION_TOKENS",
    "TINY_MODEL_ID",
    "VISION_SPECIAL_TOKENS",
    "ImageOnlyQwen3VLProcessor",
    "build_tiny_qwen3vl",
    "directory_revision",
]


#: Qwen-VL special tokens (names as in Qwen/Qwen3-VL-8B-Instruct's tokenizer_config.json).
VISION_SPECIAL_TOKENS = (
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
)
CHAT_SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
DIRECTION_TOKENS = ("up", "down", "left", "right")
ANSWER_TOKENS = ("<answer>", "</answer>")

# Qwen-VL style chat template: content may be a string or a list of {"type": "text"|"image"|
# "image_url"} parts; every image becomes <|vision_start|><|image_pad|><|vision_end|> and the
# processor expands the pad to the image's token count.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}"
    "{% if part['type'] in ['image', 'image_url'] %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


class ImageOnlyQwen3VLProcessor(Qwen3VLProcessor):
    """``Qwen3VLProcessor`` without the video processor (no torchvision needed).

    Reload a saved bundle with this same class: ``ImageOnlyQwen3VLProcessor.from_pretrained(dir)``.
    Real Qwen3-VL checkpoints load with ``AutoProcessor`` instead.
    """

    def __init__(self, image_processor=None, tokenizer=None, chat_template=None, **kwargs):
        kwargs.pop("video_processor", None)
        super().__init__(image_processor, tokenizer, None, chat_template=chat_template, **kwargs)

    @classmethod
    def get_attributes(cls) -> list[str]:
        return ["image_processor", "tokenizer"]


def _train_tokenizer(corpus: Iterable[str], vocab_size: int, answer_words: Sequence[str] = DIRECTION_TOKENS) -> Qwen2Tokenizer:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(CHAT_SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(list(corpus), trainer=trainer)
    state = json.loads(bpe.to_str())
    vocab: dict[str, int] = state["model"]["vocab"]
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in state["model"]["merges"]]
    tok = Qwen2Tokenizer(vocab=vocab, merges=merges)
    tok.add_special_tokens({"additional_special_tokens": list(CHAT_SPECIAL_TOKENS[1:] + VISION_SPECIAL_TOKENS)})
    # Answer words (the task's; the maze's directions by default) and answer tags as whole tokens,
    # so one answer is one sampled token.
    tok.add_tokens(list(ANSWER_TOKENS) + [f" {d}" for d in answer_words] + list(answer_words))
    tok.eos_token = "<|im_end|>"
    tok.pad_token = "<|endoftext|>"
    tok.chat_template = CHAT_TEMPLATE
    return tok


_DEFAULT_CORPUS = (
    "You are an agent in a maze. The green circle is you and the red square is the goal. "
    "Walls are black. Answer with one move inside <answer></answer>: up, down, left or right. "
    "You moved up down left right. Blocked by a wall. Invalid answer. Goal reached. "
    "Turn of the maze steps remaining."
)


def build_tiny_qwen3vl(
    *,
    seed: int = 0,
    hidden_size: int = 128,
    num_layers: int = 2,
    vision_hidden_size: int = 64,
    vision_depth: int = 2,
    corpus: Iterable[str] = (),
    vocab_size: int = 512,
    answer_words: Sequence[str] = DIRECTION_TOKENS,
    head_dim: int = 32,
    vision_heads: int = 4,
) -> tuple[Qwen3VLForConditionalGeneration, ImageOnlyQwen3VLProcessor]:
    """Build a random-init Qwen3-VL model and its image-only processor.

    Args:
        seed: torch seed for the random weights (same seed, same weights).
        hidden_size: text hidden size, a multiple of ``head_dim``: ``hidden_size / head_dim`` attention heads.
        num_layers: text decoder layers.
        vision_hidden_size: vision-tower hidden size (4 heads).
        vision_depth: vision-tower blocks (patch 16, spatial merge 2, as Qwen3-VL).
        corpus: extra text (e.g. the maze env's prompts) to train the byte-level BPE on.
        vocab_size: BPE vocabulary size before special tokens.
        answer_words: words made single tokens for constrained decoding (the task's
            :attr:`~hyperpod_rl.tasks.Task.answer_words`; default the maze's directions).
        head_dim: text attention head size, a multiple of 8 (32: the embedded tiny model; 64 or 128
            where vLLM's attention kernels must take it).
        vision_heads: vision-tower attention heads (``vision_hidden_size`` must divide by it).

    Returns:
        ``(model, processor)``; the model is in fp32 on CPU, ``model.config`` is a full
        ``Qwen3VLConfig`` so any Qwen3-VL tooling (peft, SkyRL, vLLM) recognises the architecture.

    Raises:
        ConfigError: sizes that Qwen3-VL cannot represent.
    """
    import torch

    if head_dim < 8 or head_dim % 8:
        raise ConfigError(f"head_dim must be a positive multiple of 8, got {head_dim}")
    if hidden_size % head_dim != 0:
        raise ConfigError(f"model.hidden_size must be a multiple of head_dim={head_dim}, got {hidden_size}")
    if vision_heads < 1 or vision_hidden_size % vision_heads:
        raise ConfigError(f"vision_hidden_size={vision_hidden_size} must divide into vision_heads={vision_heads} heads")
    if num_layers < 1 or vision_depth < 1:
        raise ConfigError("model.num_layers and vision_depth must be >= 1")
    heads = hidden_size // head_dim
    tokenizer = _train_tokenizer([_DEFAULT_CORPUS, *corpus], vocab_size, answer_words)
    # mrope_section sums to head_dim / 2 (docs/references.md §5).
    half = head_dim // 2
    mrope = [half - 2 * (half // 3), half // 3, half // 3]
    config = Qwen3VLConfig(
        text_config={
            "vocab_size": len(tokenizer),
            "hidden_size": hidden_size,
            "intermediate_size": hidden_size * 2,
            "num_hidden_layers": num_layers,
            "num_attention_heads": heads,
            "num_key_value_heads": heads,
            "head_dim": head_dim,
            "max_position_embeddings": 4096,
            "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": mrope},
            "tie_word_embeddings": False,
        },
        vision_config={
            "depth": vision_depth,
            "hidden_size": vision_hidden_size,
            "intermediate_size": vision_hidden_size * 2,
            "num_heads": vision_heads,
            "out_hidden_size": hidden_size,
            "patch_size": 16,
            "spatial_merge_size": 2,
            "temporal_patch_size": 2,
            "num_position_embeddings": 256,  # a perfect square (16 x 16)
            "deepstack_visual_indexes": [],
        },
        image_token_id=tokenizer.convert_tokens_to_ids("<|image_pad|>"),
        video_token_id=tokenizer.convert_tokens_to_ids("<|video_pad|>"),
        vision_start_token_id=tokenizer.convert_tokens_to_ids("<|vision_start|>"),
        vision_end_token_id=tokenizer.convert_tokens_to_ids("<|vision_end|>"),
        tie_word_embeddings=False,
    )
    config.text_config.pad_token_id = tokenizer.pad_token_id
    config.text_config.eos_token_id = tokenizer.eos_token_id
    torch.manual_seed(seed)
    model = Qwen3VLForConditionalGeneration(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.eval()
    image_processor = Qwen2VLImageProcessorPil(
        patch_size=16,
        merge_size=2,
        temporal_patch_size=2,
        size={"shortest_edge": 32 * 32, "longest_edge": 512 * 512},
        image_mean=[0.5, 0.5, 0.5],
        image_std=[0.5, 0.5, 0.5],
    )
    processor = ImageOnlyQwen3VLProcessor(image_processor, tokenizer, chat_template=CHAT_TEMPLATE)
    return model, processor
