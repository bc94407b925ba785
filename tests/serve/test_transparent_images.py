"""Issue 14, item 5: transparent images composite onto white at every decode point.

The field input: an RGBA PNG of a maze whose transparent pixels store (0, 0, 0, 0). A plain
``convert("RGB")`` keeps those stored zeros, so the white floor came out black (the image was
98 % black) through ``decode_image_part`` and the local serve route, while vLLM and qwen-vl-utils
composite onto white. The served answer for that image is checked in
``test_local_serving.py::test_transparent_image_gets_the_same_answer_as_the_opaque_one``.
"""

from __future__ import annotations

import base64
import io

import numpy as np
import pytest
from PIL import Image

from hyperpod_rl.tasks.maze import decode_image_part, flatten_alpha, generate_maze, image_part


def _opaque() -> Image.Image:
    """A rendered maze (white floor, black walls, coloured agent and goal), as RGB."""
    return decode_image_part(image_part(generate_maze(4, 4, seed=3), agent=(0, 0)))


def _png_url(img: Image.Image) -> str:
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def _transparent_variants(rgb: Image.Image) -> dict[str, Image.Image]:
    """The same picture with its white floor transparent, in every PNG mode that has alpha."""
    arr = np.asarray(rgb)
    floor = (arr == 255).all(axis=-1)
    rgba = np.dstack([arr, np.where(floor, 0, 255).astype(np.uint8)])
    rgba[floor] = 0  # the field input: transparent pixels store (0, 0, 0, 0)
    gray = np.asarray(rgb.convert("L"))
    la = np.dstack([np.where(floor, 0, gray), np.where(floor, 0, 255)]).astype(np.uint8)
    palette = rgb.quantize(colors=8)  # white floor is one palette entry; mark it transparent
    white = palette.getpalette()[: 3 * 8]
    idx = next(i for i in range(8) if white[3 * i : 3 * i + 3] == [255, 255, 255])
    lut = white.copy()
    lut[3 * idx : 3 * idx + 3] = [0, 0, 0]  # and store black there, like the RGBA file
    palette.putpalette(lut)
    palette.info["transparency"] = idx
    return {"RGBA": Image.fromarray(rgba, "RGBA"), "LA": Image.fromarray(la, "LA"), "P+tRNS": palette}


@pytest.mark.parametrize("mode", ["RGBA", "LA", "P+tRNS"])
def test_transparent_png_decodes_to_the_opaque_image(mode):
    rgb = _opaque()
    img = _transparent_variants(rgb)[mode]
    expected = np.asarray(rgb if mode != "LA" else rgb.convert("L").convert("RGB"))
    assert np.asarray(img.convert("RGB")).mean() < 40  # what a plain convert gives: mostly black
    url = _png_url(img)
    decoded = decode_image_part({"type": "image_url", "image_url": {"url": url}})  # dataset, training, evaluation
    assert decoded.mode == "RGB"
    assert np.array_equal(np.asarray(decoded), expected)
    assert np.array_equal(np.asarray(decode_image_part({"type": "image", "image": img})), expected)  # a PIL image part


def test_serve_route_decodes_transparent_images_like_the_opaque_one():
    from hyperpod_rl.serve.local import ChatRequest, _decode_images

    rgb = _opaque()

    def request(img: Image.Image) -> ChatRequest:
        part = {"type": "image_url", "image_url": {"url": _png_url(img)}}
        return ChatRequest.model_validate(
            {"model": "maze", "messages": [{"role": "user", "content": [part, {"type": "text", "text": "move"}]}]}
        )

    served = _decode_images(request(_transparent_variants(rgb)["RGBA"]))[0]["content"][0]["image"]
    assert np.array_equal(np.asarray(served), np.asarray(rgb))


def test_policy_templates_see_the_composited_image():
    from hyperpod_rl.model.policy import messages_to_template

    rgb = _opaque()
    url = _png_url(_transparent_variants(rgb)["RGBA"])
    _, images, keys = messages_to_template([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}]}])
    _, ref_images, ref_keys = messages_to_template([{"role": "user", "content": [image_part(generate_maze(4, 4, seed=3), agent=(0, 0))]}])
    assert np.array_equal(np.asarray(images[0]), np.asarray(ref_images[0]))
    assert keys == ref_keys  # same cache key: the same prompt for the model


def test_partly_transparent_pixels_blend_onto_white():
    img = Image.new("RGBA", (2, 1), (0, 0, 0, 0))
    img.putpixel((0, 0), (200, 100, 0, 128))
    img.putpixel((1, 0), (10, 20, 30, 255))
    out = flatten_alpha(img)
    a = 128 / 255
    assert out.getpixel((0, 0)) == pytest.approx(tuple(round(c * a + 255 * (1 - a)) for c in (200, 100, 0)), abs=1)
    assert out.getpixel((1, 0)) == (10, 20, 30)


def test_opaque_images_pass_through_unchanged():
    rgb = _opaque()
    assert flatten_alpha(rgb) is rgb
    gray = rgb.convert("L")
    assert np.array_equal(np.asarray(flatten_alpha(gray)), np.asarray(gray.convert("RGB")))


@pytest.mark.parametrize("mode", ["RGBA", "LA", "P+tRNS"])
def test_the_client_flattens_an_image_before_sending_it(mode, tmp_path):
    from hyperpod_rl.serve.client import image_url_part

    rgb = _opaque()
    img = _transparent_variants(rgb)[mode]
    expected = np.asarray(rgb if mode != "LA" else rgb.convert("L").convert("RGB"))
    path = tmp_path / "maze.png"
    img.save(path)
    for source in (img, path, str(path), path.read_bytes()):
        part = image_url_part(source)
        raw = base64.b64decode(part["image_url"]["url"].split(",", 1)[1])
        with Image.open(io.BytesIO(raw)) as sent:
            assert sent.mode == "RGB"  # no alpha left for a server to drop
            assert np.array_equal(np.asarray(sent), expected)


def test_the_client_refuses_bytes_that_are_not_an_image():
    from hyperpod_rl.errors import ServeError
    from hyperpod_rl.serve.client import image_url_part

    with pytest.raises(ServeError, match=r"not a readable image"):
        image_url_part(b"plain text")
