"""Image resolution -> Qwen3-VL image tokens, by the renderer's resize rules.

Rules (qwen-vl-utils ``smart_resize`` as used for Qwen3-VL, ``image_patch_size=16``,
``SPATIAL_MERGE_SIZE=2``): each side is rounded to a multiple of
``factor = patch * merge = 32`` pixels, then the image is scaled, keeping its
aspect ratio, so that its area lies between ``4 * factor**2`` and
``16384 * factor**2`` pixels. The vision tower sees ``(h / 16) * (w / 16)``
patches (one temporal slot for a still image) and the language model sees a
quarter of that: one token per 2x2 patch block, between the
``<|vision_start|>`` and ``<|vision_end|>`` tokens.
"""

from __future__ import annotations

from hyperpod_rl.errors import ConfigError
from hyperpod_rl.tasks.vision import smart_resize as qwen_smart_resize

__all__ = ["image_patches", "image_tokens", "smart_resize"]

MIN_TOKENS = 4
MAX_TOKENS = 16384
MAX_ASPECT_RATIO = 200


def smart_resize(
    height_px: int, width_px: int, *, patch_px: int = 16, merge: int = 2, min_pixels: int | None = None, max_pixels: int | None = None
) -> tuple[int, int]:
    """Resized (height, width) in pixels, both multiples of ``patch_px * merge``.

    Raises:
        ConfigError: a side is not positive, or the aspect ratio exceeds 200.
    """
    if height_px <= 0 or width_px <= 0:
        raise ConfigError(f"image size must be positive, got {height_px}x{width_px} px")
    if max(height_px, width_px) / min(height_px, width_px) > MAX_ASPECT_RATIO:
        raise ConfigError(f"image aspect ratio {height_px}x{width_px} exceeds {MAX_ASPECT_RATIO}; crop or pad the image")
    factor = patch_px * merge
    max_pixels = MAX_TOKENS * factor**2 if max_pixels is None else max_pixels
    min_pixels = MIN_TOKENS * factor**2 if min_pixels is None else min_pixels
    # The rules themselves live in the maze renderer (one copy, checked against qwen-vl-utils' source).
    return qwen_smart_resize(height_px, width_px, factor, min_pixels, max_pixels)


def image_patches(height_px: int, width_px: int, *, patch_px: int = 16, merge: int = 2) -> tuple[int, int, int]:
    """The ``image_grid_thw`` row (t, h, w) in patches for one still image."""
    h, w = smart_resize(height_px, width_px, patch_px=patch_px, merge=merge)
    return 1, h // patch_px, w // patch_px


def image_tokens(height_px: int, width_px: int, *, patch_px: int = 16, merge: int = 2) -> int:
    """Language-model tokens one image becomes (excluding the vision start/end tokens)."""
    t, h, w = image_patches(height_px, width_px, patch_px=patch_px, merge=merge)
    return t * h * w // merge**2
