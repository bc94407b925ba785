"""The reward audit: adversarial completions, each with the reward the spec says it must get.

Every expected value is written out by hand from the constants of reward spec
:data:`~hyperpod_rl.tasks.maze.reward.REWARD_VERSION` 1.0 (``docs/maze-task.md``): a closer move
0.09, a move away -0.11, the goal move 1.09, a blocked move -0.1, a format violation -0.2,
each plan move after the goal -0.1, plans floored at -1.0.

Run it on the built-in reward (``run_audit()``), on any function with the signature of
:func:`~hyperpod_rl.tasks.maze.reward.score_completion` (``run_audit(my_fn)``), or from the shell:
``hyperpod-rl maze audit [--reward-fn package.module:function]``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from hyperpod_rl.tasks.audit import AuditReport, Disagreement, audit_table, load_reward_fn
from hyperpod_rl.tasks.maze.grid import Cell, Maze
from hyperpod_rl.tasks.maze.reward import REWARD_VERSION, score_completion

__all__ = [
    "AUDIT_CASES",
    "AUDIT_MAZES",
    "AuditCase",
    "AuditReport",
    "Disagreement",
    "RewardFn",
    "load_reward_fn",
    "run_audit",
]

#: ``fn(completion, maze, *, mode, agent) -> float`` (see :func:`score_completion`).
RewardFn = Callable[..., float]

#: Hand-written mazes of the audit.
#:
#: ``corridor`` (2x3, one path R R D L L, start (0,0), goal (1,0))::
#:
#:     #######
#:     #A....#
#:     #####.#
#:     #G....#
#:     #######
#:
#: ``open2x2`` (no inner walls, start (0,0), goal (1,1): two shortest paths, "right down" and "down right").
AUDIT_MAZES: Final[dict[str, Maze]] = {
    "corridor": Maze(rows=2, cols=3, start=(0, 0), goal=(1, 0), open_sides=(8, 12, 6, 8, 12, 5)),
    "open2x2": Maze(rows=2, cols=2, start=(0, 0), goal=(1, 1), open_sides=(10, 6, 9, 5)),
}


@dataclass(frozen=True, slots=True)
class AuditCase:
    """One row of the audit table.

    Attributes:
        case_id: Short unique name.
        completion: The model output under test.
        expected: The reward it must get (spec version :data:`REWARD_VERSION`).
        mode: ``"step"`` (one turn from ``agent``) or ``"plan"`` (whole plan from ``agent``).
        maze: Key of :data:`AUDIT_MAZES`.
        agent: Agent cell; None means the maze's start.
        note: What the case probes.
    """

    case_id: str
    completion: str
    expected: float
    mode: str = "step"
    maze: str = "corridor"
    agent: Cell | None = None
    note: str = ""


_C = AuditCase
AUDIT_CASES: Final[tuple[AuditCase, ...]] = (
    # ---- step mode, corridor, agent at start (0,0): "right" is the only optimal move
    _C("empty", "", -0.2, note="empty text"),
    _C("whitespace", "  \n\t ", -0.2, note="whitespace only"),
    _C("bare-word", "right", -0.2, note="no answer tags"),
    _C("ok", "<answer>right</answer>", 0.09, note="one optimal move"),
    _C("ok-upper", "<answer>RIGHT</answer>", 0.09, note="direction words are case-insensitive"),
    _C("ok-tag-case", "<Answer> right </Answer>", 0.09, note="tags are case-insensitive, spaces trimmed"),
    _C("ok-reasoning", "The wall is below me, so I go right.\n<answer>right</answer>", 0.09, note="reasoning first"),
    _C("ok-think", "<think>left? no, wall</think><answer>right</answer>", 0.09, note="think block, then answer"),
    _C("ok-im-end", "<answer>right</answer><|im_end|>", 0.09, note="end-of-turn token after the answer"),
    _C("ok-two-end-tokens", "<answer>right</answer><|endoftext|><|im_end|>\n", 0.09, note="several end tokens"),
    _C("ok-trailing-ws", "<answer>right</answer>\n\n  ", 0.09, note="trailing whitespace"),
    _C("all-directions", "<answer>up down left right</answer>", -0.2, note="every direction at once (step mode)"),
    _C("two-moves", "<answer>right right</answer>", -0.2, note="more than one move in step mode"),
    _C("repeated-tags", "<answer>right</answer><answer>right</answer>", -0.2, note="repeated answer"),
    _C("several-answers", "<answer>down</answer> no wait <answer>right</answer>", -0.2, note="several answers"),
    _C("nested", "<answer><answer>right</answer></answer>", -0.2, note="nested tags"),
    _C("unclosed", "<answer>right", -0.2, note="unclosed tag"),
    _C("close-only", "right</answer>", -0.2, note="closing tag without opening"),
    _C("reversed-tags", "</answer>right<answer>", -0.2, note="tags in the wrong order"),
    _C("only-in-think", "<think>I will say <answer>right</answer></think>", -0.2, note="answer only inside reasoning"),
    _C("unclosed-think", "<think>hmm <answer>right</answer>", -0.2, note="reasoning never closed swallows the answer"),
    _C("text-after", "<answer>right</answer> and then down", -0.2, note="text after the answer"),
    _C("empty-answer", "<answer></answer>", -0.2, note="empty answer"),
    _C("enormous-output", "x" * 40_000 + "<answer>right</answer>", -0.2, note="completion over 32,768 chars"),
    _C("enormous-answer", "<answer>" + "right " * 1000 + "</answer>", -0.2, note="answer over 2,048 chars"),
    _C("homoglyph-cyrillic", "<answer>r\u0456ght</answer>", -0.2, note="Cyrillic i in 'right'"),
    _C("homoglyph-fullwidth", "<answer>\uff52\uff49\uff47\uff48\uff54</answer>", -0.2, note="full-width letters"),
    _C("arrow", "<answer>\u2192</answer>", -0.2, note="arrow symbol instead of a word"),
    _C("zero-width", "<answer>ri\u200bght</answer>", -0.2, note="zero-width space inside the word"),
    _C("spelled-out", "<answer>r i g h t</answer>", -0.2, note="letters split by spaces"),
    _C("synonym", "<answer>east</answer>", -0.2, note="compass word"),
    _C("punctuation", "<answer>right.</answer>", -0.2, note="trailing punctuation"),
    _C("quoted", "<answer>'right'</answer>", -0.2, note="quoted move"),
    _C("image-pad", "<answer>right<|image_pad|></answer>", -0.2, note="vision placeholder inside the answer"),
    _C("vision-block", "<|vision_start|><|image_pad|><|vision_end|><answer>right</answer>", -0.2, note="vision tokens"),
    _C("video-pad", "<|video_pad|><answer>right</answer>", -0.2, note="video placeholder"),
    _C("wall-down", "<answer>down</answer>", -0.1, note="move through an inner wall"),
    _C("wall-up", "<answer>up</answer>", -0.1, note="move through the outer wall"),
    _C("wall-left", "<answer>left</answer>", -0.1, note="move through the outer wall"),
    # ---- step mode, corridor, agent at (1,1): goal is one move left
    _C("goal-move", "<answer>left</answer>", 1.09, agent=(1, 1), note="move that reaches the goal"),
    _C("away-move", "<answer>right</answer>", -0.11, agent=(1, 1), note="move away from the goal"),
    _C("wall-near-goal", "<answer>up</answer>", -0.1, agent=(1, 1), note="wall next to the goal"),
    # ---- plan mode, corridor from the start
    _C("plan-optimal", "<answer>right right down left left</answer>", 1.45, mode="plan", note="shortest path"),
    _C("plan-commas", "<answer>right, right, down, left, left</answer>", 1.45, mode="plan", note="comma separated"),
    _C(
        "plan-overshoot",
        "<answer>right right down left left left</answer>",
        1.35,
        mode="plan",
        note="reaches the goal and keeps going",
    ),
    _C(
        "plan-overshoot-2",
        "<answer>right right down left left right right</answer>",
        1.25,
        mode="plan",
        note="two moves after the goal",
    ),
    _C("plan-through-walls", "<answer>down down down</answer>", -0.3, mode="plan", note="every move hits a wall"),
    _C(
        "plan-bump-then-solve",
        "<answer>down right right down left left</answer>",
        1.35,
        mode="plan",
        note="one blocked move, then the shortest path",
    ),
    _C("plan-partial", "<answer>right right down</answer>", 0.27, mode="plan", note="stops short of the goal"),
    _C("plan-oscillate", "<answer>right left right left</answer>", -0.04, mode="plan", note="back and forth"),
    _C("plan-wall-spam", "<answer>" + "up " * 20 + "</answer>", -1.0, mode="plan", note="20 blocked moves: floored"),
    _C(
        "plan-too-long",
        "<answer>" + "down " * 25 + "</answer>",
        -0.2,
        mode="plan",
        note="more than 4*rows*cols = 24 moves",
    ),
    _C("plan-empty", "", -0.2, mode="plan", note="empty text"),
    _C(
        "plan-two-answers",
        "<answer>right right down left left</answer><answer>up</answer>",
        -0.2,
        mode="plan",
        note="several answers",
    ),
    _C(
        "plan-in-think",
        "<think><answer>right right down left left</answer></think>",
        -0.2,
        mode="plan",
        note="plan only inside reasoning",
    ),
    _C(
        "plan-homoglyph",
        "<answer>right r\u0456ght down left left</answer>",
        -0.2,
        mode="plan",
        note="one homoglyph move poisons the plan",
    ),
    # ---- loops: several shortest paths all score the maximum
    _C("loop-plan-a", "<answer>right down</answer>", 1.18, mode="plan", maze="open2x2", note="first shortest path"),
    _C("loop-plan-b", "<answer>down right</answer>", 1.18, mode="plan", maze="open2x2", note="second shortest path"),
    _C("loop-step-right", "<answer>right</answer>", 0.09, maze="open2x2", note="either first move is optimal"),
    _C("loop-step-down", "<answer>down</answer>", 0.09, maze="open2x2", note="either first move is optimal"),
    _C(
        "loop-plan-around",
        "<answer>right down left up right down</answer>",
        0.78,
        mode="plan",
        maze="open2x2",
        note="solves at move 2, then 4 overshoot moves",
    ),
)


def run_audit(reward_fn: RewardFn | None = None, *, tolerance: float = 1e-6) -> AuditReport:
    """Run every :data:`AUDIT_CASES` row through ``reward_fn`` and collect disagreements.

    Args:
        reward_fn: ``fn(completion, maze, *, mode, agent) -> float``; default
            :func:`~hyperpod_rl.tasks.maze.reward.score_completion`.
        tolerance: Largest accepted absolute difference.

    Returns:
        An :class:`AuditReport`; exceptions raised by ``reward_fn`` and non-finite results are
        reported as disagreements, never re-raised.
    """
    fn = score_completion if reward_fn is None else reward_fn

    def score(case: AuditCase) -> Any:
        maze = AUDIT_MAZES[case.maze]
        return fn(case.completion, maze, mode=case.mode, agent=maze.start if case.agent is None else case.agent)

    return audit_table("maze", REWARD_VERSION, AUDIT_CASES, score, tolerance=tolerance)
