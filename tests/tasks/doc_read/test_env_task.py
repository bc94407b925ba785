"""The plug-in: registered by entry point, a single-turn skyrl-gym env, task members over rows."""

from __future__ import annotations

import pytest

from hyperpod_rl.errors import TaskError
from hyperpod_rl.tasks import check_task, get_task, make_env, task_names
from hyperpod_rl.tasks.doc_read import DatasetSpec, build_dataset
from hyperpod_rl.tasks.doc_read import make_env as doc_make_env
from hyperpod_rl.tasks.vision import image_token_count


@pytest.fixture(scope="module")
def rows() -> list:
    return build_dataset(DatasetSpec(seed=2, counts={"train": 6}, max_image_tokens=128))["train"]


def test_registered_and_conforming() -> None:
    assert "doc_read" in task_names()
    task = check_task(get_task("doc_read"))
    assert task.multi_turn is False and task.primary_metric == "accuracy"


def test_env_scores_one_answer_and_ends(rows: list) -> None:
    row = rows[0]
    env = make_env("doc_read", row)
    prompt, info = env.init(row["prompt"])
    assert prompt == row["prompt"] and info["reward_version"] == row["reward_version"]
    out = env.step(f"<answer>{row['answer']}</answer>")
    assert out["done"] is True and out["reward"] == 1.0 and out["observations"] == []
    assert out["metadata"]["correct"] is True
    assert env.get_metrics()["correct"] == 1.0
    wrong = doc_make_env(row)
    assert wrong.step("no tags")["reward"] == -0.1 and wrong.get_metrics()["invalid"] == 1.0


def test_env_builds_a_fresh_prompt_without_one(rows: list) -> None:
    row = rows[1]
    env = make_env("doc_read", row, {"prompt_style": "terse"})
    prompt, _ = env.init(None)
    assert prompt == get_task("doc_read").build_prompt(row, prompt_style="terse") or row["prompt_style"] != "terse"
    assert prompt[-1]["content"][-1]["text"].startswith(("What", "Which", "Is"))


def test_env_refuses_a_row_without_a_document() -> None:
    with pytest.raises(TaskError, match=r"row\['document'\] is required"):
        make_env("doc_read", {"question": "{}"})


def test_task_members_over_a_row(rows: list) -> None:
    task = get_task("doc_read")
    row = rows[2]
    img = task.render(row)
    assert img.mode == "RGB" and image_token_count(*img.size) == row["image_tokens"]
    assert task.build_prompt(row) == row["prompt"]  # the row's prompt is reproducible from its columns
    assert task.score(row, f"<answer>{row['answer']}</answer>") == 1.0
    assert task.parse_answer("<answer>x").violation == "unclosed_answer"
    twin = task.text_twin(row)
    assert twin is not None and row["answer"] in twin.replace(",", "") or row["answer_type"] in ("yesno", "text", "number", "money")
    metrics = task.aggregate_metrics(
        [
            {"correct": 1.0, "invalid": 0.0, "unparseable": 0.0, "question_kind": "sum"},
            {"correct": 0.0, "invalid": 1.0, "unparseable": 0.0, "question_kind": "field"},
        ]
    )
    assert metrics["accuracy"] == 0.5 and metrics["accuracy/sum"] == 1.0 and metrics["invalid_rate"] == 0.5


def test_answer_words_cover_the_closed_answers_and_are_single_tiny_tokens() -> None:
    from hyperpod_rl.model.tiny import build_tiny_qwen3vl
    from hyperpod_rl.tasks.doc_read import KINDS

    words = get_task("doc_read").answer_words
    assert set(KINDS) | {"yes", "no"} == set(words)
    _, processor = build_tiny_qwen3vl(answer_words=words)
    assert all(len(processor.tokenizer.encode(w, add_special_tokens=False)) == 1 for w in words)
