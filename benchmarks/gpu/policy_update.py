"""GPU harness: LoRA policy forward+backward of a Qwen3-VL-8B-shaped model, naive vs improved.

Single GPU (``python -m benchmarks.gpu.policy_update --suite single``): for each
config it measures, in one process on one GPU,

* ``naive``   - HF + peft as shipped (float32 adapters), ``model(...).logits`` over
  every position, float32 ``log_softmax`` over the full vocabulary;
* ``chunked`` - the same model, log-probs by ``response_logprobs`` (response rows
  only, chunked, no (B, T, V) logits): isolates the log-prob change;
* ``improved`` - what the trainer runs: FSDP2 ``fully_shard`` (world size 1 here)
  with ``MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32)`` - float32
  master adapters, bf16 adapter compute - plus ``response_logprobs``.

Several GPUs (``torchrun --nproc-per-node 2 -m benchmarks.gpu.policy_update --suite fsdp``):
``fsdp_naive`` (FSDP2 + mixed precision, full logits) and ``improved`` at fixed per-GPU
batch (weak scaling) and fixed global batch (strong scaling), with the share of the
step spent in NCCL all-gather / reduce-scatter kernels from ``torch.profiler``.

Each step is forward + backward + AdamW step on the adapters. Peak is
``torch.cuda.max_memory_allocated`` over the measured steps. The result file (``--out``) is the
envelope of :mod:`benchmarks._record` (git commit, packages, machine, date) whose ``results`` is
the list of records. Measurements only: the planner's predictions for them are written by
``python -m benchmarks.gpu.repredict`` to their own file.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import gc
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from benchmarks._record import Recording
from benchmarks.gpu.workload import GIB, H200_BF16_DENSE_FLOPS, SHAPES, BenchConfig, PolicyLogprobs, build_policy, make_batch
from hyperpod_rl.plan import PlanInput, model_shape, train_flops_per_sample

SINGLE_SUITE = [
    BenchConfig("b8_s551_img448_ckpt", 8, 448, 97, 256, True),
    BenchConfig("b16_s807_img448_ckpt", 16, 448, 97, 512, True),
    BenchConfig("b32_s551_img448_ckpt", 32, 448, 97, 256, True),
    BenchConfig("b8_s1139_img896_ckpt", 8, 896, 97, 256, True),
    BenchConfig("b4_s551_img448_nockpt", 4, 448, 97, 256, False),
    BenchConfig("b8_s551_img448_nockpt", 8, 448, 97, 256, False),
    BenchConfig("b2_s1907_img896_nockpt", 2, 896, 97, 1024, False),
]
# (config, scaling kind, global batch); per-GPU batch = config.batch
FSDP_SUITE = [
    (BenchConfig("b8_s551_img448_ckpt", 8, 448, 97, 256, True), "weak"),
    (BenchConfig("b16_s807_img448_ckpt", 16, 448, 97, 512, True), "weak"),
    (BenchConfig("b4_s551_img448_nockpt", 4, 448, 97, 256, False), "weak"),
    (BenchConfig("b8_s807_img448_ckpt", 8, 448, 97, 512, True), "strong"),  # global 16 x 807 over 2 GPUs
    (BenchConfig("b16_s551_img448_ckpt", 16, 448, 97, 256, True), "strong"),  # global 32 x 551 over 2 GPUs
]
TINY_SUITE = [BenchConfig("tiny_ckpt", 2, 64, 12, 16, True), BenchConfig("tiny_nockpt", 2, 96, 12, 24, False)]


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _reset_peak(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)


def _peak_gib(device: torch.device) -> float:
    return torch.cuda.max_memory_allocated(device) / GIB if device.type == "cuda" else float("nan")


def _set_checkpointing(root: PolicyLogprobs, on: bool) -> None:
    hf = root.hf_model()
    if on:
        hf.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    else:
        hf.gradient_checkpointing_disable()
    root.train()


def measure(
    root: PolicyLogprobs,
    cfg: BenchConfig,
    path: str,
    *,
    device: torch.device,
    steps: int,
    profile: bool,
    vocab: int,
    autocast: bool = False,
    hf_checkpointing: bool | None = None,
) -> dict[str, Any]:
    """Warm-up + ``steps`` timed steps; returns step time, tokens/s, peak and (optionally) comm share.

    ``autocast``: forward under ``torch.autocast(bfloat16)`` - bf16 compute for the float32 adapters,
    as the reference trainer runs on one GPU (no FSDP2). ``hf_checkpointing``: transformers' own
    checkpointing on or off (default: the config's; off when the variant placed its own).
    """
    _set_checkpointing(root, cfg.gradient_checkpointing if hf_checkpointing is None else hf_checkpointing)
    params = [p for p in root.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-6, foreach=True)
    batch = make_batch(cfg, device=device, vocab=vocab, seed=0)
    logprob_path = "naive" if path in ("naive", "fsdp_naive") else "chunked"

    def step() -> float:
        with torch.autocast(device.type, dtype=torch.bfloat16) if autocast else contextlib.nullcontext():
            loss = root(batch, logprob_path)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return float(loss.detach())

    try:
        loss0 = step()  # warm-up (allocates optimizer state)
        _sync(device)
        _reset_peak(device)
        times = []
        for _ in range(steps):
            t0 = time.perf_counter()
            step()
            _sync(device)
            times.append(time.perf_counter() - t0)
        peak = _peak_gib(device)
        reserved = torch.cuda.max_memory_reserved(device) / GIB if device.type == "cuda" else float("nan")
        comm = _comm_share(step, device) if profile else None
        st = statistics.median(times)
        tokens = cfg.batch * cfg.seq_len()
        out = {
            "status": "ok",
            "step_time_s": st,
            "step_times_s": times,
            "tokens_per_s": tokens / st,
            "peak_gib": peak,
            "peak_reserved_gib": reserved,
            "loss": loss0,
        }
        if comm is not None:
            out |= comm
        return out
    except torch.OutOfMemoryError as exc:
        return {"status": "oom", "error": str(exc).splitlines()[0]}
    except Exception as exc:  # noqa: BLE001 - a lever that fails to run is recorded, the suite goes on
        return {"status": "error", "error": f"{type(exc).__name__}: {exc}"[:2000]}
    finally:
        opt.zero_grad(set_to_none=True)
        opt.state.clear()
        batch.clear()
        gc.collect()
        if device.type == "cuda":
            torch.cuda.empty_cache()


def _comm_share(step: Any, device: torch.device) -> dict[str, float]:
    """One profiled step: NCCL all-gather / reduce-scatter kernel time over the step's wall time."""
    from torch.profiler import ProfilerActivity, profile

    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=acts) as prof:
        t0 = time.perf_counter()
        step()
        _sync(device)
        wall = time.perf_counter() - t0
    ag = rs = 0.0
    kernels = []
    for ev in prof.key_averages():
        t_us = getattr(ev, "device_time_total", None) or getattr(ev, "cuda_time_total", 0.0)
        name = ev.key.lower()
        if "allgather" in name or "all_gather" in name:
            ag += t_us if "nccl" in name and "kernel" in name else 0.0
        if "reducescatter" in name or "reduce_scatter" in name:
            rs += t_us if "nccl" in name and "kernel" in name else 0.0
        if t_us:
            kernels.append((t_us / 1e6, ev.key[:90]))
    top = [{"s": t, "name": n} for t, n in sorted(kernels, reverse=True)[:12]]
    return {
        "top_device_ops": top,
        "allgather_s": ag / 1e6,
        "reducescatter_s": rs / 1e6,
        "profiled_step_s": wall,
        "comm_share": (ag + rs) / 1e6 / wall,
    }


def _fsdp_wrap(root: PolicyLogprobs, world: int, device: torch.device, *, vision: str = "per_block", reshard: bool = True) -> None:
    """FSDP2: one unit per decoder layer, the vision tower per block (or as one unit), then the root."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    mesh = init_device_mesh(device.type, (world,))
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    hf = root.hf_model()
    for layer in hf.model.language_model.layers:
        fully_shard(layer, mesh=mesh, mp_policy=mp, reshard_after_forward=reshard)
    if vision == "per_block":
        for block in hf.model.visual.blocks:
            fully_shard(block, mesh=mesh, mp_policy=mp)
    else:
        fully_shard(hf.model.visual, mesh=mesh, mp_policy=mp)
    fully_shard(root, mesh=mesh, mp_policy=mp)


#: FSDP2 wrapping options compared by the "tune" suite (1 GPU); "plain_bf16" is a diagnostic only
#: (peft adapters cast to bf16, so the optimizer state is bf16 too: not a training setup).
TUNE_VARIANTS: dict[str, dict[str, Any]] = {
    "fsdp_per_block": {"vision": "per_block", "reshard": True},
    "fsdp_vision_one_unit": {"vision": "one", "reshard": True},
    "fsdp_vision_one_unit_no_reshard": {"vision": "one", "reshard": False},
    "plain_bf16": {},
}


def plan_input(cfg: BenchConfig, *, gpus: int, fsdp: bool, logprob: str, adapter_dtype: str, model: str = SHAPES["8B"]) -> PlanInput:
    """The planner's view of one benchmark config."""
    return PlanInput(
        model=model,
        lora_rank=32,
        micro_train_batch_size_per_gpu=cfg.batch,
        mini_batch_size=cfg.batch * gpus,
        max_prompt_tokens=cfg.prompt_text_tokens,
        max_response_tokens=cfg.response_tokens,
        image_px=(cfg.image_px, cfg.image_px),
        gpus_per_node=gpus,
        nodes=1,
        gradient_checkpointing=cfg.gradient_checkpointing,
        fsdp=fsdp,
        logprob_impl=logprob,
        adapter_compute_dtype=adapter_dtype,
        placement="split",
        gpu="H200",
        group_size=1,
    )


def _record(
    cfg: BenchConfig,
    *,
    gpus: int,
    device_name: str,
    res: dict[str, dict[str, Any]],
    base: str,
    impl: str,
    scaling: str | None,
    model: str = SHAPES["8B"],
) -> dict[str, Any]:
    imp, bl = res[impl], res[base]
    pin = plan_input(cfg, gpus=gpus, fsdp=True, logprob="chunked", adapter_dtype="bf16", model=model)
    flops = train_flops_per_sample(pin) * cfg.batch
    rec: dict[str, Any] = {
        "config": cfg.to_json() | {"model": model},
        "gpus": gpus,
        "device": device_name,
        "date": dt.date.today().isoformat(),
        "scaling": scaling,
        "improved_variant": impl,
        "baseline_variant": base,
        "measured_peak_gib": imp.get("peak_gib"),
        "tokens_per_s": imp.get("tokens_per_s"),
        "baseline_peak_gib": bl.get("peak_gib"),
        "baseline_tokens_per_s": bl.get("tokens_per_s"),
        "step_time_s": imp.get("step_time_s"),
        "baseline_step_time_s": bl.get("step_time_s"),
        "model_flops_per_gpu_step": flops,
        "mfu": flops / imp["step_time_s"] / H200_BF16_DENSE_FLOPS if imp.get("status") == "ok" else None,
        "baseline_mfu": flops / bl["step_time_s"] / H200_BF16_DENSE_FLOPS if bl.get("status") == "ok" else None,
        "variants": res,
        "variant_mfu": {
            k: flops / r["step_time_s"] / H200_BF16_DENSE_FLOPS for k, r in res.items() if r.get("status") == "ok" and "step_time_s" in r
        },
    }
    for key in ("comm_share", "allgather_s", "reducescatter_s", "profiled_step_s"):
        if key in imp:
            rec[key] = imp[key]
    return rec


def check_logprobs(root: PolicyLogprobs, cfg: BenchConfig, *, device: torch.device, vocab: int) -> dict[str, Any]:
    """Chunked vs naive log-probs (and their LoRA gradients) on the full-size model, against a float64 head.

    LoRA B is set to small random values first so the adapters change the output.
    """
    from hyperpod_rl.model.logprobs import naive_response_logprobs, response_logprobs

    _set_checkpointing(root, cfg.gradient_checkpointing)
    with torch.no_grad():
        gen = torch.Generator(device=device).manual_seed(7)
        for name, p in root.named_parameters():
            if "lora_B" in name:
                p.copy_(torch.randn(p.shape, generator=gen, device=device, dtype=p.dtype) * 1e-3)
    batch = make_batch(cfg, device=device, vocab=vocab, seed=1)
    hf = root.hf_model()
    inputs = {k: batch[k] for k in ("input_ids", "attention_mask", "pixel_values", "image_grid_thw", "mm_token_type_ids")}
    targets, mask = batch["input_ids"][:, 1:], batch["response_mask"][:, 1:]
    with torch.no_grad():
        hidden = hf.model(**inputs).last_hidden_state[:, :-1]
        ref = naive_response_logprobs(torch.nn.functional.linear(hidden.double(), hf.lm_head.weight.double()), targets, mask)[mask].double()
        naive = naive_response_logprobs(hf.lm_head(hidden), targets, mask)[mask].double()
        chunked = response_logprobs(hidden, hf.lm_head, targets, mask)[mask].double()

    def rel(a: torch.Tensor, b: torch.Tensor) -> float:
        return float((a - b).norm() / b.norm())

    grads = {}
    for path in ("naive", "chunked"):
        root.zero_grad(set_to_none=True)
        root(batch, path).backward()
        grads[path] = torch.cat([p.grad.reshape(-1).double() for n, p in root.named_parameters() if p.grad is not None and "lora" in n])
    root.zero_grad(set_to_none=True)
    return {
        "config": cfg.to_json(),
        "response_tokens_checked": int(mask.sum()),
        "rel_err_naive_vs_fp64": rel(naive, ref),
        "rel_err_chunked_vs_fp64": rel(chunked, ref),
        "rel_err_chunked_vs_naive": rel(chunked, naive),
        "max_abs_diff_chunked_vs_naive": float((chunked - naive).abs().max()),
        "lora_grad_rel_err_chunked_vs_naive": rel(grads["chunked"], grads["naive"]),
        "lora_grad_norm": float(grads["naive"].norm()),
    }


def run(suite: str, *, steps: int, tiny: bool, only: list[str] | None = None, shape_name: str = "8B") -> list[dict[str, Any]]:
    """Run one suite; every rank measures, the records are rank 0's."""
    distributed = "RANK" in os.environ
    if distributed:
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        dist.init_process_group(backend)
        rank, world = dist.get_rank(), dist.get_world_size()
    else:
        rank, world = 0, 1
    device = torch.device(f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}" if torch.cuda.is_available() else "cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    device_name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    shape = model_shape(SHAPES[shape_name])
    torch.manual_seed(1234)
    t0 = time.perf_counter()
    root: PolicyLogprobs | None = PolicyLogprobs(build_policy(shape, device=device, lora_rank=32, tiny=tiny))
    vocab = root.hf_model().config.text_config.vocab_size
    log = (lambda *a: print(*a, flush=True)) if rank == 0 else (lambda *a: None)
    log(f"built policy in {time.perf_counter() - t0:.1f}s on {device_name}; world={world}")
    records: list[dict[str, Any]] = []
    if suite == "tune":
        configs = TINY_SUITE if tiny else [SINGLE_SUITE[4], SINGLE_SUITE[0], SINGLE_SUITE[1]]
        tune: dict[str, dict[str, dict[str, Any]]] = {c.name: {} for c in configs}
        for variant, options in TUNE_VARIANTS.items():
            if root is None:
                torch.manual_seed(1234)
                root = PolicyLogprobs(build_policy(shape, device=device, lora_rank=32, tiny=tiny))
            if options:
                _fsdp_wrap_single(root, device, **options)
            else:
                root.to(torch.bfloat16)
            for cfg in configs:
                tune[cfg.name][variant] = measure(root, cfg, "improved", device=device, steps=steps, profile=False, vocab=vocab)
                log(cfg.name, variant, _short(tune[cfg.name][variant]))
            root = None
            gc.collect()
            if device.type == "cuda":
                torch.cuda.empty_cache()
        records = [
            {"config": c.to_json(), "gpus": 1, "device": device_name, "date": dt.date.today().isoformat(), "variants": tune[c.name]}
            for c in configs
        ]
    elif suite == "check":
        cfg = TINY_SUITE[0] if tiny else SINGLE_SUITE[0]
        rec = check_logprobs(root, cfg, device=device, vocab=vocab) | {
            "device": device_name,
            "date": dt.date.today().isoformat(),
            "gpus": 1,
        }
        log(json.dumps({k: v for k, v in rec.items() if k != "config"}))
        records = [rec]
    elif suite == "single":
        configs = TINY_SUITE if tiny else SINGLE_SUITE
        results: dict[str, dict[str, dict[str, Any]]] = {c.name: {} for c in configs}
        for path in ("naive", "chunked"):
            for cfg in configs:
                results[cfg.name][path] = measure(root, cfg, path, device=device, steps=steps, profile=False, vocab=vocab)
                log(cfg.name, path, _short(results[cfg.name][path]))
        _fsdp_wrap(root, 1, device) if distributed else _fsdp_wrap_single(root, device)
        for cfg in configs:
            results[cfg.name]["improved"] = measure(root, cfg, "improved", device=device, steps=steps, profile=False, vocab=vocab)
            log(cfg.name, "improved", _short(results[cfg.name]["improved"]))
        records = [
            _record(
                c,
                gpus=1,
                device_name=device_name,
                res=results[c.name],
                base="naive",
                impl="improved",
                scaling=None,
                model=SHAPES[shape_name],
            )
            for c in configs
        ]
    elif suite == "ckpt":
        assert root is not None
        configs = TINY_SUITE[:1] if tiny else [SINGLE_SUITE[1], SINGLE_SUITE[0]]
        records = [r | {"device": device_name} for r in run_ckpt(root, configs, device=device, steps=steps, vocab=vocab, log=log)]
    elif suite == "levers":
        assert root is not None
        records = run_levers(root, TINY_SUITE if tiny else LEVER_CONFIGS, device=device, steps=steps, vocab=vocab, log=log)
        records = [r | {"device": device_name} for r in records]
    else:
        suite_cfgs = [(c, "weak") for c in TINY_SUITE] if tiny else [(c, k) for c, k in FSDP_SUITE if not only or c.name in only]
        _fsdp_wrap(root, world, device)
        for cfg, kind in suite_cfgs:
            res = {}
            for path in ("fsdp_naive", "improved"):
                res[path] = measure(root, cfg, path, device=device, steps=steps, profile=path == "improved", vocab=vocab)
                log(cfg.name, path, _short(res[path]))
            records.append(_record(cfg, gpus=world, device_name=device_name, res=res, base="fsdp_naive", impl="improved", scaling=kind))
    if distributed:
        dist.destroy_process_group()
    return records


#: Configs of the "levers" suite: the issue's reference batch, a small checkpointed batch and the two
#: no-checkpointing configs where the FSDP2 path was slower than naive (0.81x at 4 x 551).
LEVER_CONFIGS = [SINGLE_SUITE[1], SINGLE_SUITE[0], SINGLE_SUITE[4], SINGLE_SUITE[6]]


def _compile_layers(root: PolicyLogprobs, on: bool) -> None:
    """``torch.compile`` each language decoder layer in place (``nn.Module.compile``), or undo it."""
    for layer in root.hf_model().model.language_model.layers:
        if on:
            layer.compile()
        else:
            layer._compiled_call_impl = None


def run_levers(
    root: PolicyLogprobs, configs: list[BenchConfig], *, device: torch.device, steps: int, vocab: int, log: Any
) -> list[dict[str, Any]]:
    """Update-speed levers on one GPU, each config measured under every variant in one process.

    Variants (same model, batch and optimizer): ``naive`` (baseline); ``autocast_bf16`` (what the
    reference trainer runs on one GPU: float32 adapters computed in bf16 under autocast, chunked
    log-probs, no FSDP2); ``+compile`` (each decoder layer ``torch.compile``'d); ``+liger``
    (Liger-Kernel's RMSNorm, RoPE and SwiGLU for Qwen3-VL, ``apply_liger_kernel_to_qwen3_vl``);
    ``+liger+compile``. The Liger variants come last: the kernels are patched into the model.
    """
    results: dict[str, dict[str, dict[str, Any]]] = {c.name: {} for c in configs}

    def each(variant: str, path: str, autocast: bool) -> None:
        for cfg in configs:
            torch.manual_seed(0)
            results[cfg.name][variant] = measure(root, cfg, path, device=device, steps=steps, profile=False, vocab=vocab, autocast=autocast)
            log(cfg.name, variant, _short(results[cfg.name][variant]))

    each("naive", "naive", False)
    each("autocast_bf16", "chunked", True)
    _compile_layers(root, True)
    each("autocast_bf16_compile", "chunked", True)
    _compile_layers(root, False)
    try:
        from liger_kernel.transformers import apply_liger_kernel_to_qwen3_vl

        apply_liger_kernel_to_qwen3_vl(rope=True, rms_norm=True, swiglu=True, fused_linear_cross_entropy=False, model=root.hf_model())
    except Exception as exc:  # noqa: BLE001 - recorded: the lever could not be applied here
        for cfg in configs:
            results[cfg.name]["autocast_bf16_liger"] = {"status": "error", "error": f"{type(exc).__name__}: {exc}"[:2000]}
    else:
        each("autocast_bf16_liger", "chunked", True)
        _compile_layers(root, True)
        each("autocast_bf16_liger_compile", "chunked", True)
        _compile_layers(root, False)
    return _best_records(configs, results, fallback="autocast_bf16")


def _best_records(configs: list[BenchConfig], results: dict[str, dict[str, dict[str, Any]]], *, fallback: str) -> list[dict[str, Any]]:
    """One record per config against ``naive``, its improved variant the fastest that ran (``fallback`` if none did)."""
    records = []
    for cfg in configs:
        ok = {k: r for k, r in results[cfg.name].items() if r.get("status") == "ok" and k != "naive"}
        best = min(ok, key=lambda k: ok[k]["step_time_s"]) if ok else fallback
        records.append(_record(cfg, gpus=1, device_name="", res=results[cfg.name], base="naive", impl=best, scaling=None))
    return records


#: Variants of the "ckpt" suite: (name, compiled layers, checkpointing placed by
#: :func:`hyperpod_rl.model.layers.checkpoint_decoder_layers` as (share of layers, policy), or None for
#: transformers' own checkpointing around each layer's ``__call__``).
CKPT_VARIANTS: list[tuple[str, bool, tuple[float, str] | None]] = [
    ("autocast_bf16_compile", True, None),
    ("compile_ckpt_inside", True, (1.0, "full")),
    ("compile_sac", True, (1.0, "save_matmuls")),
    ("compile_ckpt_half", True, (0.5, "full")),
    ("compile_ckpt_quarter", True, (0.25, "full")),
    ("sac", False, (1.0, "save_matmuls")),
]


def run_ckpt(
    root: PolicyLogprobs, configs: list[BenchConfig], *, device: torch.device, steps: int, vocab: int, log: Any
) -> list[dict[str, Any]]:
    """Checkpointing levers with compiled decoder layers, each config under every variant in one process.

    ``naive`` is the baseline. The other variants run the reference trainer's one-GPU path (bf16
    autocast, chunked log-probs) with the layers compiled or not and activations checkpointed by
    transformers (around each compiled layer) or inside each layer's forward: all of it, a leading
    share of the layers, or selectively (``save_matmuls``: matmul and attention outputs kept). Each
    compiled variant starts from a reset compile cache.
    """
    import torch._dynamo

    from hyperpod_rl.model.layers import checkpoint_decoder_layers, compile_decoder_layers, decoder_layers

    results: dict[str, dict[str, dict[str, Any]]] = {c.name: {} for c in configs}
    for cfg in configs:
        torch.manual_seed(0)
        results[cfg.name]["naive"] = measure(root, cfg, "naive", device=device, steps=steps, profile=False, vocab=vocab)
        log(cfg.name, "naive", _short(results[cfg.name]["naive"]))
    hf = root.hf_model()
    for name, compiled, placed in CKPT_VARIANTS:
        torch._dynamo.reset()
        checkpoint_decoder_layers(hf, fraction=placed[0] if placed else 0.0, policy=placed[1] if placed else "full")  # type: ignore[arg-type]
        switch = compile_decoder_layers(hf) if compiled else None
        for cfg in configs:
            torch.manual_seed(0)
            with switch.active() if switch is not None else contextlib.nullcontext():
                results[cfg.name][name] = measure(
                    root,
                    cfg,
                    "chunked",
                    device=device,
                    steps=steps,
                    profile=False,
                    vocab=vocab,
                    autocast=True,
                    hf_checkpointing=None if placed is None else False,
                )
            log(cfg.name, name, _short(results[cfg.name][name]))
        if switch is not None:
            for layer in decoder_layers(hf):
                layer._compiled_call_impl = None
    checkpoint_decoder_layers(hf, fraction=0.0)
    return _best_records(configs, results, fallback="autocast_bf16_compile")


def _fsdp_wrap_single(root: PolicyLogprobs, device: torch.device, **options: Any) -> None:
    """FSDP2 at world size 1 in a plain process: a one-rank process group on a free local port."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(port))
    if not dist.is_initialized():
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo", rank=0, world_size=1)
    _fsdp_wrap(root, 1, device, **options)


def _short(r: dict[str, Any]) -> str:
    if r.get("status") != "ok":
        return f"{r.get('status')}: {r.get('error', '')[:120]}"
    extra = f" comm={r['comm_share']:.1%}" if "comm_share" in r else ""
    return f"step={r['step_time_s']:.3f}s tok/s={r['tokens_per_s']:.0f} peak={r['peak_gib']:.2f}GiB{extra}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", choices=["single", "fsdp", "check", "tune", "levers", "ckpt"], required=True)
    ap.add_argument("--shape", choices=sorted(SHAPES), default="8B", help="model shape (single, levers, ckpt)")
    ap.add_argument("--only", nargs="*", help="fsdp suite: run only these config names")
    ap.add_argument("--steps", type=int, default=3, help="timed steps per variant (after one warm-up)")
    ap.add_argument("--out", type=Path, required=True, help="JSON file to write (rank 0)")
    ap.add_argument("--tiny", action="store_true", help="tiny model on CPU/GPU: a smoke test of the harness itself")
    args = ap.parse_args()
    kwargs = {"steps": args.steps, "tiny": args.tiny, "only": args.only, "shape_name": args.shape}
    if int(os.environ.get("RANK", "0")) != 0:
        run(args.suite, **kwargs)
        return
    params = {"suite": args.suite, **kwargs, "world_size": int(os.environ.get("WORLD_SIZE", "1"))}
    with Recording(args.out.stem, params=params, path=args.out) as rec:
        rec.results = run(args.suite, **kwargs)


if __name__ == "__main__":
    main()
