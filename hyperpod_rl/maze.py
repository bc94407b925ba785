"""Deprecated alias of :mod:`hyperpod_rl.tasks.maze` (the maze task moved there; kept for one release).

``import hyperpod_rl.maze`` and ``import hyperpod_rl.maze.<sub>`` (``task``, ``env``, ``dataset``,
``generate``, ``render``, ...) keep working and give the very same objects as
``hyperpod_rl.tasks.maze`` / ``hyperpod_rl.tasks.maze.<sub>``; importing the alias emits a
:class:`DeprecationWarning` naming the new path. Import ``hyperpod_rl.tasks.maze`` in new code.

The alias is a package without a search path (``__path__ = []``): a finder on :data:`sys.meta_path`
answers ``hyperpod_rl.maze.<sub>`` with the module ``hyperpod_rl.tasks.maze.<sub>`` (the import
system's finder/loader protocol, https://docs.python.org/3/reference/import.html#the-meta-path).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from types import ModuleType

from hyperpod_rl.tasks import maze as _new

OLD = "hyperpod_rl.maze"
NEW = "hyperpod_rl.tasks.maze"

warnings.warn(f"{OLD} moved to {NEW}; import {NEW} instead ({OLD} will be removed)", DeprecationWarning, stacklevel=2)

__all__ = list(_new.__all__)
#: No search path of its own: ``hyperpod_rl.maze.<sub>`` is answered by :class:`_AliasFinder`.
__path__: list[str] = []


class _AliasLoader(importlib.abc.Loader):
    """Hands back the module at the new path; nothing is executed twice and its ``__spec__`` is kept."""

    def __init__(self, target: str) -> None:
        self.target = target
        self._spec: importlib.machinery.ModuleSpec | None = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(self.target)
        self._spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        module.__spec__ = self._spec  # the import system stamped the alias spec on it: restore


class _AliasFinder(importlib.abc.MetaPathFinder):
    """Maps ``hyperpod_rl.maze.<sub>`` to ``hyperpod_rl.tasks.maze.<sub>``."""

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith(OLD + "."):
            return None
        new = NEW + fullname[len(OLD) :]
        if importlib.util.find_spec(new) is None:
            return None
        warnings.warn(f"{fullname} moved to {new}; import {new} instead", DeprecationWarning, stacklevel=2)
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(new))


sys.meta_path.insert(0, _AliasFinder())


def __getattr__(name: str) -> object:
    """Every name (``Maze``, ``MazeEnv``, sub-modules such as ``render``) comes from the new path."""
    try:
        return getattr(_new, name)
    except AttributeError:
        pass
    try:
        return importlib.import_module(f"{NEW}.{name}")
    except ModuleNotFoundError:
        raise AttributeError(f"module {OLD!r} has no attribute {name!r}") from None


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
