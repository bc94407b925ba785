"""Renderer: sizes, markers, determinism, image-token counts and image parts."""

from __future__ import annotations

import base64
import hashlib
import io
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from hyperpod_rl.errors import MazeError, TaskError
from hyperpod_rl.tasks.maze import (
    Maze,
    RenderStyle,
    decode_image_part,
    fit_style,
    generate_maze,
    image_part,
    image_size_px,
    image_token_count,
    render_maze,
    render_png,
)
from hyperpod_rl.tasks.maze.render import THEMES, encode_png
from tests.tasks.upstream import upstream_smart_resize as _upstream_smart_resize


def _centre(maze: Maze, cell: tuple[int, int], style: RenderStyle, img: Image.Image) -> tuple[int, int]:
    ox = (img.width - (maze.cols * style.cell_px + style.wall_px)) // 2
    oy = (img.height - (maze.rows * style.cell_px + style.wall_px)) // 2
    half = style.wall_px + (style.cell_px - style.wall_px) // 2
    return ox + cell[1] * style.cell_px + half, oy + cell[0] * style.cell_px + half


def test_default_5x5_fits_160px_multiple_of_32() -> None:
    img = render_maze(generate_maze(5, 5, seed=0))
    assert img.mode == "RGB"
    assert img.size == (160, 160)
    assert img.width % 32 == 0 and img.height % 32 == 0
    assert image_token_count(*img.size) == 25


@pytest.mark.parametrize(("rows", "cols"), [(3, 3), (5, 7), (15, 15), (9, 4)])
def test_sizes_are_multiples_of_32_and_unchanged_by_smart_resize(rows: int, cols: int) -> None:
    w, h = image_size_px(rows, cols)
    assert w % 32 == 0 and h % 32 == 0
    assert render_maze(generate_maze(rows, cols, seed=1)).size == (w, h)
    assert image_token_count(w, h) == (w // 32) * (h // 32)


@pytest.mark.parametrize("theme", sorted(THEMES))
def test_agent_and_goal_markers_are_distinct(theme: str) -> None:
    style = RenderStyle(theme=theme)
    maze = generate_maze(5, 5, seed=2)
    img = render_maze(maze, agent=maze.start, style=style)
    colours = style.colours()
    assert img.getpixel(_centre(maze, maze.start, style, img)) == colours["agent"]
    assert img.getpixel(_centre(maze, maze.goal, style, img)) == colours["goal"]
    # The goal is a square: its box corner is goal-coloured; the agent is a circle: its corner is floor.
    inset = style.marker_inset_px + 1
    gx = (img.width - (5 * style.cell_px + style.wall_px)) // 2 + maze.goal[1] * style.cell_px + style.wall_px + inset
    gy = (img.height - (5 * style.cell_px + style.wall_px)) // 2 + maze.goal[0] * style.cell_px + style.wall_px + inset
    assert img.getpixel((gx, gy)) == colours["goal"]
    ax = gx + (maze.start[1] - maze.goal[1]) * style.cell_px
    ay = gy + (maze.start[0] - maze.goal[0]) * style.cell_px
    assert img.getpixel((ax, ay)) == colours["floor"]


def test_agent_moves_in_the_image() -> None:
    maze = generate_maze(5, 5, seed=2)
    cell = next(c for c in ((r, k) for r in range(5) for k in range(5)) if c not in (maze.start, maze.goal))
    a, b = render_maze(maze), render_maze(maze, agent=cell)
    style = RenderStyle()
    assert a.getpixel(_centre(maze, cell, style, a)) == style.colours()["floor"]
    assert b.getpixel(_centre(maze, cell, style, b)) == style.colours()["agent"]
    assert b.getpixel(_centre(maze, maze.start, style, b)) == style.colours()["floor"]


def test_walls_are_drawn_where_the_layout_has_them(corridor: Maze) -> None:
    style = RenderStyle()
    img = render_maze(corridor, style=style)
    ox = (img.width - (3 * style.cell_px + style.wall_px)) // 2
    oy = (img.height - (2 * style.cell_px + style.wall_px)) // 2
    wall_y = oy + style.cell_px + style.wall_px // 2  # horizontal line between row 0 and row 1
    closed_x = ox + style.cell_px // 2 + style.wall_px  # above (1,0): wall
    open_x = ox + 2 * style.cell_px + style.cell_px // 2 + style.wall_px  # (0,2)-(1,2): passage
    assert img.getpixel((closed_x, wall_y)) == style.colours()["wall"]
    assert img.getpixel((open_x, wall_y)) == style.colours()["floor"]


_PNG_SCRIPT = (
    "import hashlib; from hyperpod_rl.tasks.maze import generate_maze, render_png\n"
    "m = generate_maze(6, 6, seed=9, algorithm='prim', braid=0.5)\n"
    "print(m.layout_hash(), hashlib.sha256(render_png(m, (1, 1))).hexdigest())\n"
)


def test_png_bytes_identical_across_processes() -> None:
    root = Path(__file__).resolve().parents[3]
    out = subprocess.run(
        [sys.executable, "-c", _PNG_SCRIPT],
        capture_output=True,
        text=True,
        check=True,
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": ""},
    ).stdout.split()
    maze = generate_maze(6, 6, seed=9, algorithm="prim", braid=0.5)
    render_png.cache_clear()
    assert out == [maze.layout_hash(), hashlib.sha256(render_png(maze, (1, 1))).hexdigest()]


def test_png_is_indexed_and_decodes_to_the_rgb_render() -> None:
    maze = generate_maze(7, 5, seed=3)
    with Image.open(io.BytesIO(render_png(maze, (2, 3)))) as img:
        assert img.mode == "P"
        assert img.convert("RGB").tobytes() == render_maze(maze, (2, 3)).tobytes()
    assert len(render_png(maze, (2, 3))) < len(encode_png(render_maze(maze, (2, 3))))


def test_image_part_round_trip() -> None:
    maze = generate_maze(5, 5, seed=4)
    part = image_part(maze, (2, 2))
    assert part["type"] == "image_url"
    assert part["image_url"]["url"].startswith("data:image/png;base64,")
    decoded = decode_image_part(part)
    assert decoded.tobytes() == render_maze(maze, (2, 2)).tobytes()
    raw = render_png(maze, (2, 2))
    assert decode_image_part({"type": "image", "image": raw}).tobytes() == decoded.tobytes()
    assert decode_image_part({"type": "image", "image": render_maze(maze)}).size == (160, 160)


@pytest.mark.parametrize(
    ("part", "match"),
    [
        ({"type": "text", "text": "hi"}, "not an image part"),
        ({"type": "image_url", "image_url": {"url": "http://x/y.png"}}, "base64 data URI"),
        ({"type": "image_url", "image_url": {"url": "data:image/png;base64,@@@"}}, "invalid base64"),
        ({"type": "image", "image": base64.b64encode(b"not a png")}, "not a readable image"),
    ],
)
def test_decode_image_part_errors(part: dict, match: str) -> None:
    with pytest.raises(TaskError, match=match):
        decode_image_part(part)


def test_token_count_resize_rules() -> None:
    assert image_token_count(160, 160) == 25
    assert image_token_count(100, 60) == 6  # rounds to 96x64 -> 3x2
    assert image_token_count(10, 10) == 4  # below min_pixels: grows to 64x64
    assert image_token_count(4000, 4000, max_pixels=1024 * 1024) <= 1024
    assert image_token_count(160, 160, min_pixels=65536) == 64  # Qwen3-VL hub processor's shortest_edge
    with pytest.raises(TaskError, match="min_pixels=.* must be <= max_pixels"):
        image_token_count(160, 160, min_pixels=10, max_pixels=5)
    with pytest.raises(TaskError, match="aspect ratio"):
        image_token_count(10_000, 10)


def test_token_count_agrees_with_qwen_vl_utils_source() -> None:
    upstream = _upstream_smart_resize()
    for w in (32, 90, 100, 160, 333, 480, 1000, 4100):
        for h in (32, 64, 161, 480, 777):
            for lo, hi in ((None, None), (65536, 16777216), (3136, 200_000)):
                uh, uw = upstream(h, w, 32, min_pixels=lo, max_pixels=hi)
                assert image_token_count(w, h, min_pixels=lo, max_pixels=hi) == (uh // 32) * (uw // 32), (w, h, lo, hi)


def test_fit_style_caps_tokens() -> None:
    style = fit_style(15, 15, RenderStyle(), max_image_tokens=100)
    w, h = image_size_px(15, 15, style)
    assert image_token_count(w, h) <= 100
    assert style.cell_px < RenderStyle().cell_px
    assert fit_style(5, 5, RenderStyle(), max_image_tokens=25) == RenderStyle()
    with pytest.raises(MazeError, match="max_image_tokens=4 is too small"):
        fit_style(30, 30, RenderStyle(), max_image_tokens=4)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"cell_px": 4}, r"RenderStyle.cell_px"),
        ({"cell_px": 30, "wall_px": 12}, r"wall_px=12 is too thick"),
        ({"theme": "neon"}, r"RenderStyle.theme"),
        ({"agent": (0, 255, 0), "goal": (0, 255, 0)}, r"agent and goal colours must differ"),
        ({"colour": "red"}, r"RenderStyle.colour: not a known field"),
    ],
)
def test_render_style_errors_name_the_field(kwargs: dict, match: str) -> None:
    with pytest.raises(MazeError, match=match):
        RenderStyle(**kwargs)


def test_prompt_legend_matches_the_theme() -> None:
    from hyperpod_rl.tasks.maze import build_prompt
    from hyperpod_rl.tasks.maze.render import THEME_WORDS

    assert set(THEME_WORDS) == set(THEMES)
    maze = generate_maze(4, 4, seed=1)
    text = build_prompt(maze, style=RenderStyle(theme="blueprint"))[1]["content"][-1]["text"]
    assert "yellow circle" in text and "pink square" in text
    custom = build_prompt(maze, style=RenderStyle(agent=(1, 2, 3)))[1]["content"][-1]["text"]
    assert "you are the circle" in custom and "red" not in custom
