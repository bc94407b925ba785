"""The task's pydantic base: :class:`hyperpod_rl.base.Model` whose errors are :class:`~hyperpod_rl.errors.TaskError`."""

from __future__ import annotations

from pydantic import ValidationError

from hyperpod_rl.base import RaisesOnInit
from hyperpod_rl.errors import TaskError

__all__ = ["DocModel"]


class DocModel(RaisesOnInit):
    """Frozen, extra-keys-forbidden model that raises :class:`TaskError` on bad input.

    ``Model(**fields)`` and ``Model.build(data)`` raise :class:`TaskError` (a ``ValueError``)
    listing every bad field as ``<Model>.<field>: <problem> (got <value>)``.
    """

    error_class = TaskError

    @classmethod
    def format_error(cls, err: ValidationError) -> str:
        from hyperpod_rl.base import format_validation_error

        return format_validation_error(err, what=cls.__name__, prefix=f"{cls.__name__}.", model=cls)
