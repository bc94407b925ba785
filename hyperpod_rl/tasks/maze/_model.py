"""The task's pydantic base: :class:`hyperpod_rl.base.Model` whose errors are :class:`~hyperpod_rl.errors.MazeError`."""

from __future__ import annotations

from pydantic import ValidationError

from hyperpod_rl.base import RaisesOnInit
from hyperpod_rl.errors import MazeError

__all__ = ["MazeModel"]


class MazeModel(RaisesOnInit):
    """Frozen, extra-keys-forbidden model that raises :class:`MazeError` on bad input.

    ``Model(**fields)`` and ``Model.build(data)`` raise :class:`MazeError` (a ``ValueError``)
    listing every bad field as ``<Model>.<field>: <problem> (got <value>)``;
    ``Model.model_validate`` keeps pydantic's ``ValidationError``.
    """

    error_class = MazeError

    @classmethod
    def format_error(cls, err: ValidationError) -> str:
        from hyperpod_rl.base import format_validation_error

        return format_validation_error(err, what=cls.__name__, prefix=f"{cls.__name__}.", model=cls)
