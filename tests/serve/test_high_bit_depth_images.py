"""Issue 42 item 7: high bit-depth images are converted correctly or refused, and say which, at
every decode point (the datasets' ``decode_image_part``, the local serve route, the client).

The field input: a 16-bit grayscale PNG (PIL mode ``I;16``) whose levels span 0-65535. A plain
``convert("RGB")`` clips every level above 255 to white, so the picture was nearly all white.
"""

from __future__ import annotations

import base64
import io
import struct
import zlib

import numpy as np
import pytest
from PIL import Image

from hyperpod_rl.errors import ServeError, TaskError
from hyperpod_rl.tasks import decode_image, decode_image_part, to_rgb

#: A 16-bit ramp: 4096 distinct levels across the image, and the extremes.
LEVELS = (np.arange(64 * 64, dtype=np.uint32).reshape(64, 64) * 16).astype(np.uint16)
LEVELS[0, 0], LEVELS[0, 1] = 0, 65535


def _png(img: Image.Image) -> bytes:
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def _tiff(img: Image.Image) -> bytes:
    buf = io.BytesIO()
    img.save(buf, format="TIFF")
    return buf.getvalue()


def _png16_with_trns(levels: np.ndarray, transparent: int) -> bytes:
    """A 16-bit grayscale PNG written chunk by chunk, with a tRNS chunk naming one 16-bit level transparent."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    h, w = levels.shape
    raw = b"".join(b"\0" + levels[y].astype(">u2").tobytes() for y in range(h))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 16, 0, 0, 0, 0))
        + chunk(b"tRNS", struct.pack(">H", transparent))
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


def _expected_gray() -> np.ndarray:
    return ((LEVELS.astype(np.uint32) * 255 + 32767) // 65535).astype(np.uint8)


@pytest.mark.parametrize("encode", [_png, _tiff], ids=["png", "tiff"])
def test_16_bit_grayscale_is_scaled_to_8_bits_not_clipped(encode):
    data = encode(Image.fromarray(LEVELS))
    with Image.open(io.BytesIO(data)) as img:
        assert img.mode == "I;16"
        clipped = np.asarray(img.convert("RGB"))[..., 0]
    assert (clipped == 255).mean() > 0.9  # what a plain convert gives: nearly all white
    rgb = np.asarray(decode_image(data))
    assert rgb.shape == (64, 64, 3) and (rgb[..., 0] == rgb[..., 2]).all()
    assert np.array_equal(rgb[..., 0], _expected_gray())
    assert rgb[0, 0, 0] == 0 and rgb[0, 1, 0] == 255 and len(np.unique(rgb)) == 256  # every 8-bit level is used


def test_every_decode_point_converts_a_16_bit_image_the_same_way():
    from hyperpod_rl.serve.client import image_url_part
    from hyperpod_rl.serve.local import ChatRequest, _decode_images

    data = _png(Image.fromarray(LEVELS))
    url = "data:image/png;base64," + base64.b64encode(data).decode()
    expected = np.asarray(decode_image(data))
    part = {"type": "image_url", "image_url": {"url": url}}
    assert np.array_equal(np.asarray(decode_image_part(part)), expected)  # datasets, training, evaluation
    assert np.array_equal(np.asarray(decode_image_part({"type": "image", "image": Image.open(io.BytesIO(data))})), expected)
    request = ChatRequest.model_validate({"model": "maze", "messages": [{"role": "user", "content": [part]}]})
    assert np.array_equal(np.asarray(_decode_images(request)[0]["content"][0]["image"]), expected)  # the serve route
    sent = base64.b64decode(image_url_part(data)["image_url"]["url"].split(",", 1)[1])  # the client
    with Image.open(io.BytesIO(sent)) as img:
        assert img.mode == "RGB" and np.array_equal(np.asarray(img), expected)


def test_a_16_bit_transparent_level_is_composited_onto_white():
    levels = np.full((4, 4), 1000, dtype=np.uint16)
    levels[0, 0] = 4242
    rgb = np.asarray(decode_image(_png16_with_trns(levels, 4242)))
    assert tuple(rgb[0, 0]) == (255, 255, 255)  # the transparent level, onto white
    assert tuple(rgb[1, 1]) == (4, 4, 4)  # round(1000 * 255 / 65535)


@pytest.mark.parametrize(
    ("array", "what"),
    [
        ((LEVELS.astype(np.int32) * 1000), "a 32-bit integer image (PIL mode I)"),
        (LEVELS.astype(np.float32) / 65535, "a floating-point image (PIL mode F)"),
    ],
    ids=["int32", "float32"],
)
def test_images_without_a_known_white_level_are_refused_and_say_so(array, what):
    from hyperpod_rl.serve.client import image_url_part
    from hyperpod_rl.serve.local import ChatRequest, _decode_images

    data = _tiff(Image.fromarray(array))
    words = f"the image is {what}, refused rather than clipped"
    with pytest.raises(TaskError, match=r"save it as an 8-bit or 16-bit PNG") as info:
        decode_image(data)
    assert words in str(info.value)
    url = "data:image/tiff;base64," + base64.b64encode(data).decode()
    part = {"type": "image_url", "image_url": {"url": url}}
    with pytest.raises(TaskError, match=r"^image part: the image is"):
        decode_image_part(part)
    request = ChatRequest.model_validate({"model": "maze", "messages": [{"role": "user", "content": [part]}]})
    with pytest.raises(ValueError, match=r"^image_url data: the image is") as served:  # the route answers 400 invalid_image
        _decode_images(request)
    assert words in str(served.value)
    with pytest.raises(ServeError, match=words.replace("(", r"\(").replace(")", r"\)")):
        image_url_part(data)
    with pytest.raises(TaskError, match=words.replace("(", r"\(").replace(")", r"\)")):
        to_rgb(Image.fromarray(array))


def test_8_bit_and_truncated_images_keep_their_behaviour():
    rgb = Image.fromarray(np.dstack([(np.arange(64 * 64) % 256).reshape(64, 64).astype(np.uint8)] * 3), "RGB")
    assert np.array_equal(np.asarray(decode_image(_png(rgb))), np.asarray(rgb))
    with pytest.raises(TaskError, match=r"the image's pixels cannot be decoded \(truncated or damaged"):
        decode_image(_png(rgb)[:100])  # cut inside its pixel data
