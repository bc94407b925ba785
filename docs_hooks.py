"""MkDocs hooks of the documentation site (mkdocs.yml ``hooks:``).

- ``notebooks/*.ipynb`` (outside ``docs/``) join the site's files before mkdocs-jupyter renders
  them, so the tutorial has one copy, the one CI executes.
- ``<!-- generated: configuration -->`` in a page becomes the reference tables of the config
  models (field, type, default, description), read from the pydantic models themselves.
- ``<!-- generated: errors -->`` becomes every error the package raises: the exception classes
  of ``hyperpod_rl/errors.py`` with their docstrings, and each ``raise`` site's message, found
  by parsing the source (``ast``), so the troubleshooting page cannot drift from the code.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import types
import typing
from pathlib import Path

from mkdocs.plugins import event_priority
from mkdocs.structure.files import File, Files

REPO = Path(__file__).resolve().parent
PACKAGE = REPO / "hyperpod_rl"

#: The models of the configuration reference, in page order: (title, import path).
CONFIG_MODELS: list[tuple[str, str]] = [
    ("Run config", "hyperpod_rl.config.run:RunConfig"),
    ("Quickstart options", "hyperpod_rl.quickstart:QuickstartOptions"),
    ("Ray cluster spec (KubeRay)", "hyperpod_rl.cluster.spec:ClusterSpec"),
    ("Serving on a GPU cluster", "hyperpod_rl.serve.cluster:ClusterServeSpec"),
    ("Planner input", "hyperpod_rl.plan:PlanInput"),
]


@event_priority(100)  # before mkdocs-jupyter's on_files turns .ipynb files into pages
def on_files(files: Files, config) -> Files:
    for nb in sorted((REPO / "notebooks").glob("*.ipynb")):
        files.append(
            File(f"notebooks/{nb.name}", src_dir=str(REPO), dest_dir=config["site_dir"], use_directory_urls=config["use_directory_urls"])
        )
    return files


def on_page_markdown(markdown: str, page, config, files) -> str:
    if "<!-- generated: configuration -->" in markdown:
        markdown = markdown.replace("<!-- generated: configuration -->", configuration_reference())
    if "<!-- generated: errors -->" in markdown:
        markdown = markdown.replace("<!-- generated: errors -->", error_reference())
    return markdown


# ----- configuration reference -------------------------------------------------------------------


def _load(spec: str):
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)


def _type_name(annotation) -> str:
    if annotation is None or annotation is type(None):
        return "None"
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return " | ".join(repr(a) for a in typing.get_args(annotation))
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_type_name(a) for a in typing.get_args(annotation))
    if origin is typing.Annotated:
        return _type_name(typing.get_args(annotation)[0])
    if origin is not None:
        args = ", ".join(_type_name(a) for a in typing.get_args(annotation))
        return f"{getattr(origin, '__name__', str(origin))}[{args}]"
    return getattr(annotation, "__name__", str(annotation).replace("typing.", ""))


def _default(field) -> str:
    from pydantic_core import PydanticUndefined

    if field.is_required():
        return "**required**"
    if field.default_factory is not None:
        value = field.default_factory()
    else:
        value = field.default
    if value is PydanticUndefined:
        return "**required**"
    if hasattr(value, "model_dump"):
        return "(section defaults)"
    text = repr(value)
    return f"`{text}`" if len(text) <= 60 else f"`{text[:57]}...`"


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _model_table(model, prefix: str, out: list[str], seen: set[type]) -> None:
    from pydantic import BaseModel

    nested: list[tuple[str, type]] = []
    out.append(f"#### `{prefix}` ({model.__name__})\n")
    doc = inspect.getdoc(model) or ""
    if doc:
        out.append(_cell(doc.split("\n\n")[0]) + "\n")
    out.append("| field | type | default | description |")
    out.append("|---|---|---|---|")
    for name, field in model.model_fields.items():
        annotation = field.annotation
        sub = annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None
        if sub is None:
            for arg in typing.get_args(annotation):
                if isinstance(arg, type) and issubclass(arg, BaseModel):
                    sub = arg
        if sub is not None and sub not in seen:
            nested.append((f"{prefix}.{name}", sub))
            seen.add(sub)
        out.append(f"| `{name}` | `{_cell(_type_name(annotation))}` | {_default(field)} | {_cell(field.description or '')} |")
    out.append("")
    for sub_prefix, sub in nested:
        _model_table(sub, sub_prefix, out, seen)


def configuration_reference() -> str:
    out: list[str] = []
    for title, spec in CONFIG_MODELS:
        model = _load(spec)
        out.append(f"## {title}\n")
        out.append(f"`{spec.replace(':', '.')}`\n")
        _model_table(model, model.__name__, out, {model})
    return "\n".join(out)


# ----- errors ------------------------------------------------------------------------------------


def _message(node: ast.expr) -> str | None:
    """The message template of a raise's first argument: f-string fields shown as ``{expr}``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
            elif isinstance(value, ast.FormattedValue):
                parts.append("{" + ast.unparse(value.value) + "}")
        return "".join(parts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _message(node.left), _message(node.right)
        if left is not None and right is not None:
            return left + right
    return None


def _error_defaults(func: ast.FunctionDef | ast.AsyncFunctionDef, classes: set[str]) -> dict[str, str]:
    """Parameters of ``func`` whose default is an error class (``error: type[...] = ConfigError``): name -> class."""
    args = func.args
    positional = [*args.posonlyargs, *args.args]
    pairs = list(zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True))
    pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None]
    return {a.arg: d.id for a, d in pairs if isinstance(d, ast.Name) and d.id in classes}


def raise_sites(classes: set[str]) -> dict[str, list[tuple[str, int, str]]]:
    """Error class name -> ``(module path, line, message template)`` for every message the package raises:

    - ``raise XError(...)``;
    - ``raise error(...)`` where ``error`` is a parameter whose default is an error class (the
      one loaders, ``read_user_text`` / ``parse_user_data``: a caller may pass another class);
    - ``return XError(...)`` of a function that builds the error its caller raises
      (``storage_error``, ``ledger_error``).
    """
    sites: dict[str, list[tuple[str, int, str]]] = {name: [] for name in classes}
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        defaults: dict[int, str] = {}  # id(call node) -> class, for raise error(...) inside a function with such a default
        for func in ast.walk(tree):
            if isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
                params = _error_defaults(func, classes)
                for node in ast.walk(func):
                    if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and isinstance(node.exc.func, ast.Name):
                        if node.exc.func.id in params:
                            defaults[id(node.exc)] = params[node.exc.func.id]
        for node in ast.walk(tree):
            if isinstance(node, ast.Raise):
                call = node.exc
            elif isinstance(node, ast.Return):
                call = node.value
            else:
                continue
            if not isinstance(call, ast.Call) or not call.args:
                continue
            func = call.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
            name = defaults.get(id(call), name)
            if name not in classes:
                continue
            message = _message(call.args[0])
            if message:
                sites[name].append((str(path.relative_to(REPO)), node.lineno, message))
    return sites


def error_reference() -> str:
    import hyperpod_rl.errors as errors

    classes = {
        name: obj
        for name, obj in vars(errors).items()
        if isinstance(obj, type) and issubclass(obj, BaseException) and obj.__module__ == errors.__name__
    }
    sites = raise_sites(set(classes))
    out = []
    for name, cls in classes.items():
        bases = ", ".join(b.__name__ for b in cls.__bases__)
        out.append(f"### {name}\n")
        out.append(f"`hyperpod_rl.errors.{name}({bases})`: {_cell(inspect.getdoc(cls) or '')}\n")
        messages = sites[name]
        if not messages:
            out.append("Raised with messages built elsewhere (see its subclasses and the pages above).\n")
            continue
        out.append(f'??? note "{len(messages)} message{"s" if len(messages) != 1 else ""} raised as {name}"')
        for module, line, message in sorted(messages):
            fence = "``" if "`" in message else "`"
            out.append(f"    - {fence} {' '.join(message.split())} {fence} ({module}:{line})")
        out.append("")
    return "\n".join(out)
