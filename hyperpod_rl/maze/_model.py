"""A pydantic base whose validation errors are :class:`~hyperpod_rl.errors.MazeError` naming the field."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from hyperpod_rl.errors import MazeError

__all__ = ["MazeModel", "describe_validation_error"]


def describe_validation_error(model: str, error: ValidationError) -> str:
    """One line per bad field: ``Model.field.path: message (got value)``."""
    lines = []
    for item in error.errors():
        loc = ".".join(str(p) for p in item["loc"]) or "<root>"
        got = item.get("input")
        shown = repr(got) if not isinstance(got, dict) else "{...}"
        lines.append(f"{model}.{loc}: {item['msg']} (got {shown[:80]})")
    return "; ".join(lines)


class MazeModel(BaseModel):
    """Frozen, extra-keys-forbidden pydantic model that raises MazeError on bad input.

    ``Model(**fields)`` raises :class:`MazeError` (a ``ValueError``) whose message names each
    bad field; ``Model.model_validate`` keeps pydantic's ``ValidationError``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as e:
            raise MazeError(describe_validation_error(type(self).__name__, e)) from e
