"""Rendering: sizes that qwen-vl-utils keeps, known token counts, reproducible bytes, every template drawable."""

from __future__ import annotations

import io

import pytest
from PIL import Image, ImageChops

from hyperpod_rl.errors import TaskError
from hyperpod_rl.tasks.doc_read import (
    TEMPLATES,
    PageStyle,
    generate_document,
    page_size_px,
    render_document,
    render_page,
    render_png,
    sized_px,
)
from hyperpod_rl.tasks.vision import image_token_count
from tests.tasks.upstream import upstream_smart_resize as _upstream_smart_resize


@pytest.mark.parametrize("template_id", sorted(TEMPLATES))
def test_every_template_renders_at_a_size_qwen_vl_utils_keeps(template_id: str) -> None:
    upstream = _upstream_smart_resize()
    doc = generate_document(template_id, seed=3, n_items=5)
    for cap in (64, 256, 1024):
        img = render_document(doc, PageStyle(rotation_deg=1.5, noise_sigma=6), max_image_tokens=cap)
        w, h = img.size
        assert img.mode == "L" and w % 32 == 0 and h % 32 == 0
        assert upstream(h, w, 32, min_pixels=4 * 1024, max_pixels=cap * 1024) == (h, w)  # the processor resizes nothing
        assert image_token_count(w, h) <= cap
        assert (w, h) == sized_px(doc, PageStyle(rotation_deg=1.5, noise_sigma=6), max_image_tokens=cap)


def test_sized_pages_follow_upstream_smart_resize_of_the_page() -> None:
    upstream = _upstream_smart_resize()
    doc = generate_document("invoice-classic", seed=0, n_items=12)
    w, h = page_size_px(doc)
    uh, uw = upstream(h, w, 32, min_pixels=4 * 1024, max_pixels=128 * 1024)
    assert sized_px(doc, max_image_tokens=128) == (uw, uh)


def test_png_bytes_are_reproducible_and_noise_is_seeded() -> None:
    doc = generate_document("receipt-till", seed=1, n_items=4)
    style = PageStyle(noise_sigma=9, rotation_deg=-2)
    assert render_png(doc, style) == render_png(doc, style)
    with Image.open(io.BytesIO(render_png(doc, style))) as img:
        assert img.mode == "L"
    other = generate_document("receipt-till", seed=2, n_items=4)
    assert render_png(other, style) != render_png(doc, style)


def test_noise_and_rotation_change_the_page() -> None:
    doc = generate_document("table-stock", seed=0, n_items=3)
    clean = render_page(doc)
    assert ImageChops.difference(clean, render_page(doc, PageStyle(noise_sigma=10))).getbbox() is not None
    assert ImageChops.difference(clean, render_page(doc, PageStyle(rotation_deg=3))).getbbox() is not None
    assert clean.getextrema() == (0, 255)  # black text on white paper


def test_dense_pages_are_taller_and_smaller_text_shrinks_them() -> None:
    small = generate_document("form-boxed", seed=0, n_items=3)
    dense = generate_document("form-boxed", seed=0, n_items=18)
    assert page_size_px(dense)[1] > page_size_px(small)[1]
    assert page_size_px(dense, PageStyle(font_scale=0.8))[1] < page_size_px(dense)[1]


def test_bad_cap_and_style_are_refused() -> None:
    doc = generate_document("form-boxed", seed=0, n_items=3)
    with pytest.raises(TaskError, match="max_image_tokens=2"):
        render_document(doc, max_image_tokens=2)
    with pytest.raises(TaskError, match="PageStyle.rotation_deg"):
        PageStyle(rotation_deg=45)
