"""Document reading (single turn): synthetic invoices, receipts, forms and tables, one question each.

Generation (:mod:`.generate`, templates in :mod:`.templates`), rendering with Pillow and qwen-vl-utils
sizing (:mod:`.render`), chat messages (:mod:`.messages`), answer parsing and normalisation
(:mod:`.answer`), a pure versioned reward (:mod:`.reward`), strata (:mod:`.strata`), datasets with
train / held-out (unseen templates) / out-of-distribution (denser pages) splits (:mod:`.dataset`),
the reward audit (:mod:`.audit`) and a single-turn skyrl-gym env (:mod:`.env`, loaded lazily).

Imports Pillow, pydantic, the package's ``errors`` / ``base`` and the shared task helpers
(:mod:`hyperpod_rl.tasks`); never torch, Ray or transformers, and skyrl-gym only where an env is built.
The written spec is ``docs/doc-read-task.md``.

Example:
    >>> from hyperpod_rl.tasks.doc_read import generate_document, generate_question, score_completion
    >>> doc = generate_document("invoice-classic", seed=0, n_items=3)
    >>> q = generate_question(doc, "field.kind", seed=0)
    >>> score_completion("<answer>Invoice</answer>", q)
    1.0
"""

from hyperpod_rl.tasks.doc_read.answer import VIOLATIONS, Envelope, Normalised, is_correct, normalise, parse_envelope
from hyperpod_rl.tasks.doc_read.audit import AUDIT_CASES, AUDIT_QUESTIONS, AuditCase, AuditReport, run_audit
from hyperpod_rl.tasks.doc_read.dataset import SPLITS, DatasetSpec, DocRow, build_dataset, read_rows, sample_from_row, write_parquet
from hyperpod_rl.tasks.doc_read.document import KINDS, Document, LineItem, Question
from hyperpod_rl.tasks.doc_read.generate import QTYPES, generate_document, generate_question
from hyperpod_rl.tasks.doc_read.messages import SYSTEM_PROMPT, build_prompt
from hyperpod_rl.tasks.doc_read.registry import ENV_CLASS, make_env, register_env
from hyperpod_rl.tasks.doc_read.render import PageStyle, page_size_px, render_document, render_page, render_png, sized_px
from hyperpod_rl.tasks.doc_read.reward import REWARD_VERSION, Outcome, aggregate_metrics, score, score_completion
from hyperpod_rl.tasks.doc_read.strata import stratum_of
from hyperpod_rl.tasks.doc_read.templates import HELDOUT_TEMPLATES, TEMPLATES, TRAIN_TEMPLATES, Template
from hyperpod_rl.tasks.registry import lazy_attributes

__all__ = [
    "AUDIT_CASES",
    "AUDIT_QUESTIONS",
    "ENV_CLASS",
    "HELDOUT_TEMPLATES",
    "KINDS",
    "QTYPES",
    "REWARD_VERSION",
    "SPLITS",
    "SYSTEM_PROMPT",
    "TEMPLATES",
    "TRAIN_TEMPLATES",
    "VIOLATIONS",
    "AuditCase",
    "AuditReport",
    "DatasetSpec",
    "DocReadEnv",
    "DocRow",
    "Document",
    "Envelope",
    "LineItem",
    "Normalised",
    "Outcome",
    "PageStyle",
    "Question",
    "Template",
    "aggregate_metrics",
    "build_dataset",
    "build_prompt",
    "generate_document",
    "generate_question",
    "is_correct",
    "make_env",
    "normalise",
    "page_size_px",
    "parse_envelope",
    "read_rows",
    "register_env",
    "render_document",
    "render_page",
    "render_png",
    "run_audit",
    "sample_from_row",
    "score",
    "score_completion",
    "sized_px",
    "stratum_of",
    "write_parquet",
]


#: ``DocReadEnv`` is loaded on first use: it imports skyrl-gym, which the rest of the task does not need.
__getattr__ = lazy_attributes(__name__, {"DocReadEnv": "hyperpod_rl.tasks.doc_read.env:DocReadEnv"})
