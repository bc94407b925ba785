"""The task's pydantic base: :class:`hyperpod_rl.base.Model` whose errors are :class:`~hyperpod_rl.errors.TaskError`."""

from __future__ import annotations

from pydantic import ValidationError

from hyperpod_rl.base import RaisesOnInit
from hyperpod_rl.errors import TaskError

__all__ = ["UINavModel"]


class UINavModel(RaisesOnInit):
    """Frozen, extra-keys-forbidden model that raises :class:`TaskError` listing every bad field."""

    error_class = TaskError

    @classmethod
    def format_error(cls, err: ValidationError) -> str:
        from hyperpod_rl.base import format_validation_error

        return format_validation_error(err, what=cls.__name__, prefix=f"{cls.__name__}.", model=cls)
