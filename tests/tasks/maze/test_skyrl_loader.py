"""The parquet rows load through SkyRL 0.3.0's own PromptDataset and drive MazeEnv.

``skyrl`` (the SkyRL 0.3.0 trainer) is in the dev extras, so these tests always run.
"""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def tokenizer():
    """A tiny word-level tokenizer with a chat template that renders image parts as <image>."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    words = ["[UNK]", "[PAD]", "<image>", "<|system|>", "<|user|>", "<|assistant|>", "up", "down", "left", "right"]
    core = Tokenizer(models.WordLevel(vocab={w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    tok = PreTrainedTokenizerFast(tokenizer_object=core, unk_token="[UNK]", pad_token="[PAD]")
    tok.chat_template = (
        "{% for m in messages %}<|{{ m.role }}|> {% for p in m.content %}"
        "{% if p.type == 'image_url' %}<image> {% else %}{{ p.text }} {% endif %}{% endfor %}{% endfor %}"
        "{% if add_generation_prompt %}<|assistant|>{% endif %}"
    )
    return tok


@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_prompt_dataset_loads_rows_and_env_runs(tmp_path: Path, tokenizer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))
    import skyrl_gym
    from skyrl.train.dataset.dataset import PromptDataset

    from hyperpod_rl.tasks.maze import ENV_CLASS, DatasetSpec, Maze, build_dataset, register_env, write_parquet

    rows = build_dataset(DatasetSpec(seed=3, counts={"train": 6}))["train"]
    path = tmp_path / "train.parquet"
    write_parquet(rows, path)
    dataset = PromptDataset(datasets=str(path), tokenizer=tokenizer, max_prompt_length=4096, num_workers=1)
    assert len(dataset) == len(rows)
    register_env()
    for i, row in enumerate(rows):
        messages, env_class, extras, _uid = dataset[i]
        assert env_class == ENV_CLASS
        assert extras["layout_hash"] == row["layout_hash"]
        # HF datasets unifies part structs: text parts come back with image_url=None ...
        assert messages[0]["content"][0].get("image_url", "absent") is None
        env = skyrl_gym.make(env_class, env_config=None, extras=extras)
        prompt, _ = env.init(messages)
        assert prompt == row["prompt"]  # ... and MazeEnv.init removes those keys again.
        for move in Maze.from_json(extras["maze"]).shortest_path():
            out = env.step(f"<answer>{move}</answer>")
        assert out["done"] and out["metadata"]["solved"]
