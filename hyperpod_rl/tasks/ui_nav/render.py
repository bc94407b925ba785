"""Draw app screens with PIL, lay out their clickable elements, and size them in vision tokens.

A screen is drawn as one application window filling the image: a title bar (app name and screen
title), then the screen's content:

* menu: its buttons, one column (``layout="list"``) or two (``"grid"``);
* settings page: one row per toggle (label left, switch right: filled accent = on, grey = off);
* form page: one row per text field (label left, a text box right; the focused box has an accent
  border and a caret);
* every page: its commit button at the bottom left or right (``App.align``);
* an open dialog: the page dimmed, a centred box with :data:`~.app.DIALOG_TEXT` and ``OK`` / ``Cancel``.

Sizes (:data:`SIZES`) and themes (:data:`THEMES`) are strata of the dataset. Every size is a
multiple of 32 px on both sides (Qwen-VL patch 16 x merge 2), so qwen-vl-utils' ``smart_resize``
leaves it unchanged and :func:`image_tokens` is exact: ``(w / 32) * (h / 32)`` tokens.

Coordinates are pixels of the image as drawn, origin top-left. :func:`element_at` is the hit test
of coordinate clicks; it uses the same :func:`layout` boxes the drawing uses. Rendering is
incremental: the static part of each (app, screen, style) is drawn once and cached; each call
draws only the values (switch states, field text, focus). PNG bytes are cached per shown state.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Final, Literal

from PIL import Image, ImageDraw, ImageFont
from pydantic import Field

from hyperpod_rl.tasks.ui_nav._model import UINavModel
from hyperpod_rl.tasks.ui_nav.app import DIALOG_CANCEL, DIALOG_OK, DIALOG_TEXT, App, Element, State, visible_elements
from hyperpod_rl.tasks.vision import encode_png, image_token_count

__all__ = [
    "SIZES",
    "THEMES",
    "Box",
    "RenderStyle",
    "element_at",
    "encode_png",
    "image_tokens",
    "layout",
    "render_png",
    "render_screen",
]

RGB = tuple[int, int, int]
Box = tuple[int, int, int, int]
Size = Literal["small", "medium", "large"]
Theme = Literal["light", "dark", "ocean", "contrast"]

#: Window sizes ``(width_px, height_px)``: multiples of 32, so smart_resize keeps them (70, 130, 221 tokens).
SIZES: Final[dict[str, tuple[int, int]]] = {"small": (320, 224), "medium": (416, 320), "large": (544, 416)}

#: Colours per theme.
THEMES: Final[dict[str, dict[str, RGB]]] = {
    "light": {
        "bg": (246, 246, 248), "title": (52, 98, 190), "title_text": (255, 255, 255), "text": (25, 25, 30),
        "button": (222, 228, 240), "border": (120, 130, 150), "accent": (40, 150, 80), "off": (185, 185, 190),
        "field": (255, 255, 255), "dialog": (255, 255, 255),
    },
    "dark": {
        "bg": (30, 31, 36), "title": (70, 70, 90), "title_text": (235, 235, 240), "text": (230, 230, 235),
        "button": (58, 60, 72), "border": (140, 140, 160), "accent": (80, 200, 255), "off": (95, 95, 105),
        "field": (20, 20, 24), "dialog": (48, 50, 60),
    },
    "ocean": {
        "bg": (226, 240, 246), "title": (0, 105, 120), "title_text": (255, 255, 255), "text": (10, 40, 60),
        "button": (180, 220, 232), "border": (40, 110, 130), "accent": (230, 120, 20), "off": (160, 180, 190),
        "field": (250, 254, 255), "dialog": (240, 250, 252),
    },
    "contrast": {
        "bg": (0, 0, 0), "title": (255, 255, 0), "title_text": (0, 0, 0), "text": (255, 255, 255),
        "button": (0, 0, 0), "border": (255, 255, 255), "accent": (0, 255, 0), "off": (110, 110, 110),
        "field": (0, 0, 0), "dialog": (20, 20, 20),
    },
}  # fmt: skip


class RenderStyle(UINavModel):
    """How screens are drawn. Immutable and hashable (a cache key).

    Attributes:
        size: Window size, one of :data:`SIZES` (pixels).
        theme: Colour theme, one of :data:`THEMES`.
        font_px: Font size in pixels at the ``small`` size (scaled with the window); 8..24.
    """

    size: Size = "small"
    theme: Theme = "light"
    font_px: int = Field(default=13, ge=8, le=24)

    @property
    def width_px(self) -> int:
        """Image width in pixels."""
        return SIZES[self.size][0]

    @property
    def height_px(self) -> int:
        """Image height in pixels."""
        return SIZES[self.size][1]

    @property
    def scale(self) -> float:
        """Length factor relative to the ``small`` window."""
        return self.height_px / SIZES["small"][1]


def image_tokens(style: RenderStyle, *, patch: int = 16, merge: int = 2) -> int:
    """Vision tokens one screen costs a Qwen-VL model (qwen-vl-utils ``smart_resize`` rules).

    :func:`hyperpod_rl.tasks.vision.image_token_count`; every size here is a multiple of
    ``patch * merge`` = 32 px, so the count is ``(w / 32) * (h / 32)`` with the defaults.
    """
    return image_token_count(style.width_px, style.height_px, patch=patch, merge=merge)


@dataclass(frozen=True, slots=True)
class _Layout:
    """Boxes of one screen: clickable elements, and static text placed by the drawing."""

    elements: tuple[tuple[Element, Box], ...]
    title: str
    title_box: Box
    labels: tuple[tuple[str, tuple[int, int]], ...]  # page row labels and their left-middle text anchor
    widgets: tuple[Box, ...]  # switch / text box of each page control, in control order
    dialog_box: Box | None


def _px(style: RenderStyle, value: float) -> int:
    return int(round(value * style.scale))


@lru_cache(maxsize=4096)
def _layout(app: App, screen: int, dialog: bool, style: RenderStyle) -> _Layout:
    w, h = style.width_px, style.height_px
    s = app.screens[screen]
    title_h, margin = _px(style, 28), _px(style, 12)
    title = app.name if screen == 0 else f"{app.name} - {s.title}"
    elements: list[tuple[Element, Box]] = []
    labels: list[tuple[str, tuple[int, int]]] = []
    widgets: list[Box] = []
    top = title_h + margin
    if s.kind == "menu":
        shown = visible_elements(app, State(screen=screen))
        if app.layout == "list":
            bh, gap = _px(style, 30), _px(style, 8)
            for k, el in enumerate(shown):
                y = top + k * (bh + gap)
                elements.append((el, (margin, y, w - margin - 1, y + bh - 1)))
        else:
            bw, bh, gap = (w - 3 * margin) // 2, _px(style, 44), _px(style, 10)
            for k, el in enumerate(shown):
                x = margin + (k % 2) * (bw + margin)
                y = top + (k // 2) * (bh + gap)
                elements.append((el, (x, y, x + bw - 1, y + bh - 1)))
    else:
        rh, gap = _px(style, 26), _px(style, 4)
        role = "toggle" if s.kind == "settings" else "field"
        for j, ctl in enumerate(s.controls):
            y = top + j * (rh + gap)
            row = (margin, y, w - margin - 1, y + rh - 1)
            elements.append((Element(ctl.label, role, j), row))
            labels.append((ctl.label, (margin + _px(style, 6), y + rh // 2)))
            if s.kind == "settings":
                sw, sh = _px(style, 38), _px(style, 18)
                widgets.append((row[2] - _px(style, 6) - sw, y + (rh - sh) // 2, row[2] - _px(style, 6), y + (rh - sh) // 2 + sh))
            else:
                x0 = margin + int((w - 2 * margin) * 0.42)
                widgets.append((x0, y + _px(style, 2), row[2] - _px(style, 2), y + rh - 1 - _px(style, 2)))
        bw, bh = _px(style, 90), _px(style, 30)
        y = h - margin - bh
        x = margin if app.align == "left" else w - margin - bw
        elements.append((Element(s.action_label, "commit"), (x, y, x + bw - 1, y + bh - 1)))
    dialog_box = None
    if dialog:
        dw, dh = _px(style, 200), _px(style, 104)
        x0, y0 = (w - dw) // 2, (h - dh) // 2
        dialog_box = (x0, y0, x0 + dw - 1, y0 + dh - 1)
        bw, bh = _px(style, 74), _px(style, 28)
        by = y0 + dh - _px(style, 10) - bh
        elements = [
            (Element(DIALOG_OK, "ok"), (x0 + _px(style, 16), by, x0 + _px(style, 16) + bw - 1, by + bh - 1)),
            (Element(DIALOG_CANCEL, "cancel"), (x0 + dw - _px(style, 16) - bw, by, x0 + dw - _px(style, 16) - 1, by + bh - 1)),
        ]
    return _Layout(tuple(elements), title, (0, 0, w - 1, title_h - 1), tuple(labels), tuple(widgets), dialog_box)


def layout(app: App, state: State, style: RenderStyle | None = None) -> tuple[tuple[Element, Box], ...]:
    """The clickable elements of ``state`` with their boxes ``(x0, y0, x1, y1)`` (pixels, inclusive)."""
    return _layout(app, state.screen, state.dialog, style or RenderStyle()).elements


def element_at(app: App, state: State, x: int, y: int, style: RenderStyle | None = None) -> Element | None:
    """The clickable element under pixel ``(x, y)`` of the image of ``state``, or None."""
    for el, (x0, y0, x1, y1) in layout(app, state, style):
        if x0 <= x <= x1 and y0 <= y <= y1:
            return el
    return None


@lru_cache(maxsize=8)
def _font(px: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    return ImageFont.load_default(size=px)


def _centred(draw: ImageDraw.ImageDraw, box: Box, text: str, font: ImageFont.FreeTypeFont | ImageFont.ImageFont, fill: RGB) -> None:
    draw.text(((box[0] + box[2]) / 2, (box[1] + box[3]) / 2), text, font=font, fill=fill, anchor="mm")


def _button(
    draw: ImageDraw.ImageDraw, box: Box, text: str, c: dict[str, RGB], font: ImageFont.FreeTypeFont | ImageFont.ImageFont, radius: int
) -> None:
    draw.rounded_rectangle(box, radius=radius, fill=c["button"], outline=c["border"], width=1)
    _centred(draw, box, text, font, c["text"])


@lru_cache(maxsize=1024)
def _static(app: App, screen: int, style: RenderStyle) -> Image.Image:
    """Background, title bar, buttons and row labels of a screen (no values, no dialog). Never mutate it."""
    c = THEMES[style.theme]
    lay = _layout(app, screen, False, style)
    img = Image.new("RGB", (style.width_px, style.height_px), c["bg"])
    draw = ImageDraw.Draw(img)
    font = _font(_px(style, style.font_px))
    draw.rectangle(lay.title_box, fill=c["title"])
    draw.text((_px(style, 10), (lay.title_box[3] + 1) // 2), lay.title, font=font, fill=c["title_text"], anchor="lm")
    radius = _px(style, 5)
    for el, box in lay.elements:
        if el.role in ("open", "commit"):
            _button(draw, box, el.label, c, font, radius)
        else:
            draw.rounded_rectangle(box, radius=radius, outline=c["border"], width=1)
    for text, origin in lay.labels:
        draw.text(origin, text, font=font, fill=c["text"], anchor="lm")
    return img


def render_screen(app: App, state: State, style: RenderStyle | None = None) -> Image.Image:
    """Draw ``state`` of ``app``.

    Returns:
        A new RGB image of ``style.width_px`` x ``style.height_px`` pixels (the caller may mutate it).
    """
    style = style or RenderStyle()
    c = THEMES[style.theme]
    img = _static(app, state.screen, style).copy()
    s = app.screens[state.screen]
    if s.kind != "menu":
        lay = _layout(app, state.screen, False, style)
        draw = ImageDraw.Draw(img)
        font = _font(_px(style, style.font_px))
        values = state.pending or tuple(ctl.initial for ctl in s.controls)
        for j, box in enumerate(lay.widgets):
            value = values[j]
            if s.kind == "settings":
                on = bool(value)
                r = (box[3] - box[1]) // 2
                draw.rounded_rectangle(box, radius=r, fill=c["accent"] if on else c["off"])
                knob_x = box[2] - 2 * r if on else box[0]
                draw.ellipse((knob_x + 2, box[1] + 2, knob_x + 2 * r - 2, box[3] - 2), fill=(255, 255, 255))
            else:
                focused = state.focus == j and not state.dialog
                draw.rectangle(box, fill=c["field"], outline=c["accent"] if focused else c["border"], width=2 if focused else 1)
                draw.text((box[0] + _px(style, 5), (box[1] + box[3]) // 2), str(value), font=font, fill=c["text"], anchor="lm")
                if focused:
                    tx = box[0] + _px(style, 5) + int(draw.textlength(str(value), font=font)) + 1
                    draw.line((tx, box[1] + 4, tx, box[3] - 4), fill=c["text"], width=1)
    if state.dialog:
        lay = _layout(app, state.screen, True, style)
        img = Image.blend(img, Image.new("RGB", img.size, (0, 0, 0)), 0.45)
        draw = ImageDraw.Draw(img)
        font = _font(_px(style, style.font_px))
        assert lay.dialog_box is not None
        draw.rounded_rectangle(lay.dialog_box, radius=_px(style, 6), fill=c["dialog"], outline=c["border"], width=2)
        x0, y0, x1, _ = lay.dialog_box
        draw.text(((x0 + x1) / 2, y0 + _px(style, 28)), DIALOG_TEXT, font=font, fill=c["text"], anchor="mm")
        for el, box in lay.elements:
            _button(draw, box, el.label, c, font, _px(style, 5))
    return img


@lru_cache(maxsize=8192)
def _png(app: App, screen: int, dialog: bool, focus: int | None, pending: tuple, style: RenderStyle) -> bytes:
    return encode_png(render_screen(app, State(screen=screen, dialog=dialog, focus=focus, pending=pending), style))


def render_png(app: App, state: State, style: RenderStyle | None = None) -> bytes:
    """PNG bytes of :func:`render_screen`, cached per shown state (screen, dialog, focus, values) and style."""
    return _png(app, state.screen, state.dialog, state.focus, state.pending, style or RenderStyle())
