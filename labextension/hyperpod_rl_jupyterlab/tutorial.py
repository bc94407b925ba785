"""Copy the tutorial notebooks (and the docs) shipped in this package into the user's folder.

The notebooks are hyperpod-rl's ``notebooks/*.ipynb`` and the docs its ``docs/*.md`` (plus their
images), copied into this wheel at build time
(``pyproject.toml`` force-include), because the Jupyter server's environment in Studio does not
have ``hyperpod_rl`` installed. They are written through the server's contents manager, so they
land under the server's root (and any non-file contents manager works too); existing files are
kept, never overwritten.

The shipped notebooks say ``kernelspec: python3``; in Studio that is the server's environment,
which has no ``hyperpod_rl``. The copies are retargeted to the kernel the frontend chose
(:mod:`.kernels`: one that imports the library), so they open on it.
"""

from __future__ import annotations

import base64
import inspect
import json
from pathlib import Path
from typing import Any

from .models import TutorialResponse

__all__ = ["copy_tutorial", "retarget", "tutorial_sources"]


def tutorial_sources() -> tuple[Path, Path]:
    """``(notebooks dir, docs dir)``: the copies inside an installed wheel, else (a source checkout
    that was never built) the repository's ``notebooks/`` and ``docs/``."""
    shipped = Path(__file__).parent / "tutorial"
    if shipped.is_dir():
        return shipped, shipped / "docs"
    repo = Path(__file__).resolve().parents[2]
    return repo / "notebooks", repo / "docs"


async def _maybe(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


def retarget(notebook: dict[str, Any], kernel: dict[str, Any] | None) -> dict[str, Any]:
    """``notebook`` (nbformat JSON) with ``metadata.kernelspec`` set to ``kernel``
    (``{"name", "display_name"}``); unchanged when ``kernel`` is ``None`` or has no name."""
    if not kernel or not kernel.get("name"):
        return notebook
    spec = {"name": str(kernel["name"]), "display_name": str(kernel.get("display_name") or kernel["name"]), "language": "python"}
    return {**notebook, "metadata": {**(notebook.get("metadata") or {}), "kernelspec": spec}}


async def copy_tutorial(
    contents_manager: Any, source: Path, docs_source: Path, folder: str, *, kernel: dict[str, Any] | None = None
) -> TutorialResponse:
    """Copy every ``source/*.ipynb`` into ``folder`` (relative to the server root), and
    ``docs_source``'s Markdown pages and images into ``folder/docs``. Copied notebooks get
    ``kernel`` (``{"name", "display_name"}``) as their kernelspec (:func:`retarget`).

    Returns:
        The folder, the notebooks copied, those already there, and the first notebook's path.
    """
    folder = folder.strip("/")
    if folder and not await _maybe(contents_manager.dir_exists(folder)):
        parts = folder.split("/")
        for i in range(1, len(parts) + 1):
            sub = "/".join(parts[:i])
            if not await _maybe(contents_manager.dir_exists(sub)):
                await _maybe(contents_manager.save({"type": "directory"}, sub))
    copied, existing = [], []
    notebooks = sorted(source.glob("*.ipynb"))
    # the pages and their images (docs/img/*.png: the pages link them as img/<name>)
    docs = sorted(p for p in [*docs_source.glob("*"), *docs_source.glob("img/*")] if p.suffix in (".md", ".png", ".svg"))
    subdirs = ["docs"] if docs else []
    subdirs += ["docs/img"] if any(p.parent != docs_source for p in docs) else []
    for sub in subdirs:
        target = f"{folder}/{sub}" if folder else sub
        if not await _maybe(contents_manager.dir_exists(target)):
            await _maybe(contents_manager.save({"type": "directory"}, target))
    for path in [*notebooks, *docs]:
        rel = path.name if path.suffix == ".ipynb" else f"docs/{path.relative_to(docs_source).as_posix()}"
        dest = f"{folder}/{rel}" if folder else rel
        if await _maybe(contents_manager.file_exists(dest)):
            existing.append(dest)
            continue
        if path.suffix == ".ipynb":
            model = {"type": "notebook", "format": "json", "content": retarget(json.loads(path.read_text()), kernel)}
        elif path.suffix == ".png":
            model = {"type": "file", "format": "base64", "content": base64.b64encode(path.read_bytes()).decode()}
        else:
            model = {"type": "file", "format": "text", "content": path.read_text()}
        await _maybe(contents_manager.save(model, dest))
        copied.append(dest)
    first = f"{folder}/{notebooks[0].name}" if folder else notebooks[0].name
    return TutorialResponse(folder=folder, copied=copied, existing=existing, first=first)
