"""Dataset builder: splits, strata mix, determinism, parquet round trip and spec errors."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import skyrl_gym

from hyperpod_rl.errors import MazeError
from hyperpod_rl.tasks.maze import (
    ENV_CLASS,
    REWARD_VERSION,
    DatasetSpec,
    Maze,
    build_dataset,
    decode_image_part,
    read_rows,
    register_env,
    render_maze,
    write_parquet,
)

SMALL = {"seed": 7, "sizes": [(4, 4), (5, 5)], "counts": {"train": 40, "heldout": 12, "ood": 6}}


@pytest.fixture(scope="module")
def dataset() -> dict[str, list[dict]]:
    return build_dataset(DatasetSpec(**SMALL))


def test_splits_have_requested_counts_and_disjoint_hashes(dataset: dict[str, list[dict]]) -> None:
    assert {k: len(v) for k, v in dataset.items()} == {"train": 40, "heldout": 12, "ood": 6}
    hashes = {k: {r["layout_hash"] for r in v} for k, v in dataset.items()}
    assert all(len(hashes[k]) == len(dataset[k]) for k in dataset)
    assert not hashes["train"] & hashes["heldout"]
    assert not (hashes["train"] | hashes["heldout"]) & hashes["ood"]


def test_ood_is_larger_and_longer(dataset: dict[str, list[dict]]) -> None:
    longest_in = max(r["shortest_path_length"] for s in ("train", "heldout") for r in dataset[s])
    assert all(r["shortest_path_length"] > longest_in for r in dataset["ood"])
    assert all((r["rows"], r["cols"]) == (9, 9) for r in dataset["ood"])


def test_row_format(dataset: dict[str, list[dict]]) -> None:
    row = dataset["train"][0]
    assert row["env_class"] == ENV_CLASS
    assert row["data_source"] == "hyperpod_rl.maze/train"
    assert row["reward_version"] == REWARD_VERSION
    system, user = row["prompt"]
    assert system["role"] == "system" and user["role"] == "user"
    assert user["content"][0]["type"] == "image_url" and user["content"][1]["type"] == "text"
    maze = Maze.from_json(row["maze"])
    assert maze.layout_hash() == row["layout_hash"]
    assert maze.shortest_path_length == row["shortest_path_length"]
    assert decode_image_part(user["content"][0]).tobytes() == render_maze(maze).tobytes()
    assert row["stratum"].startswith(f"{row['rows']}x{row['cols']}|len")
    assert row["image_tokens"] == (16 if row["rows"] == 4 else 25)


def test_parquet_round_trip_and_env_from_row(dataset: dict[str, list[dict]], tmp_path: Path) -> None:
    sha = write_parquet(dataset["train"], tmp_path / "train.parquet")
    assert sha == hashlib.sha256((tmp_path / "train.parquet").read_bytes()).hexdigest()
    rows = read_rows(tmp_path / "train.parquet")
    assert rows == dataset["train"]  # parquet's None keys are stripped again
    register_env()
    row = rows[3]
    extras = {k: v for k, v in row.items() if k not in ("prompt", "env_class")}
    env = skyrl_gym.make(row["env_class"], env_config=None, extras=extras)
    prompt, _ = env.init(row["prompt"])
    assert prompt == row["prompt"]
    maze = Maze.from_json(row["maze"])
    for move in maze.shortest_path():
        out = env.step(f"<answer>{move}</answer>")
    assert out["done"] and out["metadata"]["solved"]


_BUILD_SCRIPT = (
    "import sys, hashlib; from hyperpod_rl.tasks.maze import DatasetSpec, build_dataset, write_parquet\n"
    "ds = build_dataset(DatasetSpec(seed=7, sizes=[(4, 4), (5, 5)], counts={'train': 40, 'heldout': 12, 'ood': 6}))\n"
    "print(write_parquet(ds['train'], sys.argv[1]))\n"
    "print(hashlib.sha256(''.join(r['layout_hash'] for s in ds.values() for r in s).encode()).hexdigest())\n"
)


def test_same_seed_same_hashes_and_png_bytes_across_processes(dataset: dict[str, list[dict]], tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[3]
    out = subprocess.run(
        [sys.executable, "-c", _BUILD_SCRIPT, str(tmp_path / "other.parquet")],
        capture_output=True,
        text=True,
        check=True,
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": ""},
    ).stdout.split()
    here = write_parquet(dataset["train"], tmp_path / "here.parquet")
    hashes = hashlib.sha256("".join(r["layout_hash"] for s in dataset.values() for r in s).encode()).hexdigest()
    assert out == [here, hashes]  # file sha covers the base64 PNG bytes in every prompt


def test_different_seed_gives_different_layouts(dataset: dict[str, list[dict]]) -> None:
    other = build_dataset(DatasetSpec(**{**SMALL, "seed": 8, "counts": {"train": 40}}))
    assert {r["layout_hash"] for r in other["train"]} != {r["layout_hash"] for r in dataset["train"]}


def test_mix_is_respected() -> None:
    spec = DatasetSpec(seed=1, sizes=[(5, 5)], counts={"train": 30}, mix={"len1-3": 1, "len4-7": 1, "len8-15": 1})
    counts = Counter(r["stratum"].split("|")[1] for r in build_dataset(spec)["train"])
    assert counts == {"len1-3": 10, "len4-7": 10, "len8-15": 10}


def test_not_enough_unique_layouts_raises() -> None:
    """The shortfall is said in rows (a fresh user saw a raw ``{'<any>': 95667}``)."""
    with pytest.raises(MazeError, match=r"counts\.train=100 cannot be filled with unique layouts.*still missing \d+ rows\. Change sizes"):
        build_dataset(DatasetSpec(sizes=[(2, 2)], counts={"train": 100}))


def test_a_shortfall_is_said_in_rows_per_stratum() -> None:
    from hyperpod_rl.tasks.dataset import shortfall

    assert shortfall({"": 95667}) == "95,667 rows"
    assert shortfall({"len1-3": 12, "len4-7": 0, "len8-15": 3}) == "12 rows of 'len1-3', 3 of 'len8-15'"
    assert shortfall({"len1-3": 2, "": 4}) == "2 rows of 'len1-3', 4 of any stratum"


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"max_turns": 0}, r"DatasetSpec\.max_turns: must be >= 1"),
        ({"sizes": [(1, 5)]}, r"DatasetSpec\.sizes: .*out of range"),
        ({"counts": {"test": 3}}, r"DatasetSpec\.counts: .*unknown split"),
        ({"counts": {"train": 0}}, r"DatasetSpec\.counts: .*at least one split"),
        ({"algorithms": {"eller": 1.0}}, r"DatasetSpec\.algorithms: .*unknown algorithm"),
        ({"braid": -0.1}, r"DatasetSpec\.braid"),
        ({"min_path_length": 30, "sizes": [(3, 3)]}, r"min_path_length=30 exceeds the longest possible path \(8\)"),
        ({"max_image_tokens": 4, "sizes": [(20, 20)]}, r"max_image_tokens=4 is too small"),
        ({"mode": "chat"}, r"DatasetSpec\.mode"),
    ],
)
def test_spec_errors_name_the_field(kwargs: dict, match: str) -> None:
    with pytest.raises(MazeError, match=match):
        DatasetSpec(**kwargs)


def test_mix_by_size_and_combined_keys() -> None:
    spec = DatasetSpec(seed=2, sizes=[(4, 4), (6, 6)], counts={"train": 20}, mix={"4x4": 1, "6x6|len8-15": 1})
    rows = build_dataset(spec)["train"]
    small = [r for r in rows if r["rows"] == 4]
    large = [r for r in rows if r["rows"] == 6]
    assert len(small) == 10 and len(large) == 10
    assert all("|len8-15|" in r["stratum"] for r in large)


def test_image_token_cap_shrinks_cells_and_env_uses_the_row_style() -> None:
    spec = DatasetSpec(seed=4, sizes=[(15, 15)], counts={"train": 2}, max_image_tokens=100)
    row = build_dataset(spec)["train"][0]
    assert row["image_tokens"] <= 100
    register_env()
    extras = {k: v for k, v in row.items() if k not in ("prompt", "env_class")}
    env = skyrl_gym.make(ENV_CLASS, env_config=None, extras=extras)
    maze = Maze.from_json(row["maze"])
    first = decode_image_part(row["prompt"][1]["content"][0])
    move = next(iter(maze.optimal_moves(maze.start)))
    later = decode_image_part(env.step(f"<answer>{move}</answer>")["observations"][0]["content"][0])
    assert first.size == later.size and (first.width // 32) * (first.height // 32) == row["image_tokens"]


def test_text_observation_rows_have_no_image() -> None:
    row = build_dataset(DatasetSpec(seed=5, counts={"train": 1}, observation="text", mode="plan"))["train"][0]
    parts = row["prompt"][1]["content"]
    assert [p["type"] for p in parts] == ["text"]
    assert Maze.from_json(row["maze"]).to_text() in parts[0]["text"]
    assert row["image_tokens"] == 0 and row["max_turns"] == 1 and row["mode"] == "plan"
