"""The one pydantic base of the package and the one formatter of its validation errors.

Every typed value the user fills in (run configs, cluster specs, quickstart options, maze
settings, serving specs, planner inputs) derives from :class:`Model`:

- frozen and ``extra="forbid"``: a misspelt key is an error, never silently ignored;
- attribute docstrings become field descriptions (``use_attribute_docstrings``), so the text
  under a field in the source is the tooltip of the notebook form built from it;
- :meth:`Model.build` turns pydantic's ``ValidationError`` into the model's own project error
  (:attr:`Model.error_class`, :class:`~hyperpod_rl.errors.ConfigError` unless a package says
  otherwise) whose message lists **every** problem, one line each, as
  ``<prefix><dotted.path>: <problem> (got <value>)`` (:func:`format_validation_error`);
- a model that users construct directly (``Model(**fields)``) and that must raise the project
  error there too mixes in :class:`RaisesOnInit` (pydantic then also calls that ``__init__``
  for nested values, so the parent's error names the nested field).

A model that must be edited in place (``ClusterSpec``, which the cluster panel edits field by
field) overrides ``model_config`` with ``frozen=False, validate_assignment=True``.

:func:`read_user_text` is the one reader of a text file the user wrote (run configs, cluster
specs and manifests, dataset specs, model and adapter JSON): a missing, unreadable or
non-UTF-8 file is one :class:`~hyperpod_rl.errors.ConfigError` naming the file and the fix.
:func:`load_user_data` is the one loader of a YAML or JSON file the user wrote (and
:func:`parse_user_data` of such text): bounded in size (:data:`MAX_DATA_BYTES`), nesting
(:data:`MAX_DATA_DEPTH`) and values after aliases are expanded (:data:`MAX_DATA_VALUES`), so an
alias bomb or a file nested thousands deep is one error line, never runaway memory or a
``RecursionError``.
"""

from __future__ import annotations

import functools
import json
import re
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, ClassVar, Literal, Self, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from hyperpod_rl.errors import ConfigError, HyperpodRLError

__all__ = [
    "MAX_DATA_BYTES",
    "MAX_DATA_DEPTH",
    "MAX_DATA_VALUES",
    "MAX_SEED",
    "MIN_SEED",
    "Model",
    "RaisesOnInit",
    "Seed",
    "format_validation_error",
    "load_user_data",
    "nesting_depth",
    "parse_user_data",
    "read_user_text",
    "listed",
]

#: The range of a seed: a signed 64-bit integer, what torch's generators, NumPy, parquet's int64
#: columns and vLLM take. A larger one is refused where it is given, not deep inside a library.
MIN_SEED = -(2**63)
MAX_SEED = 2**63 - 1
#: A seed field: an integer from :data:`MIN_SEED` to :data:`MAX_SEED`.
Seed = Annotated[int, Field(ge=MIN_SEED, le=MAX_SEED)]


def listed(items: Iterable[object]) -> str:
    """Names for a message, as a person writes them: ``listed(["seed", "single-gpu"])`` is
    ``"seed, single-gpu"`` (never a Python list's ``['seed', 'single-gpu']``); ``"none"`` when empty."""
    shown = [str(item) for item in items]
    return ", ".join(shown) if shown else "none"


_MAX_SHOWN = 80  # characters of a bad value shown in a message

_PATH_LINE = re.compile(r"^[\w.\[\]-]+: ")
_WORDS = {int: "an integer", float: "a number", bool: "true or false", str: "text"}
_PLURAL = {int: "integers", float: "numbers", bool: "true/false values", str: "texts"}
_COUNT = {1: "one", 2: "two", 3: "three", 4: "four"}


def _shown(value: Any) -> str:
    if isinstance(value, dict):
        return "{...}"
    text = repr(value)
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 3] + "..."


def _strip_optional(annotation: Any) -> tuple[Any, bool]:
    if get_origin(annotation) in (Union, UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0], len(args) < len(get_args(annotation))
    return annotation, False


def _expected(annotation: Any) -> str | None:
    """What to write for a field of this type, in words (``None`` when there is no plain phrase)."""
    annotation, optional = _strip_optional(annotation)
    origin, args = get_origin(annotation), get_args(annotation)
    text: str | None = None
    if annotation in _WORDS:
        text = _WORDS[annotation]
    elif origin is Literal:
        text = "one of " + ", ".join(repr(a) for a in args)
    elif origin is tuple and args and args[-1] is Ellipsis:
        text = f"a list of {_PLURAL.get(args[0], 'values')}"
    elif origin is tuple and args and len(set(args)) == 1 and args[0] in _PLURAL:
        text = f"{_COUNT.get(len(args), str(len(args)))} {_PLURAL[args[0]]}"
    elif origin is tuple and args:
        text = f"a list of {len(args)} values"
    elif origin in (list, set, frozenset):
        text = f"a list of {_PLURAL.get(args[0], 'values')}" if args else "a list"
    elif origin is dict:
        keys = "names" if args and args[0] is str else _PLURAL.get(args[0], "keys") if args else "keys"
        text = f"a mapping of {keys} to {_PLURAL.get(args[1], 'values')}" if len(args) == 2 else "a mapping"
    elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
        text = f"a mapping of {annotation.__name__} fields"
    if text is not None and optional:
        text += " (or null)"
    return text


def _field_at(model: type[BaseModel] | None, loc: tuple[Any, ...]) -> tuple[FieldInfo | None, int]:
    """The deepest model field named along ``loc`` and how many parts of ``loc`` lead to it."""
    found: tuple[FieldInfo | None, int] = (None, 0)
    current: Any = model
    for depth, part in enumerate(loc, start=1):
        if isinstance(current, type) and issubclass(current, BaseModel) and isinstance(part, str) and part in current.model_fields:
            info = current.model_fields[part]
            found = (info, depth)
            current, _ = _strip_optional(info.annotation)
        elif isinstance(current, type) and issubclass(current, BaseModel):
            continue  # a union branch or validator name pydantic puts in the path
        else:
            args = [a for a in get_args(current) if a is not Ellipsis]
            current = args[-1] if args else None
    return found


def _example(info: FieldInfo) -> str | None:
    if info.examples:
        return json.dumps(info.examples[0], default=str)
    default = info.get_default(call_default_factory=True)
    if default is None or default is PydanticUndefined or isinstance(default, BaseModel):
        return None
    try:
        return json.dumps(default)
    except TypeError:
        return None


def _first_clause(text: str) -> str:
    """The first line of a description up to its first sentence or clause end (a short hint)."""
    line = text.strip().splitlines()[0]
    return re.split(r"(?<=[a-z)])[.;] ", line, maxsplit=1)[0].rstrip(".;")


def _limit(ctx: dict[str, Any]) -> str:
    for key, op in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<")):
        if key in ctx:
            return f"{op} {ctx[key]}"
    return ""


def _problem(item: Any, info: FieldInfo | None, inner: bool) -> str:
    """The plain-words problem and fix of one pydantic error item."""
    kind, ctx = str(item["type"]), item.get("ctx") or {}
    msg = str(item["msg"]).removeprefix("Value error, ").removeprefix("Assertion failed, ")
    expected = _expected(info.annotation) if info is not None else None
    example = _example(info) if info is not None else None
    hint = ""
    if info is not None and info.description and not inner:
        hint = f" ({_first_clause(info.description)})"
    eg = f", e.g. {example}" if example else ""
    if kind == "missing":
        return f"required: write it{f' as {expected}' if expected else ''}{hint}{eg}"
    if kind == "extra_forbidden":
        return "not a known field: remove it or check its spelling"
    if kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        return f"must be {_limit(ctx)}"
    if kind == "multiple_of":
        return f"must be a multiple of {ctx.get('multiple_of')}"
    if kind == "literal_error":
        return f"use {ctx.get('expected', msg.removeprefix('Input should be '))}"
    if kind in ("too_short", "too_long"):
        if expected and expected.split()[0] in _COUNT.values():  # a fixed-length tuple
            return f"has {ctx.get('actual_length')} item(s); give {expected}{hint}{eg}"
        bound = f"at least {ctx.get('min_length')}" if kind == "too_short" else f"at most {ctx.get('max_length')}"
        return f"has {ctx.get('actual_length')} item(s); give {bound}"
    if kind in ("string_too_short", "string_too_long"):
        return f"must be {ctx.get('min_length', 0)}..{ctx.get('max_length', 'any')} characters long"
    if kind == "string_pattern_mismatch":
        return f"must match the pattern {ctx.get('pattern')}"
    if kind == "finite_number":
        return f"give a finite number, not inf or nan{hint}{eg}"
    if kind.endswith(("_type", "_parsing")) or kind in ("bool_parsing", "int_from_float"):
        if inner and isinstance(item["loc"][-1], int):  # an item of a list or tuple field
            return f"item {item['loc'][-1]} is not {_item_word(kind)}; give {expected or 'valid items'}{eg}"
        if inner:  # a value of a mapping field
            return f"give {_item_word(kind)}"
        if expected:
            return f"give {expected}{hint}{eg}"
        return f"give {_item_word(kind)}{eg}"
    return msg


def _item_word(kind: str) -> str:
    for prefix, word in (("int", "an integer"), ("float", "a number"), ("bool", "true or false"), ("string", "text")):
        if kind.startswith(prefix):
            return word
    for prefix, word in (("dict", "a mapping"), ("model", "a mapping"), ("list", "a list"), ("tuple", "a list"), ("set", "a list")):
        if kind.startswith(prefix):
            return word
    return "a valid value"


def _nested(msg: str) -> list[str] | None:
    """The problem lines of a project error raised by a nested model (its ``invalid <what>:`` header dropped)."""
    head, _, rest = msg.partition("\n")
    if not (head.startswith("invalid ") and head.endswith(":") and rest):
        return None
    name = head.removeprefix("invalid ").removesuffix(":").strip()
    return [line.strip().removeprefix(f"{name}.") for line in rest.splitlines() if line.strip()]


def format_validation_error(err: ValidationError, *, what: str, prefix: str = "", model: type[BaseModel] | None = None) -> str:
    """One message for every problem pydantic found, one line each, in plain words.

    Each line says what is wrong and what to write instead, e.g. ``image_px: give two
    integers ((height, width) of each image, pixels), e.g. [448, 448] (got 'big')``: the expected
    form comes from the field's type, the words in brackets from its description, the example
    from its ``examples`` or its default. pydantic's own wording is not shown.

    Args:
        err: pydantic's error.
        what: what was being validated, e.g. ``"run config"`` (the first line is
            ``invalid <what>:``).
        prefix: put before each dotted path, e.g. ``"cluster."``, so the path names the
            field as the user wrote it.
        model: the model validated (default: none; then the lines say less about the fix).

    Returns:
        ``"invalid <what>:\\n  <prefix><path>: <problem> (got <value>)\\n  ..."``. A cross-field
        rule (no field path) contributes its own lines unchanged; a nested model's project error
        contributes its lines under the nested path, without repeating its header.
    """
    lines: list[str] = []
    for item in err.errors():
        loc = tuple(item["loc"])
        path = ".".join(str(p) for p in loc)
        msg = str(item["msg"]).removeprefix("Value error, ").removeprefix("Assertion failed, ")
        nested = _nested(msg) if item["type"] == "value_error" else None
        if not path:
            if nested is None:
                lines.extend(msg.splitlines())
            else:
                lines.extend(f"{prefix}{line}" if _PATH_LINE.match(line) else line for line in nested)
            continue
        if nested is not None:
            lines.extend(f"{prefix}{path}.{line}" if _PATH_LINE.match(line) else f"{prefix}{path}: {line}" for line in nested)
            continue
        info, depth = _field_at(model, loc)
        inner = info is not None and depth < len(loc)
        shown_path = ".".join(str(p) for p in loc[:depth]) if inner and isinstance(loc[-1], int) else path
        problem = _problem(item, info, inner)
        got = f" (got {_shown(item['input'])})" if "input" in item and item["type"] not in ("missing",) else ""
        lines.append(f"{prefix}{shown_path}: {problem}{got}")
    return f"invalid {what}:\n  " + "\n  ".join(dict.fromkeys(lines))


class Model(BaseModel):
    """Frozen, ``extra="forbid"`` pydantic model whose errors name every bad field.

    Class attributes:
        error_class: the project error :meth:`build` raises (default
            :class:`~hyperpod_rl.errors.ConfigError`).
        error_what: the noun in the message (default: the class name).
        error_prefix: put before each field path in the message.
        renamed_fields: ``{old name: new name}`` of fields that were renamed. Input under an old
            name is moved to the new one with a :class:`FutureWarning` that names the new one (so
            files and code written before the rename keep loading); giving both names is an error.
        renamed_prefix: put before the names in that warning (``"data."`` for a run-config section).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    error_class: ClassVar[type[HyperpodRLError]] = ConfigError
    error_what: ClassVar[str | None] = None
    error_prefix: ClassVar[str] = ""
    renamed_fields: ClassVar[Mapping[str, str]] = {}
    renamed_prefix: ClassVar[str] = ""

    @model_validator(mode="before")
    @classmethod
    def _renamed(cls, data: Any) -> Any:
        """Move values given under a deprecated field name to its new name (see :attr:`renamed_fields`)."""
        if not cls.renamed_fields or not isinstance(data, Mapping) or not any(old in data for old in cls.renamed_fields):
            return data
        out = dict(data)
        for old, new in cls.renamed_fields.items():
            if old not in out:
                continue
            p = cls.renamed_prefix
            if new in out:
                raise ValueError(f"{p}{old} is the deprecated name of {p}{new}: give only {p}{new}")
            warnings.warn(f"{p}{old} is deprecated: call it {p}{new}", FutureWarning, stacklevel=2)
            out[new] = out.pop(old)
        return out

    @classmethod
    def format_error(cls, err: ValidationError) -> str:
        """This model's message for a pydantic error (see :func:`format_validation_error`)."""
        return format_validation_error(err, what=cls.error_what or cls.__name__, prefix=cls.error_prefix, model=cls)

    @classmethod
    def build(cls, data: Any = None, /, **values: Any) -> Self:
        """Validate a mapping (or keyword values) into this model.

        Raises:
            HyperpodRLError: :attr:`error_class` (a ``ValueError`` subclass for config and maze
                models), listing every invalid field.
        """
        payload = values if data is None else ({**data, **values} if values else data)
        try:
            return cls.model_validate(payload)
        except ValidationError as err:
            raise cls.error_class(cls.format_error(err)) from None


class RaisesOnInit(Model):
    """A :class:`Model` whose constructor raises :attr:`~Model.error_class` instead of pydantic's error."""

    def __init__(self, /, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as err:
            raise type(self).error_class(type(self).format_error(err)) from None


def json_problem(err: ValueError) -> str:
    """Why :func:`json.loads` refused a text, as the words after its name in a message.

    ``"is not valid JSON at line L, column C"`` for a syntax error; for a number with more
    digits than Python converts (``sys.get_int_max_str_digits()``, 4300 by default: valid JSON that
    :mod:`json` refuses with a plain ``ValueError``), ``"holds a number of more than N digits"``.
    """
    import sys

    if isinstance(err, json.JSONDecodeError):
        return f"is not valid JSON at line {err.lineno}, column {err.colno}"
    if "digits" in str(err):
        return f"holds a number of more than {sys.get_int_max_str_digits()} digits"
    return f"is not valid JSON ({err})"


def nesting_depth(value: Any) -> int:
    """How deep mappings and lists nest in parsed JSON or YAML (a scalar: 0, ``{}``: 1), without recursion.

    So a value nested thousands deep is measured without a ``RecursionError``; callers refuse it
    above their limit before any other code walks it.
    """
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list | tuple):
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


def read_user_text(
    path: str | Path,
    what: str,
    *,
    fix: str = "give an existing, readable file",
    error: type[HyperpodRLError] = ConfigError,
    max_bytes: int | None = None,
) -> str:
    """The text of a file the user gives (UTF-8; a BOM is dropped), or one clear error.

    Args:
        path: the file.
        what: what the file is, for the message, e.g. ``"run config file"``.
        fix: what to do when the file cannot be read at all.
        error: the project error to raise (default :class:`~hyperpod_rl.errors.ConfigError`).
        max_bytes: refuse a larger file before reading it (default: no limit).

    Raises:
        ConfigError (or ``error``): the file is missing, is a folder, is over ``max_bytes``, cannot be read, or is not
            UTF-8 text (the message gives the line and column of the first bad byte and says to
            save it as UTF-8). YAML and JSON are defined on Unicode text (YAML 1.2 section 5.2,
            RFC 8259 section 8.1), so no other encoding is guessed.
    """
    path = Path(path)
    try:
        if max_bytes is not None and (size := path.stat().st_size) > max_bytes:
            raise error(f"{what} {str(path)!r} is {size} bytes; the limit is {max_bytes} bytes: give the file it should be (a few kB)")
        data = path.read_bytes()
    except IsADirectoryError:
        raise error(f"{what} {str(path)!r} is a folder: give the file") from None
    except OSError as err:
        raise error(f"cannot read {what} {str(path)!r} ({err.strerror or err}): {fix}") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        before = data[: err.start]
        line = before.count(b"\n") + 1
        column = err.start - (before.rfind(b"\n") + 1) + 1
        raise error(
            f"{what} {str(path)!r} is not UTF-8 text (byte 0x{data[err.start]:02x} at line {line}, column {column}): "
            "save it as UTF-8 (e.g. iconv -f latin1 -t utf-8)"
        ) from None


#: Largest YAML or JSON file the user gives that is loaded (run configs and cluster manifests are a few kB).
MAX_DATA_BYTES = 1024 * 1024
#: Deepest nesting of mappings and lists in such a file (a KubeRay manifest nests about 15 levels).
MAX_DATA_DEPTH = 64
#: Most values (scalars, mappings, lists) in such a file with every alias expanded.
MAX_DATA_VALUES = 100_000


class _Refused(Exception):
    """Raised by the bounded YAML loader: what is wrong, where (a YAML mark) and the fix."""

    def __init__(self, problem: str, mark: Any, fix: str) -> None:
        super().__init__(problem)
        self.problem, self.mark, self.fix = problem, mark, fix


@functools.cache
def _bounded_loader() -> type:
    """PyYAML's ``SafeLoader`` with limits on nesting and on values after alias expansion.

    PyYAML composes an alias as the anchored node itself (no copy), so a file of a few hundred
    bytes can stand for billions of values (nested aliases: the "billion laughs") that the first
    consumer to walk it expands. This loader counts, for every node, its values and its depth
    as they would be with every alias expanded, and stops composing as soon as either passes its
    limit; a node that refers to itself through an alias is refused too. Nesting is checked on
    the way down, before PyYAML's recursive composer could reach Python's recursion limit.
    """
    import yaml

    class BoundedSafeLoader(yaml.SafeLoader):
        def __init__(self, stream: str) -> None:
            super().__init__(stream)
            self._depth = 0
            self._values = 0
            self._seen: dict[int, tuple[int, int]] = {}  # id(node) -> (values, height), aliases expanded

        def _count(self, values: int, mark: Any) -> None:
            self._values += values
            if self._values > MAX_DATA_VALUES:
                raise _Refused(
                    f"holds more than {MAX_DATA_VALUES} values with its aliases (*name) expanded",
                    mark,
                    "write the values out, or refer to fewer anchors",
                )

        def compose_node(self, parent: Any, index: Any) -> Any:
            mark = self.peek_event().start_mark
            if self.check_event(yaml.AliasEvent):
                node = super().compose_node(parent, index)
                if id(node) not in self._seen:
                    raise _Refused("refers to itself through an alias (*name inside its own &name)", mark, "write the value out")
                values, height = self._seen[id(node)]
                self._count(values, mark)
                if self._depth + height > MAX_DATA_DEPTH:
                    raise _Refused(f"nests deeper than {MAX_DATA_DEPTH} levels with its aliases expanded", mark, "flatten it")
                return node
            self._depth += 1
            if self._depth > MAX_DATA_DEPTH:
                raise _Refused(f"nests deeper than {MAX_DATA_DEPTH} levels", mark, "flatten it")
            before = self._values
            self._count(1, mark)
            try:
                node = super().compose_node(parent, index)
            finally:
                self._depth -= 1
            children = (
                node.value
                if isinstance(node, yaml.SequenceNode)
                else [n for pair in node.value for n in pair]
                if isinstance(node, yaml.MappingNode)
                else []
            )
            height = 1 + max((self._seen[id(child)][1] for child in children), default=0)
            self._seen[id(node)] = (self._values - before, height)
            return node

    return BoundedSafeLoader


def parse_user_data(
    text: str,
    what: str,
    *,
    syntax: Literal["yaml", "json"] = "yaml",
    documents: bool = False,
    error: type[HyperpodRLError] = ConfigError,
    repair: str = "fix its syntax",
) -> Any:
    """The data of YAML or JSON text the user wrote, bounded, or one clear error.

    Args:
        text: the text (see :func:`read_user_text`).
        what: what it is, for the message, e.g. ``"run config file '/x/run.yaml'"``.
        syntax: ``"yaml"`` (YAML 1.1 safe types; JSON is YAML) or ``"json"`` (JSON only, parsed
            by :mod:`json`).
        documents: return every YAML document (``---``-separated) as a list.
        error: the project error to raise (default :class:`~hyperpod_rl.errors.ConfigError`).
        repair: the fix the message gives for text that is not valid YAML / JSON (default
            ``"fix its syntax"``; e.g. ``"restore it from the checkpoint"`` for a file a program
            wrote, which is then also the fix for one nested too deep or an alias bomb).

    Raises:
        ConfigError (or ``error``): the text is not valid YAML / JSON (with the line and column),
            nests deeper than :data:`MAX_DATA_DEPTH` levels, or holds more than
            :data:`MAX_DATA_VALUES` values with its aliases expanded (a YAML alias bomb) or an alias
            inside its own anchor. Each is refused while parsing, before the data is built.
    """
    if syntax == "json":
        fix = "flatten it" if repair == "fix its syntax" else repair
        try:
            data = json.loads(text)
        except RecursionError:
            raise error(f"{what} nests deeper than {MAX_DATA_DEPTH} levels: {fix}") from None
        except ValueError as err:
            raise error(f"{what} {json_problem(err)}: {repair}") from None
        if nesting_depth(data) > MAX_DATA_DEPTH:
            raise error(f"{what} nests deeper than {MAX_DATA_DEPTH} levels: {fix}")
        return [data] if documents else data
    import yaml

    loader = _bounded_loader()
    try:
        if documents:
            return list(yaml.load_all(text, Loader=loader))
        return yaml.load(text, Loader=loader)
    except _Refused as err:
        at = f" at line {err.mark.line + 1}, column {err.mark.column + 1}" if err.mark is not None else ""
        raise error(f"{what} {err.problem}{at}: {err.fix if repair == 'fix its syntax' else repair}") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(err, "problem", None)
        raise error(f"{what} is not valid YAML or JSON{at}: {repair}{f' ({problem})' if problem else ''}") from None


def load_user_data(
    path: str | Path,
    what: str,
    *,
    fix: str = "give an existing YAML or JSON file",
    syntax: Literal["yaml", "json"] = "yaml",
    documents: bool = False,
    error: type[HyperpodRLError] = ConfigError,
    repair: str = "fix its syntax",
    max_bytes: int | None = MAX_DATA_BYTES,
) -> Any:
    """The data of a YAML or JSON file the user gives (run configs, cluster specs and manifests,
    dataset specs, a model's or an adapter's JSON files) or that the package reads back (run
    records): :func:`read_user_text` (at most ``max_bytes``, default :data:`MAX_DATA_BYTES`;
    ``None`` for a record this package wrote, which grows with the run), then
    :func:`parse_user_data`. The one loader of such files: a file that is not what it claims is
    one error naming it.

    Raises:
        ConfigError (or ``error``): as :func:`read_user_text` and :func:`parse_user_data`, the
            message naming the file.
    """
    text = read_user_text(path, what, fix=fix, error=error, max_bytes=max_bytes)
    return parse_user_data(text, f"{what} {str(path)!r}", syntax=syntax, documents=documents, error=error, repair=repair)
