"""Image sizing and chat image parts shared by every task.

Qwen-VL models resize each image with qwen-vl-utils' ``smart_resize`` and spend one vision token
per merged patch; :func:`image_token_count` gives that number for an image size, so a task can
record the known token count of every image in its rows (``image_tokens``) and keep it under a cap.
Image parts follow SkyRL's VLM message format:
``{"type": "image_url", "image_url": {"url": "data:image/png;base64,..."}}``.

Decoding has one owner, here: :func:`open_image` (the header only, so a caller checks the size
before a pixel is decoded), :func:`to_rgb` (the one conversion of a decoded image to the 8-bit RGB
the models see) and :func:`decode_image` (both). Every decode point uses them: training and
evaluation prompts (:func:`decode_image_part`), the local serve route and the serving client.
What :func:`to_rgb` does with each kind of image, converted or refused:

- 16-bit grayscale (PNG, TIFF, PGM; PIL modes ``I;16*``): **converted**, every level scaled to 8
  bits (``round(v * 255 / 65535)``), so a 16-bit picture keeps its contrast (a plain
  ``convert("RGB")`` clips every level above 255 to white). 16-bit RGB and RGBA PNGs Pillow
  already reads as 8 bits per channel, scaled the same way;
- 32-bit integer (``I``) and floating-point (``F``) images (TIFF): **refused** with
  :class:`~hyperpod_rl.errors.TaskError`: their white level is not in the file, so any 8-bit
  rendering would be a guess; the message says to save the image as an 8- or 16-bit PNG;
- transparency (RGBA, LA, PA, ``tRNS``): composited onto white (:func:`flatten_alpha`);
- every other mode PIL can convert (1-bit, palette, CMYK, YCbCr): converted by PIL; one it cannot
  is refused the same way.
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
    "BACKGROUND_RGB",
    "DATA_URI_PREFIX",
    "QWEN_VL_MAX_RATIO",
    "decode_image",
    "decode_image_part",
    "encode_png",
    "flatten_alpha",
    "open_image",
    "to_rgb",
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


#: The background transparent pixels are composited onto (white, as vLLM's ``rgba_to_rgb`` and
#: qwen-vl-utils' ``to_rgb`` do).
BACKGROUND_RGB: Final[tuple[int, int, int]] = (255, 255, 255)


#: PIL modes of 16-bit grayscale images (PNG, TIFF, PGM): :func:`to_rgb` scales them to 8 bits.
GRAY16_MODES: Final[frozenset[str]] = frozenset({"I;16", "I;16L", "I;16B", "I;16N"})
#: PIL modes :func:`to_rgb` refuses, with what they are: their white level is not in the file.
REFUSED_MODES: Final[dict[str, str]] = {"I": "a 32-bit integer image", "F": "a floating-point image"}


def open_image(data: bytes) -> Image.Image:
    """The image in ``data`` with only its header read (size and mode known, no pixel decoded), so
    a caller can check its size before :func:`to_rgb` decodes it.

    Raises:
        TaskError: the bytes are not an image PIL reads. PIL's ``DecompressionBombError`` (a header
            declaring more than twice ``Image.MAX_IMAGE_PIXELS``) passes, for the caller to name its limit.
    """
    try:
        return Image.open(io.BytesIO(data))
    except (UnidentifiedImageError, OSError) as e:
        raise TaskError(f"the bytes are not a readable image ({type(e).__name__}): send PNG or JPEG bytes") from None


def to_rgb(img: Image.Image) -> Image.Image:
    """The 8-bit RGB image the models see, of a PIL image of any mode (decoded here if it was only opened).

    The one conversion every image decode point uses (see the module docstring for what is
    converted and what is refused): 16-bit grayscale scaled to 8 bits, then transparency
    composited onto white (:func:`flatten_alpha`).

    Returns:
        A new RGB image of the same size (``img`` itself when it is already RGB without transparency).

    Raises:
        TaskError: the pixels cannot be decoded (truncated or damaged), or the image is a 32-bit
            integer or floating-point image, or of a mode PIL cannot convert to RGB; the message
            says it was refused and how to save the image instead.
    """
    try:
        img.load()
    except (OSError, ValueError, SyntaxError) as e:
        raise TaskError(f"the image's pixels cannot be decoded (truncated or damaged: {e}): send complete PNG or JPEG bytes") from None
    if img.mode in GRAY16_MODES:
        import numpy as np

        levels = np.asarray(img).astype(np.uint32)
        gray = Image.fromarray(((levels * 255 + 32767) // 65535).astype(np.uint8), "L")
        transparent = img.info.get("transparency")
        if isinstance(transparent, int):  # a 16-bit tRNS level: those pixels are transparent
            alpha = np.where(levels == transparent, 0, 255).astype(np.uint8)
            gray = Image.merge("LA", (gray, Image.fromarray(alpha, "L")))
        img = gray
    elif img.mode in REFUSED_MODES:
        raise TaskError(
            f"the image is {REFUSED_MODES[img.mode]} (PIL mode {img.mode}), refused rather than clipped: its white level is not "
            "in the file: save it as an 8-bit or 16-bit PNG"
        )
    try:
        return flatten_alpha(img)
    except ValueError as e:
        raise TaskError(
            f"the image's mode {img.mode} cannot be converted to RGB ({e}), so it is refused: save it as an 8-bit PNG or JPEG"
        ) from None


def decode_image(data: bytes) -> Image.Image:
    """The 8-bit RGB image of image bytes (PNG, JPEG, TIFF...): :func:`open_image` then :func:`to_rgb`.

    Raises:
        TaskError: not an image, truncated or damaged, a decompression bomb, or refused by :func:`to_rgb`.
    """
    try:
        img = open_image(data)
    except Image.DecompressionBombError as e:
        raise TaskError(f"the image declares too many pixels ({e}): downscale it") from None
    with img:
        return to_rgb(img)


def flatten_alpha(img: Image.Image) -> Image.Image:
    """An RGB image with any transparency composited onto white (:data:`BACKGROUND_RGB`).

    The alpha step of :func:`to_rgb`, which every decode point calls (training data, evaluation,
    the local serve route, the serving client). A plain ``img.convert("RGB")`` drops alpha and keeps the stored
    colour of transparent pixels, which PNG writers often store as ``(0, 0, 0, 0)``: a maze on a
    transparent background then comes out black. vLLM (``vllm/multimodal/image.py``,
    ``rgba_to_rgb``) and qwen-vl-utils (``to_rgb``) composite RGBA onto white; this does the same
    for every mode with transparency: RGBA, LA, PA, and palette or RGB/L images with a PNG
    ``tRNS`` chunk (``img.info["transparency"]``). Partly transparent pixels are blended
    (``out = a * colour + (1 - a) * 255``).

    Args:
        img: a decoded PIL image of any mode.

    Returns:
        A new RGB image of the same size (``img`` itself when it is already RGB without
        transparency).
    """
    has_alpha = img.mode in ("RGBA", "LA", "PA", "RGBa", "La") or "transparency" in img.info
    if not has_alpha:
        return img if img.mode == "RGB" else img.convert("RGB")
    rgba = img.convert("RGBA")
    background = Image.new("RGBA", rgba.size, (*BACKGROUND_RGB, 255))
    return Image.alpha_composite(background, rgba).convert("RGB")


def decode_image_part(part: Mapping[str, Any]) -> Image.Image:
    """Decode an image content part back to an 8-bit RGB PIL image (:func:`to_rgb`: high bit depth
    scaled or refused, transparency composited onto white; every task's prompts go through here).

    Accepts ``{"type": "image_url", "image_url": {"url": "data:image/...;base64,..."}}`` and
    ``{"type": "image", "image": <PIL image | data URI | PNG bytes>}``.

    Raises:
        TaskError: the part is not an image part, or its data cannot be decoded or is refused
            (:func:`to_rgb`).
    """
    kind = part.get("type")
    if kind == "image_url" and isinstance(part.get("image_url"), Mapping):
        payload: Any = part["image_url"].get("url")
    elif kind == "image" and part.get("image") is not None:
        payload = part["image"]
    else:
        raise TaskError(f"content part of type {kind!r} is not an image part (expected 'image_url' or 'image')")
    if isinstance(payload, Image.Image):
        return to_rgb(payload)
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
        return decode_image(bytes(payload))
    except TaskError as e:
        raise TaskError(f"image part: {e}") from None
