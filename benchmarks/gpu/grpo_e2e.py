"""End-to-end GRPO steps on one GPU: the reference backend, and TRL's ``GRPOTrainer`` beside it.

``python -m benchmarks.gpu.grpo_e2e --shapes 2B 8B --out benchmarks/results/h200_grpo_e2e.json``

For each model shape (random-init Qwen3-VL with the real config numbers of
``Qwen/Qwen3-VL-{2B,4B,8B}-Instruct``, :mod:`hyperpod_rl.plan.shapes`; no weights can be
downloaded here) it runs full GRPO steps of :class:`hyperpod_rl.train.reference.ReferenceTrainer`
(its own ``_step``: multi-turn rollouts through the maze env, group advantages, policy update, AdamW)
and records per phase: seconds, peak GPU memory, tokens/s and samples/s, and the model-FLOP
utilisation (MFU) of the update. Only the model and the rows are injected (``_load_base`` and
``_load_rows``): the model is built on the GPU instead of read from disk, the rows come from
:func:`hyperpod_rl.tasks.maze.build_dataset` instead of a parquet file.

Workload (each flag below): LoRA rank 32 (alpha 32) on every language-model linear, groups of 8,
free generation (``action_constraint='none'``) up to ``--max-new-tokens`` tokens, ``--max-turns``
turns, mazes rendered at ``--cell-px`` pixels a cell (7 x 7 cells at 64 px: 449 x 449 px,
256 vision tokens, the planner's 448 px image). The tokenizer is the embedded tiny one (BPE
trained on the maze texts) with the model's full 151,936-entry output head: a random policy
answers garbage, so every episode runs all its turns and (no end-of-turn token is ever likely)
every response is ``--max-new-tokens`` long - a fixed, worst-case workload.

With ``--trl`` the same run also trains TRL's ``GRPOTrainer`` (``trl`` carried as a wheel) on
the same model shape, LoRA config, prompts (the first-turn observations of the same mazes),
group size, response length and number of samples, one turn per episode, and the reference
backend is run once more with ``--max-turns 1`` so that the two compare like for like.
Throughput ratio = samples/s ours / samples/s TRL at equal samples per step; memory = peak
``torch.cuda.max_memory_allocated`` over the measured steps.

``adapter sync`` is 0 s for both: the reference backend and TRL (without vLLM) sample from
the model being trained, so no weights move between a trainer and a rollout engine.

With ``--workers N`` (N > 1) our run goes through the same Ray Train ``TorchTrainer`` path as a
``trainer.workers = N`` run (:func:`hyperpod_rl.train.workers.torch_trainer`: N data-parallel
workers on one node, NCCL on GPUs, Gloo on CPU): every worker builds the same model and rows,
rolls out ``--mazes / N`` mazes a step, and DDP sums the gradients. Rank 0 records the steps:
samples, generated tokens and samples/s are over all workers; the update's forward rows, FLOPs,
MFU and peak memory are rank 0's (one GPU's). ``--mazes`` must be a multiple of N. It starts a
local Ray instance (``ray.init()``) unless ``RAY_ADDRESS`` names one.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from benchmarks._record import Recording
from benchmarks.gpu.workload import GIB, H200_BF16_DENSE_FLOPS, SHAPES, hf_config, save_for_vllm
from hyperpod_rl.config.run import RunConfig
from hyperpod_rl.model.rollout import play_episodes as play_episodes_original
from hyperpod_rl.model.tiny import build_tiny_qwen3vl
from hyperpod_rl.plan import model_shape
from hyperpod_rl.tasks.maze import DatasetSpec, build_dataset
from hyperpod_rl.tasks.maze.render import RenderStyle
from hyperpod_rl.train.reference import ReferenceTrainer


def _sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def _peak_reset() -> float:
    """Peak allocated GiB since the last reset, then reset (NaN on CPU)."""
    if not torch.cuda.is_available():
        return float("nan")
    _sync()
    peak = torch.cuda.max_memory_allocated() / GIB
    torch.cuda.reset_peak_memory_stats()
    return peak


def maze_rows(n: int, *, side: int, cell_px: int, max_turns: int, seed: int) -> list[dict[str, Any]]:
    """``n`` train rows of ``side`` x ``side`` mazes with the full (real-model) prompt."""
    spec = DatasetSpec(
        seed=seed,
        sizes=((side, side),),
        counts={"train": n},
        max_turns=max_turns,
        prompt_style="full",
        render_style=RenderStyle(cell_px=cell_px),
    )
    return [dict(r) for r in build_dataset(spec)["train"]]


def build_model(shape_name: str, processor: Any, *, device: torch.device, tiny: bool) -> torch.nn.Module:
    """Random-init Qwen3-VL of the shape (bf16 on CUDA), with the tiny tokenizer's special-token ids."""
    from transformers import Qwen3VLForConditionalGeneration

    tok = processor.tokenizer
    cfg = hf_config(model_shape(SHAPES[shape_name]), tiny=tiny)
    cfg.image_token_id = tok.convert_tokens_to_ids("<|image_pad|>")
    cfg.video_token_id = tok.convert_tokens_to_ids("<|video_pad|>")
    cfg.vision_start_token_id = tok.convert_tokens_to_ids("<|vision_start|>")
    cfg.vision_end_token_id = tok.convert_tokens_to_ids("<|vision_end|>")
    cfg.text_config.pad_token_id = tok.pad_token_id
    cfg.text_config.eos_token_id = tok.eos_token_id
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    torch.manual_seed(0)
    with torch.device(device):
        model = Qwen3VLForConditionalGeneration._from_config(cfg, dtype=dtype, attn_implementation="sdpa")
    model.generation_config.eos_token_id = tok.eos_token_id
    model.generation_config.pad_token_id = tok.pad_token_id
    model.eval()
    return model


def model_on_disk(shape_name: str, model: Any, processor: Any, *, tiny: bool) -> Path:
    """The random-init model and processor saved once per machine as a Hugging Face checkpoint directory
    (``$HPRL_MODEL_CACHE``, default ``/tmp/hprl-models``): what vLLM engines load (ours and TRL's colocated one)."""
    root = Path(os.environ.get("HPRL_MODEL_CACHE", "/tmp/hprl-models")) / (shape_name + ("-tiny" if tiny else ""))
    if not (root / ".complete").exists():
        root.mkdir(parents=True, exist_ok=True)
        save_for_vllm(root, model, processor)
        (root / ".complete").write_text("ok")
    return root


class DevicePeak:
    """Peak GPU memory in use by any allocator (``total - free`` from ``cudaMemGetInfo``), polled every 10 ms.

    torch's ``max_memory_allocated`` misses a colocated vLLM engine's memory (its sleep-mode allocator
    and the KV cache it reserves), so both sides are compared on what the device itself reports.
    """

    def __init__(self) -> None:
        import threading

        self._peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        if torch.cuda.is_available():
            self._thread.start()

    def _poll(self) -> None:
        while not self._stop.is_set():
            free, total = torch.cuda.mem_get_info()
            self._peak = max(self._peak, total - free)
            self._stop.wait(0.01)

    def take(self) -> float:
        """Peak GiB since the last call (NaN on CPU), then reset."""
        if not torch.cuda.is_available():
            return float("nan")
        peak, self._peak = self._peak, 0
        return peak / GIB

    def close(self) -> None:
        self._stop.set()


def bench_reward(index: int) -> float:
    """The benchmark's reward of the index-th completion of a batch, the same on both sides: varied within
    every group (so advantages and gradients are non-zero), independent of what was generated (so the
    workload stays fixed while the policy moves)."""
    return float((index * 7919) % 5)


def _rewarded(play: Any) -> Any:
    """``play_episodes`` whose episodes get :func:`bench_reward` (on their last turn) in place of the env's."""

    def wrapped(*a: Any, **k: Any) -> list[Any]:
        episodes = play(*a, **k)
        for i, ep in enumerate(episodes):
            for t, turn in enumerate(ep.turns):
                turn.reward = bench_reward(i) if t == len(ep.turns) - 1 else 0.0
        return episodes

    return wrapped


class BenchTrainer(ReferenceTrainer):
    """The reference trainer with an in-memory model and rows; records per-phase peaks and FLOPs."""

    def __init__(
        self, config: RunConfig, run_dir: Path, *, model: Any, processor: Any, rows: list[dict[str, Any]], parallel: Any = None
    ) -> None:
        super().__init__(config, run_dir, parallel=parallel)
        self._given = (model, processor)
        self._rows = rows
        self.phase_peaks: dict[str, float] = {}
        self.last_episodes: list[Any] = []

    def _load_base(self, model_dir: Any, dtype: torch.dtype) -> tuple[Any, Any, str, str]:
        model, processor = self._given
        return model, processor, "random-init", "random-init"

    def _load_rows(self) -> list[dict[str, Any]]:
        return self._rows

    def _update(self, episodes: list[Any], advantages: list[list[float]]) -> dict[str, float]:
        self.phase_peaks["rollout"] = _peak_reset()
        self.last_episodes = episodes
        out = super()._update(episodes, advantages)
        self.phase_peaks["update"] = _peak_reset()
        return out

    def forward_rows(self) -> list[tuple[int, int, int]]:
        """(padded length, loss tokens, images) of each forward row of the last update, collated as it was."""
        samples = [turn for ep in self.last_episodes for turn in ep.turns]
        contexts = [t.context for t in samples]
        responses = [t.action.response_ids for t in samples]
        masks = [t.action.loss_mask for t in samples]
        groups = self.policy.group_samples(contexts, responses, masks)
        mb = self.config.trainer.micro_batch_size
        rows = []
        for start in range(0, len(groups), mb):
            part = groups[start : start + mb]
            reps = [g[0] for g in part]
            inputs, _ = self.policy.collate([contexts[i] for i in reps], [self.policy._prefix(responses[i], masks[i]) for i in reps])
            length = inputs["input_ids"].shape[1]
            rows.extend((length, sum(sum(masks[i]) for i in g), 1) for g in part)
        return rows


def standalone_generate(trainer: BenchTrainer, repeats: int = 3) -> dict[str, Any]:
    """The last step's first-turn requests through the same engine outside the training loop (awake, the same
    adapter and sampling), timed alone: the throughput the in-loop rollout is compared with."""
    engine = trainer.engine
    prompts = [ep.turns[0].context for ep in trainer.last_episodes]
    times, tokens = [], 0
    for _ in range(repeats):
        engine.timings["generate_s"] = 0.0
        engine.generated_tokens = 0
        engine.act(prompts, temperature=trainer.config.rollout.temperature, generator=torch.Generator().manual_seed(1))
        times.append(engine.timings["generate_s"])
        tokens = engine.generated_tokens
    return {
        "requests": len(prompts),
        "generated_tokens": tokens,
        "generate_s": statistics.median(times),
        "tokens_per_s": tokens / statistics.median(times),
    }


def learning_check(losses: list[float], grad_norms: list[float], token_logprobs: list[float | None]) -> dict[str, Any]:
    """Whether the policy moved over the steps: non-zero loss and gradient norm, and the trend of the mean
    sampled-token log-prob of its own rollouts (last step minus first; None where it was not recorded)."""
    lps = [x for x in token_logprobs if x is not None]
    return {
        "loss_nonzero_steps": sum(1 for x in losses if abs(x) > 1e-9),
        "grad_norm_nonzero_steps": sum(1 for g in grad_norms if g is not None and g > 1e-9),
        "grad_norm_median": statistics.median(g for g in grad_norms if g is not None) if any(g is not None for g in grad_norms) else None,
        "steps": len(losses),
        "rollout_token_logprob_first": lps[0] if lps else None,
        "rollout_token_logprob_last": lps[-1] if lps else None,
        "rollout_token_logprob_rise": (lps[-1] - lps[0]) if len(lps) > 1 else None,
    }


def update_flops(shape_name: str, rows: list[tuple[int, int, int]], *, image_patches: int) -> float:
    """Model FLOPs of one update's forward + backward (no recompute), as the planner counts them.

    Per forward row of padded length L with R response tokens: 4 x frozen linear FLOPs x L (the
    LoRA update back-propagates through the frozen weights: forward 2, input-gradient 2),
    causal attention (fwd + 2 x bwd), the output head on the R response tokens (6 H V R) and
    the vision tower's forward on its patches (2 x params x patches). Same terms as
    :func:`hyperpod_rl.plan.train_flops_per_sample`.
    """
    s = model_shape(SHAPES[shape_name])
    lin = s.num_hidden_layers * sum(a * b for a, b in s.linear_dims().values())
    total = 0.0
    for length, resp, images in rows:
        total += 4.0 * lin * length
        total += 3 * 2 * 2 * s.num_hidden_layers * s.q_dim * length * length / 2
        total += 6.0 * s.hidden_size * s.vocab_size * resp
        total += 2.0 * s.vision.params * images * image_patches
    return total


def _config(
    args: argparse.Namespace, *, max_turns: int, device: str, model_dir: str, decode: str | None = None, engine: str = "hf"
) -> RunConfig:
    return RunConfig.build(
        {
            "run_id": "bench-e2e",
            "backend": "reference",
            "model": {"path": model_dir, "revision": "random-init"},
            "lora": {
                "rank": args.lora_rank,
                "alpha": float(args.lora_rank),
                "target_modules": "all-linear",
                "exclude_modules": r".*visual.*",
            },
            "grpo": {"group_size": args.group, "lr": 3e-5, "kl_coef": 0.0, "entropy_coef": 0.0},
            "rollout": {
                "max_turns": max_turns,
                "temperature": 1.0,
                "action_constraint": "none",
                "max_new_tokens": args.max_new_tokens,
                "decode": decode or args.decode,
                "engine": engine,
                **({"engine_sleep": args.engine_sleep} if engine == "vllm" else {}),
                "max_prompt_tokens": args.max_prompt_tokens,
                "gpu_memory_utilization": args.vllm_fraction_cap,
            },
            "data": {"train_path": "/unused/train.parquet", "heldout_path": "/unused/heldout.parquet", "prompts_per_step": args.mazes},
            "trainer": {
                "steps": 1000,
                "seed": 0,
                "micro_batch_size": args.micro_batch,
                "gradient_checkpointing": True,
                "checkpoint_layers": args.checkpoint_layers,
                "checkpoint_policy": args.checkpoint_policy,
                "compile_layers": args.compile_layers,
                "device": device,
                "eval_rows": 1,
                "workers": args.workers,
            },
            "checkpoint": {"interval": 0},
        }
    )


def run_ours(
    args: argparse.Namespace,
    shape_name: str,
    *,
    max_turns: int,
    device: torch.device,
    decode: str | None = None,
    parallel: Any = None,
    engine: str = "hf",
) -> dict[str, Any]:
    """Warm-up + ``--steps`` measured steps of the reference trainer (``decode`` overrides ``--decode``;
    one worker of ``--workers`` when ``parallel``; ``engine`` is ``rollout.engine``)."""
    if args.workers > 1 and parallel is None:
        return run_ours_workers(args, shape_name, max_turns=max_turns, device=device, decode=decode)
    rows = maze_rows(max(64, args.mazes * (args.steps + args.warmup)), side=args.side, cell_px=args.cell_px, max_turns=max_turns, seed=1)
    _, processor = build_tiny_qwen3vl(seed=0, corpus=[json.dumps(r["prompt"])[:2000] for r in rows[:8]])
    t0 = time.perf_counter()
    model = build_model(shape_name, processor, device=device, tiny=args.tiny)
    build_s = time.perf_counter() - t0
    disk = model_on_disk(shape_name, model, processor, tiny=args.tiny) if engine == "vllm" else None
    import hyperpod_rl.train.reference as reference

    reference.play_episodes = _rewarded(play_episodes_original)
    with tempfile.TemporaryDirectory() as tmp:
        # the trainer's model is injected; a vLLM engine loads the same weights from disk
        cfg = _config(args, max_turns=max_turns, device=device.type, model_dir=str(disk or tmp), decode=decode, engine=engine)
        trainer = BenchTrainer(cfg, Path(tmp), model=model, processor=processor, rows=rows, parallel=parallel)
        t0 = time.perf_counter()
        trainer._build()
        build_trainer_s = time.perf_counter() - t0
        meter = DevicePeak()
        enc = trainer.policy._encode_prompt(rows[0]["prompt"])  # patches per image, from one real observation
        patches = int(enc["image_grid_thw"].prod(-1).sum()) if "image_grid_thw" in enc else 0
        steps = []
        for k in range(args.warmup + args.steps):
            _peak_reset()
            meter.take()
            _sync()
            trainer.policy.timings.update(decode_s=0.0, rollout_score_s=0.0)
            t = time.perf_counter()
            record = trainer._step()
            _sync()
            wall = time.perf_counter() - t
            device_peak = meter.take()
            v = record.values
            turns_lp = [lp for ep in trainer.last_episodes for turn in ep.turns for lp in (turn.action.token_logprobs or [])]
            fwd_rows = trainer.forward_rows()
            flops = update_flops(shape_name, fwd_rows, image_patches=patches)
            upd_tokens = sum(r[0] for r in fwd_rows)
            samples = int(v["trainer/num_samples"])
            gen_tokens = int(round(v["policy/response_length"] * samples))
            steps.append(
                {
                    "warmup": k < args.warmup,
                    "step_s": wall,
                    "rollout_s": v["timing/generate"],
                    "rollout_decode_s": trainer.policy.timings["decode_s"],
                    "rollout_logprob_pass_s": trainer.policy.timings["rollout_score_s"],
                    "decode_ms_per_token_step": 1e3 * trainer.policy.timings["decode_s"] / (max_turns * args.max_new_tokens),
                    "update_s": v["timing/policy_train"],
                    "other_s": wall - v["timing/generate"] - v["timing/policy_train"],
                    "adapter_sync_s": 0.0,
                    "samples": samples,
                    "episodes": args.mazes * args.group,
                    "generated_tokens": gen_tokens,
                    "update_forward_rows": len(fwd_rows),
                    "update_tokens": upd_tokens,
                    "update_loss_tokens": int(v["trainer/num_tokens"]),
                    "update_model_flops": flops,
                    "peak_rollout_gib": trainer.phase_peaks.get("rollout"),
                    "peak_update_gib": trainer.phase_peaks.get("update"),
                    "response_length": v["policy/response_length"],
                    "turns": v["generate/avg_num_turns"],
                    "rollout_logprob_abs_diff": v["policy/rollout_train_logprobs_abs_diff_mean"],
                    "logprob_gap_mean": v.get("rollout/logprob_gap_mean"),
                    "logprob_gap_max": v.get("rollout/logprob_gap_max"),
                    "is_truncated_fraction": v.get("rollout/is_truncated_fraction"),
                    "rollout_mean_token_logprob": sum(turns_lp) / max(len(turns_lp), 1),
                    "policy_loss": v["policy/policy_loss"],
                    "grad_norm": v["policy/grad_norm"],
                    "engine_sync_s": v.get("timing/sync_weights", 0.0),
                    "engine_generate_tokens_per_s": v.get("generate/tokens_per_second"),
                    "engine_sleep_s": v.get("timing/engine_sleep", 0.0),
                    "engine_wake_s": v.get("timing/engine_wake", 0.0),
                    "peak_device_gib": device_peak,
                }
            )
            print(json.dumps({"shape": shape_name, "turns": max_turns, **steps[-1]}), flush=True)
        meter.close()
        engine_start_s = trainer.engine.start_s if trainer.engine is not None else None
        standalone = standalone_generate(trainer) if trainer.engine is not None else None
    measured = [s for s in steps if not s["warmup"]] or steps
    med = {
        k: statistics.median(s[k] for s in measured)
        for k in ("step_s", "rollout_s", "rollout_decode_s", "rollout_logprob_pass_s", "update_s", "other_s")
    }
    samples = measured[0]["samples"]
    out = {
        "impl": "hyperpod-rl reference" + (f", {args.workers} workers (TorchTrainer, DDP)" if args.workers > 1 else ""),
        "shape": SHAPES[shape_name],
        "max_turns": max_turns,
        "workers": args.workers,
        "engine": "vllm" if trainer.engine is not None else "hf",
        "engine_start_s": engine_start_s,
        "engine_sleep": bool(trainer.engine.sleep_mode) if trainer.engine is not None else None,
        "max_prompt_tokens": args.max_prompt_tokens,
        "standalone_vllm": standalone,
        "trainer_build_s": build_trainer_s,
        "decode": "compiled" if trainer.policy.compiled_decode else "eager",
        "compiled_layers": trainer.compiled.count if trainer.compiled is not None else 0,
        "checkpoint": {"layers": args.checkpoint_layers, "policy": args.checkpoint_policy},
        "model_build_s": build_s,
        "image_patches": patches,
        "steps": steps,
        **{f"median_{k}": v for k, v in med.items()},
        "samples_per_step": samples,
        "samples_per_s": samples / med["step_s"],
        "episodes_per_s": args.mazes * args.group / med["step_s"],
        "generated_tokens_per_s": statistics.median(s["generated_tokens"] / s["rollout_s"] for s in measured),
        "update_tokens_per_s": statistics.median(s["update_tokens"] / s["update_s"] for s in measured),
        "update_mfu": statistics.median(s["update_model_flops"] / s["update_s"] / H200_BF16_DENSE_FLOPS for s in measured),
        "peak_gib": max((max(s["peak_rollout_gib"] or 0, s["peak_update_gib"] or 0) for s in measured), default=None),
        "peak_device_gib": max((s["peak_device_gib"] for s in measured), default=None),
        "learning": learning_check(
            [s["policy_loss"] for s in steps], [s["grad_norm"] for s in steps], [s["rollout_mean_token_logprob"] for s in steps]
        ),
    }
    reference.play_episodes = play_episodes_original
    if trainer.engine is not None:
        trainer.engine.llm = None  # the engine's memory goes with the trainer
    del trainer, model
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    return out


def _ours_worker(loop_config: dict[str, Any]) -> None:
    """One ``TorchTrainer`` worker of :func:`run_ours_workers`; rank 0 writes the result file."""
    from hyperpod_rl.train.workers import worker_place

    place = worker_place()
    args = argparse.Namespace(**loop_config["args"])
    result = run_ours(
        args, loop_config["shape"], max_turns=loop_config["max_turns"], device=place.device, decode=loop_config["decode"], parallel=place
    )
    if place.is_writer:
        Path(loop_config["out"]).write_text(json.dumps(result))


def run_ours_workers(
    args: argparse.Namespace, shape_name: str, *, max_turns: int, device: torch.device, decode: str | None = None
) -> dict[str, Any]:
    """:func:`run_ours` on ``--workers`` data-parallel workers of a Ray Train ``TorchTrainer``."""
    import ray

    from hyperpod_rl.train.workers import torch_trainer

    if args.mazes % args.workers:
        raise SystemExit(f"--mazes {args.mazes} does not split over --workers {args.workers}: use a multiple of {args.workers}")
    if not ray.is_initialized():
        # the workers import this module: the repository root on their path
        ray.init(runtime_env={"env_vars": {"PYTHONPATH": str(Path(__file__).resolve().parents[2])}})
    with tempfile.TemporaryDirectory() as tmp:
        cfg = _config(args, max_turns=max_turns, device=device.type, model_dir=tmp, decode=decode)
        out = Path(tmp) / "result.json"
        loop_config = {"args": vars(args) | {"out": None}, "shape": shape_name, "max_turns": max_turns, "decode": decode, "out": str(out)}
        torch_trainer(_ours_worker, loop_config, cfg, Path(tmp) / "ray-train", name=f"bench-{shape_name}-{max_turns}").fit()
        return json.loads(out.read_text())


def run_trl(
    args: argparse.Namespace,
    shape_name: str,
    *,
    device: torch.device,
    vllm_fraction: float | None = None,
    is_correction: bool = True,
) -> dict[str, Any]:
    """TRL ``GRPOTrainer`` on the same shape, LoRA, first-turn prompts, group, response length and samples.

    ``vllm_fraction`` set: ``use_vllm=True, vllm_mode="colocate"`` (TRL's recommended single-GPU mode)
    with that ``vllm_gpu_memory_utilization``; ``is_correction`` is its ``vllm_importance_sampling_correction``.
    """
    import trl
    from datasets import Dataset
    from peft import LoraConfig
    from trl import GRPOConfig, GRPOTrainer

    from hyperpod_rl.tasks.maze import decode_image_part

    n_steps = args.warmup + args.steps
    rows = maze_rows(max(64, args.mazes * n_steps), side=args.side, cell_px=args.cell_px, max_turns=1, seed=1)
    _, processor = build_tiny_qwen3vl(seed=0, corpus=[json.dumps(r["prompt"])[:2000] for r in rows[:8]])
    model = build_model(shape_name, processor, device=device, tiny=args.tiny)
    if vllm_fraction is not None:  # TRL's colocated engine loads model.name_or_path
        path = str(model_on_disk(shape_name, model, processor, tiny=args.tiny))
        model.config._name_or_path = path
        model.name_or_path = path  # what TRL's VLLMGeneration passes to vllm.LLM

    def as_trl(row: dict[str, Any]) -> dict[str, Any]:
        # TRL's conversational VLM format: the images go in an "images" column, "image" parts in the prompt
        prompt, images = [], []
        for msg in row["prompt"]:
            content = msg["content"]
            if isinstance(content, str):
                prompt.append({"role": msg["role"], "content": [{"type": "text", "text": content}]})
                continue
            parts = []
            for part in content:
                if part.get("type") in ("image", "image_url"):
                    images.append(decode_image_part(part))
                    parts.append({"type": "image"})
                else:
                    parts.append(part)
            prompt.append({"role": msg["role"], "content": parts})
        return {"prompt": prompt, "images": images}

    data = Dataset.from_list([as_trl(r) for r in rows[: args.mazes * n_steps]])

    def reward(completions: list[Any], **_: Any) -> list[float]:  # bench_reward: the same numbers our side gets
        return [bench_reward(i) for i in range(len(completions))]

    lora = LoraConfig(
        r=args.lora_rank, lora_alpha=args.lora_rank, lora_dropout=0.0, target_modules="all-linear", exclude_modules=r".*visual.*"
    )
    times: list[float] = []
    peaks: list[float] = []
    device_peaks: list[float] = []
    meter = DevicePeak()

    from transformers import TrainerCallback

    class Timer(TrainerCallback):
        def on_step_begin(self, *a: Any, **k: Any) -> None:
            _sync()
            _peak_reset()
            meter.take()
            self.t = time.perf_counter()

        def on_step_end(self, *a: Any, **k: Any) -> None:
            _sync()
            times.append(time.perf_counter() - self.t)
            peaks.append(_peak_reset())
            device_peaks.append(meter.take())

    with tempfile.TemporaryDirectory() as tmp:
        conf = GRPOConfig(
            output_dir=tmp,
            per_device_train_batch_size=args.mazes * args.group,
            gradient_accumulation_steps=1,
            num_generations=args.group,
            max_completion_length=args.max_new_tokens,
            max_steps=n_steps,
            learning_rate=3e-5,
            beta=0.0,
            temperature=1.0,
            top_k=0,
            top_p=1.0,
            bf16=device.type == "cuda",
            gradient_checkpointing=True,
            gradient_checkpointing_kwargs={"use_reentrant": False},
            logging_steps=1,
            save_strategy="no",
            report_to=[],
            use_vllm=vllm_fraction is not None,
            **(
                {
                    "vllm_mode": "colocate",
                    "vllm_gpu_memory_utilization": vllm_fraction,
                    "vllm_importance_sampling_correction": is_correction,
                    "vllm_max_model_length": 4096,
                }
                if vllm_fraction is not None
                else {}
            ),
            seed=0,
            dataloader_num_workers=0,
            use_cpu=device.type != "cuda",
        )
        t0 = time.perf_counter()
        trainer = GRPOTrainer(model=model, reward_funcs=reward, args=conf, train_dataset=data, processing_class=processor, peft_config=lora)
        init_s = time.perf_counter() - t0
        trainer.add_callback(Timer())
        trainer.train()
        logs = [h for h in trainer.state.log_history if "loss" in h]
    measured = times[args.warmup :] or times
    st = statistics.median(measured)
    samples = args.mazes * args.group
    meter.close()
    mode = (
        "use_vllm=False" if vllm_fraction is None else f"vllm colocate {vllm_fraction}" + ("" if is_correction else ", IS correction off")
    )
    learn_keys = [k for k in ("loss", "grad_norm", "entropy") if logs and k in logs[0]]
    sampling_keys = sorted({k for h in logs for k in h if k.startswith("sampling/")})
    out = {
        "impl": f"trl {trl.__version__} GRPOTrainer ({mode})",
        "mode": mode,
        "vllm_gpu_memory_utilization": vllm_fraction,
        "is_correction": is_correction,
        "init_s": init_s,
        "shape": SHAPES[shape_name],
        "max_turns": 1,
        "step_times_s": times,
        "peaks_gib": peaks,
        "device_peaks_gib": device_peaks,
        "peak_device_gib": max(device_peaks[args.warmup :] or device_peaks) if device_peaks and not math.isnan(device_peaks[0]) else None,
        "per_step": {k: [h.get(k) for h in logs] for k in learn_keys + sampling_keys},
        "learning": learning_check([h.get("loss", 0.0) for h in logs], [h.get("grad_norm") for h in logs], []),
        "median_step_s": st,
        "samples_per_step": samples,
        "samples_per_s": samples / st,
        "peak_gib": max(peaks[args.warmup :] or peaks) if peaks and not math.isnan(peaks[0]) else None,
        "completion_length": [h.get("completions/mean_length") for h in logs],
        "generated_tokens_per_s": statistics.median(
            (h.get("completions/mean_length") or 0) * samples / t for h, t in zip(logs[args.warmup :], measured, strict=False)
        )
        if logs[args.warmup :]
        else None,
        "log_keys": sorted({k for h in logs for k in h})[:40],
    }
    del trainer, model
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shapes", nargs="+", default=["2B", "8B"], choices=sorted(SHAPES))
    p.add_argument("--steps", type=int, default=2, help="measured steps per run")
    p.add_argument("--warmup", type=int, default=1, help="warm-up steps per run (not in the medians)")
    p.add_argument("--mazes", type=int, default=4, help="mazes per step (episodes = mazes x group)")
    p.add_argument("--group", type=int, default=8)
    p.add_argument("--max-turns", type=int, default=3)
    p.add_argument("--max-new-tokens", type=int, default=128)
    p.add_argument("--micro-batch", type=int, default=16, help="forward rows per micro batch of the update")
    p.add_argument("--lora-rank", type=int, default=32)
    p.add_argument("--side", type=int, default=7, help="maze side in cells")
    p.add_argument("--cell-px", type=int, default=64, help="pixels per cell (7 x 64 + 1 = 449 px images)")
    p.add_argument("--trl", action="store_true", help="also run TRL GRPOTrainer and ours at one turn")
    p.add_argument("--decode", default="auto", choices=["auto", "eager", "compiled"], help="rollout.decode of our runs")
    p.add_argument("--decode-baseline", action="store_true", help="also run ours with eager decoding (the baseline, same run)")
    p.add_argument("--compile-layers", action="store_true", help="trainer.compile_layers (compiled decoder layers in the update)")
    p.add_argument("--checkpoint-policy", default="full", choices=["full", "save_matmuls"], help="trainer.checkpoint_policy")
    p.add_argument("--checkpoint-layers", type=float, default=1.0, help="trainer.checkpoint_layers (share of layers checkpointed)")
    p.add_argument("--tiny", action="store_true", help="tiny layers of the same layout (CPU smoke runs)")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--workers", type=int, default=1, help="data-parallel workers (Ray Train TorchTrainer, one GPU each)")
    p.add_argument("--engine", default="hf", choices=["hf", "vllm"], help="rollout.engine of our runs")
    p.add_argument(
        "--engine-sleep",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="rollout.engine_sleep of our vLLM runs (--no-engine-sleep: the engine stays awake beside the update)",
    )
    p.add_argument(
        "--max-prompt-tokens", type=int, default=4096, help="rollout.max_prompt_tokens of our runs (sizes our engine's KV cache)"
    )
    p.add_argument("--vllm-fraction-cap", type=float, default=0.8, help="rollout.gpu_memory_utilization: the cap of our engine's fraction")
    p.add_argument(
        "--one",
        default=None,
        help="run one side only, in this process: ours-hf, ours-vllm, trl, trl-vllm-F (TRL colocate at fraction F), "
        "trl-vllm-F-nois (its importance-sampling correction off); benchmarks/gpu/sides.py runs each in a fresh process",
    )
    p.add_argument("--out", type=Path, default=None, help="result file (default benchmarks/results/h200_grpo_e2e.json)")
    args = p.parse_args(argv)
    device = torch.device(args.device)
    name = (args.out.stem if args.out else "h200_grpo_e2e") if device.type == "cuda" or args.out else "cpu_grpo_e2e_smoke"
    if args.out:
        os.environ["HPRL_RESULTS_DIR"] = str(args.out.parent)
    with Recording(name, params={k: str(v) for k, v in vars(args).items()}) as rec:
        results: dict[str, Any] = {"runs": [], "comparisons": []}
        rec.results = results
        try:
            if args.one:
                for shape in args.shapes:
                    results["runs"].append(run_side(args, shape, args.one, device=device))
            else:
                _measure_shapes(args, device, results)
        except KeyboardInterrupt:  # `timeout -s INT`: keep the runs that finished
            rec.notes = f"interrupted (SIGINT) after {len(results['runs'])} runs; the runs listed are complete"
            print(rec.notes, flush=True)
        finally:
            if args.workers > 1:
                import ray

                ray.shutdown()  # the Ray instance run_ours_workers started (or joined)
    return results


def run_side(args: argparse.Namespace, shape: str, side: str, *, device: torch.device) -> dict[str, Any]:
    """One side of the comparison (``--one``): ours with either engine, or TRL in one of its modes."""
    if side in ("ours-hf", "ours-vllm"):
        out = run_ours(args, shape, max_turns=args.max_turns, device=device, engine=side.removeprefix("ours-"))
    elif side == "trl":
        out = run_trl(args, shape, device=device)
    elif side.startswith("trl-vllm-"):
        rest = side.removeprefix("trl-vllm-")
        fraction = float(rest.removesuffix("-nois"))
        out = run_trl(args, shape, device=device, vllm_fraction=fraction, is_correction=not rest.endswith("-nois"))
    else:
        raise SystemExit(f"--one {side!r}: use ours-hf, ours-vllm, trl, trl-vllm-F or trl-vllm-F-nois")
    out["side"] = side
    print(json.dumps({k: v for k, v in out.items() if k not in ("steps",)}, default=str), flush=True)
    return out


def _measure_shapes(args: argparse.Namespace, device: torch.device, results: dict[str, Any]) -> None:
    """Every run of every shape in ``args.shapes``, appended to ``results`` as it finishes."""
    for shape in args.shapes:
        ours = run_ours(args, shape, max_turns=args.max_turns, device=device)
        results["runs"].append(ours)
        if args.decode_baseline:
            eager = run_ours(args, shape, max_turns=args.max_turns, device=device, decode="eager")
            results["runs"].append(eager)
            results["comparisons"].append(
                {
                    "shape": SHAPES[shape],
                    "max_turns": args.max_turns,
                    "decode_speedup_compiled_over_eager": eager["median_rollout_decode_s"] / ours["median_rollout_decode_s"],
                    "step_speedup_compiled_over_eager": eager["median_step_s"] / ours["median_step_s"],
                    "peak_gib_compiled": ours["peak_gib"],
                    "peak_gib_eager": eager["peak_gib"],
                }
            )
        if args.trl:
            ours1 = ours if args.max_turns == 1 else run_ours(args, shape, max_turns=1, device=device)
            if ours1 is not ours:
                results["runs"].append(ours1)
            try:
                theirs = run_trl(args, shape, device=device)
            except Exception as err:  # noqa: BLE001 - recorded, the rest of the run goes on
                theirs = {
                    "impl": "trl GRPOTrainer",
                    "shape": SHAPES[shape],
                    "status": "failed",
                    "error": f"{type(err).__name__}: {err}"[:2000],
                }
            results["runs"].append(theirs)
            if "samples_per_s" in theirs:
                results["comparisons"].append(
                    {
                        "shape": SHAPES[shape],
                        "samples_per_step": ours1["samples_per_step"],
                        "throughput_ratio_ours_over_trl": ours1["samples_per_s"] / theirs["samples_per_s"],
                        "peak_gib_ours": ours1["peak_gib"],
                        "peak_gib_trl": theirs["peak_gib"],
                    }
                )
        print(json.dumps({k: v for k, v in ours.items() if k != "steps"}), flush=True)


if __name__ == "__main__":
    main()
