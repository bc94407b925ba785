"""Rendering: sizes and vision-token counts, hit tests that match the pixels, determinism."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from hyperpod_rl.tasks.ui_nav import (
    AUDIT_APPS,
    SIZES,
    THEMES,
    RenderStyle,
    element_at,
    generate_app,
    image_tokens,
    initial_state,
    layout,
    render_png,
    render_screen,
)
from hyperpod_rl.tasks.ui_nav.app import Action, apply_action
from hyperpod_rl.tasks.ui_nav.render import THEMES as THEME_COLOURS
from tests.tasks.upstream import upstream_smart_resize as _upstream_smart_resize


@pytest.mark.parametrize("size", sorted(SIZES))
def test_sizes_are_kept_by_qwen_vl_utils_smart_resize_and_tokens_are_known(size: str) -> None:
    style = RenderStyle(size=size)
    w, h = SIZES[size]
    assert w % 32 == 0 and h % 32 == 0
    assert _upstream_smart_resize()(h, w, factor=32) == (h, w)
    assert image_tokens(style) == (w // 32) * (h // 32)
    assert render_screen(generate_app(seed=1), initial_state(generate_app(seed=1)), style).size == (w, h)


def test_token_counts_of_the_three_sizes() -> None:
    assert [image_tokens(RenderStyle(size=s)) for s in ("small", "medium", "large")] == [70, 130, 221]


@pytest.mark.parametrize("theme", sorted(THEMES))
def test_every_element_box_is_inside_the_image_and_hit_tests_to_itself(theme: str) -> None:
    for seed in range(6):
        app = generate_app(seed=seed, depth=2, branching=(4, 4), controls=(4, 4), goal_kind="form" if seed % 2 else "settings", confirm=1.0)
        for size in SIZES:
            style = RenderStyle(size=size, theme=theme)
            state = initial_state(app)
            for title in [app.screens[i].title for i in app.path_to(app.goal.page)]:
                state = apply_action(app, state, Action("click", label=title)).state
            boxes = layout(app, state, style)
            assert len(boxes) == len(app.screens[state.screen].controls) + 1
            for el, (x0, y0, x1, y1) in boxes:
                assert 0 <= x0 < x1 < style.width_px and 0 <= y0 < y1 < style.height_px
                assert element_at(app, state, (x0 + x1) // 2, (y0 + y1) // 2, style) == el
            for (_, a), (_, b) in zip(boxes, boxes[1:], strict=False):
                assert a[3] < b[1] or a[2] < b[0] or b[2] < a[0], "element boxes overlap"


def test_the_drawing_shows_the_hit_test_boxes() -> None:
    """Each button's box differs in colour from the background just outside it."""
    app, style = AUDIT_APPS["notely"], RenderStyle()
    state = initial_state(app)
    img = render_screen(app, state, style)
    bg = THEME_COLOURS["light"]["bg"]
    for _, (x0, y0, x1, y1) in layout(app, state, style):
        inside = img.getpixel(((x0 + x1) // 2, y0 + 3))
        assert inside != bg
        assert img.getpixel((x0 - 2, (y0 + y1) // 2)) == bg


def test_values_and_dialog_change_the_pixels() -> None:
    app, style = AUDIT_APPS["notely"], RenderStyle()
    state = initial_state(app)
    for label in ("Settings", "Display"):
        state = apply_action(app, state, Action("click", label=label)).state
    off = render_screen(app, state, style)
    on_state = apply_action(app, state, Action("click", label="Dark mode")).state
    on = render_screen(app, on_state, style)
    dialog = render_screen(app, apply_action(app, on_state, Action("click", label="Save")).state, style)
    assert off.tobytes() != on.tobytes() != dialog.tobytes()
    # The dialog dims the page: the mean brightness drops.
    assert sum(dialog.convert("L").tobytes()) < sum(on.convert("L").tobytes())


def test_png_is_deterministic_and_decodes_to_the_rendering() -> None:
    app, style = generate_app(seed=9, depth=2), RenderStyle(theme="ocean", size="medium")
    state = initial_state(app)
    png = render_png(app, state, style)
    from hyperpod_rl.tasks.ui_nav import render as render_mod

    render_mod._png.cache_clear()
    render_mod._static.cache_clear()
    assert render_png(app, state, style) == png
    with Image.open(io.BytesIO(png)) as img:
        assert img.convert("RGB").tobytes() == render_screen(app, state, style).tobytes()


def test_bad_style_names_the_field() -> None:
    from hyperpod_rl.errors import TaskError

    with pytest.raises(TaskError, match="RenderStyle.size"):
        RenderStyle(size="huge")
