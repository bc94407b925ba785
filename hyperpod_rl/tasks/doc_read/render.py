"""Draw a :class:`Document` with its template as a greyscale page, and size it in vision tokens.

Pipeline (all Pillow, greyscale ``"L"`` images):

1. **Layout**: title, issuer, header fields (template ``header``), the item table (template
   ``table`` style, numbers right-aligned), subtotal/tax/total. The page is ``template.width_px``
   wide and as tall as its content; :class:`PageStyle` ``font_scale`` shrinks the text (dense pages).
2. **Fonts**: Pillow's embedded scalable font (Aileron Regular, ``ImageFont.load_default(size=)``),
   drawn plain, stroked (``bold``) or squeezed to 85 % width (``condensed``); and Pillow's bitmap
   font scaled up with nearest-neighbour (``pixel``). No font file outside Pillow is read.
3. **Noise and rotation**: Gaussian noise (sigma ``noise_sigma`` grey levels; a seeded 256 x 256
   tile repeated from an offset drawn from the document's hash, so pages are reproducible byte for
   byte, which ``Image.effect_noise`` is not) and a rotation by ``rotation_deg`` about the centre,
   the page colour filling the corners.
4. **Sizing**: the page is resized to qwen-vl-utils' ``smart_resize`` of its size with factor 32
   (patch 16 x merge 2) and ``max_pixels = max_image_tokens * 32 * 32``, so the image the model
   sees is exactly the image stored and its token count is ``(h / 32) * (w / 32)``
   (:func:`hyperpod_rl.tasks.vision.image_token_count`, the shared re-derivation of qwen-vl-utils'
   rules).

Fonts and the layout of a (document, style) pair are computed once and cached.
"""

from __future__ import annotations

import io
import random
from dataclasses import dataclass
from functools import lru_cache
from typing import Final

from PIL import Image, ImageChops, ImageDraw, ImageFont
from pydantic import Field

from hyperpod_rl.errors import TaskError
from hyperpod_rl.tasks.doc_read._model import DocModel
from hyperpod_rl.tasks.doc_read.document import Document
from hyperpod_rl.tasks.doc_read.templates import Template, format_date, format_money, template
from hyperpod_rl.tasks.vision import image_token_count, smart_resize

__all__ = [
    "FACTOR_PX",
    "PageStyle",
    "encode_png",
    "image_token_count",
    "page_size_px",
    "render_document",
    "render_page",
    "render_png",
    "sized_px",
]

#: Qwen3-VL: patch 16 px x spatial merge 2.
FACTOR_PX: Final[int] = 32
_PIXEL_FONT_PX: Final[int] = 11  # height of Pillow's bitmap font


class PageStyle(DocModel):
    """How one page is degraded and scaled. Immutable and hashable (a cache key).

    Attributes:
        font_scale: Multiplies the template's font size (dense pages use < 1).
        rotation_deg: Rotation about the centre, degrees counter-clockwise.
        noise_sigma: Standard deviation of the Gaussian pixel noise, in grey levels, rounded to a
            whole level when drawn (0 = none).
        paper: Page grey level (255 = white).
        ink: Text grey level (0 = black).
    """

    font_scale: float = Field(default=1.0, ge=0.5, le=2.0)
    rotation_deg: float = Field(default=0.0, ge=-10.0, le=10.0)
    noise_sigma: float = Field(default=0.0, ge=0.0, le=64.0)
    paper: int = Field(default=255, ge=128, le=255)
    ink: int = Field(default=0, ge=0, le=100)


# ----------------------------------------------------------------------------- fonts
@lru_cache(maxsize=64)
def _scalable(px: int) -> ImageFont.FreeTypeFont:
    font = ImageFont.load_default(size=px)
    if not isinstance(font, ImageFont.FreeTypeFont):  # pragma: no cover - Pillow built without FreeType
        raise TaskError("Pillow was built without FreeType: document rendering needs ImageFont.load_default(size=...)")
    return font


@lru_cache(maxsize=1)
def _bitmap() -> ImageFont.ImageFont:
    return ImageFont.load_default_imagefont()


@dataclass(frozen=True, slots=True)
class _Face:
    """A font as drawn: family, pixel size, and the measuring/drawing rules of that family."""

    name: str
    px: int

    def width(self, text: str) -> int:
        if self.name == "pixel":
            return int(_bitmap().getlength(text)) * self._pixel_scale
        w = _scalable(self.px).getlength(text) + (2 if self.name == "bold" else 0)
        return int(w * 0.85) if self.name == "condensed" else int(w)

    @property
    def _pixel_scale(self) -> int:
        return max(1, round(self.px / _PIXEL_FONT_PX))

    @property
    def line_px(self) -> int:
        return (_PIXEL_FONT_PX * self._pixel_scale if self.name == "pixel" else self.px) + max(4, self.px // 3)

    def draw(self, img: Image.Image, xy: tuple[int, int], text: str, ink: int) -> None:
        x, y = xy
        if self.name in ("sans", "bold"):
            ImageDraw.Draw(img).text(
                (x, y), text, fill=ink, font=_scalable(self.px), stroke_width=1 if self.name == "bold" else 0, stroke_fill=ink
            )
            return
        mask = _text_mask(self.name, self.px, text)
        img.paste(ink, (x, y, x + mask.width, y + mask.height), mask)


@lru_cache(maxsize=8192)
def _text_mask(name: str, px: int, text: str) -> Image.Image:
    """Coverage mask of ``text`` in the ``condensed`` or ``pixel`` family (cached: labels repeat)."""
    if name == "pixel":
        font = _bitmap()
        scale = max(1, round(px / _PIXEL_FONT_PX))
        w = max(1, int(font.getlength(text)))
        mask = Image.new("L", (w, _PIXEL_FONT_PX + 2), 0)
        ImageDraw.Draw(mask).text((0, 0), text, fill=255, font=font)
        return mask.resize((w * scale, (_PIXEL_FONT_PX + 2) * scale), Image.Resampling.NEAREST)
    scalable = _scalable(px)
    w = max(1, int(scalable.getlength(text)))
    mask = Image.new("L", (w, int(px * 1.3)), 0)
    ImageDraw.Draw(mask).text((0, 0), text, fill=255, font=scalable)
    return mask.resize((max(1, int(w * 0.85)), mask.height), Image.Resampling.BILINEAR)


# ----------------------------------------------------------------------------- layout
@dataclass(frozen=True, slots=True)
class _Layout:
    width: int
    height: int
    texts: tuple[tuple[int, int, str, _Face], ...]
    rects: tuple[tuple[int, int, int, int, int], ...]  # x0, y0, x1, y1, grey offset from paper (negative: darker)
    lines: tuple[tuple[int, int, int, int], ...]


def _layout(doc: Document, tpl: Template, font_scale: float) -> _Layout:
    body = _Face(tpl.font, max(8, round(tpl.font_px * font_scale)))
    title = _Face("bold" if tpl.font != "pixel" else "pixel", max(10, round(tpl.font_px * font_scale * 1.6)))
    width = tpl.width_px
    margin = max(12, width // 24)
    texts: list[tuple[int, int, str, _Face]] = []
    rects: list[tuple[int, int, int, int, int]] = []
    lines: list[tuple[int, int, int, int]] = []
    y = margin
    title_x = margin if tpl.header != "right" else width - margin - title.width(tpl.title)
    texts.append((title_x, y, tpl.title, title))
    y += title.line_px + 2
    texts.append((margin, y, doc.issuer, body))
    y += body.line_px + body.line_px // 2
    fields = [
        (tpl.number_label, doc.number),
        (tpl.date_label, format_date(doc.date, tpl.date_format)),
        *doc.fields,
    ]
    if tpl.header == "grid":
        half = (width - 2 * margin) // 2
        for i, (label, value) in enumerate(fields):
            x = margin + (i % 2) * half
            texts.append((x, y, f"{label}: {value}", body))
            if i % 2 == 1 or i == len(fields) - 1:
                y += body.line_px
    else:
        label_w = max(body.width(label + ":") for label, _ in fields) + body.px
        value_w = max(body.width(v) for _, v in fields)
        x0 = margin if tpl.header == "left" else width - margin - label_w - value_w
        for label, value in fields:
            texts.append((x0, y, f"{label}:", body))
            texts.append((x0 + label_w, y, value, body))
            y += body.line_px
    y += body.line_px // 2
    # Table: description left, the three numbers right-aligned in their columns.
    inner = width - 2 * margin
    col_right = [margin + int(inner * f) for f in (0.58, 0.78, 1.0)]
    row_h = body.line_px + 2
    pad = 3
    top = y
    heads = tpl.columns
    texts.append((margin + pad, y + pad, heads[0], body))
    for right, head in zip(col_right, heads[1:], strict=True):
        texts.append((right - pad - body.width(head), y + pad, head, body))
    y += row_h
    lines.append((margin, y, width - margin, y))
    for n, item in enumerate(doc.items):
        cells = (
            str(item.quantity),
            format_money(item.unit_minor, doc.currency, tpl.money_style),
            format_money(item.amount_minor, doc.currency, tpl.money_style),
        )
        if tpl.table == "stripes" and n % 2 == 0:
            rects.append((margin, y + 1, width - margin, y + row_h - 1, -28))
        texts.append((margin + pad, y + pad, item.description, body))
        for right, cell in zip(col_right, cells, strict=True):
            texts.append((right - pad - body.width(cell), y + pad, cell, body))
        y += row_h
        if tpl.table in ("lines", "grid"):
            lines.append((margin, y, width - margin, y))
    if tpl.table == "grid":
        lines += [(margin, top, width - margin, top), (margin, top, margin, y)]
        lines += [(x, top, x, y) for x in (margin + int(inner * 0.42), *col_right)]
    y += body.line_px // 2
    totals: list[tuple[str, str]] = []
    if doc.tax_pct:
        totals.append(("Subtotal", format_money(doc.subtotal_minor, doc.currency, tpl.money_style)))
        totals.append((f"Tax {doc.tax_pct}%", format_money(doc.tax_minor, doc.currency, tpl.money_style)))
    totals.append((tpl.total_label, format_money(doc.total_minor, doc.currency, tpl.money_style)))
    for label, value in totals:
        texts.append((col_right[0] - pad - body.width(label), y, label, body))
        texts.append((col_right[2] - pad - body.width(value), y, value, body))
        y += body.line_px
    return _Layout(width, y + margin, tuple(texts), tuple(rects), tuple(lines))


@lru_cache(maxsize=512)
def _cached_layout(doc: Document, font_scale: float) -> _Layout:
    return _layout(doc, template(doc.template), font_scale)


_NOISE_TILE_PX: Final[int] = 256


@lru_cache(maxsize=64)
def _noise_tile(sigma: int) -> Image.Image:
    """A 256 x 256 tile of Gaussian noise around grey 128 (sigma in grey levels), seeded: the same every run."""
    rng = random.Random(f"hyperpod_rl.doc_read.noise:{sigma}")
    data = bytes(min(255, max(0, round(128 + rng.gauss(0.0, sigma)))) for _ in range(_NOISE_TILE_PX * _NOISE_TILE_PX))
    return Image.frombytes("L", (_NOISE_TILE_PX, _NOISE_TILE_PX), data)


def _noise(size: tuple[int, int], sigma: float, key: str) -> Image.Image:
    """Noise of ``size``: the sigma's tile repeated from an offset drawn from ``key`` (deterministic, unlike ``Image.effect_noise``)."""
    tile = _noise_tile(round(sigma))
    rng = random.Random(key)
    dx, dy = rng.randrange(_NOISE_TILE_PX), rng.randrange(_NOISE_TILE_PX)
    out = Image.new("L", size)
    for y in range(-dy, size[1], _NOISE_TILE_PX):
        for x in range(-dx, size[0], _NOISE_TILE_PX):
            out.paste(tile, (x, y))
    return out


def page_size_px(doc: Document, style: PageStyle | None = None) -> tuple[int, int]:
    """``(width_px, height_px)`` of the page before sizing for the model."""
    lay = _cached_layout(doc, (style or PageStyle()).font_scale)
    return lay.width, lay.height


def sized_px(doc: Document, style: PageStyle | None = None, *, max_image_tokens: int = 1024) -> tuple[int, int]:
    """``(width_px, height_px)`` of the image :func:`render_document` returns (multiples of 32)."""
    w, h = page_size_px(doc, style)
    hh, ww = smart_resize(h, w, FACTOR_PX, 4 * FACTOR_PX * FACTOR_PX, max_image_tokens * FACTOR_PX * FACTOR_PX)
    return ww, hh


def render_page(doc: Document, style: PageStyle | None = None) -> Image.Image:
    """The page at its natural size, with noise and rotation, before sizing (greyscale ``"L"``)."""
    s = style or PageStyle()
    lay = _cached_layout(doc, s.font_scale)
    img = Image.new("L", (lay.width, lay.height), s.paper)
    draw = ImageDraw.Draw(img)
    for x0, y0, x1, y1, shade in lay.rects:
        draw.rectangle((x0, y0, x1, y1), fill=max(0, s.paper + shade))
    for x0, y0, x1, y1 in lay.lines:
        draw.line((x0, y0, x1, y1), fill=s.ink, width=1)
    for x, y, text, face in lay.texts:
        face.draw(img, (x, y), text, s.ink)
    if s.noise_sigma > 0:
        img = ImageChops.add(img, _noise(img.size, s.noise_sigma, doc.content_hash()), scale=1.0, offset=-128)
    if s.rotation_deg:
        img = img.rotate(s.rotation_deg, resample=Image.Resampling.BILINEAR, expand=False, fillcolor=s.paper)
    return img


def render_document(doc: Document, style: PageStyle | None = None, *, max_image_tokens: int = 1024) -> Image.Image:
    """The image the model sees: :func:`render_page` resized to :func:`sized_px`.

    Args:
        doc: The document.
        style: Degradation and font scale (default: clean page, scale 1).
        max_image_tokens: Cap on vision tokens (qwen-vl-utils ``max_pixels`` = cap x 32 x 32).

    Returns:
        A greyscale ``"L"`` image whose sides are multiples of 32 px; it costs exactly
        ``image_token_count(*img.size)`` vision tokens.

    Raises:
        TaskError: ``max_image_tokens`` < 4.
    """
    if max_image_tokens < 4:
        raise TaskError(f"max_image_tokens={max_image_tokens} must be >= 4")
    page = render_page(doc, style)
    size = sized_px(doc, style, max_image_tokens=max_image_tokens)
    return page if page.size == size else page.resize(size, Image.Resampling.BILINEAR, reducing_gap=2.0)


def encode_png(img: Image.Image) -> bytes:
    """PNG bytes at zlib level 1 (deterministic: no timestamps or text chunks).

    Noisy pages hardly compress: level 1 encodes a 608x320 page about twice as fast as level 6 for
    about 12 % more bytes (measured with Pillow 12 on this task's pages).
    """
    buf = io.BytesIO()
    img.save(buf, format="PNG", compress_level=1)
    return buf.getvalue()


def render_png(doc: Document, style: PageStyle | None = None, *, max_image_tokens: int = 1024) -> bytes:
    """PNG bytes of :func:`render_document` (greyscale, colour type 0)."""
    return encode_png(render_document(doc, style, max_image_tokens=max_image_tokens))
