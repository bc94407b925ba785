"""Build SkyRL dataset rows for document reading, and read/write them as parquet.

Row format (SkyRL 0.3.0 ``PromptDataset``: ``prompt`` is the chat, ``env_class`` picks the env,
every other column reaches the env as ``extras``):

===================== ====================================================================
``prompt``            (system,) user message: page image, question
``env_class``         :data:`~hyperpod_rl.tasks.doc_read.registry.ENV_CLASS`
``data_source``       ``"{spec.data_source}/{split}"``
``document``          :class:`Document` JSON; ``question``: :class:`Question` JSON
``page_style``        :class:`PageStyle` JSON (rotation, noise, font scale, grey levels)
``doc_hash``          :meth:`Document.content_hash` (unique across all splits; checked)
``content_hash``      hash of document, question and page style (unique; checked)
``stratum``           :func:`~.strata.stratum_of` label; ``split``: train / heldout / ood
``kind``, ``template`` document kind and layout template
``qtype``             question type; ``question_kind``: field / sum / compare
``answer_type``       text / number / money / date / yesno; ``answer``: canonical expected answer
``n_items``           table rows
``width_px``,         size of the image in the prompt (pixels, multiples of 32)
``height_px``
``image_tokens``      its vision-token count (0 for text observations), <= ``max_image_tokens``
``observation``,      what the prompt shows and how much text it carries
``prompt_style``
``reward_version``    :data:`~.reward.REWARD_VERSION`
===================== ====================================================================

Splits: ``train`` draws from the train templates with ``items`` rows; ``heldout`` from the held-out
templates (:data:`~.templates.HELDOUT_TEMPLATES`, never in train) with the same rows and degradation;
``ood`` from the train templates with denser pages (``ood_items`` rows, text scaled by
``ood_font_scale``, the same token cap); ``validation`` (for choosing settings, so held-out is
reported once) from the held-out templates, other documents. Same spec -> same hashes and
identical PNG bytes.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final, TypedDict, cast

from pydantic import Field, ValidationError, field_validator, model_validator

from hyperpod_rl.base import Seed, format_validation_error, listed
from hyperpod_rl.errors import TaskError
from hyperpod_rl.tasks.dataset import StratumMix, check_weights, quotas, shortfall, take_quota
from hyperpod_rl.tasks.dataset import read_rows as _read
from hyperpod_rl.tasks.dataset import write_parquet as _write
from hyperpod_rl.tasks.doc_read._model import DocModel
from hyperpod_rl.tasks.doc_read.answer import expected_value
from hyperpod_rl.tasks.doc_read.document import KINDS, Document, Question
from hyperpod_rl.tasks.doc_read.generate import QTYPES, generate_document, generate_question, question_types_for
from hyperpod_rl.tasks.doc_read.messages import Observation, PromptStyle, build_prompt
from hyperpod_rl.tasks.doc_read.registry import ENV_CLASS
from hyperpod_rl.tasks.doc_read.render import PageStyle, encode_png, render_document
from hyperpod_rl.tasks.doc_read.reward import REWARD_VERSION
from hyperpod_rl.tasks.doc_read.strata import stratum_of
from hyperpod_rl.tasks.doc_read.templates import HELDOUT_TEMPLATES, TEMPLATES, TRAIN_TEMPLATES
from hyperpod_rl.tasks.protocol import SPLITS, SplitCounts
from hyperpod_rl.tasks.vision import image_token_count

__all__ = ["SPLITS", "DatasetSpec", "DocRow", "build_dataset", "draw_sample", "make_row", "read_rows", "sample_from_row", "write_parquet"]

_REQUIRED_COLUMNS: Final[tuple[str, ...]] = ("prompt", "env_class", "document", "question", "content_hash")
_STALL_LIMIT: Final[int] = 5000


class DocRow(TypedDict):
    """One dataset row (the module docstring gives each column's meaning)."""

    prompt: list[dict[str, Any]]
    env_class: str
    data_source: str
    document: str
    question: str
    page_style: str
    doc_hash: str
    content_hash: str
    stratum: str
    split: str
    kind: str
    template: str
    qtype: str
    question_kind: str
    answer_type: str
    answer: str
    n_items: int
    width_px: int
    height_px: int
    image_tokens: int
    max_image_tokens: int
    observation: str
    prompt_style: str
    reward_version: str


class DatasetSpec(DocModel):
    """What to generate. Construction raises :class:`TaskError` naming any bad field.

    Every field's description is the docstring under it.
    """

    seed: Seed = 0
    """Master seed; each sample derives from (seed, split, index)."""
    counts: SplitCounts = Field(default_factory=lambda: {"train": 512, "heldout": 128, "ood": 128})
    """Rows per split; keys from train, heldout, ood, validation."""
    kinds: dict[str, float] = Field(default_factory=lambda: {k: 1.0 for k in KINDS})
    """Document-kind weights, e.g. {"invoice": 2, "receipt": 1}."""
    qtypes: tuple[str, ...] = QTYPES
    """Question types to ask; any of hyperpod_rl.tasks.doc_read.generate.QTYPES."""
    mix: StratumMix = None
    """Requested stratum mix for train/heldout (mix key -> weight); None: as drawn."""
    items: tuple[int, int] = (2, 6)
    """Table rows per train and held-out page: inclusive (min, max)."""
    ood_items: tuple[int, int] = (10, 18)
    """Table rows per out-of-distribution page: inclusive (min, max); denser pages."""
    ood_font_scale: float = Field(default=0.8, ge=0.5, le=1.0)
    """Text scale of out-of-distribution pages (< 1: smaller text)."""
    max_rotation_deg: float = Field(default=2.0, ge=0.0, le=10.0)
    """Pages are rotated uniformly within +- this many degrees."""
    max_noise_sigma: float = Field(default=12.0, ge=0.0, le=64.0)
    """Gaussian noise sigma drawn uniformly in [0, this] grey levels."""
    max_image_tokens: int = Field(default=512, ge=16, le=16384)
    """Cap on vision tokens per page (qwen-vl-utils rules, factor 32)."""
    observation: Observation = "image"
    """What the prompt shows: image, text (the page's text twin) or both."""
    prompt_style: PromptStyle = "full"
    """Prompt style: full instructions (real VLMs) or terse (tiny random-init model)."""
    data_source: str = "hyperpod_rl.doc_read"
    """Prefix of the data_source column."""

    @field_validator("kinds")
    @classmethod
    def _kinds(cls, v: dict[str, float]) -> dict[str, float]:
        return check_weights(v, KINDS, "kind")

    @field_validator("qtypes")
    @classmethod
    def _qtypes(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        bad = sorted(set(v) - set(QTYPES))
        if bad or not v:
            raise ValueError(f"unknown or no question type(s) {listed(bad)}; use some of {listed(QTYPES)}")
        return v

    @field_validator("items", "ood_items")
    @classmethod
    def _items(cls, v: tuple[int, int]) -> tuple[int, int]:
        if not 1 <= v[0] <= v[1] <= 30:
            raise ValueError(f"rows {v} must be (min, max) with 1 <= min <= max <= 30")
        return v

    @model_validator(mode="after")
    def _check(self) -> DatasetSpec:
        if self.counts.get("ood", 0) and self.ood_items[0] <= self.items[1]:
            raise ValueError(f"ood_items={self.ood_items} must start above items={self.items} (out-of-distribution pages are denser)")
        return self


def draw_sample(spec: DatasetSpec, split: str, index: int) -> tuple[Document, Question, PageStyle]:
    """The ``index``-th candidate sample of ``split`` (deterministic; :func:`build_dataset` skips duplicates and full strata)."""
    rng = random.Random(f"hyperpod_rl.doc_read.dataset:{spec.seed}:{split}:{index}")
    kinds = sorted(k for k, w in spec.kinds.items() if w > 0)
    kind = rng.choices(kinds, weights=[spec.kinds[k] for k in kinds])[0]
    # validation stands in for the held-out split when settings are chosen: its templates, other documents
    pool = HELDOUT_TEMPLATES if split in ("heldout", "validation") else TRAIN_TEMPLATES
    tid = rng.choice([t for t in pool if TEMPLATES[t].kind == kind])
    lo, hi = spec.ood_items if split == "ood" else spec.items
    seed = int.from_bytes(hashlib.sha256(f"{spec.seed}:{split}:{index}".encode()).digest()[:8], "big") >> 1
    doc = generate_document(tid, seed=seed, n_items=rng.randint(lo, hi))
    qtypes = question_types_for(doc, spec.qtypes) or list(spec.qtypes[:1])
    question = generate_question(doc, rng.choice(qtypes), seed=seed)
    style = PageStyle(
        font_scale=spec.ood_font_scale if split == "ood" else 1.0,
        rotation_deg=round(rng.uniform(-spec.max_rotation_deg, spec.max_rotation_deg), 2),
        noise_sigma=float(round(rng.uniform(0.0, spec.max_noise_sigma))),
        paper=rng.randint(232, 255),
        ink=rng.randint(0, 60),
    )
    return doc, question, style


def make_row(spec: DatasetSpec, split: str, doc: Document, question: Question, style: PageStyle, stratum: str, content_hash: str) -> DocRow:
    """Render the page and build the dataset row of one sample (columns in the module docstring)."""
    png, (w, h) = b"", (0, 0)
    if spec.observation != "text":
        img = render_document(doc, style, max_image_tokens=spec.max_image_tokens)
        png, (w, h) = encode_png(img), img.size
    prompt = build_prompt(doc, question, observation=spec.observation, prompt_style=spec.prompt_style, png=png or None)
    return {
        "prompt": prompt,
        "env_class": ENV_CLASS,
        "data_source": f"{spec.data_source}/{split}",
        "document": doc.model_dump_json(),
        "question": question.model_dump_json(),
        "page_style": style.model_dump_json(),
        "doc_hash": doc.content_hash(),
        "content_hash": content_hash,
        "stratum": stratum,
        "split": split,
        "kind": doc.kind,
        "template": doc.template,
        "qtype": question.qtype,
        "question_kind": question.kind,
        "answer_type": question.answer_type,
        "answer": expected_value(question),
        "n_items": len(doc.items),
        "width_px": w,
        "height_px": h,
        "image_tokens": image_token_count(w, h) if w else 0,
        "max_image_tokens": spec.max_image_tokens,
        "observation": spec.observation,
        "prompt_style": spec.prompt_style,
        "reward_version": REWARD_VERSION,
    }


def _build_split(spec: DatasetSpec, split: str, seen_docs: set[str]) -> list[DocRow]:
    count = spec.counts.get(split, 0)
    need = quotas(count, spec.mix if split != "ood" else None)
    rows: list[DocRow] = []
    index, last_accept = 0, 0
    while len(rows) < count and index - last_accept <= _STALL_LIMIT:
        doc, question, style = draw_sample(spec, split, index)
        index += 1
        doc_hash = doc.content_hash()
        if doc_hash in seen_docs:
            continue
        stratum = stratum_of(doc, question)
        if not take_quota(need, stratum):
            continue
        seen_docs.add(doc_hash)
        last_accept = index
        content_hash = hashlib.sha256(f"{doc_hash}:{question.content_hash()}:{style.model_dump_json()}".encode()).hexdigest()[:32]
        rows.append(make_row(spec, split, doc, question, style, stratum, content_hash))
    if len(rows) < count:
        short = shortfall(need)
        raise TaskError(
            f"counts.{split}={count} cannot be filled with unique documents: {len(rows)} built after {index} candidates, "
            f"still missing {short}. Change mix, kinds or qtypes so the strata are reachable, or lower counts.{split}."
        )
    return rows


def build_dataset(spec: DatasetSpec) -> dict[str, list[DocRow]]:
    """Generate the rows of every split with a positive count, in :data:`SPLITS` order (train, heldout, ood, validation).

    Returns:
        ``{split: rows}``; document hashes (and so content hashes) are unique across all splits,
        and held-out rows use only templates that train rows never use.

    Raises:
        TaskError: a split cannot be filled (the message names the split and what to change), or
            the disjointness checks fail (a bug).
    """
    seen: set[str] = set()
    out = {split: _build_split(spec, split, seen) for split in SPLITS if spec.counts.get(split, 0) > 0}
    hashes = [r["content_hash"] for rows in out.values() for r in rows]
    docs = [r["doc_hash"] for rows in out.values() for r in rows]
    if len(set(hashes)) != len(hashes) or len(set(docs)) != len(docs):
        raise TaskError("content hashes repeat across splits; this is a bug in build_dataset")
    if {r["template"] for r in out.get("train", [])} & {r["template"] for r in out.get("heldout", [])}:
        raise TaskError("a held-out template appears in train; this is a bug in build_dataset")
    return out


def sample_from_row(row: Mapping[str, Any]) -> tuple[Document, Question, PageStyle]:
    """The document, question and page style of a row (JSON text or dicts).

    Raises:
        TaskError: a column is missing or invalid (the message names it).
    """
    out: list[Any] = []
    for column, model in (("document", Document), ("question", Question), ("page_style", PageStyle)):
        raw = row.get(column)
        if raw is None:
            if column == "page_style":
                out.append(PageStyle())
                continue
            raise TaskError(f"row[{column!r}] is required: build rows with hyperpod_rl.tasks.doc_read.build_dataset")
        try:
            out.append(model.model_validate_json(raw) if isinstance(raw, (str, bytes)) else model.model_validate(dict(raw)))
        except ValidationError as e:
            raise TaskError(format_validation_error(e, what=f"row[{column!r}]", prefix=f"{column}.", model=model)) from None
        except ValueError as e:  # malformed JSON text
            raise TaskError(
                f"row[{column!r}] is not valid JSON ({e}): rebuild the rows with hyperpod_rl.tasks.doc_read.build_dataset"
            ) from None
    return out[0], out[1], out[2]


def write_parquet(rows: Iterable[Mapping[str, Any]], path: str | Path) -> str:
    """Write rows to one parquet file: :func:`hyperpod_rl.tasks.dataset.write_parquet` (returns the file's sha256)."""
    return _write(rows, path)


def read_rows(path: str | Path) -> list[DocRow]:
    """Read rows written by :func:`write_parquet`, checking this task's columns (parquet's ``None`` part keys dropped).

    Raises:
        TaskError: the file is missing, not parquet, or lacks the required columns.
    """
    return cast("list[DocRow]", _read(path, required=_REQUIRED_COLUMNS))
