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
"""

from __future__ import annotations

from typing import Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, ValidationError

from hyperpod_rl.errors import ConfigError, HyperpodRLError

__all__ = ["Model", "RaisesOnInit", "format_validation_error"]

_MAX_SHOWN = 80  # characters of a bad value shown in a message


def _shown(value: Any) -> str:
    if isinstance(value, dict):
        return "{...}"
    text = repr(value)
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 3] + "..."


def format_validation_error(err: ValidationError, *, what: str, prefix: str = "") -> str:
    """One message for every problem pydantic found, one line each.

    Args:
        err: pydantic's error.
        what: what was being validated, e.g. ``"run config"`` (the first line is
            ``invalid <what>:``).
        prefix: put before each dotted path, e.g. ``"cluster."``, so the path names the
            field as the user wrote it.

    Returns:
        ``"invalid <what>:\\n  <prefix><path>: <problem> (got <value>)\\n  ..."``. A cross-field
        rule (no field path) contributes its own lines unchanged.
    """
    lines: list[str] = []
    for item in err.errors():
        msg = str(item["msg"]).removeprefix("Value error, ").removeprefix("Assertion failed, ")
        path = ".".join(str(p) for p in item["loc"])
        if not path:
            lines.extend(msg.splitlines())
            continue
        got = f" (got {_shown(item['input'])})" if "input" in item and item["type"] != "missing" else ""
        lines.append(f"{prefix}{path}: {msg}{got}")
    return f"invalid {what}:\n  " + "\n  ".join(lines)


class Model(BaseModel):
    """Frozen, ``extra="forbid"`` pydantic model whose errors name every bad field.

    Class attributes:
        error_class: the project error :meth:`build` raises (default
            :class:`~hyperpod_rl.errors.ConfigError`).
        error_what: the noun in the message (default: the class name).
        error_prefix: put before each field path in the message.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    error_class: ClassVar[type[HyperpodRLError]] = ConfigError
    error_what: ClassVar[str | None] = None
    error_prefix: ClassVar[str] = ""

    @classmethod
    def format_error(cls, err: ValidationError) -> str:
        """This model's message for a pydantic error (see :func:`format_validation_error`)."""
        return format_validation_error(err, what=cls.error_what or cls.__name__, prefix=cls.error_prefix)

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
