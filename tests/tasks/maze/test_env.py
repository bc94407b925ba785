"""MazeEnv through skyrl_gym.make: stepping, blocking, termination, plan mode, metrics."""

from __future__ import annotations

import pytest
import skyrl_gym

from hyperpod_rl.errors import MazeError
from hyperpod_rl.tasks.maze import (
    ENV_CLASS,
    REWARD_VERSION,
    Maze,
    MazeEnv,
    build_prompt,
    decode_image_part,
    generate_maze,
    max_return,
    register_env,
    render_maze,
)
from hyperpod_rl.tasks.maze.reward import BLOCKED_PENALTY, FORMAT_PENALTY


def _make(maze: Maze, **extras: object) -> MazeEnv:
    register_env()
    env = skyrl_gym.make(ENV_CLASS, env_config=None, extras={"maze": maze.to_json(), **extras})
    assert isinstance(env, MazeEnv)
    return env


def test_register_env_is_idempotent() -> None:
    register_env()
    register_env()
    assert skyrl_gym.registry[ENV_CLASS].entry_point == "hyperpod_rl.tasks.maze.env:MazeEnv"


def test_optimal_episode_reaches_goal_and_scores_max(corridor: Maze) -> None:
    env = _make(corridor, max_turns=10)
    prompt, info = env.init(build_prompt(corridor))
    assert info["reward_version"] == REWARD_VERSION
    assert prompt[1]["content"][0]["type"] == "image_url"
    total, path = 0.0, corridor.shortest_path()
    for i, move in enumerate(path):
        out = env.step(f"thinking... <answer>{move}</answer>")
        total += out["reward"]
        meta = out["metadata"]
        assert meta["move"] == move and meta["optimal"] and not meta["blocked"] and not meta["invalid"]
        assert meta["distance_after"] == meta["distance_before"] - 1
        if i < len(path) - 1:
            assert not out["done"]
            image = decode_image_part(out["observations"][0]["content"][0])
            assert image.tobytes() == render_maze(corridor, tuple(meta["agent"])).tobytes()
            assert out["observations"][0]["role"] == "user"
            assert out["observations"][0]["content"][1]["type"] == "text"
    assert out["done"] and out["metadata"]["solved"] and out["observations"] == []
    assert total == pytest.approx(max_return(corridor))
    metrics = env.get_metrics()
    assert metrics["solved"] == 1.0 and metrics["optimal_move_rate"] == 1.0
    assert metrics["steps_over_optimal"] == 0.0


def test_blocked_and_invalid_moves_keep_the_agent(corridor: Maze) -> None:
    env = _make(corridor, max_turns=3)
    env.init([])
    out = env.step("<answer>down</answer>")
    assert out["metadata"]["blocked"] and out["metadata"]["agent"] == [0, 0]
    assert out["reward"] == pytest.approx(-BLOCKED_PENALTY) and not out["done"]
    assert "wall" in out["observations"][0]["content"][1]["text"]
    out = env.step("<answer>down<|image_pad|></answer>")
    assert out["metadata"]["invalid"] and out["metadata"]["violation"] == "vision_token"
    assert out["metadata"]["move"] is None and out["metadata"]["agent"] == [0, 0]
    assert out["reward"] == pytest.approx(-FORMAT_PENALTY)
    out = env.step("<answer>right</answer>")
    assert out["done"] and not out["metadata"]["solved"]  # turn limit
    metrics = env.get_metrics()
    assert metrics["invalid_move_rate"] == pytest.approx(1 / 3)
    assert metrics["optimal_move_rate"] == pytest.approx(1 / 3)
    assert "steps_over_optimal" not in metrics


def test_plan_mode_is_one_turn(corridor: Maze) -> None:
    env = _make(corridor, mode="plan")
    out = env.step("<answer>right right down left left</answer>")
    assert out["done"] and out["metadata"]["solved"]
    assert out["reward"] == pytest.approx(max_return(corridor))
    env2 = _make(corridor, mode="plan")
    out2 = env2.step("<answer>down right right down left left left</answer>")
    assert out2["done"] and out2["metadata"]["solved"] and out2["metadata"]["overshoot"] == 1
    assert out2["reward"] < out["reward"]
    assert env2.get_metrics()["steps_over_optimal"] == 2.0


def test_aggregate_metrics() -> None:
    maze = generate_maze(5, 5, seed=1)
    solved = _make(maze)
    for move in maze.shortest_path():
        solved.step(f"<answer>{move}</answer>")
    failed = _make(maze, max_turns=1)
    failed.step("no answer")
    agg = MazeEnv.aggregate_metrics([solved.get_metrics(), failed.get_metrics()])
    assert agg["solve_rate"] == 0.5
    assert agg["invalid_move_rate"] == 0.5
    assert agg["optimal_move_rate"] == 0.5
    assert agg["steps_over_optimal"] == 0.0
    assert MazeEnv.aggregate_metrics([]) == {}


@pytest.mark.parametrize(
    ("extras", "match"),
    [
        ({}, r"extras\['maze'\] is required"),
        ({"max_turns": 0}, r"max_turns=0 must be an int >= 1 \(zero turns"),
        ({"mode": "chat"}, r"mode='chat' is not supported"),
        ({"observation": "audio"}, r"observation='audio'"),
        ({"render_style": {"cell_px": 2}}, r"invalid render_style:\n  render_style.cell_px: must be >= 8"),
    ],
)
def test_bad_settings_name_the_field(corridor: Maze, extras: dict, match: str) -> None:
    full = {"maze": corridor.to_json(), **extras} if extras else {}
    with pytest.raises(MazeError, match=match):
        MazeEnv(env_config=None, extras=full)


def test_env_config_supplies_defaults(corridor: Maze) -> None:
    env = MazeEnv(env_config={"max_turns": 7, "observation": "both"}, extras={"maze": corridor.to_json()})
    assert env.max_turns == 7
    out = env.step("<answer>right</answer>")
    parts = out["observations"][0]["content"]
    assert parts[0]["type"] == "image_url"
    assert corridor.to_text((0, 1)) in parts[1]["text"]


def test_terse_prompt_style_keeps_the_image_and_drops_the_instructions():
    import skyrl_gym

    from hyperpod_rl.tasks.maze import ENV_CLASS, DatasetSpec, build_dataset, register_env
    from hyperpod_rl.tasks.maze.messages import TERSE_TEXT

    rows = build_dataset(DatasetSpec(seed=1, sizes=((3, 3),), counts={"train": 4, "heldout": 2}, max_turns=3, prompt_style="terse"))[
        "train"
    ]
    prompt = rows[0]["prompt"]
    assert [m["role"] for m in prompt] == ["user"]
    kinds = [p["type"] for p in prompt[0]["content"]]
    assert kinds == ["image_url", "text"] and prompt[0]["content"][1]["text"] == TERSE_TEXT["start"]
    register_env()
    env = skyrl_gym.make(ENV_CLASS, env_config={}, extras=rows[0])
    env.init(prompt)
    out = env.step("<answer>up</answer>")
    if not out["done"]:
        text = [p["text"] for p in out["observations"][0]["content"] if p["type"] == "text"]
        assert text[0] in (TERSE_TEXT["moved"], TERSE_TEXT["blocked"])
    with pytest.raises(MazeError, match="prompt_style"):
        skyrl_gym.make(ENV_CLASS, env_config={}, extras={**rows[0], "prompt_style": "chatty"})
