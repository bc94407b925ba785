"""Document reading as a :class:`hyperpod_rl.tasks.Task` plug-in (entry point ``doc_read`` of ``hyperpod_rl.tasks``).

A thin adapter over the task's modules. Options are :class:`~.dataset.DatasetSpec`; the env is
:class:`~.env.DocReadEnv` (single turn); ``state`` arguments are ignored (one turn, no state).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, cast

from hyperpod_rl.tasks.doc_read.answer import parse_envelope
from hyperpod_rl.tasks.doc_read.audit import AUDIT_CASES, AUDIT_QUESTIONS
from hyperpod_rl.tasks.doc_read.dataset import DatasetSpec, build_dataset, sample_from_row
from hyperpod_rl.tasks.doc_read.document import Question
from hyperpod_rl.tasks.doc_read.messages import build_prompt
from hyperpod_rl.tasks.doc_read.registry import ENTRY_POINT, ENV_CLASS
from hyperpod_rl.tasks.doc_read.render import render_document
from hyperpod_rl.tasks.doc_read.reward import REWARD_VERSION, aggregate_metrics, score_completion
from hyperpod_rl.tasks.protocol import AuditCase, Row, RowObject, TaskBase

if TYPE_CHECKING:
    from PIL import Image

__all__ = ["TASK", "DocReadTask"]


_question_of: Final[RowObject[Question]] = RowObject("question", Question.model_validate_json, "doc_read")


class DocReadTask(TaskBase):
    """Read a synthetic invoice, receipt, form or table and answer one question (field, sum or comparison)."""

    name = "doc_read"
    title = "Document reading: answer one question about a rendered invoice, receipt, form or table"
    env_class = ENV_CLASS
    env_entry_point = ENTRY_POINT
    reward_version = REWARD_VERSION
    options_model = DatasetSpec
    primary_metric = "accuracy"
    #: The closed answers of ``field.kind`` and the yes/no questions. Constrained decoding (the tiny
    #: model's ``action_constraint="directions"``) can only give these, so pair it with
    #: ``qtypes=("field.kind",)`` (or the ``compare.pair`` / ``compare.total`` yes/no questions);
    #: real VLMs generate freely and answer every question type.
    answer_words = ("invoice", "receipt", "form", "table", "yes", "no")
    reported_metrics = {"accuracy": "correct", "invalid_rate": "invalid", "unparseable_rate": "unparseable"}
    lower_is_better = ("invalid_rate", "unparseable_rate")
    guard_metrics = ("invalid_rate",)
    turn_columns = ("answer", "expected", "correct", "violation")
    item_names = ("document", "documents")
    invalid_metric = "invalid_rate"

    def build_dataset(self, options: Any) -> dict[str, list[Row]]:
        """:func:`~.dataset.build_dataset` (``options``: a :class:`DatasetSpec` or its dict)."""
        return cast("dict[str, list[Row]]", build_dataset(self.options_of(options)))

    def render(self, row: Mapping[str, Any], state: Mapping[str, Any] | None = None) -> Image.Image:
        """The page as the model sees it, RGB (the dataset stores it greyscale; the pixels are the same)."""
        doc, _, style = sample_from_row(row)
        return render_document(doc, style, max_image_tokens=int(row.get("max_image_tokens") or 512)).convert("RGB")

    def build_prompt(self, row: Mapping[str, Any], *, prompt_style: str | None = None, observation: str = "image") -> list[dict[str, Any]]:
        """:func:`~.messages.build_prompt` for the row's document, question and page style."""
        doc, question, style = sample_from_row(row)
        return build_prompt(
            doc,
            question,
            style=style,
            max_image_tokens=int(row.get("max_image_tokens") or 512),
            **self.prompt_view(row, prompt_style, observation),
        )

    def parse_answer(self, text: str) -> Any:
        """:func:`~.answer.parse_envelope` (``.content``, ``.violation``)."""
        return parse_envelope(text)

    def score(self, row: Mapping[str, Any], completion: str, state: Mapping[str, Any] | None = None) -> float:
        """:func:`~.reward.score_completion` against the row's question (pure)."""
        return score_completion(completion, _question_of(row))

    def aggregate_metrics(self, metrics: Sequence[Mapping[str, Any]]) -> dict[str, float]:
        """:func:`~.reward.aggregate_metrics`: ``accuracy``, ``invalid_rate``, ``unparseable_rate``, per question kind."""
        return aggregate_metrics(metrics)

    def demonstration(self, row: Mapping[str, Any]) -> list[str] | None:
        """SFT demonstration (:func:`hyperpod_rl.tasks.doc_read.demos.doc_read_demonstration`)."""
        from hyperpod_rl.tasks.doc_read.demos import doc_read_demonstration

        return doc_read_demonstration(row)

    def audit_cases(self) -> Sequence[AuditCase]:
        """The audit table (:data:`~.audit.AUDIT_CASES`) in the generic form."""
        return _AUDIT

    def text_twin(self, row: Mapping[str, Any], state: Mapping[str, Any] | None = None) -> str | None:
        """Every value on the page as text (:meth:`Document.to_text`)."""
        doc, _, _ = sample_from_row(row)
        return doc.to_text()


_AUDIT: Final[tuple[AuditCase, ...]] = tuple(
    AuditCase(
        case_id=c.case_id,
        row={"question": AUDIT_QUESTIONS[c.question].model_dump_json()},
        completion=c.completion,
        expected=c.expected,
        note=c.note,
    )
    for c in AUDIT_CASES
)

#: The entry-point object (``hyperpod_rl.tasks.doc_read.task:TASK``).
TASK: Final[DocReadTask] = DocReadTask()
