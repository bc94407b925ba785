"""The device-aware paths of the reference backend, run on the CPU (CI has no GPU).

The same code runs on one CUDA GPU (``benchmarks/gpu/grpo_e2e.py`` runs it on an H200):
device and dtype resolution, batched free generation with the KV cache, loading a Hugging Face
Qwen3-VL checkpoint directory and its Hub revision, and the GPU a Ray job reserves.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest
import torch

from hyperpod_rl.config.run import RunConfig
from hyperpod_rl.errors import ConfigError
from hyperpod_rl.jobs import entrypoint_gpus
from hyperpod_rl.model.loading import hub_revision, load_base_model, resolve_device, revision_of
from hyperpod_rl.model.policy import MazePolicy
from hyperpod_rl.model.tiny import VISION_SPECIAL_TOKENS, build_tiny_qwen3vl, directory_revision
from hyperpod_rl.tasks.maze import generate_maze, image_part

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def _prompt(seed: int, side: int = 3):
    maze = generate_maze(side, side, seed=seed)
    return [
        {"role": "system", "content": "You solve mazes."},
        {"role": "user", "content": [image_part(maze, maze.start), {"type": "text", "text": "Move" + "." * seed}]},
    ]


def save_hf_layout(root: Path) -> Path:
    """The tiny model saved in a Hugging Face Qwen3-VL checkpoint's layout (no hyperpod-rl marker).

    Files as in Qwen/Qwen3-VL-2B-Instruct: config.json, generation_config.json, safetensors
    weights, tokenizer files, chat template, preprocessor_config.json (Qwen2VLImageProcessorFast)
    and video_preprocessor_config.json.
    """
    model, proc = build_tiny_qwen3vl(seed=0)
    root.mkdir(parents=True)
    model.save_pretrained(root)
    proc.tokenizer.save_pretrained(root)
    (root / "chat_template.json").write_text(json.dumps({"chat_template": proc.tokenizer.chat_template}))
    pre = {
        "image_processor_type": "Qwen2VLImageProcessorFast",
        "processor_class": "Qwen3VLProcessor",
        "patch_size": 16,
        "merge_size": 2,
        "temporal_patch_size": 2,
        "size": {"shortest_edge": 1024, "longest_edge": 262144},
        "image_mean": [0.5, 0.5, 0.5],
        "image_std": [0.5, 0.5, 0.5],
    }
    (root / "preprocessor_config.json").write_text(json.dumps(pre))
    video = {k: v for k, v in pre.items() if k != "image_processor_type"} | {"video_processor_type": "Qwen3VLVideoProcessor"}
    (root / "video_preprocessor_config.json").write_text(json.dumps(video))
    return root


def test_cpu_device_and_dtype():
    assert resolve_device("cpu", "auto") == (torch.device("cpu"), torch.float32)
    if not torch.cuda.is_available():
        assert resolve_device("auto", "auto") == (torch.device("cpu"), torch.float32)
        with pytest.raises(ConfigError, match="torch sees no CUDA GPU"):
            resolve_device("cuda", "auto")


def test_reference_job_reserves_a_gpu_only_for_cuda(tiny_setup):
    data = {"train_path": "/d/train.parquet", "heldout_path": "/d/heldout.parquet"}
    cuda = RunConfig.build({"run_id": "gpu-run", "data": data, "trainer": {"device": "cuda"}})
    auto = RunConfig.build({"run_id": "cpu-run", "data": data})
    assert (entrypoint_gpus(cuda), entrypoint_gpus(auto)) == (1, 0)
    assert cuda.config_hash() != auto.config_hash()
    skyrl = RunConfig.from_preset("single-gpu", run_id="skyrl-run", trainer={"device": "cuda"})
    assert entrypoint_gpus(skyrl) == 0  # SkyRL's workers reserve their own GPUs
    from ray.job_submission import JobSubmissionClient

    assert "entrypoint_num_gpus" in inspect.signature(JobSubmissionClient.submit_job).parameters


def test_batched_free_generation_matches_scoring_and_suppresses_vision_tokens(tiny_setup):
    model, processor, _ = load_base_model(tiny_setup["model_dir"])
    policy = MazePolicy(model, processor, action_constraint="none", max_new_tokens=8)
    prompts = [_prompt(s, side=3 + s % 2) for s in range(4)]  # images of two sizes, prompts of four lengths
    torch.manual_seed(0)
    actions = policy.act(prompts, temperature=1.3)
    vision_ids = {processor.tokenizer.convert_tokens_to_ids(t) for t in VISION_SPECIAL_TOKENS}
    assert len(actions) == 4
    for a in actions:
        assert 1 <= len(a.response_ids) <= 8 and not vision_ids & set(a.response_ids)
        assert policy.eos_id not in a.response_ids[:-1]  # a response ends at its first end of turn
    # each row scored alone (no padding) gives the acting log-prob of the left-padded batch
    for p, a in zip(prompts, actions, strict=True):
        alone = policy.score([p], [a.response_ids], [a.loss_mask], temperature=1.3).logprobs.detach().sum()
        assert float(alone) == pytest.approx(a.logprob, abs=1e-4)


def test_batched_greedy_equals_one_prompt_at_a_time(tiny_setup):
    model, processor, _ = load_base_model(tiny_setup["model_dir"])
    policy = MazePolicy(model, processor, action_constraint="none", max_new_tokens=6)
    prompts = [_prompt(s, side=3 + s % 2) for s in range(3)]
    batched = policy.act(prompts, greedy=True)
    single = [policy.act([p], greedy=True)[0] for p in prompts]
    assert [a.response_ids for a in batched] == [a.response_ids for a in single]


def test_hugging_face_checkpoint_directory_loads_with_its_hub_revision(tmp_path):
    plain = save_hf_layout(tmp_path / "Qwen3-VL-tiny")
    assert hub_revision(plain) is None
    assert revision_of(plain) == directory_revision(plain)
    meta = plain / ".cache" / "huggingface" / "download"
    meta.mkdir(parents=True)
    (meta / "model.safetensors.metadata").write_text(f'{COMMIT}\n"etag"\n1764000000.0\n')
    assert revision_of(plain) == COMMIT
    snapshot = tmp_path / "models--Qwen--Qwen3-VL-tiny" / "snapshots" / COMMIT[::-1]
    snapshot.parent.mkdir(parents=True)
    plain.rename(snapshot)
    assert hub_revision(snapshot) == COMMIT[::-1]
    model, processor, model_id = load_base_model(snapshot, torch_dtype=torch.bfloat16)
    assert model.dtype == torch.bfloat16 and model_id
    assert processor.tokenizer.padding_side == "left"
    policy = MazePolicy(model, processor)
    assert len(policy.act([_prompt(0)], generator=torch.Generator().manual_seed(0))) == 1
