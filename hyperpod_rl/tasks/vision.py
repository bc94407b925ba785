"""Image sizing and chat image parts shared by every task.

Qwen-VL models resize each image with qwen-vl-utils' ``smart_resize`` and spend one vision token
per merged patch; :func:`image_token_count` gives that number for an image size, so a task can
record the known token count of every image in its rows (``image_tokens``) and keep it under a cap.
Image parts follow SkyRL's VLM message format:
``{"type": "image_url", "image_url": {"url": "data:image/png;base64,..."}}``.
"""

from __future__ import annotations

import base64
import binascii
import io
import math
from collections.abc import Mapping
from typing import Any, Final

from PIL import Image, UnidentifiedImageError

from hyperpod_rl.errors import TaskError

__all__ = [
    "DATA_URI_PREFIX",
    "QWEN_VL_MAX_RATIO",
    "decode_image_part",
    "encode_png",
    "image_part",
    "image_token_count",
    "round_up_px",
    "smart_resize",
]

#: Prefix of the data URIs in image parts.
DATA_URI_PREFIX: Final[str] = "data:image/png;base64,"
#: qwen-vl-utils ``MAX_RATIO``: the longest side may be at most this many times the shortest.
QWEN_VL_MAX_RATIO: Final[int] = 200


def smart_resize(height: int, width: int, factor: int, min_pixels: int, max_pixels: int) -> tuple[int, int]:
    """qwen-vl-utils ``smart_resize`` rules (qwen_vl_utils/vision_process.py, v0.0.14), re-derived.

    Sides are rounded to the nearest multiple of ``factor`` (at least ``factor``); if the area then
    exceeds ``max_pixels`` both sides shrink by sqrt(area / max_pixels) and are floored to the
    factor; if it is below ``min_pixels`` they grow and are ceiled. Python's round() is banker's
    rounding, as upstream.

    Returns:
        ``(height_px, width_px)`` after resizing.

    Raises:
        TaskError: aspect ratio above :data:`QWEN_VL_MAX_RATIO`.
    """
    if max(height, width) / min(height, width) > QWEN_VL_MAX_RATIO:
        raise TaskError(f"image aspect ratio must be below {QWEN_VL_MAX_RATIO}, got {height}x{width} px")
    h_bar = max(factor, round(height / factor) * factor)
    w_bar = max(factor, round(width / factor) * factor)
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def image_token_count(
    width_px: int,
    height_px: int,
    *,
    patch: int = 16,
    merge: int = 2,
    min_pixels: int | None = None,
    max_pixels: int | None = None,
) -> int:
    """Vision tokens a Qwen-VL model spends on one image of this size.

    The image is resized by :func:`smart_resize` with ``factor = patch * merge``; the model then
    emits one token per merged patch: ``(h / factor) * (w / factor)``.

    Args:
        width_px, height_px: Image size in pixels (>= 1).
        patch: Vision patch size in pixels (Qwen3-VL: 16; Qwen2.5-VL: 14).
        merge: Spatial merge size (2 for Qwen-VL).
        min_pixels, max_pixels: Pixel-area bounds; default to qwen-vl-utils' defaults
            (4 and 16384 tokens' worth of area for this factor).

    Raises:
        TaskError: non-positive sizes, min_pixels > max_pixels or an aspect ratio above 200.
    """
    factor = patch * merge
    if width_px < 1 or height_px < 1 or patch < 1 or merge < 1:
        raise TaskError(f"width_px, height_px, patch and merge must be >= 1, got {width_px}, {height_px}, {patch}, {merge}")
    lo = 4 * factor * factor if min_pixels is None else min_pixels
    hi = 16384 * factor * factor if max_pixels is None else max_pixels
    if lo > hi:
        raise TaskError(f"min_pixels={lo} must be <= max_pixels={hi}")
    h, w = smart_resize(height_px, width_px, factor, lo, hi)
    return (h // factor) * (w // factor)


def round_up_px(size_px: int, multiple_px: int = 32) -> int:
    """``size_px`` rounded up to a multiple (32 = Qwen3-VL patch 16 x merge 2, so smart_resize keeps it)."""
    return -(-size_px // multiple_px) * multiple_px


def encode_png(img: Image.Image) -> bytes:
    """PNG bytes of ``img``; deterministic for a given Pillow/zlib build (no timestamps or text chunks)."""
    buf = io.BytesIO()
    img.save(buf, format="PNG", compress_level=6)
    return buf.getvalue()


def image_part(image: Image.Image | bytes) -> dict[str, Any]:
    """An ``image_url`` content part holding ``image`` (a PIL image or PNG bytes) as a data URI."""
    png = image if isinstance(image, (bytes, bytearray)) else encode_png(image)
    return {"type": "image_url", "image_url": {"url": DATA_URI_PREFIX + base64.b64encode(png).decode("ascii")}}


def decode_image_part(part: Mapping[str, Any]) -> Image.Image:
    """Decode an image content part back to an RGB PIL image.

    Accepts ``{"type": "image_url", "image_url": {"url": "data:image/...;base64,..."}}`` and
    ``{"type": "image", "image": <PIL image | data URI | PNG bytes>}``.

    Raises:
        TaskError: the part is not an image part or its data cannot be decoded.
    """
    kind = part.get("type")
    if kind == "image_url" and isinstance(part.get("image_url"), Mapping):
        payload: Any = part["image_url"].get("url")
    elif kind == "image" and part.get("image") is not None:
        payload = part["image"]
    else:
        raise TaskError(f"content part of type {kind!r} is not an image part (expected 'image_url' or 'image')")
    if isinstance(payload, Image.Image):
        return payload.convert("RGB")
    if isinstance(payload, str):
        if not payload.startswith("data:image/") or ";base64," not in payload:
            raise TaskError("image part URL must be a base64 data URI (data:image/png;base64,...)")
        try:
            payload = base64.b64decode(payload.split(";base64,", 1)[1], validate=True)
        except (binascii.Error, ValueError) as e:
            raise TaskError(f"image part holds invalid base64: {e}") from e
    if not isinstance(payload, (bytes, bytearray)):
        raise TaskError(f"image part payload of type {type(payload).__name__} cannot be decoded")
    try:
        with Image.open(io.BytesIO(payload)) as img:
            return img.convert("RGB")
    except (UnidentifiedImageError, OSError) as e:
        raise TaskError(f"image part bytes are not a readable image: {e}") from e
