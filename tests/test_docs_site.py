"""The documentation site (mkdocs.yml): built with --strict in CI, every public name documented.

``make docs`` runs the same build; here it goes to a temporary directory. A second build, of a copy
of the site with one broken link, must fail: that is what "strict" is worth.
"""

from __future__ import annotations

import inspect
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import hyperpod_rl as hp
from tests.tools_env import tools_bin

REPO = Path(__file__).resolve().parents[1]
API_PAGE = REPO / "docs" / "api.md"
#: Parameter-name suffixes that carry their unit (docs/STYLE: units suffixed on names).
UNIT_SUFFIXES = ("_s", "_ms", "_gib", "_mib", "_bytes", "_px", "_pct")


def _mkdocs(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [str(tools_bin("python")), "-m", "mkdocs", "build", "--strict", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def _documented_paths() -> list[str]:
    return re.findall(r"^::: (\S+)$", API_PAGE.read_text(), flags=re.M)


def _resolve(path: str):
    import importlib

    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


def _public(name: str):
    """``hp.<name>``; a callable module (``hp.doctor`` once imported) stands for its same-named function."""
    obj = getattr(hp, name)
    return getattr(obj, name) if inspect.ismodule(obj) else obj


def test_every_public_name_is_in_the_api_reference():
    documented = {path.rpartition(".")[2]: path for path in _documented_paths()}
    missing = sorted(set(hp.__all__) - set(documented))
    assert missing == [], f"hyperpod_rl.__all__ names missing from docs/api.md: {missing}"
    for name in hp.__all__:
        assert _resolve(documented[name]) is _public(name), f"docs/api.md documents {documented[name]}, not hp.{name}"


def _own_raises(func) -> bool:
    """Whether the function's own body raises a project error (``raise XError(...)``)."""
    try:
        source = inspect.getsource(func)
    except (OSError, TypeError):
        return False
    return re.search(r"^\s+raise [A-Z]\w*(Error|Refused|Timeout|NotReady)\(", source, flags=re.M) is not None


def _callables(obj):
    if inspect.isclass(obj):
        yield obj.__name__, obj
        for name, member in vars(obj).items():
            if not name.startswith("_") and inspect.isfunction(member):
                yield f"{obj.__name__}.{name}", member
            elif isinstance(member, classmethod) and not name.startswith("_"):
                yield f"{obj.__name__}.{name}", member.__func__
    else:
        yield obj.__name__, obj


@pytest.mark.parametrize("name", hp.__all__)
def test_public_name_has_a_docstring_with_args_and_raises(name):
    """A docstring; every parameter named in it (units are in the names); ``Raises:`` when it raises."""
    obj = _public(name)
    assert (inspect.getdoc(obj) or "").strip(), f"hp.{name} has no docstring"
    problems = []
    for qualname, func in _callables(obj):
        if not callable(func) or inspect.isclass(func) and not hasattr(func, "__init__"):
            continue
        doc = inspect.getdoc(func) or ""
        target = func.__init__ if inspect.isclass(func) else func
        if inspect.isclass(func) and target.__doc__ in (None, object.__init__.__doc__) and "Args:" not in doc:
            continue  # a model or dataclass: fields are documented as attributes
        if inspect.isclass(func):
            doc += "\n" + (inspect.getdoc(target) or "")
        if _own_raises(target) and "Raises:" not in doc:
            problems.append(f"{qualname} raises but its docstring has no 'Raises:' section")
        try:
            params = inspect.signature(target).parameters
        except (TypeError, ValueError):
            continue
        for p in params.values():
            if p.name in ("self", "cls") or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.name.startswith("_"):
                continue
            if "Args:" in doc and not re.search(rf"\b{re.escape(p.name)}\b", doc):
                problems.append(f"{qualname}: parameter {p.name!r} is not described")
    assert problems == [], "\n".join(problems)


@pytest.mark.slow
def test_site_builds_strictly(tmp_path):
    """Slow: a full MkDocs build: the API reference read from the code, six notebooks rendered."""
    site = tmp_path / "site"
    result = _mkdocs("-d", str(site))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-6000:]
    assert (site / "index.html").is_file()
    for nb in sorted((REPO / "notebooks").glob("*.ipynb")):
        assert (site / "notebooks" / f"{nb.stem}.html").is_file(), f"{nb.name} is not rendered"
    api = (site / "api.html").read_text()
    for name in hp.__all__:
        assert f'id="{_documented_id(name)}"' in api, f"hp.{name} has no entry in the built API page"
    troubleshooting = (site / "troubleshooting.html").read_text()
    assert "is already in use: pass another --dashboard-port" in troubleshooting  # from cluster/local.py, not typed here
    configuration = (site / "configuration.html").read_text()
    assert "checkpoint" in configuration and "tiny_hidden_size" in configuration


def _documented_id(name: str) -> str:
    return next(p for p in _documented_paths() if p.rpartition(".")[2] == name)


@pytest.mark.slow
def test_a_broken_link_fails_the_strict_build(tmp_path):
    """Slow: a second full MkDocs build, of a copy with one broken link."""
    copy = tmp_path / "repo"
    copy.mkdir()
    for item in ("mkdocs.yml", "docs_hooks.py"):
        shutil.copy(REPO / item, copy / item)
    shutil.copytree(REPO / "docs", copy / "docs")
    shutil.copytree(REPO / "notebooks", copy / "notebooks")
    os.symlink(REPO / "hyperpod_rl", copy / "hyperpod_rl")
    page = copy / "docs" / "concepts.md"
    page.write_text(page.read_text() + "\nSee [the missing page](no-such-page.md).\n")
    result = _mkdocs("-d", str(tmp_path / "site"), cwd=copy)
    assert result.returncode != 0
    assert "no-such-page.md" in result.stdout + result.stderr
