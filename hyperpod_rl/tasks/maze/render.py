"""Render a :class:`~hyperpod_rl.tasks.maze.grid.Maze` as a PIL image, and size it in vision tokens.

Geometry (pixels): every cell takes a ``cell_px`` x ``cell_px`` pitch that includes one
``wall_px`` wall on its top and left side; the closing walls at the bottom/right add
``wall_px``. The drawing is centred on a canvas whose sides are rounded up to a multiple
of ``size_multiple_px`` (default 32 = Qwen-VL patch 16 x merge 2), so Qwen-VL's
``smart_resize`` leaves the image unchanged. Default style: a 5x5 maze is 160x160 px
(25 vision tokens), a 15x15 maze 480x480 px (225 tokens).

Markers: the **agent** is a filled circle, the **goal** a filled square, in different
colours in every theme. When the agent stands on the goal the circle is drawn on the square.

Rendering is incremental: the walls and goal of a (maze, style) pair are drawn once, as a
four-colour palette image, and cached; each call then copies that base and draws only the agent. PNG bytes are cached
per (maze, agent cell, style), because a GRPO group revisits the same cells many times.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Final, Literal

from PIL import Image, ImageDraw
from pydantic import Field, model_validator

from hyperpod_rl.errors import MazeError
from hyperpod_rl.tasks.maze._model import MazeModel
from hyperpod_rl.tasks.maze.grid import OPEN_BITS, Cell, Maze
from hyperpod_rl.tasks.vision import encode_png, image_token_count

__all__ = [
    "render_path",
    "QWEN_VL_MAX_PIXELS",
    "QWEN_VL_MIN_PIXELS",
    "THEMES",
    "THEME_WORDS",
    "RenderStyle",
    "encode_png",
    "fit_style",
    "image_size_px",
    "image_token_count",
    "render_maze",
    "render_png",
]

RGB = tuple[int, int, int]
Theme = Literal["classic", "dark", "blueprint", "sepia"]

#: Colour sets per theme: background/floor, wall, agent (circle), goal (square).
THEMES: Final[dict[str, dict[str, RGB]]] = {
    "classic": {"floor": (255, 255, 255), "wall": (0, 0, 0), "agent": (220, 30, 30), "goal": (20, 160, 40)},
    "dark": {"floor": (24, 24, 28), "wall": (235, 235, 235), "agent": (255, 80, 60), "goal": (60, 200, 255)},
    "blueprint": {"floor": (16, 48, 112), "wall": (230, 240, 255), "agent": (255, 210, 0), "goal": (255, 90, 200)},
    "sepia": {"floor": (240, 226, 196), "wall": (74, 52, 30), "agent": (30, 60, 200), "goal": (200, 90, 0)},
}

#: Words for each theme's colours, used in prompts: (walls, agent circle, goal square).
THEME_WORDS: Final[dict[str, tuple[str, str, str]]] = {
    "classic": ("black", "red", "green"),
    "dark": ("white", "red", "light blue"),
    "blueprint": ("white", "yellow", "pink"),
    "sepia": ("dark brown", "blue", "orange"),
}

#: qwen-vl-utils 0.0.14 defaults (vision_process.py: IMAGE_MIN_TOKEN_NUM=4, IMAGE_MAX_TOKEN_NUM=16384)
#: for factor 32. Note: the Qwen3-VL hub processors set ``size.shortest_edge`` = 65,536 px, which
#: upsizes small images; pass that processor's values as min_pixels/max_pixels when it applies.
QWEN_VL_MIN_PIXELS: Final[int] = 4 * 32 * 32
QWEN_VL_MAX_PIXELS: Final[int] = 16384 * 32 * 32


class RenderStyle(MazeModel):
    """How a maze is drawn. Immutable and hashable (used as a cache key).

    Every field's description is the docstring under it.
    """

    cell_px: int = Field(default=30, ge=8, le=128)
    """Cell pitch in pixels, wall included (8..128)."""
    wall_px: int = Field(default=6, ge=1, le=42)
    """Wall thickness in pixels (1..cell_px/3); thick walls keep them visible to a small, randomly initialised vision tower."""
    theme: Theme = "classic"
    """Colour theme, one of hyperpod_rl.tasks.maze.render.THEMES."""
    floor: RGB | None = None
    """Optional RGB override of the theme's floor colour, e.g. [255, 255, 255]."""
    wall: RGB | None = None
    """Optional RGB override of the theme's wall colour, e.g. [255, 255, 255]."""
    agent: RGB | None = None
    """Optional RGB override of the theme's agent colour, e.g. [255, 255, 255]."""
    goal: RGB | None = None
    """Optional RGB override of the theme's goal colour, e.g. [255, 255, 255]."""
    size_multiple_px: int = Field(default=32, ge=1, le=256)
    """Canvas sides are rounded up to this multiple (32 = patch 16 x merge 2)."""
    marker_inset_px: int = Field(default=4, ge=0, le=32)
    """Gap between a marker and the cell's walls, in pixels."""

    @model_validator(mode="after")
    def _check(self) -> RenderStyle:
        if self.wall_px * 3 > self.cell_px:
            raise ValueError(f"wall_px={self.wall_px} is too thick for cell_px={self.cell_px}; use wall_px <= cell_px/3")
        inner = self.cell_px - self.wall_px
        if 2 * self.marker_inset_px >= inner - 2:
            raise ValueError(f"marker_inset_px={self.marker_inset_px} leaves no room for markers in {inner}px cells")
        c = self.colours()
        if c["agent"] == c["goal"]:
            raise ValueError("agent and goal colours must differ")
        if c["wall"] == c["floor"]:
            raise ValueError("wall and floor colours must differ")
        return self

    def legend(self) -> str:
        """One sentence naming the walls, agent and goal as drawn (colour words only for un-overridden themes)."""
        wall, agent, goal = THEME_WORDS[self.theme]
        if any(getattr(self, k) is not None for k in ("floor", "wall", "agent", "goal")):
            return "Thick lines are walls; you are the circle; the goal is the square."
        return f"The {wall} lines are walls; you are the {agent} circle; the goal is the {goal} square."

    def colours(self) -> dict[str, RGB]:
        """The effective colours: the theme's, with any per-field overrides applied."""
        base = dict(THEMES[self.theme])
        for key in ("floor", "wall", "agent", "goal"):
            value = getattr(self, key)
            if value is not None:
                base[key] = tuple(value)
        return base


def image_size_px(rows: int, cols: int, style: RenderStyle | None = None) -> tuple[int, int]:
    """``(width_px, height_px)`` of the image :func:`render_maze` makes for a rows x cols maze."""
    s = style or RenderStyle()
    m = s.size_multiple_px
    w = cols * s.cell_px + s.wall_px
    h = rows * s.cell_px + s.wall_px
    return (-(-w // m) * m, -(-h // m) * m)


def fit_style(rows: int, cols: int, style: RenderStyle, *, max_image_tokens: int, patch: int = 16, merge: int = 2) -> RenderStyle:
    """The largest-cell copy of ``style`` whose image needs at most ``max_image_tokens`` tokens.

    Shrinks ``cell_px`` (keeping ``wall_px`` at most a third of it) until the image fits.

    Raises:
        MazeError: if even 8-px cells exceed the cap (name: ``max_image_tokens``).
    """
    cell = style.cell_px
    while cell >= 8:
        wall = min(style.wall_px, cell // 3)
        inset = min(style.marker_inset_px, (cell - wall - 3) // 2)
        candidate = RenderStyle(**{**style.model_dump(), "cell_px": cell, "wall_px": wall, "marker_inset_px": inset})
        w, h = image_size_px(rows, cols, candidate)
        if image_token_count(w, h, patch=patch, merge=merge) <= max_image_tokens:
            return candidate
        cell -= 1
    raise MazeError(f"max_image_tokens={max_image_tokens} is too small for a {rows}x{cols} maze even with 8-px cells; raise it")


#: Palette indices of the indexed-colour images (PNG colour type 3).
_FLOOR, _WALL, _AGENT, _GOAL = 0, 1, 2, 3


@lru_cache(maxsize=256)  # 256 mazes in flight: <= 60 MB at 480x480 px, 6.5 MB at 160x160 px
def _base_image(maze: Maze, style: RenderStyle) -> Image.Image:
    """Walls and goal, no agent, as a palette ("P") image. Cached per (maze, style); never mutate it."""
    colours = style.colours()
    width, height = image_size_px(maze.rows, maze.cols, style)
    img = Image.new("P", (width, height), _FLOOR)
    img.putpalette([v for key in ("floor", "wall", "agent", "goal") for v in colours[key]])
    draw = ImageDraw.Draw(img)
    p, t = style.cell_px, style.wall_px
    ox = (width - (maze.cols * p + t)) // 2
    oy = (height - (maze.rows * p + t)) // 2
    # Outer frame.
    draw.rectangle([ox, oy, ox + maze.cols * p + t - 1, oy + t - 1], fill=_WALL)
    draw.rectangle([ox, oy + maze.rows * p, ox + maze.cols * p + t - 1, oy + maze.rows * p + t - 1], fill=_WALL)
    draw.rectangle([ox, oy, ox + t - 1, oy + maze.rows * p + t - 1], fill=_WALL)
    draw.rectangle([ox + maze.cols * p, oy, ox + maze.cols * p + t - 1, oy + maze.rows * p + t - 1], fill=_WALL)
    for r in range(maze.rows):
        for c in range(maze.cols):
            x0, y0 = ox + c * p, oy + r * p
            mask = maze.open_sides[r * maze.cols + c]
            # Posts at every grid point keep wall joints solid.
            draw.rectangle([x0, y0, x0 + t - 1, y0 + t - 1], fill=_WALL)
            if not mask & OPEN_BITS["right"]:
                draw.rectangle([x0 + p, y0, x0 + p + t - 1, y0 + p + t - 1], fill=_WALL)
            if not mask & OPEN_BITS["down"]:
                draw.rectangle([x0, y0 + p, x0 + p + t - 1, y0 + p + t - 1], fill=_WALL)
    draw.rectangle(list(_marker_box(maze, style, maze.goal, ox, oy)), fill=_GOAL)
    return img


def _marker_box(maze: Maze, style: RenderStyle, cell: Cell, ox: int, oy: int) -> tuple[int, int, int, int]:
    p, t, inset = style.cell_px, style.wall_px, style.marker_inset_px
    x0 = ox + cell[1] * p + t + inset
    y0 = oy + cell[0] * p + t + inset
    return x0, y0, ox + (cell[1] + 1) * p - 1 - inset, oy + (cell[0] + 1) * p - 1 - inset


def _render_indexed(maze: Maze, agent: Cell | None, style: RenderStyle | None) -> Image.Image:
    s = style or RenderStyle()
    here = maze.start if agent is None else (int(agent[0]), int(agent[1]))
    if not maze.in_bounds(here):
        raise MazeError(f"agent={here} is outside the {maze.rows}x{maze.cols} grid")
    img = _base_image(maze, s).copy()
    width, height = img.size
    ox = (width - (maze.cols * s.cell_px + s.wall_px)) // 2
    oy = (height - (maze.rows * s.cell_px + s.wall_px)) // 2
    ImageDraw.Draw(img).ellipse(list(_marker_box(maze, s, here, ox, oy)), fill=_AGENT)
    return img


def render_maze(maze: Maze, agent: Cell | None = None, style: RenderStyle | None = None) -> Image.Image:
    """Draw the maze with the agent at ``agent`` (default: ``maze.start``).

    Returns:
        A new RGB ``PIL.Image.Image`` of size :func:`image_size_px` (the caller may mutate it).

    Raises:
        MazeError: if ``agent`` is outside the grid.
    """
    return _render_indexed(maze, agent, style).convert("RGB")


def render_path(maze: Maze, cells: list[Cell], style: RenderStyle | None = None) -> Image.Image:
    """Draw the maze with the agent at the last of ``cells`` and a line through all of them.

    Args:
        maze: the maze.
        cells: ``(row, col)`` positions in visiting order, the start first (empty: agent at start).
        style: render style (default :class:`RenderStyle`).

    Returns:
        A new RGB image of size :func:`image_size_px` (pixels), the path drawn in orange.

    Raises:
        MazeError: a cell is outside the grid.
    """
    from PIL import ImageDraw

    style = style or RenderStyle()
    img = render_maze(maze, agent=cells[-1] if cells else None, style=style)
    p, t = style.cell_px, style.wall_px
    ox = (img.width - (maze.cols * p + t)) // 2
    oy = (img.height - (maze.rows * p + t)) // 2
    centre = [(ox + c * p + t + (p - t) / 2, oy + r * p + t + (p - t) / 2) for r, c in cells]
    if len(centre) > 1:
        ImageDraw.Draw(img).line(centre, fill=(255, 140, 0), width=max(t, 2), joint="curve")
    return img


@lru_cache(maxsize=16384)  # ~0.3-2 KB per PNG: <= ~32 MB
def render_png(maze: Maze, agent: Cell | None = None, style: RenderStyle | None = None) -> bytes:
    """PNG bytes of :func:`render_maze`, cached per maze, agent cell and style.

    The PNG is palette-indexed (colour type 3, four colours): 5x smaller to encode and half
    the bytes of RGB; decoders (PIL, HF image processors, vLLM) convert it to the same RGB pixels.
    """
    return encode_png(_render_indexed(maze, agent, style))
