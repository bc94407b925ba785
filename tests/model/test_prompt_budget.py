"""Issue 14 item 3: prompt budgets count image tokens (config check, real-length filter, both backends)."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from hyperpod_rl.config.run import RunConfig
from hyperpod_rl.errors import ConfigError
from hyperpod_rl.model.loading import load_processor
from hyperpod_rl.model.prompts import filter_rows, prompt_token_count
from hyperpod_rl.tasks.maze import read_rows


def _data(tiny_setup):
    d = tiny_setup["data"]
    return {"train_path": str(d.train), "heldout_path": str(d.heldout), "prompts_per_step": 2}


@pytest.mark.parametrize("backend", ["reference", "skyrl"])
def test_budget_below_the_image_tokens_is_a_config_error_with_the_numbers(tiny_setup, backend):
    counts = [r["image_tokens"] for r in read_rows(tiny_setup["data"].train)]
    assert (min(counts), max(counts)) == (9, 25)  # the mazes: 9-25 tokens per image
    data = {"run_id": "budget", "backend": backend, "data": _data(tiny_setup), "rollout": {"max_prompt_tokens": 8}}
    if backend == "skyrl":
        data["model"] = {"path": "/fsx/models/Qwen3-VL-8B-Instruct"}
        data["rollout"]["action_constraint"] = "none"
    with pytest.raises(ConfigError, match=r"rollout.max_prompt_tokens=8 is below the image tokens .* \(9-25 tokens per prompt image"):
        RunConfig.build(data)
    data["rollout"]["max_prompt_tokens"] = 25
    try:
        RunConfig.build(data)
    except ConfigError as err:  # other SkyRL rules may object; the budget must not
        assert "max_prompt_tokens" not in str(err)


def test_filter_counts_text_and_image_tokens(tiny_setup):
    processor = load_processor(tiny_setup["model_dir"])
    rows = read_rows(tiny_setup["data"].train)
    lengths = [prompt_token_count(processor, r["prompt"]) for r in rows]
    text_only = [len(processor.tokenizer.apply_chat_template(r["prompt"], add_generation_prompt=True, tokenize=True)) for r in rows]
    assert all(n > t for n, t in zip(lengths, text_only, strict=True))  # the image expands to its tokens
    assert all(n >= r["image_tokens"] for n, r in zip(lengths, rows, strict=True))
    limit = sorted(lengths)[len(lengths) // 2]
    result = filter_rows(rows, processor, limit, what="train")
    assert result.dropped == [i for i, n in enumerate(lengths) if n > limit] and result.dropped
    assert result.kept == [i for i, n in enumerate(lengths) if n <= limit]
    assert f"dropped {len(result.dropped)} of {len(rows)} rows" in result.summary("train")
    with pytest.raises(ConfigError, match=rf"below every train prompt: the shortest is {min(lengths)} tokens"):
        filter_rows(rows, processor, min(lengths) - 1, what="train")


def test_skyrl_sees_only_rows_that_fit(tiny_setup, tmp_path):
    """SkyRL's own length filter counts template text only and keeps every row; ours drops the long ones."""
    from skyrl.train.dataset import PromptDataset

    from hyperpod_rl.train.skyrl_backend import filter_datasets

    processor = load_processor(tiny_setup["model_dir"])
    rows = read_rows(tiny_setup["data"].train)
    lengths = [prompt_token_count(processor, r["prompt"]) for r in rows]
    limit = max(lengths) - 1  # every row fits SkyRL's text-only count; some real prompts do not
    skyrl_kept = PromptDataset(
        datasets=[str(tiny_setup["data"].train)], tokenizer=processor.tokenizer, max_prompt_length=limit, num_workers=1
    )
    assert len(skyrl_kept) == len(rows)  # the issue: SkyRL keeps rows whose real prompts exceed the limit

    cfg = RunConfig.build(
        {
            "run_id": "budget-sky",
            "backend": "skyrl",
            "model": {"path": str(tiny_setup["model_dir"])},
            "rollout": {"max_prompt_tokens": limit, "action_constraint": "none"},
            "data": _data(tiny_setup),
            "lora": {"rank": 16},
            "trainer": {"micro_batch_size": 2},
            "grpo": {"group_size": 2},
        }
    )
    paths = filter_datasets(cfg, tmp_path, processor)
    too_long = sum(n > limit for n in lengths)
    kept = pq.read_table(paths["train"])
    assert kept.num_rows == len(rows) - too_long > 0
    assert kept.column("layout_hash").to_pylist() == [r["layout_hash"] for r, n in zip(rows, lengths, strict=True) if n <= limit]
    report = json.loads((tmp_path / "skyrl-data" / "prompt_filter.json").read_text())
    assert report["train"] == {"limit": limit, "kept": len(rows) - too_long, "dropped": too_long}
    sky = PromptDataset(datasets=[paths["train"]], tokenizer=processor.tokenizer, max_prompt_length=limit, num_workers=1)
    assert len(sky) == kept.num_rows
