"""Answer parsing: the format rules of docs/maze-task.md."""

from __future__ import annotations

import pytest

from hyperpod_rl.tasks.maze import VISION_TOKENS, parse_answer


@pytest.mark.parametrize(
    ("text", "moves"),
    [
        ("<answer>up</answer>", ("up",)),
        ("I see a wall to the left. <answer> Down </answer>", ("down",)),
        ("<think>left? no</think>\n<answer>right</answer><|im_end|>", ("right",)),
        ("<ANSWER>up, right,right</ANSWER>", ("up", "right", "right")),
        ("reasoning...</think><answer>left</answer>", ("left",)),
    ],
)
def test_well_formed_answers(text: str, moves: tuple[str, ...]) -> None:
    parsed = parse_answer(text)
    assert parsed.ok and parsed.violation is None
    assert parsed.moves == moves


@pytest.mark.parametrize("token", VISION_TOKENS)
def test_vision_placeholder_tokens_are_violations(token: str) -> None:
    parsed = parse_answer(f"<answer>up</answer>{token}")
    assert parsed.violation == "vision_token"
    assert parsed.moves == ()
    assert parse_answer(f"{token}<answer>up</answer>").violation == "vision_token"


@pytest.mark.parametrize(
    ("text", "violation"),
    [
        ("", "no_answer"),
        ("up", "no_answer"),
        ("<answer>up", "unclosed_answer"),
        ("up</answer>", "malformed_tags"),
        ("<answer><answer>up</answer></answer>", "nested_answer"),
        ("<answer>up</answer><answer>down</answer>", "multiple_answers"),
        ("<answer>up</answer> because it is open", "text_after_answer"),
        ("<answer>  </answer>", "empty_answer"),
        ("<answer>uр</answer>", "non_ascii"),  # Cyrillic er
        ("<answer>north</answer>", "unknown_move"),
        ("<think><answer>up</answer></think>", "no_answer"),
        ("x" * 40_000 + "<answer>up</answer>", "too_long"),
        (None, "not_text"),
    ],
)
def test_violations(text: str, violation: str) -> None:
    assert parse_answer(text).violation == violation


def test_max_moves() -> None:
    assert parse_answer("<answer>up down left right</answer>", max_moves=1).violation == "too_many_moves"
    assert parse_answer("<answer>up down left right</answer>").moves == ("up", "down", "left", "right")
