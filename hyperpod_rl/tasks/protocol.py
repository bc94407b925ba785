"""The task plug-in protocol: what a visual RL task gives the rest of hyperpod-rl.

A *task* is everything the trainer, evaluation, serving and the front-ends need to know about one
kind of problem: how to generate its dataset, draw its images, phrase its prompts, parse and score
an answer, play it as a skyrl-gym env, summarise episodes, and audit its reward. The maze
(:mod:`hyperpod_rl.tasks.maze`) is the first plug-in; ``docs/tasks.md`` walks through writing one and
``examples/`` holds a complete small package.

The surface is deliberately small and mirrors how SkyRL's skyrl-gym registers environments
(``skyrl_gym.register(id=..., entry_point="module:Class")``, then ``skyrl_gym.make(id, env_config=...,
extras=row)``): a task names its env class and the string entry point of a
``skyrl_gym.envs.base_text_env.BaseTextEnv`` subclass, and the generic code in
:mod:`hyperpod_rl.tasks.registry` registers and builds it.

Dataset rows
    A task's :meth:`Task.build_dataset` returns ``{split: rows}`` with splits from :data:`SPLITS`
    (``train``, ``heldout``: same distribution, disjoint content; ``ood``: out of distribution,
    e.g. larger or deeper instances). Each row is a SkyRL 0.3.0 ``PromptDataset`` row (``prompt`` is
    the chat, ``env_class`` picks the env, every other column reaches the env as ``extras``) and
    holds at least the columns of :data:`REQUIRED_COLUMNS`:

    ===================== =================================================================
    ``prompt``            the first chat messages (system + user with the first image)
    ``env_class``         :attr:`Task.env_class`
    ``data_source``       ``"<task data source>/<split>"`` (keys SkyRL's eval metrics)
    ``split``             one of :data:`SPLITS`
    ``stratum``           the difficulty-stratum label (per-stratum metrics group by it)
    ``image_tokens``      vision tokens of the first image (qwen-vl-utils sizing; 0: text only)
    ``reward_version``    :attr:`Task.reward_version`
    ``<hash_column>``     the content hash (:attr:`Task.hash_column`); unique across all splits
    ===================== =================================================================

    Rows must survive a parquet round trip (:func:`hyperpod_rl.tasks.dataset.write_parquet` /
    :func:`~hyperpod_rl.tasks.dataset.read_rows`): plain JSON-like values only.

Options
    :attr:`Task.options_model` is a :class:`hyperpod_rl.base.Model` subclass (frozen, extra keys
    forbidden; attribute docstrings become the notebook form's tooltips). It must have the fields
    ``seed: int`` and ``counts: dict[str, int]`` (rows per split); :class:`TaskOptions` is a ready
    base with those and the other common fields. ``RunConfig.task.options`` holds its JSON form.

Rewards
    :meth:`Task.score` is *pure* (no I/O, no randomness, no global state) and deterministic, and
    :attr:`Task.reward_version` changes with any change of its spec. :meth:`Task.audit_cases`
    lists adversarial completions with the reward the written spec says they must get;
    :func:`hyperpod_rl.tasks.audit.run_audit` runs them.

Evaluation metrics
    Optional members (defaults in :class:`TaskBase`; read them through
    :func:`hyperpod_rl.tasks.metrics.metric_spec`, which supplies the defaults for task objects
    that do not derive from :class:`TaskBase`): ``reported_metrics`` (reported metric -> the
    per-episode key it averages), ``lower_is_better`` and ``guard_metrics`` (metrics that block
    promotion when the adapter is significantly worse), and ``turn_columns`` (the keys of the
    env's per-turn step metadata that ``hyperpod-rl serve solve`` shows, one column each; read it
    through :func:`hyperpod_rl.tasks.metrics.turn_columns`), and ``invalid_metric`` (the reported
    share of malformed answers; :func:`hyperpod_rl.tasks.metrics.never_valid` reads it). Evaluation reports each reported metric
    with a bootstrap interval, overall and per ``stratum``.

Demonstrations
    Optional member ``demonstration(row)`` (:mod:`hyperpod_rl.tasks.demonstrations`): the task's
    own solver's completions turn by turn, for the SFT stage (``RunConfig.stage='sft'``); the
    default says "no demonstrations".

Stability: this surface only grows. New members get defaults in :class:`TaskBase`; nothing is
renamed or removed without a deprecation.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Final, Protocol, runtime_checkable

from pydantic import AfterValidator, BaseModel, Field, ValidationError, field_validator

from hyperpod_rl.base import RaisesOnInit, Seed, format_validation_error, listed
from hyperpod_rl.errors import TaskError

if TYPE_CHECKING:
    from PIL import Image

__all__ = [
    "REQUIRED_COLUMNS",
    "SPLITS",
    "AuditCase",
    "Row",
    "RowObject",
    "SplitCounts",
    "Task",
    "TaskBase",
    "TaskOptions",
    "parse_model",
]

#: Dataset splits, in build order: in-distribution train and held-out (disjoint content), then
#: out-of-distribution, then an in-distribution validation split (disjoint from all three) for
#: choosing settings, so that the held-out split is reported once and never tuned on. Validation
#: comes last because each split draws from its own seeded stream and skips what earlier splits
#: took: asking for validation rows leaves the other splits exactly as they were.
SPLITS: Final[tuple[str, ...]] = ("train", "heldout", "ood", "validation")

#: Columns every dataset row has (besides the task's own); the content-hash column is
#: :attr:`Task.hash_column` and is checked separately.
REQUIRED_COLUMNS: Final[tuple[str, ...]] = (
    "prompt",
    "env_class",
    "data_source",
    "split",
    "stratum",
    "image_tokens",
    "reward_version",
)

#: One dataset row: column name -> JSON-like value (see the module docstring).
Row = dict[str, Any]


class TaskOptions(RaisesOnInit):
    """Base of a task's options model: the fields every task shares.

    Subclass it and add the task's own fields with attribute docstrings (they become the
    notebook form's tooltips). Invalid values raise :class:`~hyperpod_rl.errors.TaskError`
    listing every bad field (``Model.build(data)`` and the constructor both).

    Attributes:
        seed: Master seed of dataset generation; same options -> same rows, byte for byte.
        counts: Rows per split; keys from ``train``, ``heldout``, ``ood``.
        prompt_style: ``"full"`` instructions (real VLMs) or ``"terse"`` (image plus a word,
            for the tiny random-init model); a task may add styles.
        max_image_tokens: Cap on vision tokens per image (qwen-vl-utils rules, patch 16,
            merge 2); the task shrinks its drawing to respect it.
    """

    error_class = TaskError

    seed: Seed = 0
    """Master seed of dataset generation; same options -> same rows, byte for byte."""
    counts: dict[str, int] = Field(default_factory=lambda: {"train": 256, "heldout": 64})
    """Rows per split; keys from train, heldout, ood."""
    prompt_style: str = "full"
    """Prompt style: 'full' instructions (real VLMs) or 'terse' (tiny random-init model)."""
    max_image_tokens: int = Field(default=1024, ge=4)
    """Cap on vision tokens per image (qwen-vl-utils sizing, patch 16, merge 2)."""

    @field_validator("counts")
    @classmethod
    def _counts(cls, v: dict[str, int]) -> dict[str, int]:
        return check_counts(v)


def check_counts[C: Mapping[str, int]](counts: C) -> C:
    """Check an options model's ``counts`` (rows per split); for a pydantic field validator.

    Raises:
        ValueError: an unknown split (the message lists :data:`SPLITS`), a negative count, or no rows at all.
    """
    bad = sorted(set(counts) - set(SPLITS))
    if bad:
        raise ValueError(f"unknown split(s) {listed(bad)}; use {listed(SPLITS)}")
    if any(n < 0 for n in counts.values()):
        raise ValueError("row counts must be >= 0")
    if sum(counts.values()) == 0:
        raise ValueError("at least one split needs rows")
    return counts


#: The type of an options model's ``counts`` field (rows per split), checked by :func:`check_counts`;
#: for models that do not derive from :class:`TaskOptions` (which checks its own).
SplitCounts = Annotated[dict[str, int], AfterValidator(check_counts)]


class RowObject[T]:
    """Reads the task object one row column holds, as JSON text or the equivalent mapping.

    Each distinct text is parsed once (an LRU cache of 4096 texts); a mapping is read as its JSON.
    Call it with a row to get the object.

    Args:
        column: The row's column, e.g. ``"maze"``.
        parse: Builds the object from JSON text (e.g. ``Maze.from_json``).
        task: The task's name, for the error.

    Raises:
        TaskError: (on call) the row has no ``column`` (or it is None); ``parse``'s own error on bad text.
    """

    def __init__(self, column: str, parse: Callable[[str], T], task: str) -> None:
        self.column, self.task = column, task
        self._parse = lru_cache(maxsize=4096)(parse)

    def __call__(self, row: Mapping[str, Any]) -> T:
        raw = row.get(self.column)
        if raw is None:
            raise TaskError(f"the row has no {self.column!r} column: build it with the {self.task} task's build_dataset")
        return self._parse(raw if isinstance(raw, str) else json.dumps(dict(raw), sort_keys=True, separators=(",", ":")))


def parse_model[M: BaseModel](raw: Any, model: type[M], *, name: str, error: type[TaskError] = TaskError) -> M:
    """``raw`` (None, JSON text or a mapping) validated as ``model`` (None: its defaults).

    Raises:
        TaskError: (``error``) the value is invalid, naming each bad field as ``<name>.<field>``.
    """
    try:
        if raw is None:
            return model()
        if isinstance(raw, (str, bytes)):
            return model.model_validate_json(raw)
        return model.model_validate(dict(raw))
    except ValidationError as e:
        raise error(format_validation_error(e, what=name, prefix=f"{name}.", model=model)) from None


@dataclass(frozen=True, slots=True)
class AuditCase:
    """One adversarial completion and the reward the task's written spec says it must get.

    Attributes:
        case_id: Short unique name (unique within the task).
        row: The dataset-row fields the reward reads (the task's extras; ``prompt`` not needed).
        completion: The model output under test (may be hostile: huge, nested tags, injections).
        expected: The reward it must get under :attr:`Task.reward_version`.
        state: Where the episode stands when the completion is scored (task-defined, JSON-like;
            e.g. the maze's ``{"agent": [row, col], "mode": "step"}``); None: the row's start.
        note: What the case probes.
    """

    case_id: str
    row: Mapping[str, Any]
    completion: str
    expected: float
    state: Mapping[str, Any] | None = None
    note: str = ""


@runtime_checkable
class Task(Protocol):
    """What a task plug-in provides. Derive from :class:`TaskBase` to get the optional members.

    Attributes:
        name: Registry name, lower-case ``[a-z][a-z0-9_-]*`` (the entry-point name, ``--task``).
        title: One line for ``hyperpod-rl tasks list`` and the task picker.
        env_class: skyrl-gym env id written in every row's ``env_class`` (e.g. ``"hyperpod_rl.maze"``).
        env_entry_point: ``"package.module:EnvClass"`` of a skyrl-gym ``BaseTextEnv`` subclass,
            constructed as ``EnvClass(env_config=..., extras=row)``. A string, so registering
            does not import skyrl-gym (SkyRL's registry is per process).
        multi_turn: True when an episode has more than one turn (the env returns observations).
        reward_version: Version of the written reward spec; recorded in provenance, rows and metrics.
        options_model: The task's options (:class:`TaskOptions` or any
            :class:`hyperpod_rl.base.Model` with ``seed`` and ``counts``).
        hash_column: Row column holding the content hash that makes splits disjoint.
        primary_metric: Key of :meth:`aggregate_metrics` that evaluation compares and the
            promotion gate uses (higher is better), e.g. ``"solve_rate"``.
        prompt_styles: Prompt styles the task supports (first: the default).
        answer_words: Closed answer vocabulary for constrained decoding (``RolloutConfig
            .action_constraint``): each answer is ``<answer>WORD</answer>`` with WORD from here.
            The tiny model's tokenizer makes each word one token. Empty: free generation only.
    """

    name: str
    title: str
    env_class: str
    env_entry_point: str
    multi_turn: bool
    reward_version: str
    options_model: type[Any]
    hash_column: str
    primary_metric: str
    prompt_styles: tuple[str, ...]
    answer_words: tuple[str, ...]

    def build_dataset(self, options: Any) -> dict[str, list[Row]]:
        """Generate every split with a positive count.

        Args:
            options: an instance of :attr:`options_model`.

        Returns:
            ``{split: rows}`` in :data:`SPLITS` order; content hashes unique across splits
            (:func:`hyperpod_rl.tasks.dataset.check_splits` checks it).

        Raises:
            TaskError (or the task's own ``ValueError`` subclass): a split cannot be filled.
        """
        ...

    def render(self, row: Mapping[str, Any], state: Mapping[str, Any] | None = None) -> Image.Image:
        """The observation image of ``row`` at ``state`` (None: the start), RGB, sized so that
        :func:`hyperpod_rl.tasks.vision.image_token_count` of its size is the row's ``image_tokens``."""
        ...

    def build_prompt(self, row: Mapping[str, Any], *, prompt_style: str | None = None, observation: str = "image") -> list[dict[str, Any]]:
        """The first chat messages of ``row`` (what the row's ``prompt`` column holds).

        Args:
            row: a dataset row (its task columns).
            prompt_style: one of :attr:`prompt_styles`; None: the row's own (or the default).
            observation: ``"image"``, or ``"text"`` for the text twin (tasks with
                :meth:`text_twin`), or ``"both"``.
        """
        ...

    def parse_answer(self, text: str) -> Any:
        """Parse a completion. The result has a ``violation`` attribute: None when the answer
        is well-formed, else a short code (e.g. ``"no_answer_tag"``)."""
        ...

    def score(self, row: Mapping[str, Any], completion: str, state: Mapping[str, Any] | None = None) -> float:
        """The pure, versioned reward of one completion (one turn) from ``state`` (None: the start).

        Must be deterministic, free of I/O, and never raise on any completion text (a malformed
        answer gets the spec's penalty).
        """
        ...

    def aggregate_metrics(self, metrics: Sequence[Mapping[str, Any]]) -> dict[str, float]:
        """Average per-episode metrics (the env's ``get_metrics()``) into the evaluation metrics.

        Returns ``{}`` for no episodes; always holds :attr:`primary_metric` otherwise.
        """
        ...

    def audit_cases(self) -> Sequence[AuditCase]:
        """Adversarial completions with their spec rewards (for :func:`hyperpod_rl.tasks.audit.run_audit`)."""
        ...

    def text_twin(self, row: Mapping[str, Any], state: Mapping[str, Any] | None = None) -> str | None:
        """The observation as text (same information as the image), or None if the task has no twin."""
        ...


class TaskBase:
    """Convenience base: the :class:`Task` defaults; subclass and set the class attributes.

    Defaults: ``multi_turn=False``, ``options_model=TaskOptions``, ``hash_column="content_hash"``,
    ``primary_metric="success"`` (the mean of the episodes' ``success``), ``prompt_styles=("full", "terse")``, ``answer_words=()``,
    :meth:`text_twin` and :meth:`demonstration` return None (no text twin, no SFT demonstrations:
    :mod:`hyperpod_rl.tasks.demonstrations`), :meth:`aggregate_metrics` averages every numeric key
    (:func:`hyperpod_rl.tasks.metrics.mean_metrics`), :meth:`audit_cases` is empty; the optional
    metric members fit :class:`hyperpod_rl.tasks.env.SingleTurnTaskEnv`'s episode metrics
    (``success``, ``reward``, ``invalid``).
    """

    name: ClassVar[str]
    title: ClassVar[str]
    env_class: ClassVar[str]
    env_entry_point: ClassVar[str]
    reward_version: ClassVar[str]
    multi_turn: ClassVar[bool] = False
    options_model: ClassVar[type[Any]] = TaskOptions
    hash_column: ClassVar[str] = "content_hash"
    primary_metric: ClassVar[str] = "success"
    prompt_styles: ClassVar[tuple[str, ...]] = ("full", "terse")
    answer_words: ClassVar[tuple[str, ...]] = ()
    #: Reported metric -> the per-episode metric key it averages (optional member).
    reported_metrics: ClassVar[dict[str, str]] = {"success": "success", "reward": "reward", "invalid": "invalid"}
    #: Reported metrics where lower is better (optional member).
    lower_is_better: ClassVar[tuple[str, ...]] = ("invalid",)
    #: Reported metrics that block promotion when significantly worse (optional member).
    guard_metrics: ClassVar[tuple[str, ...]] = ("invalid",)
    #: Keys of the env's per-turn step metadata shown as columns when a served model plays an
    #: item (``hyperpod-rl serve solve``; optional member).
    turn_columns: ClassVar[tuple[str, ...]] = ("violation",)
    #: What one row (prompt) is called, singular and plural, in the quickstart's and the
    #: comparisons' wording (optional member; :func:`hyperpod_rl.tasks.item_names`).
    item_names: ClassVar[tuple[str, str]] = ("item", "items")
    #: The reported metric that is the share of answers breaking the answer format (optional
    #: member); at 1.0 no rollout produced a valid answer and the reward sits at its floor.
    invalid_metric: ClassVar[str | None] = "invalid"

    def build_dataset(self, options: Any) -> dict[str, list[Row]]:  # pragma: no cover - abstract
        raise NotImplementedError(f"task {self.name!r} does not implement build_dataset")

    def prompt_view(self, row: Mapping[str, Any], prompt_style: str | None, observation: str) -> dict[str, Any]:
        """The ``observation`` and ``prompt_style`` keywords of a task's prompt builder for
        :meth:`build_prompt`: the prompt style asked for, else the row's, else the task's default
        (the first of :attr:`prompt_styles`)."""
        return {"observation": observation, "prompt_style": prompt_style or row.get("prompt_style") or self.prompt_styles[0]}

    def options_of(self, options: Any) -> Any:
        """``options`` as an instance of :attr:`options_model`: an instance as it is, a mapping
        (or None, for the defaults) through ``options_model.build``.

        Raises:
            TaskError: (the model's error class) invalid options, naming each bad field.
        """
        return options if isinstance(options, self.options_model) else self.options_model.build(options)

    def render(self, row: Mapping[str, Any], state: Mapping[str, Any] | None = None) -> Image.Image:  # pragma: no cover
        raise NotImplementedError(f"task {self.name!r} does not implement render")

    def build_prompt(
        self, row: Mapping[str, Any], *, prompt_style: str | None = None, observation: str = "image"
    ) -> list[dict[str, Any]]:  # pragma: no cover - abstract
        raise NotImplementedError(f"task {self.name!r} does not implement build_prompt")

    def parse_answer(self, text: str) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError(f"task {self.name!r} does not implement parse_answer")

    def score(self, row: Mapping[str, Any], completion: str, state: Mapping[str, Any] | None = None) -> float:  # pragma: no cover
        raise NotImplementedError(f"task {self.name!r} does not implement score")

    def aggregate_metrics(self, metrics: Sequence[Mapping[str, Any]]) -> dict[str, float]:
        from hyperpod_rl.tasks.metrics import mean_metrics

        return mean_metrics(metrics)

    def audit_cases(self) -> Sequence[AuditCase]:
        return ()

    def text_twin(self, row: Mapping[str, Any], state: Mapping[str, Any] | None = None) -> str | None:
        return None

    def demonstration(self, row: Mapping[str, Any]) -> Sequence[str] | None:
        """No demonstrations (the default): an SFT run on this task is refused
        (:mod:`hyperpod_rl.tasks.demonstrations` says how to add them)."""
        return None

    def __repr__(self) -> str:
        return f"<task {self.name!r}: {self.title}>"
