"""The planner applied to run configs: presets fit, an oversized micro batch is flagged."""

import pytest

from hyperpod_rl.config.run import RunConfig
from hyperpod_rl.errors import ConfigError
from hyperpod_rl.run_plan import PROMPT_TEXT_TOKENS, REPLY_TEXT_TOKENS, fit_warnings, plan_input_for, plan_run

DATA = {"train_path": "t.parquet", "heldout_path": "h.parquet"}


@pytest.mark.parametrize("name", [n for n in RunConfig.presets() if RunConfig.from_preset(n).stage == "grpo"])
def test_presets_fit_an_h200(name):
    config = RunConfig.from_preset(name, run_id="plan-check", data=DATA)
    result = plan_run(config, gpu="H200")
    assert result.fits, result.verdicts
    assert fit_warnings(config) == []


def test_oversized_micro_batch_gets_a_planner_warning():
    data = {**DATA, "prompts_per_step": 64}
    config = RunConfig.from_preset(
        "single-gpu", run_id="plan-check", data=data, **{"trainer.micro_batch_size": 512, "trainer.mini_batch_size": 64}
    )
    warnings = fit_warnings(config)
    assert warnings and any("trainer.micro_batch_size=512" in w for w in warnings), warnings


def test_sft_stages_are_not_planned_as_grpo_runs():
    """An SFT stage has no rollouts: planning it as a GRPO run sized a vLLM engine it never starts. It is refused with the
    fix, and submit_run's fit check skips it."""
    config = RunConfig.from_preset("hyperpod-6gpu-sft", run_id="plan-check", data=DATA)
    with pytest.raises(ConfigError, match=r"stage='sft': the planner sizes GRPO runs"):
        plan_input_for(config)
    assert fit_warnings(config) == []


def test_reference_runs_are_not_planned():
    config = RunConfig.build({"run_id": "plan-check", "data": DATA})
    assert fit_warnings(config) == []


def test_the_sequence_is_sized_from_the_task_and_the_prompt_budget():
    """Reported: one image per episode and the whole max_prompt_tokens budget (2,048) as prompt text: 3,014 tokens.
    A multi-turn maze episode shows one image per turn; a single-turn task one image and no environment reply."""
    maze = plan_input_for(RunConfig.from_preset("single-gpu", run_id="plan-check", data=DATA))
    assert (maze.turns, maze.images_per_prompt, maze.max_prompt_tokens) == (6, 6, PROMPT_TEXT_TOKENS)
    assert maze.max_response_tokens == 128 + REPLY_TEXT_TOKENS and maze.seq_len == 2404
    single = plan_input_for(RunConfig.from_preset("single-gpu", run_id="plan-check", data=DATA, task={"name": "doc_read"}))
    assert (single.turns, single.images_per_prompt, single.max_response_tokens) == (1, 1, 128)
    # the prompt (text + first image) never exceeds rollout.max_prompt_tokens, which counts both
    tight = plan_input_for(RunConfig.from_preset("single-gpu", run_id="plan-check", data=DATA, **{"rollout.max_prompt_tokens": 300}))
    assert tight.max_prompt_tokens + tight.image_tokens_per_image + 2 == 300
