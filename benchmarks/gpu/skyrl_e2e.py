"""The SkyRL backend on one GPU, end to end through our entrypoint (issue 39, scope 2-4).

    bash benchmarks/gpu/run_skyrl.sh       # the device call (stages the kit's last call, then runs this)
    PYTHONPATH=$HPRL_SITE_SKYRL:$PYTHONPATH python3 -m benchmarks.gpu.skyrl_e2e --out $OUT/h100_skyrl_e2e_2b.json

(after ``bash benchmarks/gpu/stage.sh 1..N`` and ``source $HOME/stage/env.sh``; docs/gpu.md, "SkyRL 0.3.0
on one GPU"). The stack is the production image's: SkyRL 0.3.0, vLLM 0.23.0, Ray 2.56.0, transformers
5.8.0, peft 0.18.1 on the GPU image's torch 2.11.0. Phases, each recorded with its seconds, whether it
passed and its error, the record rewritten after every phase so a failure midway still leaves evidence:

1. ``env``: versions (transformers must be SkyRL's 5.8.0: site-skyrl in front);
2. ``data``: maze train/held-out parquet files (:func:`hyperpod_rl.quickstart.prepare_dataset`);
3. ``model``: a Qwen3-VL checkpoint directory of the shape (random init, the real config numbers of
   :mod:`hyperpod_rl.plan.shapes`, bf16 safetensors) with the embedded tiny tokenizer/processor
   (:func:`benchmarks.gpu.grpo_e2e.build_model`), reused when an earlier call on the same machine
   wrote it; with ``--init-adapter`` also a starting LoRA adapter (r32, random non-zero B, its
   ``provenance.json`` naming the checkpoint's revision) standing in for an SFT adapter;
4. ``cluster``: the embedded local Ray cluster (:func:`hyperpod_rl.cluster.local.start_local_cluster`),
   started with ``PYTHONPATH`` = site-skyrl first (SkyRL replaces the job's runtime env with its
   own, ``RAY_OVERRIDE_JOB_RUNTIME_ENV=1``, so its workers see the cluster's environment);
5. ``train``: ``python -m hyperpod_rl.train --backend skyrl`` submitted with
   :func:`hyperpod_rl.jobs.submit_run` from the ``single-gpu`` preset (colocated FSDP2 policy + one
   vLLM engine with sleep mode, LoRA r32, group 8, multi-turn maze, the VLM generator),
   ``trainer.steps = --steps + 1`` and a checkpoint every step; once checkpoint ``--steps`` is
   written the job is stopped (``--train-to-end`` lets it finish and export instead). With
   ``--init-adapter`` the policy starts from the adapter (:mod:`hyperpod_rl.train.skyrl_init_adapter`;
   its read-back check is recorded); if that run fails before its first step, the phase is tried
   once more from a fresh LoRA, and the record says so;
6. ``resume``: the same run submitted again (``resume_mode=latest``): it resumes from the newest
   checkpoint, trains the last step and exports ``<run>/adapter/`` with provenance;
7. ``serve``: the adapter in ``vllm.LLM`` (``LoRARequest``) and in the in-process policy
   (:func:`hyperpod_rl.model.adapter.load_policy`), greedy answers on ``--heldout`` held-out mazes
   (the direction after ``<answer>``, both constrained to the answer words), compared;
8. ``reference``: the reference backend on the same workload (same model, data, group, turns,
   lengths, LoRA; ``rollout.engine: vllm``, its defaults otherwise), ``--reference-steps`` steps
   submitted the same way, its per-step timings beside SkyRL's.

``--reference-first`` runs phase 8 before phase 5 (one device call with both sides: the reference side
completes even when the time budget cuts SkyRL's run). ``--phases`` picks the phases to run (each with what it needs: a later call on the same machine
finds the model, the data and the run directory of an earlier one). Recorded: per-phase seconds,
SkyRL's per-step timings (``timing/*``) from our ``metrics.jsonl``, samples/s and generated tokens/s
from them, SkyRL's rollout-vs-train log-prob difference, peak GPU memory (device level, nvidia-smi),
the vLLM KV cache and engine start lines of SkyRL's log, package versions, the job statuses and the
last 200 lines of the job and SkyRL logs on failure. ``--copy-to DIR`` copies each run's
``metrics.jsonl`` and the tails of SkyRL's logs there. The cluster is stopped whatever happens.
``--time-budget`` (s) bounds the whole run: a phase that cannot finish in what is left is skipped.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from benchmarks._record import REPO, Recording, exit_on_sigterm

GIB = 2**30
#: SkyRL 0.3.0's transformers pin, which the run must see (site-skyrl in front of the image's 5.17).
SKYRL_TRANSFORMERS = "5.8.0"
VERSIONS = ("torch", "transformers", "peft", "vllm", "ray", "skyrl", "skyrl-gym", "trl", "flash-attn", "pydantic")


class GpuPeak:
    """Device-level GPU memory in use (nvidia-smi, MiB), polled every second in a thread; peak per phase."""

    def __init__(self) -> None:
        self.peak_mib = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.available = subprocess.run(["which", "nvidia-smi"], capture_output=True).returncode == 0

    def _run(self) -> None:
        while not self._stop.wait(1.0):
            try:
                out = subprocess.run(
                    ["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=10
                )
                self.peak_mib = max(self.peak_mib, max(float(x) for x in out.stdout.split()))
            except (OSError, ValueError, subprocess.SubprocessError):
                continue

    def __enter__(self) -> GpuPeak:
        if self.available:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()

    def gib(self) -> float | None:
        return round(self.peak_mib / 1024, 2) if self.available else None


class Run:
    """The record being built, rewritten to ``--out`` after every phase."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.t0 = time.monotonic()
        self.started_at = time.time()
        self.load_start = list(os.getloadavg())
        self.results: dict[str, Any] = {"phases": {}, "passed": {}}

    def left(self) -> float:
        return self.args.time_budget - (time.monotonic() - self.t0)

    def save(self) -> None:
        notes = (
            "SkyRL 0.3.0 with its own pins (vLLM 0.23.0, Ray 2.56.0, transformers 5.8.0, peft 0.18.1) on the GPU image's "
            "torch 2.11.0+cu130: the production image's stack (container/requirements.lock); flash-attn not carried "
            "(sdpa attention, benchmarks/gpu/kit.py's import stand-in)"
        )
        self.results["wall_s"] = round(time.monotonic() - self.t0, 1)
        params = {k: str(v) if isinstance(v, Path) else v for k, v in vars(self.args).items()}
        with Recording(
            self.args.out.stem,
            params=params,
            path=self.args.out,
            notes=notes,
            started_at=self.started_at,
            load_avg_start=self.load_start,
        ) as rec:
            rec.results = self.results

    def phase(self, name: str, need_s: float, fn: Any, *deps: str) -> Any:
        """Run ``fn()`` as phase ``name`` if it was asked for, its dependencies passed and ``need_s`` seconds are left."""
        rec: dict[str, Any] = {}
        if name not in self.args.phases:
            return None
        self.results["phases"][name] = rec
        missing = [d for d in deps if not self.results["passed"].get(d)]
        if missing:
            rec["skipped"] = f"needs {', '.join(missing)}"
        elif self.left() < need_s:
            rec["skipped"] = f"time budget: {self.left():.0f} s left, the phase needs about {need_s:.0f} s"
        if "skipped" in rec:
            self.results["passed"][name] = False
            print(f"== {name}: skipped ({rec['skipped']})", flush=True)
            self.save()
            return None
        print(f"== {name} ({self.left():.0f} s left)", flush=True)
        t = time.monotonic()
        out = None
        try:
            with GpuPeak() as gpu:
                out = fn(rec)
            rec["peak_gpu_gib"] = gpu.gib()
            self.results["passed"][name] = bool(rec.get("ok", True))
        except BaseException as err:  # noqa: BLE001 - every failure is evidence; SystemExit/KeyboardInterrupt re-raised below
            rec["error"] = f"{type(err).__name__}: {err}"[:4000]
            rec["traceback"] = traceback.format_exc()[-6000:]
            self.results["passed"][name] = False
            print(rec["traceback"], flush=True)
            if isinstance(err, (SystemExit, KeyboardInterrupt)):
                rec["seconds"] = round(time.monotonic() - t, 1)
                self.save()
                raise
        rec["seconds"] = round(time.monotonic() - t, 1)
        print(f"== {name}: {'ok' if self.results['passed'][name] else 'FAILED'} in {rec['seconds']} s", flush=True)
        self.save()
        return out


def _versions() -> dict[str, str]:
    from importlib import metadata

    out = {}
    for name in VERSIONS:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "absent"
    return out


def _tail(path: Path, n: int = 200) -> list[str]:
    try:
        return path.read_text(errors="replace").splitlines()[-n:]
    except OSError:
        return []


def _skyrl_logs(run_dir: Path, n: int = 200) -> dict[str, list[str]]:
    """The tails of SkyRL's infra logs (its workers' and vLLM servers' output goes there, not to the job log)."""
    return {str(p.relative_to(run_dir)): _tail(p, n) for p in sorted((run_dir / "skyrl-logs").glob("**/*.log"))}


def _grep(lines: list[str], *words: str, limit: int = 30) -> list[str]:
    return [line[:400] for line in lines if any(w in line for w in words)][:limit]


def _latest_ckpt(run_dir: Path) -> int:
    """The newest checkpoint's step: SkyRL's ``latest_ckpt_global_step.txt``, else the reference backend's newest
    valid ``step_N`` directory (:func:`hyperpod_rl.runs.files.latest_valid_checkpoint`); 0 without one."""
    from hyperpod_rl.runs.files import latest_valid_checkpoint

    try:
        return int((run_dir / "checkpoints" / "latest_ckpt_global_step.txt").read_text().strip())
    except (OSError, ValueError):
        pass
    newest = latest_valid_checkpoint(run_dir / "checkpoints")
    try:
        return int(newest.name.removeprefix("step_")) if newest is not None else 0
    except ValueError:
        return 0


def _rounded(x: float) -> float:
    """4 decimals, or 4 significant digits below 1e-3 (a learning rate of 3e-5 is not 0)."""
    return round(x, 4) if abs(x) >= 1e-3 else float(f"{x:.4g}")


def _metrics(run_dir: Path, samples_per_step: int) -> list[dict[str, Any]]:
    """Per-step timings from a run's metrics.jsonl (either backend), with samples/s and generated tokens/s.

    ``generated_tokens_per_s``: the tokens the policy sampled in the step over the generate seconds. SkyRL
    reports them per episode (``generate/avg_assistant_tokens``, all turns); the reference backend trains on
    every sampled token (``trainer/num_tokens``). Not SkyRL's ``policy/response_length``: it also counts the
    observation tokens between turns.
    """
    path = run_dir / "metrics.jsonl"
    steps = []
    for line in path.read_text().splitlines() if path.exists() else []:
        rec = json.loads(line)
        v = rec["values"]
        row: dict[str, Any] = {
            "step": rec["step"],
            **{
                k: _rounded(x)
                for k, x in v.items()
                if k.startswith(("timing/", "reward/", "policy/", "generate/", "rollout/", "trainer/num_"))
            },
        }
        step_s, gen_s = v.get("timing/step"), v.get("timing/generate")
        if step_s:
            row["samples_per_s"] = round(samples_per_step / step_s, 3)
        sampled = (
            samples_per_step * v["generate/avg_assistant_tokens"] if "generate/avg_assistant_tokens" in v else v.get("trainer/num_tokens")
        )
        if gen_s and sampled:
            row["generated_tokens_per_s"] = round(sampled / gen_s, 1)
        steps.append(row)
    return steps


def build_checkpoint(args: argparse.Namespace, storage: Path, rows: list[dict[str, Any]]) -> tuple[Path, bool]:
    """The random-init checkpoint directory of ``--shape`` with the tiny tokenizer and processor, and whether it was reused.

    An earlier call on the same machine (same ``HPRL_E2E_STORAGE``) left it complete when its
    ``hyperpod_rl_model.json`` (written last) is there.
    """
    import torch

    from benchmarks.gpu.grpo_e2e import build_model
    from benchmarks.gpu.workload import save_for_vllm
    from hyperpod_rl.model.tiny import build_tiny_qwen3vl
    from hyperpod_rl.tasks import get_task

    root = storage / "models" / f"qwen3-vl-{args.shape.lower()}-random"
    if (root / "hyperpod_rl_model.json").is_file():
        return root, True
    _, processor = build_tiny_qwen3vl(
        seed=0, corpus=[json.dumps(r["prompt"])[:2000] for r in rows[:16]], answer_words=get_task("maze").answer_words
    )
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = build_model(args.shape, processor, device=device, tiny=args.tiny)
    save_for_vllm(root, model, processor)
    (root / "hyperpod_rl_model.json").write_text(json.dumps({"model_id": f"random-init Qwen3-VL-{args.shape} shape", "seed": 0}))
    del model
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return root, False


def build_init_adapter(args: argparse.Namespace, model_dir: Path, storage: Path) -> Path:
    """A starting LoRA adapter for the train phase, standing in for an SFT adapter (none can be trained here in time).

    PEFT's LoRA on the language model only (``exclude_modules`` = the vision tower), rank and alpha
    of the ``single-gpu`` preset, ``init_lora_weights=False``: B is random, not zero, so the adapter
    changes the policy and a run that silently started from a fresh LoRA would show. Its
    ``provenance.json`` names the checkpoint's revision (``random-init``), as a run's adapter does.
    """
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForImageTextToText

    from hyperpod_rl.config.run import RunConfig

    out = storage / "adapters" / f"init-{args.shape.lower()}"
    if (out / "provenance.json").is_file():
        return out
    lora = RunConfig.from_preset("single-gpu").lora
    torch.manual_seed(1)
    base = AutoModelForImageTextToText.from_pretrained(str(model_dir), dtype=torch.bfloat16)
    peft = get_peft_model(
        base,
        LoraConfig(
            r=lora.rank,
            lora_alpha=lora.alpha,
            target_modules=lora.target_modules if isinstance(lora.target_modules, str) else list(lora.target_modules),
            exclude_modules=lora.exclude_modules,
            init_lora_weights=False,
        ),
    )
    with torch.no_grad():  # a small change: random B scaled so the logits move but stay in range
        for name, p in peft.named_parameters():
            if ".lora_B." in name:
                p.mul_(0.01)
    peft.save_pretrained(str(out))
    (out / "provenance.json").write_text(
        json.dumps(
            {
                "run_id": "synthetic-init",
                "stage": "sft",
                "steps": 0,
                "base_model_revision": "random-init",
                "note": "random LoRA (B not zero) standing in for an SFT adapter: benchmarks/gpu/skyrl_e2e.py build_init_adapter",
            }
        )
    )
    del peft, base
    return out


def run_config(
    args: argparse.Namespace, storage: Path, model_dir: Path, data: Any, *, init_adapter: Path | None = None, backend: str = "skyrl"
) -> Any:
    """The ``single-gpu`` preset on this workload; ``backend='reference'`` is the same workload on the reference backend."""
    from hyperpod_rl.config.run import RunConfig

    model: dict[str, Any] = {"path": str(model_dir), "model_id": f"random-init-qwen3-vl-{args.shape.lower()}", "revision": "random-init"}
    if init_adapter is not None:
        model["init_adapter"] = str(init_adapter)
    extra: dict[str, Any] = {"backend": "reference"} if backend == "reference" else {}
    # A random-init model writes no well-formed answers: SkyRL's rollouts sample only the answer tokens (its VLM
    # generator needs each turn's text to tokenize back to what was sampled); the reference backend's vLLM
    # engine decodes free text (its constrained mode is a one-pass sampler, not a vLLM engine).
    engine = {"engine": "vllm"} if backend == "reference" else {"action_constraint": "directions"}
    return RunConfig.from_preset(
        "single-gpu",
        run_id=f"{'skyrl' if backend == 'skyrl' else 'reference'}-e2e-{args.shape.lower()}{'-init' if init_adapter else ''}",
        model=model,
        data={"train_path": str(data.train), "heldout_path": str(data.heldout), "prompts_per_step": args.mazes},
        grpo={"group_size": args.group},
        rollout={
            "max_turns": args.max_turns,
            "max_new_tokens": args.max_new_tokens,
            "max_model_len": args.max_model_len,
            "max_input_tokens": args.max_model_len - args.max_new_tokens,
            "gpu_memory_utilization": args.gpu_memory_utilization,
            **engine,
        },
        trainer={"steps": args.steps + 1, "eval_interval": 0, "mini_batch_size": args.mazes, "micro_batch_size": args.micro_batch},
        checkpoint={"interval": 1, "keep": args.steps + 2, "resume": "latest"},
        storage={"root": str(storage), "shared": False},
        logging={"logger": "console"},
        **extra,
    )


def _job_env() -> dict[str, str]:
    """The job's env: our PYTHONPATH (SKYRL_PYTHONPATH_EXPORT makes SkyRL forward it to its workers) and the GPU-machine settings."""
    keep = ("PYTHONPATH", "VLLM_USE_FLASHINFER_SAMPLER", "VLLM_NO_USAGE_STATS", "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
    keep += ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS", "PATH")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    env["SKYRL_PYTHONPATH_EXPORT"] = "1"
    env["SKYRL_DUMP_INFRA_LOG_TO_STDOUT"] = os.environ.get("SKYRL_DUMP_INFRA_LOG_TO_STDOUT", "0")
    return env


def _follow(client: Any, submission_id: str, run_dir: Path, *, stop_at_ckpt: int | None, timeout_s: float) -> tuple[str, bool]:
    """Poll the job until it ends; with ``stop_at_ckpt``, stop it once that checkpoint is written. Returns (status, stopped_by_us)."""
    from hyperpod_rl.jobs import wait_terminal

    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        status = str(client.get_job_status(submission_id))
        status = status.rsplit(".", 1)[-1]
        if status != last:
            print(f"   job {submission_id}: {status}", flush=True)
            last = status
        if status in ("SUCCEEDED", "FAILED", "STOPPED"):
            return status, False
        if stop_at_ckpt is not None and _latest_ckpt(run_dir) >= stop_at_ckpt:
            print(f"   checkpoint {stop_at_ckpt} written: stopping the job (the resume phase continues it)", flush=True)
            client.stop_job(submission_id)
            return wait_terminal(client, submission_id, 60.0) or "did not stop within 60 s", True
        time.sleep(2.0)
    client.stop_job(submission_id)
    return f"timed out after {timeout_s:.0f} s (stopped)", True


def _job_record(rec: dict[str, Any], client: Any, submission_id: str, run_dir: Path, status: str, ok: bool, samples: int) -> None:
    logs = client.get_job_logs(submission_id).splitlines()
    rec.update(submission_id=submission_id, status=status, ok=ok)
    rec["metrics"] = _metrics(run_dir, samples)
    rec["latest_checkpoint"] = _latest_ckpt(run_dir)
    rec["log_lines"] = len(logs)
    skyrl = _skyrl_logs(run_dir)
    every = logs + [line for tail in skyrl.values() for line in tail]
    rec["vllm_lines"] = _grep(
        every, "KV cache", "init engine", "Loading weights took", "Model loading took", "torch.compile takes", "Graph capturing"
    )
    rec["skyrl_lines"] = _grep(every, "Resum", "resum", "global_step", "flash-attn", "sdpa", "adapter written", "policy LoRA initialised")
    if not ok:
        rec["job_log_tail"] = logs[-200:]
        rec["skyrl_log_tails"] = skyrl


def compare_serving(args: argparse.Namespace, model_dir: Path, adapter: Path, heldout: list[dict[str, Any]], rec: dict[str, Any]) -> None:
    """Greedy answers of the adapter in vLLM (LoRARequest) and in the in-process policy on the same held-out mazes."""
    import torch

    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # the engine core in this process (its cache config readable)
    from vllm import LLM, SamplingParams
    from vllm.lora.request import LoRARequest

    from hyperpod_rl.model.adapter import load_policy
    from hyperpod_rl.model.policy import messages_to_template

    rows = heldout[: args.heldout]
    prompts = [r["prompt"] for r in rows]
    policy = load_policy(model_dir, adapter, action_constraint="directions", torch_dtype=torch.bfloat16)
    policy.model.to("cuda")
    t = time.perf_counter()
    hf_actions = policy.act(prompts, greedy=True)
    rec["hf_s"] = round(time.perf_counter() - t, 2)
    hf = [a.text for a in hf_actions]
    words, allowed, prefix = policy.answer_words, [int(i) for i in policy.allowed_ids], list(policy.prefix_ids)
    processor = policy.processor
    del policy
    torch.cuda.empty_cache()

    t = time.perf_counter()
    llm = LLM(
        model=str(model_dir),
        tokenizer=str(model_dir),
        dtype="bfloat16",
        enable_lora=True,
        max_lora_rank=32,
        max_loras=1,
        gpu_memory_utilization=0.3,
        max_model_len=args.max_model_len,
        enforce_eager=True,
        generation_config="vllm",
        logprobs_mode="processed_logprobs",
        limit_mm_per_prompt={"image": 1, "video": 0},
        seed=0,
    )
    rec["engine_start_s"] = round(time.perf_counter() - t, 1)
    try:
        cache = llm.llm_engine.vllm_config.cache_config
        rec["kv_cache_tokens"] = int(cache.num_gpu_blocks) * int(cache.block_size)
    except Exception as err:  # noqa: BLE001 - optional figure
        rec["kv_cache_tokens"] = f"unavailable ({type(err).__name__})"
    requests = []
    for p in prompts:
        tmpl, images, _ = messages_to_template(p)
        text = processor.apply_chat_template(tmpl, add_generation_prompt=True, tokenize=False) + "<answer>"
        requests.append({"prompt": text, "multi_modal_data": {"image": images[0]}} if images else {"prompt": text})
    params = SamplingParams(temperature=0.0, max_tokens=1, allowed_token_ids=allowed, logprobs=len(allowed))
    t = time.perf_counter()
    outs = llm.generate(requests, params, lora_request=LoRARequest("skyrl-adapter", 1, str(adapter)), use_tqdm=False)
    rec["vllm_s"] = round(time.perf_counter() - t, 2)
    base = llm.generate(requests, params, use_tqdm=False)
    vl, margins, prefix_ok, adapter_effect = [], [], [], []
    for out, b in zip(outs, base, strict=True):
        tok = out.outputs[0].token_ids[0]
        vl.append(f"<answer>{words[allowed.index(tok)]}</answer>" if tok in allowed else f"<token {tok}>")
        lp = sorted((x.logprob for x in out.outputs[0].logprobs[0].values()), reverse=True)
        margins.append(round(lp[0] - lp[1], 4) if len(lp) > 1 else None)
        prefix_ok.append(list(out.prompt_token_ids[-len(prefix) :]) == prefix)
        lb = {k: v.logprob for k, v in b.outputs[0].logprobs[0].items()}
        la = {k: v.logprob for k, v in out.outputs[0].logprobs[0].items()}
        adapter_effect.append(round(max(abs(la[k] - lb.get(k, la[k])) for k in la), 5))
    same = [a == b for a, b in zip(hf, vl, strict=True)]
    rec.update(
        mazes=len(rows),
        equal=sum(same),
        hf_answers=hf,
        vllm_answers=vl,
        top2_margin_nats=margins,
        prompt_ends_with_answer_prefix=all(prefix_ok),
        adapter_vs_base_max_logprob_change=adapter_effect,
        ok=all(same) and all(prefix_ok) and len(rows) >= 16,
    )


PHASES = ("env", "data", "model", "cluster", "train", "resume", "serve", "reference")


def _copy_run_files(run_dir: Path, dest: Path | None, tag: str) -> None:
    """``metrics.jsonl`` and the tails of SkyRL's logs of a run, to ``dest`` (the device call's ``$OUT``)."""
    if dest is None or not run_dir.is_dir():
        return
    dest.mkdir(parents=True, exist_ok=True)
    if (run_dir / "metrics.jsonl").is_file():
        shutil.copyfile(run_dir / "metrics.jsonl", dest / f"metrics_{tag}.jsonl")
    logs = _skyrl_logs(run_dir, 400)
    if logs:
        (dest / f"skyrl_logs_{tag}.txt").write_text("".join(f"===== {name}\n" + "\n".join(lines) + "\n" for name, lines in logs.items()))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--shape", default="2B", choices=("2B", "4B", "8B"))
    ap.add_argument("--steps", type=int, default=3, help="steps before the stop; the resume trains one more")
    ap.add_argument("--mazes", type=int, default=8, help="mazes per step (the single-gpu preset's 8)")
    ap.add_argument("--group", type=int, default=8)
    ap.add_argument("--max-turns", type=int, default=3)
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument("--max-model-len", type=int, default=8192)
    ap.add_argument("--micro-batch", type=int, default=8)
    ap.add_argument("--gpu-memory-utilization", type=float, default=0.5)
    ap.add_argument("--heldout", type=int, default=16, help="held-out mazes compared in the serve phase")
    ap.add_argument("--reference-steps", type=int, default=4, help="steps of the reference backend in the reference phase")
    ap.add_argument("--time-budget", type=float, default=540.0, help="seconds for the whole run")
    ap.add_argument(
        "--phases", default="train,resume,serve", help=f"comma-separated, of {', '.join(PHASES[4:])} (env..cluster run as needed)"
    )
    ap.add_argument("--init-adapter", action="store_true", help="the train phase starts from a starting adapter (build_init_adapter)")
    ap.add_argument("--train-to-end", action="store_true", help="the train phase runs all steps and exports (no stop and resume)")
    ap.add_argument("--reference-first", action="store_true", help="run the reference phase before the train phase")
    ap.add_argument("--copy-to", type=Path, help="copy each run's metrics.jsonl and SkyRL log tails here")
    ap.add_argument("--tiny", action="store_true", help="a tiny model (a CPU dry run of this script's plumbing)")
    args = ap.parse_args(argv)
    wanted = {p.strip() for p in args.phases.split(",") if p.strip()}
    if wanted - set(PHASES[4:]):
        ap.error(f"--phases: unknown {sorted(wanted - set(PHASES[4:]))}; choose from {', '.join(PHASES[4:])}")
    needs_cluster = bool(wanted & {"train", "resume", "reference"})
    args.phases = [p for p in PHASES if p in {"env", "data", "model", *(["cluster"] if needs_cluster else []), *wanted}]
    exit_on_sigterm()
    run = Run(args)
    storage = Path(os.environ.get("HPRL_E2E_STORAGE") or tempfile.mkdtemp(prefix="skyrl-e2e-"))
    state: dict[str, Any] = {}
    samples = args.mazes * args.group

    def env(rec: dict[str, Any]) -> None:
        import torch

        rec["versions"] = _versions()
        rec["python"] = sys.version.split()[0]
        rec["pythonpath"] = os.environ.get("PYTHONPATH", "").split(":")
        rec["gpu"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
        rec["storage"] = str(storage)
        rec["ok"] = rec["versions"]["transformers"] == SKYRL_TRANSFORMERS or args.tiny  # SkyRL's pin: site-skyrl in front

    def data(rec: dict[str, Any]) -> None:
        from hyperpod_rl.quickstart import QuickstartOptions, prepare_dataset
        from hyperpod_rl.tasks import read_rows

        opts = QuickstartOptions.build(
            train_rows=64,
            heldout_rows=max(args.heldout, 16),
            max_turns=args.max_turns,
            steps=args.steps,
            group_size=args.group,
            prompts_per_step=args.mazes,
        )
        state["data"] = prepare_dataset(opts, storage)
        state["train_rows"] = read_rows(state["data"].train)
        state["heldout_rows"] = read_rows(state["data"].heldout)
        rec.update(
            train=str(state["data"].train), heldout=str(state["data"].heldout), rows=[len(state["train_rows"]), len(state["heldout_rows"])]
        )

    def model(rec: dict[str, Any]) -> None:
        state["model_dir"], rec["reused"] = build_checkpoint(args, storage, state["train_rows"])
        files = sorted(state["model_dir"].iterdir())
        rec.update(path=str(state["model_dir"]), files={f.name: f.stat().st_size for f in files})
        if args.init_adapter:
            state["init_adapter"] = build_init_adapter(args, state["model_dir"], storage)
            rec["init_adapter"] = str(state["init_adapter"])

    def cluster(rec: dict[str, Any]) -> None:
        from hyperpod_rl.cluster.local import start_local_cluster

        path = [p for p in os.environ.get("PYTHONPATH", "").split(":") if p]
        if str(REPO) not in path:
            path.append(str(REPO))
        os.environ["PYTHONPATH"] = ":".join(path)  # the cluster (and SkyRL's workers) inherit it
        state["cluster"] = start_local_cluster()
        rec.update(dashboard=state["cluster"].dashboard_url, pythonpath=path)

    def submit_and_follow(rec: dict[str, Any], cfg: Any, *, stop_at: int | None, reserve_s: float) -> tuple[Path, str]:
        from hyperpod_rl.jobs import entrypoint_gpus, submit_run

        client = state["cluster"].job_client()
        run_dir = storage / "runs" / cfg.run_id
        handle = submit_run(client, cfg, run_dir, env_vars=_job_env())
        rec["entrypoint_num_gpus"] = entrypoint_gpus(cfg)
        status, stopped = _follow(client, handle.submission_id, run_dir, stop_at_ckpt=stop_at, timeout_s=max(run.left() - reserve_s, 60))
        ok = _latest_ckpt(run_dir) >= (stop_at or 1) and len(_metrics(run_dir, samples)) >= (stop_at or 1)
        _job_record(rec, client, handle.submission_id, run_dir, status, ok, samples)
        rec["stopped_after_checkpoint"] = stopped
        _copy_run_files(run_dir, args.copy_to, cfg.run_id)
        return run_dir, status

    def train(rec: dict[str, Any]) -> None:
        from hyperpod_rl.train.skyrl_init_adapter import read_check

        stop_at = None if args.train_to_end else args.steps
        init = state.get("init_adapter")
        cfg = run_config(args, storage, state["model_dir"], state["data"], init_adapter=init)
        reserve = 200 if {"resume", "serve"} & set(args.phases) else 25  # what the later phases of this call need
        run_dir, status = submit_and_follow(rec, cfg, stop_at=stop_at, reserve_s=reserve)
        if init is not None:
            rec["init_adapter_check"] = read_check(run_dir)
            if not rec["metrics"] and run.left() > 330:
                # the starting adapter kept the run from its first step: the rest of the record from a fresh LoRA
                first = {k: rec.pop(k) for k in list(rec) if k != "init_adapter_check"}
                rec["init_adapter_attempt"] = first
                cfg = run_config(args, storage, state["model_dir"], state["data"])
                run_dir, status = submit_and_follow(rec, cfg, stop_at=stop_at, reserve_s=reserve)
        state["config"], state["run_dir"] = cfg, run_dir
        if args.train_to_end:  # all steps in one job, then the export
            prov_file = run_dir / "adapter" / "provenance.json"
            rec["provenance"] = json.loads(prov_file.read_text()) if prov_file.is_file() else None
            rec["ok"] = status == "SUCCEEDED" and len(rec["metrics"]) >= args.steps + 1 and rec["provenance"] is not None

    def resume(rec: dict[str, Any]) -> None:
        from hyperpod_rl.jobs import strip_ansi

        if "config" not in state:  # an earlier call on this machine trained it
            init = state.get("init_adapter")
            state["config"] = run_config(args, storage, state["model_dir"], state["data"], init_adapter=init)
            state["run_dir"] = storage / "runs" / state["config"].run_id
        run_dir = state["run_dir"]
        before = _latest_ckpt(run_dir)
        rec["resumed_from"] = before
        if before < 1:
            raise RuntimeError(f"no checkpoint under {run_dir}/checkpoints to resume from")
        _, status = submit_and_follow(rec, state["config"], stop_at=None, reserve_s=130 if "serve" in args.phases else 20)
        steps = [m["step"] for m in _metrics(run_dir, samples)]
        adapter = run_dir / "adapter"
        prov = json.loads((adapter / "provenance.json").read_text()) if (adapter / "provenance.json").exists() else None
        # a resume, not a retrain: SkyRL said it loaded the checkpoint, and metrics.jsonl (appended by both jobs) holds
        # each step once, this job's only step the last one
        resumed = any(f"Resuming from global_step: {before}" in strip_ansi(line) for line in rec.get("skyrl_lines", []))
        rec["resumed_line_seen"] = resumed
        rec["ok"] = (
            status == "SUCCEEDED"
            and resumed
            and steps == list(range(1, args.steps + 2))
            and prov is not None
            and prov.get("steps") == args.steps + 1
        )
        rec.update(
            metric_steps=steps,
            provenance=prov,
            adapter_files=sorted(p.name for p in adapter.iterdir()) if adapter.is_dir() else [],
        )

    def reference(rec: dict[str, Any]) -> None:
        cfg = run_config(args, storage, state["model_dir"], state["data"], backend="reference")
        cfg = cfg.model_copy(update={"trainer": cfg.trainer.model_copy(update={"steps": args.reference_steps})})
        submit_and_follow(rec, cfg, stop_at=None, reserve_s=20)

    def serve(rec: dict[str, Any]) -> None:
        run_dir = state.get("run_dir") or storage / "runs" / run_config(args, storage, state["model_dir"], state["data"]).run_id
        candidates = [run_dir / "adapter"] + sorted((storage / "runs").glob("skyrl-e2e-*/adapter"))
        adapter = next((a for a in candidates if (a / "provenance.json").is_file()), None)
        if adapter is None:
            raise RuntimeError(f"no exported adapter under {storage / 'runs'}")
        rec["adapter"] = str(adapter)
        rec["adapter_sha256"] = json.loads((adapter / "provenance.json").read_text()).get("adapter_sha256")
        compare_serving(args, state["model_dir"], adapter, state["heldout_rows"], rec)

    try:
        run.phase("env", 5, env)
        run.phase("data", 20, data)
        run.phase("model", 60, model, "data")
        run.phase("cluster", 60, cluster)
        if args.reference_first:  # the reference side's record is complete even if SkyRL's run is cut by the budget
            run.phase("reference", 120, reference, "model", "cluster")
        run.phase("train", 150, train, "model", "cluster")
        run.phase("resume", 100, resume, "model", "cluster")
        if not args.reference_first:
            run.phase("reference", 120, reference, "model", "cluster")
    finally:
        if "cluster" in state:
            try:
                state["cluster"].stop()
                run.results["cluster_stopped"] = True
            except Exception as err:  # noqa: BLE001 - recorded; nothing else to do
                run.results["cluster_stopped"] = f"{type(err).__name__}: {err}"
            run.save()
    run.phase("serve", 90, serve, "model")
    run.results["passed"]["all"] = all(run.results["passed"].get(p) for p in args.phases)
    run.save()
    print(json.dumps(run.results["passed"]), flush=True)


if __name__ == "__main__":
    main()
