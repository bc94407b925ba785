"""The task registry: tasks come from the ``hyperpod_rl.tasks`` entry-point group.

A package adds a task without touching this repository by declaring, in its ``pyproject.toml``::

    [project.entry-points."hyperpod_rl.tasks"]
    mytask = "my_package.task:TASK"

where ``TASK`` is a :class:`~hyperpod_rl.tasks.protocol.Task` instance (or a class / zero-argument
callable returning one). The entry-point name must equal the task's :attr:`Task.name`. Entry points
are read with :func:`importlib.metadata.entry_points` (Python packaging's entry-point spec,
https://packaging.python.org/en/latest/specifications/entry-points/); a task's module is imported
only when the task is first used.

The built-in tasks are also listed in :data:`BUILTIN_TASKS`, so they are found even when the
installed package metadata predates their entry point (an editable install made before the task
was added). :func:`register_task` adds a task in-process (tests, notebooks) without an entry point.

skyrl-gym is imported only by :func:`register_env` and :func:`make_env` (SkyRL's env registry is per
process: register inside the process that plays episodes, as skyrl-gym's own ``entrypoint.py``
examples do).
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Mapping
from functools import cache
from importlib.metadata import EntryPoint, entry_points
from typing import Any, Final

from hyperpod_rl.base import listed
from hyperpod_rl.errors import TaskError
from hyperpod_rl.tasks.protocol import Task

__all__ = [
    "BUILTIN_TASKS",
    "DEFAULT_TASK",
    "ENTRY_POINT_GROUP",
    "check_task",
    "env_functions",
    "get_task",
    "lazy_attributes",
    "make_env",
    "register_env",
    "register_task",
    "task_for_env_class",
    "task_names",
    "task_of_row",
    "task_sources",
    "unregister_task",
]

#: The entry-point group tasks are registered under.
ENTRY_POINT_GROUP: Final[str] = "hyperpod_rl.tasks"
#: Tasks shipped in this package: name -> ``"module:attribute"`` (also declared as entry points).
BUILTIN_TASKS: Final[dict[str, str]] = {
    "maze": "hyperpod_rl.tasks.maze.task:TASK",
    "ui_nav": "hyperpod_rl.tasks.ui_nav.task:TASK",
    "doc_read": "hyperpod_rl.tasks.doc_read.task:TASK",
}
#: The task used when a config or command names none.
DEFAULT_TASK: Final[str] = "maze"

_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,39}$")
_MEMBERS: Final[tuple[str, ...]] = (
    "name",
    "title",
    "env_class",
    "env_entry_point",
    "multi_turn",
    "reward_version",
    "options_model",
    "hash_column",
    "primary_metric",
    "prompt_styles",
    "answer_words",
    "build_dataset",
    "render",
    "build_prompt",
    "parse_answer",
    "score",
    "aggregate_metrics",
    "audit_cases",
    "text_twin",
)
_registered: dict[str, Task] = {}
_loaded: dict[str, Task] = {}
#: env_class -> its task, as :func:`task_for_env_class` found it (reading every installed distribution's
#: entry points took 28 ms a call: a rollout builds one env per episode); emptied whenever a task is
#: registered or unregistered in this process
_by_env_class: dict[str, Task] = {}


def _entry_points() -> dict[str, str]:
    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}


def _sources() -> dict[str, str]:
    """Entry points, with the built-in names taken from :data:`BUILTIN_TASKS` (installed metadata older
    than a move of a built-in task, such as ``hyperpod_rl.maze`` -> ``hyperpod_rl.tasks.maze``, cannot
    point a built-in name at a stale path)."""
    return {**_entry_points(), **BUILTIN_TASKS}


def task_sources() -> dict[str, str]:
    """Every known task name -> where it comes from (``"module:attribute"`` or ``"registered in-process"``), sorted by name."""
    out = _sources()
    out.update({name: "registered in-process" for name in _registered})
    return dict(sorted(out.items()))


def task_names() -> list[str]:
    """Names of every registered task, sorted (entry points, built-ins, in-process registrations)."""
    return list(task_sources())


def check_task(obj: Any, *, source: str = "") -> Task:
    """Check that ``obj`` provides the :class:`Task` surface and return it.

    Args:
        obj: a task instance, or a class / zero-argument callable returning one.
        source: where it came from (named in the message).

    Raises:
        TaskError: a member is missing, the name is not ``[a-z][a-z0-9_-]*``, ``env_entry_point``
            is not ``"module:Class"``, ``options_model`` is not a pydantic model with ``seed`` and
            ``counts``, or ``primary_metric`` / ``prompt_styles`` is empty.
    """
    where = f" ({source})" if source else ""
    if isinstance(obj, type) or (callable(obj) and not hasattr(obj, "build_dataset")):
        try:
            obj = obj()
        except Exception as err:  # noqa: BLE001 - a plug-in may raise anything; reported with its source
            raise TaskError(f"task factory{where} raised {type(err).__name__}: {err}") from err
    missing = [m for m in _MEMBERS if not hasattr(obj, m)]
    if missing:
        raise TaskError(f"task object{where} lacks {listed(missing)}: implement hyperpod_rl.tasks.Task (docs/tasks.md)")
    problems: list[str] = []
    if not isinstance(obj.name, str) or not _NAME.fullmatch(obj.name):
        problems.append(f"name={obj.name!r} must match [a-z][a-z0-9_-]* (at most 40 characters)")
    if not isinstance(obj.env_entry_point, str) or ":" not in obj.env_entry_point:
        problems.append(f"env_entry_point={obj.env_entry_point!r} must be 'package.module:EnvClass'")
    if not isinstance(obj.env_class, str) or not obj.env_class:
        problems.append("env_class must be a non-empty string (the skyrl-gym env id)")
    fields = getattr(obj.options_model, "model_fields", None)
    if not isinstance(fields, Mapping) or not {"seed", "counts"} <= set(fields):
        problems.append("options_model must be a hyperpod_rl.base.Model subclass with fields 'seed' and 'counts'")
    if not obj.primary_metric:
        problems.append("primary_metric must name a key of aggregate_metrics()")
    if not obj.prompt_styles:
        problems.append("prompt_styles must list at least one style")
    if problems:
        raise TaskError(f"task {getattr(obj, 'name', '?')!r}{where} is invalid:\n  " + "\n  ".join(problems))
    return obj


def _load(name: str, value: str) -> Task:
    try:
        obj = EntryPoint(name=name, value=value, group=ENTRY_POINT_GROUP).load()
    except (ImportError, AttributeError) as err:
        raise TaskError(
            f"task {name!r}: cannot load {value!r} ({type(err).__name__}: {err}); reinstall the package that provides it"
        ) from err
    task = check_task(obj, source=value)
    if task.name != name:
        raise TaskError(f"task entry point {name!r} ({value}) loads a task named {task.name!r}: make the names equal")
    return task


def get_task(name: str | Task | None = None) -> Task:
    """The task called ``name`` (default :data:`DEFAULT_TASK`), loaded once per process.

    A :class:`Task` object passes through unchanged (so functions accept a name or a task).

    Raises:
        TaskError: no task has that name (the message lists the registered ones), or its
            plug-in cannot be imported or is invalid.
    """
    if name is None:
        name = DEFAULT_TASK
    if not isinstance(name, str):
        return check_task(name)
    if name in _registered:
        return _registered[name]
    if name in _loaded:
        return _loaded[name]
    sources = _sources()
    if name not in sources:
        raise TaskError(f"unknown task {name!r}; registered tasks: {', '.join(task_names())} (install the package that provides it)")
    _loaded[name] = _load(name, sources[name])
    return _loaded[name]


def register_task(task: Any, *, replace: bool = False) -> Task:
    """Register a task in this process (no entry point needed); returns the checked task.

    Raises:
        TaskError: the task is invalid, or its name is taken and ``replace`` is False.
    """
    checked = check_task(task, source="register_task")
    if not replace and checked.name in task_sources():
        raise TaskError(f"task {checked.name!r} is already registered; pass replace=True to replace it")
    _registered[checked.name] = checked
    _by_env_class.clear()
    return checked


def unregister_task(name: str) -> None:
    """Forget a task registered with :func:`register_task` (entry points stay)."""
    _registered.pop(name, None)
    _loaded.pop(name, None)
    _by_env_class.clear()


def task_for_env_class(env_class: str) -> Task:
    """The registered task whose :attr:`~Task.env_class` is ``env_class``.

    Found once per process (the first task name, sorted, that uses it), as :func:`get_task` loads a
    task once: later calls return the same task without reading the entry points again, until
    :func:`register_task` or :func:`unregister_task` changes the registered tasks.

    Raises:
        TaskError: no registered task uses that env class.
    """
    if env_class in _by_env_class:
        return _by_env_class[env_class]
    for name in task_names():
        try:
            task = get_task(name)
        except TaskError:
            continue  # a broken plug-in must not hide the others; get_task(name) reports it
        if task.env_class == env_class:
            _by_env_class[env_class] = task
            return task
    raise TaskError(f"no registered task has env_class {env_class!r}; registered tasks: {', '.join(task_names())}")


def task_of_row(row: Mapping[str, Any]) -> Task:
    """The task of a dataset row (by its ``env_class`` column).

    Raises:
        TaskError: the row has no ``env_class`` or no task uses it.
    """
    env_class = row.get("env_class")
    if not env_class:
        raise TaskError("dataset row has no 'env_class' column: it was not built by a task's build_dataset")
    return task_for_env_class(str(env_class))


@cache
def _env_module_ok(entry_point: str) -> None:
    module = entry_point.partition(":")[0]
    try:
        importlib.import_module(module)
    except ImportError as err:
        raise TaskError(f"env entry point {entry_point!r} cannot be imported: {err}") from err


def register_env(task: str | Task | None = None) -> None:
    """Register the task's env with skyrl-gym under its ``env_class``; safe to call repeatedly.

    Raises:
        TaskError: unknown task.
    """
    import skyrl_gym

    t = get_task(task)
    if t.env_class not in skyrl_gym.registry:
        skyrl_gym.register(id=t.env_class, entry_point=t.env_entry_point)


def make_env(task: str | Task | None, extras: Mapping[str, Any], env_config: Mapping[str, Any] | None = None) -> Any:
    """Build one env exactly as SkyRL's generator does: ``skyrl_gym.make(env_class, env_config=..., extras=row)``.

    Args:
        task: the task (name or object); None: the task of ``extras`` (its ``env_class``).
        extras: the dataset row (its non-``prompt`` columns reach the env as extras).
        env_config: env settings the row does not carry.

    Returns:
        The task's ``BaseTextEnv``.

    Raises:
        TaskError: unknown task, or the env's module cannot be imported. The env itself raises
            the task's own error on a bad row.
    """
    import skyrl_gym

    t = task_of_row(extras) if task is None else get_task(task)
    _env_module_ok(t.env_entry_point)
    register_env(t)
    return skyrl_gym.make(t.env_class, env_config=dict(env_config or {}), extras=dict(extras))


def env_functions(env_class: str, entry_point: str) -> tuple[Callable[[], None], Callable[..., Any]]:
    """A task's own ``(register_env, make_env)`` for one skyrl-gym env id (each task's ``registry`` module).

    ``register_env()`` registers ``entry_point`` (``"module:Class"``, not imported until an env is
    built) under ``env_class``, safe to call repeatedly; ``make_env(extras, env_config=None)``
    builds one env exactly as SkyRL's generator does:
    ``skyrl_gym.make(env_class, env_config=..., extras=row)``. skyrl-gym is imported only when
    they are called; SkyRL's registry is per process, so register inside the process that plays
    episodes (skyrl-gym's ``entrypoint.py`` examples).
    """

    def register_env() -> None:
        import skyrl_gym

        if env_class not in skyrl_gym.registry:
            skyrl_gym.register(id=env_class, entry_point=entry_point)

    def make_env(extras: Mapping[str, Any], env_config: Mapping[str, Any] | None = None) -> Any:
        import skyrl_gym

        register_env()
        return skyrl_gym.make(env_class, env_config=dict(env_config or {}), extras=dict(extras))

    register_env.__doc__ = f"Register {entry_point} with skyrl-gym under {env_class!r}; safe to call repeatedly."
    make_env.__doc__ = f"Build one {env_class!r} env from a dataset row (``extras``) as SkyRL's generator does."
    return register_env, make_env


def lazy_attributes(module: str, lazy: Mapping[str, str]) -> Callable[[str], object]:
    """A module ``__getattr__`` (PEP 562) that imports ``lazy[name]`` (``"module:attribute"``) on first use.

    A task package exports its env class this way, so importing the package does not import
    skyrl-gym. Other names raise ``AttributeError`` naming ``module``.
    """

    def __getattr__(name: str) -> object:
        target = lazy.get(name)
        if target is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        where, _, attr = target.partition(":")
        return getattr(importlib.import_module(where), attr)

    return __getattr__
