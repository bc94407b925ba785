"""The colocated vLLM rollout engine's CPU-testable parts (``rollout.engine``).

vLLM itself needs a CUDA GPU (``benchmarks/gpu/grpo_e2e.py --engine vllm`` runs it on an H200);
here: which engine a run picks, the sampling settings every request carries, the conversion of
vLLM's completion outputs into actions, the trainer's log-probs not depending on which engine
sampled, and the truncated importance weights and gap of :func:`hyperpod_rl.train.grpo.engine_gap`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest
import torch
from PIL import Image

from hyperpod_rl.config.run import RunConfig
from hyperpod_rl.errors import ConfigError
from hyperpod_rl.model.lora import wrap_lora
from hyperpod_rl.model.policy import MazePolicy, messages_to_template, split_images
from hyperpod_rl.model.tiny import VISION_SPECIAL_TOKENS, build_tiny_qwen3vl
from hyperpod_rl.model.vllm_engine import VLLMEngine, choose_engine, sampling_kwargs, save_adapter_for_engine, to_action
from hyperpod_rl.tasks.maze import generate_maze, image_part
from hyperpod_rl.train.grpo import engine_gap

CPU, GPU = torch.device("cpu"), torch.device("cuda", 0)


@pytest.mark.parametrize(
    ("requested", "device", "constraint", "found", "engine"),
    [
        ("auto", CPU, "none", True, "hf"),
        ("auto", GPU, "none", True, "vllm"),
        ("auto", GPU, "none", False, "hf"),
        ("auto", GPU, "directions", True, "hf"),
        ("hf", GPU, "none", True, "hf"),
        ("vllm", GPU, "none", True, "vllm"),
    ],
)
def test_engine_selection(requested, device, constraint, found, engine):
    choice = choose_engine(requested, device=device, action_constraint=constraint, vllm_found=found)
    assert choice.engine == engine
    if requested == "auto" and engine == "hf":
        assert "because" in choice.reason  # the job log says why vLLM was not used


@pytest.mark.parametrize(
    ("device", "constraint", "found", "says"),
    [(CPU, "none", True, "CUDA GPU"), (GPU, "none", False, "not installed"), (GPU, "directions", True, "action_constraint")],
)
def test_vllm_where_it_cannot_run_is_a_config_error_with_the_fix(device, constraint, found, says):
    with pytest.raises(ConfigError, match=says) as err:
        choose_engine("vllm", device=device, action_constraint=constraint, vllm_found=found)
    assert "rollout.engine=auto" in str(err.value)


def test_the_cpu_machine_picks_hf_for_auto():
    assert choose_engine("auto", device=CPU, action_constraint="none").engine == "hf"


def test_config_refuses_engine_knobs_where_they_do_nothing():
    base = {"run_id": "engine-cfg", "data": {"train_path": "/d/t.parquet", "heldout_path": "/d/h.parquet"}}
    with pytest.raises(ConfigError, match="action_constraint='none'"):
        RunConfig.build(base | {"rollout": {"engine": "vllm", "action_constraint": "directions"}})
    cfg = RunConfig.build(base | {"rollout": {"engine": "vllm", "action_constraint": "none"}})
    assert cfg.rollout.engine == "vllm" and cfg.grpo.is_correction == "token_truncate" and cfg.grpo.is_cap == 2.0
    with pytest.raises(ConfigError, match="rollout.engine='hf' runs no vLLM engine"):
        RunConfig.build(base | {"rollout": {"engine": "hf", "engine_sleep": False}})
    with pytest.raises(ConfigError, match="SkyRL's colocated engines always sleep"):
        RunConfig.build(base | {"backend": "skyrl", "model": {"path": "Qwen/Qwen3-VL-2B-Instruct"}, "rollout": {"engine_sleep": False}})
    awake = RunConfig.build(base | {"rollout": {"engine": "vllm", "action_constraint": "none", "engine_sleep": False}})
    assert awake.rollout.engine_sleep is False


class _NoSleepLLM:
    def sleep(self, level: int) -> None:
        raise AssertionError("an engine created without sleep mode was put to sleep")

    wake_up = sleep


def test_an_engine_without_sleep_mode_never_sleeps_or_wakes():
    engine = VLLMEngine(llm=_NoSleepLLM(), processor=None, max_new_tokens=5, sync_dir=None, eos_id=0, bad_words=[], lora_rank=8)
    engine.sleep_mode = False
    engine.sleep()
    engine.wake()
    assert engine.sleeping is False and engine.timings["sleep_s"] == engine.timings["wake_s"] == 0.0


def test_every_request_sets_sampling_from_the_run_config_alone():
    kw = sampling_kwargs(greedy=False, temperature=0.7, max_tokens=64, stop_token_id=7, seed=3, bad_words=["<|image_pad|>"])
    # the settings a generation_config.json could otherwise fill (vLLM get_diff_sampling_param) are all explicit
    assert {k: kw[k] for k in ("temperature", "top_p", "top_k", "min_p", "repetition_penalty")} == {
        "temperature": 0.7,
        "top_p": 1.0,
        "top_k": 0,
        "min_p": 0.0,
        "repetition_penalty": 1.0,
    }
    assert kw["stop_token_ids"] == [7] and kw["logprobs"] == 0 and kw["bad_words"] == ["<|image_pad|>"] and kw["seed"] == 3
    assert sampling_kwargs(greedy=True, temperature=0.7, max_tokens=1, stop_token_id=7, seed=None, bad_words=[])["temperature"] == 0.0


@dataclass
class _Logprob:  # vllm.logprobs.Logprob's shape
    logprob: float
    rank: int | None = None
    decoded_token: str | None = None


def test_completion_output_becomes_an_action_ending_at_end_of_turn():
    ids = [11, 12, 99, 13]  # 99 = end of turn, then a token vLLM would never return after a stop (kept out anyway)
    lps = [{11: _Logprob(-0.5)}, {12: _Logprob(-1.25), 4: _Logprob(-0.1)}, {99: _Logprob(-0.01)}, {13: _Logprob(-2.0)}]
    action = to_action(ids, lps, "ab<|im_end|>", eos_id=99)
    assert action.response_ids == [11, 12, 99] and action.loss_mask == [True] * 3
    assert action.token_logprobs == [-0.5, -1.25, -0.01] and math.isclose(action.logprob, -1.76)
    assert action.text == "ab"
    with pytest.raises(ValueError, match="lack the sampled token"):
        to_action([11, 12], [{11: _Logprob(-0.5)}, {5: _Logprob(-1.0)}], "", eos_id=99)
    with pytest.raises(ValueError, match="log-prob positions"):
        to_action([11, 12], [{11: _Logprob(-0.5)}], "", eos_id=99)


def _prompt(seed: int):
    maze = generate_maze(3, 3, seed=seed)
    return [
        {"role": "system", "content": "You solve mazes."},
        {"role": "user", "content": [image_part(maze, maze.start), {"type": "text", "text": "Move."}]},
    ]


@pytest.fixture(scope="module")
def policy():
    model, proc = build_tiny_qwen3vl(seed=0)
    cfg = RunConfig.build({"run_id": "engine-test", "data": {"train_path": "/d/t.parquet", "heldout_path": "/d/h.parquet"}})
    model, _ = wrap_lora(model, cfg.lora)
    model.eval()
    return MazePolicy(model, proc, action_constraint="none", max_new_tokens=5, decode="eager")


def test_requests_carry_the_trainers_template_and_the_image(policy):
    engine = VLLMEngine(
        llm=None, processor=policy.processor, max_new_tokens=5, sync_dir=None, eos_id=policy.eos_id, bad_words=[], lora_rank=16
    )
    prompts = [_prompt(1), _prompt(2)]
    reqs = engine.requests(prompts)
    assert [r["prompt"].count("<|image_pad|>") for r in reqs] == [1, 1]  # one placeholder each, vLLM expands it
    assert all(isinstance(r["multi_modal_data"]["image"], Image.Image) for r in reqs)
    enc = policy._encode_prompt(prompts[0])
    # the same text the trainer tokenizes, so prompt ids match once the placeholder is expanded
    text = policy.processor.apply_chat_template(
        [
            {"role": "system", "content": "You solve mazes."},
            {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Move."}]},
        ],
        add_generation_prompt=True,
        tokenize=False,
    )
    assert reqs[0]["prompt"] == text and int(enc["input_ids"].shape[1]) > len(policy.tokenizer(text)["input_ids"])


def test_split_images_decodes_a_shared_observation_once_and_matches_the_policys_split(monkeypatch):
    import hyperpod_rl.model.policy as pol

    calls = []
    real = pol.decode_image_part
    monkeypatch.setattr(pol, "decode_image_part", lambda part: calls.append(1) or real(part))
    group = [_prompt(1)] * 8 + [_prompt(2)] * 8  # two groups of 8 episodes, one first observation each
    decoded: dict = {}
    splits = [split_images(p, decoded) for p in group]
    assert len(calls) == 2 and len(decoded) == 2
    for prompt, (tmpl, images) in zip(group, splits, strict=True):
        want_tmpl, want_images, _ = messages_to_template(prompt)
        assert tmpl == want_tmpl
        assert [im.tobytes() for im in images] == [im.tobytes() for im in want_images]
    assert splits[0][1][0] is splits[7][1][0] and splits[0][1][0] is not splits[8][1][0]


def test_the_engine_adapter_file_is_peft_s_own_in_bf16(policy, tmp_path):
    from safetensors.torch import load_file

    with torch.no_grad():  # non-zero B factors, so the comparison sees real values
        for name, p in policy.model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.02, generator=torch.Generator().manual_seed(len(name)))
    policy.model.save_pretrained(str(tmp_path / "peft"), save_embedding_layers=False)
    written = save_adapter_for_engine(policy.model, tmp_path / "engine")
    ref = load_file(str(tmp_path / "peft" / "adapter_model.safetensors"))
    got = load_file(str(tmp_path / "engine" / "adapter_model.safetensors"))
    assert sorted(got) == sorted(ref) and written == sum(t.numel() * 2 for t in got.values())
    assert all(got[k].dtype == torch.bfloat16 and torch.equal(got[k], ref[k].to(torch.bfloat16)) for k in ref)
    assert (tmp_path / "engine" / "adapter_config.json").read_text() == (tmp_path / "peft" / "adapter_config.json").read_text()
    # a later sync rewrites the tensors only, and leaves no temporary file behind
    (tmp_path / "engine" / "adapter_config.json").write_text("{}")
    save_adapter_for_engine(policy.model, tmp_path / "engine", write_config=False)
    assert (tmp_path / "engine" / "adapter_config.json").read_text() == "{}"
    assert not list((tmp_path / "engine").glob("*.tmp"))


def test_trainer_logprobs_do_not_depend_on_the_engine_that_sampled(policy):
    torch.manual_seed(0)
    prompts = [_prompt(1), _prompt(2), _prompt(3)]
    hf_actions = policy.act(prompts, temperature=1.0)
    # the same tokens as a vLLM completion would return them, with the engine's own (different) log-probs
    vllm_actions = [
        to_action(a.response_ids, [{t: _Logprob(-1.0)} for t in a.response_ids], a.text, eos_id=policy.eos_id) for a in hf_actions
    ]

    def scored(actions):
        with torch.no_grad():
            return policy.score(prompts, [a.response_ids for a in actions], [a.loss_mask for a in actions], [[i] for i in range(3)])

    a, b = scored(hf_actions), scored(vllm_actions)
    assert torch.equal(a.logprobs, b.logprobs) and torch.equal(a.loss_mask, b.loss_mask)
    # and the transformers engine's own per-token log-probs are the trainer's (gap ~0)
    for k, action in enumerate(hf_actions):
        assert action.token_logprobs == pytest.approx(a.logprobs[k][a.loss_mask[k]].tolist(), abs=1e-5)
    assert not any(t in VISION_SPECIAL_TOKENS for a_ in hf_actions for t in policy.tokenizer.convert_ids_to_tokens(a_.response_ids))


def test_engine_gap_weights_truncate_and_report():
    mask = torch.tensor([[True, True, False], [True, False, False]])
    trainer = torch.tensor([[-1.0, -0.5, 0.0], [-0.2, 0.0, 0.0]])
    engine = torch.tensor([[-1.0, -2.0, -9.0], [-0.1, -9.0, -9.0]])  # token 2 much likelier under the trainer
    gap = engine_gap(trainer, engine, mask, cap=2.0)
    assert gap.tokens == 3 and gap.truncated == 1
    assert gap.weights[0, 0] == 1.0 and gap.weights[0, 1] == 2.0 and math.isclose(float(gap.weights[1, 0]), math.exp(-0.1), rel_tol=1e-6)
    assert float(gap.weights[0, 2]) == 0.0  # outside the mask
    assert math.isclose(gap.gap_sum, 0.0 + 1.5 + 0.1, rel_tol=1e-6) and math.isclose(gap.gap_max, 1.5)
