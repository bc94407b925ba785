"""Build SkyRL dataset rows for interface navigation and read/write them as parquet.

Row format (SkyRL 0.3.0 ``PromptDataset``: ``prompt`` is the chat, ``env_class`` picks the env, every
other column reaches the env as ``extras``):

========================= =================================================================
``prompt``                system message + first user message (home screen, instructions)
``env_class``             :data:`~hyperpod_rl.tasks.ui_nav.registry.ENV_CLASS`
``data_source``           ``"{spec.data_source}/{split}"``
``app``                   :meth:`App.to_json` text
``content_hash``          :attr:`App.content_hash` (unique across all splits; checked)
``goal``                  the instruction's goal sentence
``depth``                 menu clicks from home to the goal page
``goal_kind``             ``settings`` or ``form``; ``targets``: controls the goal sets
``shortest_path_length``  fewest actions to the goal (breadth-first search)
``stratum``               :func:`~hyperpod_rl.tasks.ui_nav.strata.stratum_of` label
``split``                 ``train`` / ``heldout`` / ``ood`` / ``validation``
``max_turns``             turn limit; ``observation``, ``prompt_style``: env settings
``render_style``          :class:`RenderStyle` JSON; ``image_tokens``: vision tokens per screen
``seed``                  the app's generator seed; ``labels``: vocabulary part used
``reward_version``        :data:`~hyperpod_rl.tasks.ui_nav.reward.REWARD_VERSION`
========================= =================================================================

Splits: ``train`` draws labels from the train vocabularies and ``depths``; ``heldout`` draws from
the held-out vocabularies (labels and app names never seen in train) at the same depths, so its
layouts (screen graphs, label sets and placements) are unseen; ``ood`` uses the deeper
``ood_depths``; ``validation`` (for choosing settings, so held-out is reported once) draws like
``heldout``, other apps. Content hashes are unique across all splits. Same spec -> same rows, byte for byte.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any, Final, cast

from pydantic import Field, field_validator, model_validator

from hyperpod_rl.base import Seed, listed
from hyperpod_rl.errors import TaskError
from hyperpod_rl.tasks.dataset import StratumMix, derive_seed, quotas, shortfall, take_quota, write_parquet
from hyperpod_rl.tasks.dataset import read_rows as _read_rows
from hyperpod_rl.tasks.protocol import SPLITS, TaskOptions
from hyperpod_rl.tasks.ui_nav.app import default_max_turns, initial_state
from hyperpod_rl.tasks.ui_nav.generate import generate_app
from hyperpod_rl.tasks.ui_nav.messages import Observation, PromptStyle, build_prompt, goal_text
from hyperpod_rl.tasks.ui_nav.registry import ENV_CLASS
from hyperpod_rl.tasks.ui_nav.render import SIZES, THEMES, RenderStyle, image_tokens
from hyperpod_rl.tasks.ui_nav.reward import REWARD_VERSION
from hyperpod_rl.tasks.ui_nav.strata import stratum_of

__all__ = ["SPLITS", "DatasetSpec", "build_dataset", "read_rows", "write_parquet"]

REQUIRED_COLUMNS: Final[tuple[str, ...]] = ("prompt", "env_class", "app", "content_hash")


def read_rows(path: str | Path) -> list[dict[str, Any]]:
    """Read rows written by :func:`write_parquet` (:func:`hyperpod_rl.tasks.dataset.read_rows` with this task's columns).

    Raises:
        TaskError: the file is missing, not parquet, or lacks ``prompt``, ``env_class``, ``app``, ``content_hash``.
    """
    return _read_rows(path, required=REQUIRED_COLUMNS)


_STALL_LIMIT: Final[int] = 5000


class DatasetSpec(TaskOptions):
    """What to generate (the task's options). Construction raises :class:`TaskError` naming every bad field.

    Attributes:
        seed: Master seed; each app's seed derives from (seed, split, index).
        counts: Rows per split; keys from ``train``, ``heldout``, ``ood``, ``validation``.
        depths: Goal-page menu depths of ``train`` and ``heldout``, drawn uniformly.
        ood_depths: Depths of ``ood`` (deeper menus); must all exceed ``depths``.
        goal_kinds: Weights of ``settings`` and ``form`` goals.
        targets: Controls a goal sets, drawn uniformly from this tuple (1..2).
        branching: Inclusive range of buttons per menu (2..4).
        controls: Inclusive range of controls per page (2..4).
        confirm: Probability that a commit button asks for confirmation.
        sizes: Window sizes (strata), drawn uniformly; see :data:`~.render.SIZES`.
        themes: Themes (strata), drawn uniformly; see :data:`~.render.THEMES`.
        mix: Requested stratum mix for train / heldout: mix key -> weight; None takes apps as drawn.
        max_turns: Turn limit; None uses ``2 * shortest_path_length + 4`` per app.
        observation: ``image``, ``text`` (text twin) or ``both``.
        prompt_style: ``full`` or ``terse``.
        max_image_tokens: Cap on vision tokens per screen (qwen-vl-utils rules, patch 16, merge 2).
        data_source: Prefix of the ``data_source`` column.
    """

    seed: Seed = 0
    """Master seed; same options -> same rows, byte for byte."""
    counts: dict[str, int] = Field(default_factory=lambda: {"train": 256, "heldout": 64, "ood": 64})
    """Rows per split; keys from train, heldout, ood, validation."""
    depths: tuple[int, ...] = (1, 2)
    """Menu depths of the goal page in train and heldout."""
    ood_depths: tuple[int, ...] = (3, 4)
    """Menu depths of the out-of-distribution split (deeper than depths)."""
    goal_kinds: dict[str, float] = Field(default_factory=lambda: {"settings": 1.0, "form": 1.0})
    """Weights of toggle goals (settings) and text goals (form)."""
    targets: tuple[int, ...] = (1,)
    """Controls one goal sets (1 or 2), drawn from this list."""
    branching: tuple[int, int] = (2, 3)
    """Buttons per menu: inclusive range within 2..4."""
    controls: tuple[int, int] = (2, 3)
    """Controls per page: inclusive range within 2..4."""
    confirm: float = Field(default=0.5, ge=0.0, le=1.0)
    """Probability that saving asks for confirmation (OK / Cancel dialog)."""
    sizes: tuple[str, ...] = ("small",)
    """Window sizes: small (320x224 px), medium (416x320 px), large (544x416 px)."""
    themes: tuple[str, ...] = ("light", "dark", "ocean", "contrast")
    """Colour themes, drawn uniformly."""
    mix: StratumMix = None
    """Stratum mix of train / heldout (mix key -> weight); none: as drawn."""
    max_turns: int | None = Field(default=None, ge=1)
    """Turn limit per episode; none: 2 x shortest path + 4."""
    observation: Observation = "image"
    """What each turn shows: image, text (the text twin) or both."""
    prompt_style: PromptStyle = "full"
    """Prompt style: full instructions (real VLMs) or terse (tiny random-init model)."""
    max_image_tokens: int = Field(default=1024, ge=4)
    """Cap on vision tokens per screen (qwen-vl-utils sizing)."""
    data_source: str = "hyperpod_rl.ui_nav"
    """Prefix of the data_source column."""

    @field_validator("depths", "ood_depths")
    @classmethod
    def _depths(cls, v: tuple[int, ...]) -> tuple[int, ...]:
        if not v or any(not 1 <= d <= 6 for d in v):
            raise ValueError("list at least one depth, each in 1..6 menu levels")
        return v

    @field_validator("goal_kinds")
    @classmethod
    def _kinds(cls, v: dict[str, float]) -> dict[str, float]:
        bad = sorted(set(v) - {"settings", "form"})
        if bad or any(w < 0 for w in v.values()) or sum(v.values()) <= 0:
            raise ValueError("use keys 'settings' and 'form' with weights >= 0 and a positive sum")
        return v

    @field_validator("targets")
    @classmethod
    def _targets(cls, v: tuple[int, ...]) -> tuple[int, ...]:
        if not v or any(not 1 <= t <= 2 for t in v):
            raise ValueError("list at least one target count, each 1 or 2")
        return v

    @field_validator("sizes")
    @classmethod
    def _sizes(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        if not v or any(s not in SIZES for s in v):
            raise ValueError(f"use sizes from {listed(sorted(SIZES))}")
        return v

    @field_validator("themes")
    @classmethod
    def _themes(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        if not v or any(t not in THEMES for t in v):
            raise ValueError(f"use themes from {listed(sorted(THEMES))}")
        return v

    @model_validator(mode="after")
    def _check(self) -> DatasetSpec:
        if self.counts.get("ood", 0) and min(self.ood_depths) <= max(self.depths):
            raise ValueError(f"ood_depths={self.ood_depths} must all be deeper than depths={self.depths}")
        if not 2 <= self.branching[0] <= self.branching[1] <= 4:
            raise ValueError(f"branching={self.branching} must satisfy 2 <= low <= high <= 4")
        if not max(self.targets) <= self.controls[0] <= self.controls[1] <= 4:
            raise ValueError(f"controls={self.controls} must satisfy max(targets) <= low <= high <= 4")
        for size in self.sizes:
            tokens = image_tokens(RenderStyle(size=size))
            if tokens > self.max_image_tokens:
                raise ValueError(f"size {size!r} costs {tokens} vision tokens, above max_image_tokens={self.max_image_tokens}")
        return self


def _build_split(spec: DatasetSpec, split: str, seen: set[str]) -> list[dict[str, Any]]:
    count = spec.counts.get(split, 0)
    # validation stands in for the held-out split when settings are chosen: its labels, other apps
    labels = "heldout" if split in ("heldout", "validation") else "train"
    depths = spec.ood_depths if split == "ood" else spec.depths
    need = quotas(count, spec.mix if split != "ood" else None)
    rows: list[dict[str, Any]] = []
    kinds = sorted(spec.goal_kinds)
    index, last_accept = 0, 0
    while len(rows) < count:
        if index - last_accept > _STALL_LIMIT:
            short = shortfall(need)
            raise TaskError(
                f"counts.{split}={count} cannot be filled with unique apps: {len(rows)} built, still missing {short}. "
                f"Lower counts.{split}, widen depths / branching / controls, or change mix."
            )
        rng = random.Random(f"{spec.seed}:{split}:{index}")
        seed = derive_seed(spec.seed, split, index)
        index += 1
        kind = rng.choices(kinds, weights=[spec.goal_kinds[k] for k in kinds])[0]
        app = generate_app(
            seed=seed,
            depth=rng.choice(depths),
            branching=spec.branching,
            controls=spec.controls,
            goal_kind=cast(Any, kind),
            targets=rng.choice(spec.targets),
            confirm=spec.confirm,
            labels=cast(Any, labels),
        )
        style = RenderStyle(size=cast(Any, rng.choice(spec.sizes)), theme=cast(Any, rng.choice(spec.themes)))
        if app.content_hash in seen:
            continue
        stratum = stratum_of(app, style)
        if not take_quota(need, stratum):
            continue
        last_accept = index
        seen.add(app.content_hash)
        max_turns = spec.max_turns or default_max_turns(app)
        rows.append(
            {
                "prompt": build_prompt(
                    app, initial_state(app), max_turns=max_turns, style=style, observation=spec.observation, prompt_style=spec.prompt_style
                ),
                "env_class": ENV_CLASS,
                "data_source": f"{spec.data_source}/{split}",
                "app": app.to_json(),
                "content_hash": app.content_hash,
                "goal": goal_text(app),
                "depth": app.depth,
                "goal_kind": app.goal_kind,
                "targets": len(app.goal.targets),
                "shortest_path_length": app.shortest_path_length,
                "stratum": stratum,
                "split": split,
                "max_turns": max_turns,
                "observation": spec.observation,
                "prompt_style": spec.prompt_style,
                "render_style": style.model_dump_json(),
                "image_tokens": 0 if spec.observation == "text" else image_tokens(style),
                "seed": seed,
                "labels": labels,
                "reward_version": REWARD_VERSION,
            }
        )
    return rows


def build_dataset(spec: DatasetSpec) -> dict[str, list[dict[str, Any]]]:
    """Generate the rows of every split with a positive count, in :data:`SPLITS` order (train, heldout, ood, validation).

    Raises:
        TaskError: a split cannot be filled with unique apps of the requested strata (the message
            names the split and what to change).
    """
    seen: set[str] = set()
    out = {split: _build_split(spec, split, seen) for split in SPLITS if spec.counts.get(split, 0) > 0}
    hashes = [r["content_hash"] for rows in out.values() for r in rows]
    if len(hashes) != len(set(hashes)):  # invariant of _build_split; checked, not assumed
        raise TaskError("content hashes repeat across splits; this is a bug in build_dataset")
    return out
