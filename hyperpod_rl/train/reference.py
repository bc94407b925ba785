"""The reference GRPO backend: compact, single-process GRPO + LoRA on transformers and peft.

It runs where SkyRL cannot (CPU, one GPU, CI) and writes exactly what the SkyRL backend writes:
``metrics.jsonl`` with SkyRL's metric names, checkpoints under ``checkpoints/``, and a PEFT
adapter (``adapter/adapter_model.safetensors`` + ``adapter_config.json`` + ``provenance.json``).

One step (SkyRL's ``trainer.train`` loop, reduced to one mini-batch and one epoch):

1. sample ``data.prompts_per_step`` rows (mazes); play ``grpo.group_size`` episodes of each
   (:func:`~hyperpod_rl.model.rollout.play_episodes`);
2. episode return = sum of the env's step rewards; group-relative advantages
   (:func:`~hyperpod_rl.train.grpo.group_advantages`), shared by every turn of the episode;
3. one policy update with the clipped surrogate + KL + entropy (:func:`~hyperpod_rl.train.grpo.grpo_loss`),
   over micro-batches with gradient accumulation, then AdamW.

Recovery (exact resume): a checkpoint holds the LoRA weights, the AdamW state, the Python /
NumPy / torch / sampling RNG states, the sampler's epoch and position, the step and the
``metrics.jsonl`` offset, written atomically with a checksum list. A resubmission of the run id
resumes from the newest checkpoint whose checksums match (a truncated newer one is skipped with a
warning) and reproduces an uninterrupted run bit for bit on CPU. A finished run is not trained
again, and a run directory written with another config is refused: ``fresh=True`` (``--fresh``)
is the only way to start a run over. One trainer per run directory at a time (``trainer.lock``,
an ``fcntl`` lock the kernel releases when the process dies, even by SIGKILL).

Devices (``trainer.device``, ``trainer.dtype``; :func:`~hyperpod_rl.model.loading.resolve_device`):
on CPU everything is float32, as before. On one CUDA GPU the base model is loaded in bfloat16
(where the GPU supports it), LoRA weights and AdamW state stay float32 and compute in bf16 under
autocast, activations are recomputed in backward when ``trainer.gradient_checkpointing`` is on
(all layers or ``trainer.checkpoint_layers`` of them; ``trainer.checkpoint_policy='save_matmuls'``
keeps matmul outputs: :mod:`~hyperpod_rl.model.layers`),
rollouts decode all episodes of a turn in one batch with the KV cache, and the log-probs of the
update go through the chunked response-only path (:mod:`~hyperpod_rl.model.logprobs`).
Decoding is compiled there by default (``rollout.decode``: static KV cache + CUDA graphs, measured
2.8x faster on an H200, docs/gpu.md); ``trainer.compile_layers`` compiles each decoder layer for
the policy update only (with selective checkpointing the 8B update reached 47 % MFU on an H200, at
more memory: off by default). The
reference model of the KL term is the base model with the adapter disabled: the same weights on
the same GPU, so KL adds one forward pass and no memory for a second copy (the planner's
``offload_reference=True`` budget: no reference weights on the GPU during the update).

Before step 1 of every run the base model is benchmarked (greedy, adapter disabled) on the first
``trainer.eval_rows`` held-out rows into ``eval/base.json``, unless that file already exists
for the same base model; RNG states are restored afterwards, so it changes no training number.
The provenance record (``manifest.json``, :mod:`~hyperpod_rl.runs.provenance`) is updated at
start, at every checkpoint and at the end. The trainer writes nothing outside the run directory:
the run ledger is filled from run directories on the notebook/CLI side (``hyperpod-rl runs sync``).

Several GPUs of one node (``trainer.workers = N > 1``): :func:`hyperpod_rl.train.workers.main` starts N copies of this
trainer as the workers of a Ray Train ``TorchTrainer`` (:mod:`~hyperpod_rl.train.workers`), each
given its :class:`~hyperpod_rl.train.parallel.DataParallel` place: data-parallel over whole GRPO
groups, the loss divided by the global token count, gradients summed by DDP, metrics over the
whole batch; rank 0 alone writes the run directory. ``workers = 1`` (``parallel=None``) is the
single-process path, unchanged.
"""

from __future__ import annotations

import fcntl
import io
import json
import logging
import os
import random
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any

import numpy as np
import torch

from hyperpod_rl.base import load_user_data
from hyperpod_rl.config.run import RunConfig
from hyperpod_rl.errors import CheckpointError, ConfigError
from hyperpod_rl.eval.benchmark import greedy_benchmark
from hyperpod_rl.metrics.schema import MetricRecord
from hyperpod_rl.model.layers import CompiledLayers, checkpoint_decoder_layers, compile_decoder_layers
from hyperpod_rl.model.loading import load_base_model, resolve_base_model, resolve_device, revision_of
from hyperpod_rl.model.lora import canonicalize_adapter_config, wrap_lora
from hyperpod_rl.model.policy import MazePolicy
from hyperpod_rl.model.prompts import filter_rows
from hyperpod_rl.model.recovery import adapter_recovery
from hyperpod_rl.model.rollout import Episode, play_episodes
from hyperpod_rl.model.vllm_engine import VLLMEngine, choose_engine
from hyperpod_rl.plan.memory import vllm_rollout_fraction
from hyperpod_rl.plan.shapes import shape_from_hf_config
from hyperpod_rl.run_plan import engine_sizing
from hyperpod_rl.runs import RunPaths, read_eval, record_eval
from hyperpod_rl.runs.files import (
    appending,
    checkpoint_entries,
    checkpoint_recovery,
    checkpoints_recovery,
    file_sha256,
    latest_valid_checkpoint,
    prune_checkpoints,
    remove_stale_temporaries,
    storage_errors,
    verify_checksums,
    write_dir_atomically,
    write_json_atomic,
    write_text_atomic,
)
from hyperpod_rl.runs.provenance import config_conflict, eval_summaries, new_provenance, update_provenance
from hyperpod_rl.runs.versions import provenance_record
from hyperpod_rl.tasks import get_task, read_rows
from hyperpod_rl.train.grpo import TIED_GROUP_METRIC, engine_gap, group_advantages, grpo_loss, is_tied, process_advantages, tied_groups
from hyperpod_rl.train.parallel import DataParallel

__all__ = ["ReferenceTrainer"]

log = logging.getLogger(__name__)

#: Mean |trainer - engine| log-prob gap (nats per sampled token) above which the trainer warns. bf16
#: noise between vLLM and transformers on the same weights measured 0.017-0.027 nats/token on an H200
#: (docs/gpu.md, the vLLM log-prob check); a stale or misapplied adapter, LoRA on modules vLLM does
#: not serve, or a sampling setting that differs moves it by tenths of a nat.
LOGPROB_GAP_WARN = 0.1


class _Sampler:
    """Epoch-wise shuffled order over N rows; its position is part of the checkpoint."""

    def __init__(self, n: int, seed: int) -> None:
        self.n, self.seed, self.epoch, self.index = n, seed, 0, 0
        self._order = self._perm()

    def _perm(self) -> list[int]:
        return np.random.default_rng([self.seed, self.epoch]).permutation(self.n).tolist()

    def take(self, k: int) -> list[int]:
        out = []
        while len(out) < k:
            if self.index >= self.n:
                self.epoch, self.index = self.epoch + 1, 0
                self._order = self._perm()
            out.append(self._order[self.index])
            self.index += 1
        return out

    def state(self) -> dict[str, int]:
        return {"epoch": self.epoch, "index": self.index}

    def load(self, state: dict[str, int]) -> None:
        self.epoch, self.index = int(state["epoch"]), int(state["index"])
        self._order = self._perm()


def _numpy_array_globals() -> list[Any]:
    """What ``training_state.pt`` may hold besides tensors, numbers, strings and containers.

    The globals of a NumPy ``uint32`` array, which checkpoints written before the NumPy RNG
    state was stored as a tensor hold (``np.random.get_state()``'s key). Rebuilding an array
    calls no user code. ``torch.load(weights_only=True)`` refuses every other global, so a pickle
    planted in a run directory (they live on shared storage) cannot run code in the trainer.
    """
    from numpy.dtypes import UInt32DType

    return [np._core.multiarray._reconstruct, np.ndarray, np.dtype, UInt32DType]


def numpy_rng_state() -> dict[str, Any]:
    """NumPy's global RNG state (``np.random.get_state()``) with the key array as an int64 tensor.

    Returns:
        ``{"bit_generator": "MT19937", "key": int64 tensor [624], "pos": int, "has_gauss": int,
        "cached_gaussian": float}``.
    """
    name, key, pos, has_gauss, cached = np.random.get_state()
    return {
        "bit_generator": str(name),
        "key": torch.from_numpy(np.asarray(key, dtype=np.int64)),
        "pos": int(pos),
        "has_gauss": int(has_gauss),
        "cached_gaussian": float(cached),
    }


def set_numpy_rng_state(state: Any) -> None:
    """Restore :func:`numpy_rng_state`'s dict (or the tuple older checkpoints hold)."""
    if isinstance(state, dict):
        key = state["key"].numpy().astype(np.uint32)
        state = (state["bit_generator"], key, state["pos"], state["has_gauss"], state["cached_gaussian"])
    np.random.set_state(state)


def load_training_state(path: Path) -> dict[str, Any]:
    """Read a checkpoint's ``training_state.pt`` without unpickling code.

    ``torch.load(weights_only=True)``: tensors, numbers, strings and containers only, plus the
    NumPy array globals of checkpoints written before the NumPy RNG state was a tensor
    (:func:`_numpy_array_globals`; those still resume).

    Returns:
        ``{"optimizer": AdamW state dict, "python_rng", "numpy_rng", "torch_rng",
        "sampling_rng", "cuda_rng"[, "ranks"]}``.

    Raises:
        CheckpointError: the file holds anything else (a pickle that would import or call
            something: not written by hyperpod-rl), or is not a torch file. Nothing in it is run.
    """
    import pickle
    import re

    try:
        with torch.serialization.safe_globals(_numpy_array_globals()):
            state = torch.load(path, weights_only=True, map_location="cpu")
    except pickle.UnpicklingError as err:
        found = re.search(r"GLOBAL (\S+)|got <class '([^']+)'>", str(err))
        refused = f"it names {found.group(1) or found.group(2)}" if found else "it is not a plain tensor file"
        raise CheckpointError(
            f"{path} holds objects a checkpoint never holds and was refused unread ({refused}): it was not written by "
            f"hyperpod-rl, or was tampered with; {checkpoint_recovery(path.parent)}"
        ) from None
    except (RuntimeError, EOFError, OSError) as err:
        raise CheckpointError(
            f"{path} is not a readable training state ({type(err).__name__}): {checkpoint_recovery(path.parent)}"
        ) from None
    if not isinstance(state, dict) or "optimizer" not in state:
        raise CheckpointError(f"{path} is not a training state (no optimizer state): {checkpoint_recovery(path.parent)}")
    return state


class ReferenceTrainer:
    """Train one run with the reference backend.

    Args:
        config: the validated :class:`RunConfig`.
        run_dir: ``<storage root>/runs/<run_id>``; created if missing.
        fresh: start from step 0: checkpoints, metrics, the adapter, the manifest and the
            adapter evals of an earlier attempt are deleted first.
        parallel: this worker's place in a data-parallel group (``trainer.workers > 1``, inside a
            Ray Train ``TorchTrainer`` worker); ``None``: one process trains alone.

    Raises:
        ConfigError: bad paths or model.
        CheckpointError: ``fresh`` is False and checkpoints exist but none is valid, or the run
            directory holds a run with another config; another trainer holds the run.
    """

    def __init__(self, config: RunConfig, run_dir: str | Path, *, fresh: bool = False, parallel: DataParallel | None = None) -> None:
        self.config = config
        self.paths = RunPaths(Path(run_dir))
        self.run_dir = self.paths.root
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.ckpt_root = self.paths.checkpoints
        self.metrics_path = self.paths.metrics
        self.fresh = fresh
        if parallel is not None and parallel.world_size != config.trainer.workers:
            raise ConfigError(
                f"trainer.workers={config.trainer.workers} but the data-parallel group has {parallel.world_size} workers: "
                "start one TorchTrainer worker per trainer.workers"
            )
        self.parallel = parallel
        #: DDP over the scoring pass (data-parallel runs only; built in ``_build``)
        self.ddp: torch.nn.parallel.DistributedDataParallel | None = None
        self.compiled: CompiledLayers | None = None

    @property
    def is_writer(self) -> bool:
        """True in the one process that writes the run directory (rank 0, or the only process)."""
        return self.parallel is None or self.parallel.is_writer

    def _rank_seed(self) -> int:
        """The seed of this worker's sampling and global RNGs: ``trainer.seed`` on rank 0 (and alone),
        a seed derived from ``(trainer.seed, rank)`` on the other ranks."""
        seed = self.config.trainer.seed
        if self.parallel is None or self.parallel.rank == 0:
            return seed
        return int(np.random.SeedSequence([seed % (2**32), self.parallel.rank]).generate_state(1)[0])

    # ------------------------------------------------------------------ setup
    def _seed_all(self, seed: int) -> None:
        random.seed(seed)
        np.random.seed(seed % (2**32))
        torch.manual_seed(seed)

    def _build(self) -> None:
        cfg = self.config
        if cfg.trainer.torch_threads:
            torch.set_num_threads(cfg.trainer.torch_threads)
        if self.parallel is None:
            model_dir = resolve_base_model(cfg.model, self.run_dir)  # 'tiny' is built here (it seeds torch itself)
        else:  # rank 0 builds 'tiny' into the run directory, the others load what it built
            model_dir = self.parallel.broadcast(resolve_base_model(cfg.model, self.run_dir) if self.is_writer else None)
        self._seed_all(cfg.trainer.seed)
        self.device, dtype = resolve_device(cfg.trainer.device, cfg.trainer.dtype)
        model, processor, model_id, revision = self._load_base(model_dir, dtype)
        where = torch.cuda.get_device_name(self.device) if self.device.type == "cuda" else "cpu"
        print(f"policy on {self.device} ({where}), base weights {str(dtype).removeprefix('torch.')}", flush=True)
        if self.device.type == "cuda" and cfg.trainer.gradient_checkpointing:
            n = checkpoint_decoder_layers(model, fraction=cfg.trainer.checkpoint_layers, policy=cfg.trainer.checkpoint_policy)
            print(f"activation checkpointing: {n} decoder layers, {cfg.trainer.checkpoint_policy}", flush=True)
        elif cfg.trainer.gradient_checkpointing:
            print("activation checkpointing: off on the CPU (trainer.gradient_checkpointing and checkpoint_* apply on a GPU)", flush=True)
        self.base_model_id = cfg.model.model_id or model_id
        self.base_model_revision = cfg.model.revision or revision
        self.model, self.lora_counts = wrap_lora(model, cfg.lora)
        print("LoRA modules per target_modules entry: " + ", ".join(f"{k} {v}" for k, v in self.lora_counts.items()), flush=True)
        #: the adapter this run started from (model.init_adapter; None: a fresh adapter)
        self.init_adapter: dict[str, Any] | None = None
        if cfg.model.init_adapter is not None:
            from hyperpod_rl.train.init_adapter import load_init_adapter

            self.init_adapter = load_init_adapter(self.model, cfg.model.init_adapter, base_revision=self.base_model_revision, lora=cfg.lora)
        self.compiled = compile_decoder_layers(self.model) if cfg.trainer.compile_layers else None
        if self.compiled is not None:
            print(f"torch.compile: {self.compiled.count} decoder layers, used by the policy update (trainer.compile_layers)", flush=True)
        self.task = get_task(cfg.task.name)
        self.policy = MazePolicy(
            self.model,
            processor,
            action_constraint=cfg.rollout.action_constraint,
            max_new_tokens=cfg.rollout.max_new_tokens,
            answer_words=self.task.answer_words,
            decode=cfg.rollout.decode,
        )
        self.engine: VLLMEngine | None = None
        choice = choose_engine(cfg.rollout.engine, device=self.device, action_constraint=cfg.rollout.action_constraint)
        if choice.engine == "vllm" and self.parallel is not None:
            if cfg.rollout.engine == "vllm":
                raise ConfigError(
                    "rollout.engine=vllm runs one colocated engine in a single-process run: set trainer.workers=1 or rollout.engine=auto"
                )
            print("rollouts: rollout.engine=auto: transformers in-process, because trainer.workers > 1", flush=True)
            choice = type(choice)("hf", "trainer.workers > 1")
        if choice.engine == "vllm":
            self.engine = self._start_engine(model_dir, processor)
            print(f"rollouts: {choice.reason} (started in {self.engine.start_s:.1f} s)", flush=True)
        else:
            print(f"rollouts: {self.policy.rollout_path()}", flush=True)
        self._engine_step = -1  # the step whose adapter the engine holds
        if self.parallel is not None:
            # after the LoRA init (identical on every worker, checked), each worker samples its own rollouts
            self.ddp = self.parallel.wrap(self.model, self.policy)
            if self.parallel.rank:
                self._seed_all(self._rank_seed())
        params = [p for p in self.model.parameters() if p.requires_grad]
        fused = {"fused": True} if self.device.type == "cuda" else {}  # one kernel for all adapter tensors
        self.optimizer = torch.optim.AdamW(params, lr=cfg.grpo.lr, weight_decay=cfg.grpo.weight_decay, **fused)
        rows = self._load_rows()
        if len(rows) < cfg.data.prompts_per_step:
            raise ConfigError(
                f"data.prompts_per_step={cfg.data.prompts_per_step} is more than the {len(rows)} rows of data.train_path "
                f"{cfg.data.train_path}: set data.prompts_per_step to at most {len(rows)}, or generate a larger training set"
            )
        kept = filter_rows(rows, processor, cfg.rollout.max_prompt_tokens, what="train")
        print(kept.summary("train"), flush=True)
        if len(kept.kept) < cfg.data.prompts_per_step:
            raise ConfigError(
                f"{kept.summary('train')}: {len(kept.kept)} rows are left, fewer than data.prompts_per_step={cfg.data.prompts_per_step}; "
                "raise rollout.max_prompt_tokens or use smaller mazes"
            )
        self.prompt_filter = {"limit": kept.limit, "kept": len(kept.kept), "dropped": len(kept.dropped)}
        self.rows = [rows[i] for i in kept.kept]
        self.sampler = _Sampler(len(self.rows), cfg.trainer.seed)
        self.generator = torch.Generator().manual_seed(self._rank_seed())
        self.step = 0

    def _start_engine(self, model_dir: Path, processor: Any) -> VLLMEngine:
        """The colocated vLLM engine, asking for the memory :func:`vllm_rollout_fraction` counts."""
        cfg = self.config
        hf_config = load_user_data(Path(model_dir) / "config.json", "base model config.json", syntax="json")
        shape = shape_from_hf_config(hf_config)
        free, total = torch.cuda.mem_get_info(self.device)
        positions = hf_config.get("text_config", hf_config).get("max_position_embeddings")
        # as `hyperpod-rl plan` counts it, within the model's positions (vLLM refuses a longer max_model_len)
        sizing = engine_sizing(cfg, positions if isinstance(positions, int) else None)
        fraction = vllm_rollout_fraction(
            shape,
            sequences=sizing.sequences,
            tokens_per_sequence=sizing.tokens_per_sequence,
            gpu_total_bytes=total,
            free_bytes=free,
            cap=cfg.rollout.gpu_memory_utilization,
        )
        print(
            f"rollouts: vLLM engine asks for {fraction:.3f} of the GPU ({fraction * total / 2**30:.1f} GiB; free {free / 2**30:.1f} GiB)",
            flush=True,
        )
        return VLLMEngine.create(
            model_dir,
            processor,
            max_new_tokens=cfg.rollout.max_new_tokens,
            max_model_len=sizing.max_model_len,
            gpu_memory_utilization=fraction,
            lora_rank=cfg.lora.rank,
            max_num_seqs=max(cfg.rollout.max_num_seqs, sizing.sequences),
            seed=cfg.trainer.seed,
            sync_dir=self.run_dir / "lora-sync",
            sleep=cfg.rollout.engine_sleep,
        )

    def _load_base(self, model_dir: Path, dtype: torch.dtype) -> tuple[Any, Any, str, str]:
        """``(model, processor, model_id, revision)`` of the base model directory, on ``self.device`` in ``dtype``.

        The revision is ``model.revision`` when set, else the Hub commit the directory records, else
        its content hash (:func:`~hyperpod_rl.model.loading.revision_of`).
        """
        model, processor, model_id = load_base_model(model_dir, torch_dtype=dtype, device=self.device)
        return model, processor, model_id, self.config.model.revision or revision_of(model_dir)

    def _load_rows(self) -> list[dict[str, Any]]:
        """The train rows (``data.train_path``) of the run's task, before the prompt-budget filter.

        Raises:
            TaskError: the file is missing or lacks the task's columns.
            ConfigError: the rows belong to another task (their ``env_class``).
        """
        rows = list(read_rows(self.config.data.train_path, required=("prompt", "env_class", self.task.hash_column)))
        others = sorted({str(r["env_class"]) for r in rows} - {self.task.env_class})
        if others:
            raise ConfigError(
                f"data.train_path holds rows of env_class {others}, not of task {self.task.name!r} ({self.task.env_class}): "
                "set task.name to the dataset's task, or generate the dataset with this task"
            )
        return rows

    # ------------------------------------------------------------------ run directory
    def _run_lock(self) -> AbstractContextManager[None]:
        """Hold ``trainer.lock`` (its content: this process's pid) while training; rank 0 holds it
        for a data-parallel group."""
        return self._hold_run_lock() if self.is_writer else nullcontext()

    @contextmanager
    def _hold_run_lock(self) -> Iterator[None]:
        with open(self.paths.trainer_lock, "a+") as fh:  # closing releases the lock
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                fh.seek(0)
                holder = fh.read().strip() or "another process"
                raise CheckpointError(
                    f"run {self.config.run_id!r} is being trained by {holder}: stop that job first (hyperpod-rl job stop {self.config.run_id})"
                ) from None
            fh.seek(0)
            fh.truncate()
            fh.write(json.dumps({"pid": os.getpid(), "host": os.uname().nodename}))
            fh.flush()
            yield

    def _wipe(self) -> None:
        """``fresh``: remove what an earlier attempt of this run id wrote (base eval kept)."""
        shutil.rmtree(self.ckpt_root, ignore_errors=True)
        shutil.rmtree(self.paths.adapter, ignore_errors=True)
        shutil.rmtree(self.export_dir, ignore_errors=True)
        self.metrics_path.unlink(missing_ok=True)
        self.paths.provenance.unlink(missing_ok=True)
        for path in self.paths.eval_dir.glob("*.json"):
            if path.name != "base.json":
                path.unlink()

    def _check_same_run(self) -> Path | None:
        """Refuse a run directory written with another config; the adapter if the run is done."""
        conflict = config_conflict(self.run_dir, self.config.config_hash())
        if conflict is not None:
            raise CheckpointError(conflict)
        adapter = self.export_dir
        prov = adapter / "provenance.json"
        if prov.is_file() and verify_checksums(adapter) is None:
            info = load_user_data(prov, "adapter provenance", syntax="json", error=CheckpointError, repair=adapter_recovery(adapter))
            if not isinstance(info, dict) or info.get("config_hash") != self.config.config_hash():
                raise CheckpointError(
                    f"{adapter} was trained with another config (hash {info.get('config_hash') if isinstance(info, dict) else None}): resubmit with --fresh to overwrite it, or pick a new run id"
                )
            if int(info.get("steps") or 0) >= self.config.trainer.steps:
                if self.ckpt_root.is_dir() and any(self.ckpt_root.glob("step_*")) and latest_valid_checkpoint(self.ckpt_root) is None:
                    raise CheckpointError(
                        f"no valid checkpoint under {self.ckpt_root}: every one failed its checksums; {checkpoints_recovery(self.ckpt_root)}"
                    )
                return adapter
        return None

    # ------------------------------------------------------------------ provenance record
    def _start_manifest(self, resumed_from: int | None) -> None:
        cfg = self.config
        hashes = {"train": file_sha256(cfg.data.train_path), "heldout": file_sha256(cfg.data.heldout_path)}

        def change(current: dict[str, Any] | None) -> dict[str, Any]:
            fresh = new_provenance(
                cfg,
                base_model_id=self.base_model_id,
                base_model_revision=self.base_model_revision,
                dataset_hashes=hashes,
                reward_version=self.task.reward_version,
            )
            if current is not None:  # keep what earlier attempts recorded
                fresh["created_at"] = current.get("created_at", fresh["created_at"])
                fresh["eval"] = current.get("eval") or {}
                fresh["resumes"] = current.get("resumes") or []
            fresh["eval"] = {**eval_summaries(self.run_dir), **fresh["eval"]}  # evals saved before the run started
            if resumed_from is not None:
                fresh["resumes"].append({"from_step": resumed_from, "at": fresh["updated_at"]})
            fresh["checkpoints"] = checkpoint_entries(self.ckpt_root, self.run_dir)
            return fresh

        update_provenance(self.run_dir, change)

    def _update_provenance(self, **fields: Any) -> None:
        def change(current: dict[str, Any] | None) -> dict[str, Any]:
            out = dict(current or {"run_id": self.config.run_id})
            out.update(fields)
            out["checkpoints"] = checkpoint_entries(self.ckpt_root, self.run_dir)
            return out

        update_provenance(self.run_dir, change)

    # ------------------------------------------------------------------ base benchmark
    def _benchmark_base(self) -> None:
        """Greedy base-model benchmark into ``eval/base.json`` (RNG states restored after)."""
        cfg = self.config
        if self.step != 0 or not cfg.trainer.eval_rows:
            return
        prev = read_eval(self.paths, "base")
        if prev and prev.get("adapter_path") is None and str(prev.get("model_path")) == str(cfg.model.path) and prev.get("num_mazes"):
            return
        rows = list(read_rows(cfg.data.heldout_path, required=("prompt", "env_class", self.task.hash_column)))[: cfg.trainer.eval_rows]
        metrics, per_maze = self.evaluate_policy(rows, adapter=False)
        result = {
            "label": "base",
            "model_path": str(cfg.model.path),
            "adapter_path": None,
            "num_mazes": len(rows),
            "metrics": metrics,
            "per_maze": per_maze,
            "split": "heldout",
            "model_revision": self.base_model_revision,
            "task": cfg.task.name,
        }
        record_eval(self.paths, "base", result)
        print(f"base model benchmark on {len(rows)} held-out mazes: " + ", ".join(f"{k} {v:.3f}" for k, v in metrics.items()), flush=True)

    # ------------------------------------------------------------------ checkpoints
    def _save_checkpoint(self) -> Path:
        """Write ``checkpoints/step_N`` atomically (:func:`~hyperpod_rl.runs.files.write_dir_atomically`).

        Raises:
            StorageError: the run directory is full, read-only or forbidden: no part of the new
                checkpoint is left and the previous ones stay valid.
        """
        from safetensors.torch import save

        rng = self._rng_states()
        # every worker's RNG states (a collective: all ranks call this); the optimizer state and the
        # LoRA weights are the same on every worker (same summed gradients)
        ranks = self.parallel.gather(rng) if self.parallel is not None else None
        if not self.is_writer:
            return self.ckpt_root / f"step_{self.step:06d}"
        lines = 0
        if self.metrics_path.exists():
            with self.metrics_path.open() as fh:
                lines = sum(1 for _ in fh)

        def write(tmp: Path) -> None:
            # serialized in memory (LoRA weights and their optimizer state: megabytes) and written by
            # Python, so a full or read-only disk is an OSError with its errno: torch.save and
            # safetensors writing to a path report only "unexpected pos" / a Rust error text
            weights = {k: v.detach().contiguous() for k, v in self._trained_weights().items()}
            (tmp / self.weights_file).write_bytes(save(weights))
            state: dict[str, Any] = {"optimizer": self.optimizer.state_dict(), **rng}
            if ranks is not None:
                state["ranks"] = ranks
            buffer = io.BytesIO()
            torch.save(state, buffer)
            (tmp / "training_state.pt").write_bytes(
                buffer.getvalue()
            )  # bytes: a memoryview of a BytesIO in a failed write's traceback crashes CPython 3.12's final GC
            (tmp / "trainer_state.json").write_text(
                json.dumps(
                    {"step": self.step, "sampler": self.sampler.state(), "metrics_lines": lines, "config_hash": self.config.config_hash()}
                )
            )

        path = write_dir_atomically(self.ckpt_root / f"step_{self.step:06d}", write)
        prune_checkpoints(self.ckpt_root, self.config.checkpoint.keep)
        self._update_provenance()
        return path

    #: the checkpoint's file of trained weights (:meth:`_trained_weights`)
    weights_file = "adapter_model.safetensors"

    def _trained_weights(self) -> dict[str, torch.Tensor]:
        """The weights a checkpoint holds: the LoRA adapter's (peft's state dict keys)."""
        from peft import get_peft_model_state_dict

        return dict(get_peft_model_state_dict(self.model))

    def _load_trained_weights(self, weights: dict[str, torch.Tensor]) -> None:
        """Load :meth:`_trained_weights`' dict read back from a checkpoint."""
        from peft import set_peft_model_state_dict

        set_peft_model_state_dict(self.model, weights)

    def _rng_states(self) -> dict[str, Any]:
        """This process's Python, NumPy, torch, sampling (and CUDA) RNG states, as tensors,
        numbers and tuples only (what ``torch.load(weights_only=True)`` reads back)."""
        return {
            "python_rng": random.getstate(),
            "numpy_rng": numpy_rng_state(),
            "torch_rng": torch.get_rng_state(),
            "sampling_rng": self.generator.get_state(),
            "cuda_rng": torch.cuda.get_rng_state(self.device) if self.device.type == "cuda" else None,
        }

    def _newest_checkpoint(self) -> Path | None:
        """The checkpoint to resume from (``None``: none, start at step 0)."""
        for directory in (self.paths.root, self.ckpt_root, self.paths.eval_dir):
            for name in remove_stale_temporaries(directory):
                print(f"removed {directory / name}, left by a write that was interrupted", flush=True)
        has_any = self.ckpt_root.is_dir() and any(self.ckpt_root.glob("step_*"))
        path = latest_valid_checkpoint(self.ckpt_root)
        if path is None:
            if has_any:
                raise CheckpointError(
                    f"no valid checkpoint under {self.ckpt_root}: every one failed its checksums; {checkpoints_recovery(self.ckpt_root)}"
                )
            self.metrics_path.unlink(missing_ok=True)
        return path

    def _resume(self) -> int | None:
        """Load the newest valid checkpoint; return its step (``None``: starting at step 0).

        In a data-parallel group rank 0 picks the checkpoint and every worker loads it, with its
        own RNG states.
        """
        from safetensors.torch import load_file

        path = self._newest_checkpoint() if self.is_writer else None
        if self.parallel is not None:
            path = self.parallel.broadcast(path)
        if path is None:
            return None
        state = json.loads((path / "trainer_state.json").read_text())
        if state.get("config_hash") != self.config.config_hash():
            raise CheckpointError(
                f"checkpoint {path} was written with a different config (hash {state.get('config_hash')}); resubmit with --fresh or the original config"
            )
        self._load_trained_weights(load_file(str(path / self.weights_file)))
        extra = load_training_state(path / "training_state.pt")
        self.optimizer.load_state_dict(extra["optimizer"])
        if self.parallel is not None:
            saved = len(extra.get("ranks") or [])
            if saved != self.parallel.world_size:
                raise CheckpointError(
                    f"checkpoint {path} holds the RNG states of {saved} workers, this run has {self.parallel.world_size}: "
                    "resubmit with --fresh or the original trainer.workers"
                )
            extra = {**extra, **extra["ranks"][self.parallel.rank]}
        random.setstate(extra["python_rng"])
        set_numpy_rng_state(extra["numpy_rng"])
        torch.set_rng_state(extra["torch_rng"])
        self.generator.set_state(extra["sampling_rng"])
        if self.device.type == "cuda" and extra.get("cuda_rng") is not None:
            torch.cuda.set_rng_state(extra["cuda_rng"], self.device)
        self.sampler.load(state["sampler"])
        self.step = int(state["step"])
        if not self.is_writer:
            return self.step
        # Drop metric lines written after the checkpoint: they are produced again.
        if self.metrics_path.exists():
            kept = self.metrics_path.read_text().splitlines(keepends=True)[: state["metrics_lines"]]
            write_text_atomic(self.metrics_path, "".join(kept))
        print(f"resumed from {path.name} (step {self.step}, epoch {self.sampler.epoch})", flush=True)
        return self.step

    # ------------------------------------------------------------------ one step
    def _update(self, episodes: list[Episode], advantages: list[list[float]]) -> dict[str, float]:
        """One policy update; ``advantages[i][t]`` is the advantage of turn t of episode i.

        In a data-parallel group ``episodes`` are this worker's; the loss is divided by the loss
        tokens of all workers, DDP sums the gradients once (the last micro batch), and the
        returned numbers are over all workers' samples.
        """
        cfg = self.config
        samples = [(turn, float(advantages[i][t])) for i, ep in enumerate(episodes) for t, turn in enumerate(ep.turns)]
        num_tokens = sum(sum(t.action.loss_mask) for t, _ in samples)
        if self.parallel is not None:
            num_tokens = int(self.parallel.sum([num_tokens])[0])
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        totals = {
            "policy_loss": 0.0,
            "kl": 0.0,
            "entropy": 0.0,
            "clip": 0.0,
            "gap_sum": 0.0,
            "gap_tokens": 0.0,
            "truncated": 0.0,
        }
        gap_max = 0.0
        # importance weights only where another engine sampled: the transformers path samples from these very weights
        correct = self.engine is not None and cfg.grpo.is_correction == "token_truncate"
        contexts = [t.context for t, _ in samples]
        responses = [t.action.response_ids for t, _ in samples]
        loss_masks = [t.action.loss_mask for t, _ in samples]
        groups = self.policy.group_samples(contexts, responses, loss_masks)
        mb = cfg.trainer.micro_batch_size
        if self.ddp is not None and not groups:
            raise RuntimeError("this worker has no samples to train on: every worker needs at least one episode turn")
        # compiled decoder layers (trainer.compile_layers) serve the update only: its shapes repeat, the rollout's do not
        with self.compiled.active() if self.compiled is not None else nullcontext():
            for start in range(0, len(groups), mb):
                part = groups[start : start + mb]
                # DDP sums gradients once per update: every micro batch but the last accumulates locally
                last = start + mb >= len(groups)
                with self.ddp.no_sync() if self.ddp is not None and not last else nullcontext():
                    if self.ddp is None:
                        scored = self.policy.score(contexts, responses, loss_masks, part, temperature=cfg.rollout.temperature)
                        logp, entropy, mask, indices = scored.logprobs, scored.entropy, scored.loss_mask, scored.indices
                    else:
                        logp, entropy, mask, indices = self.ddp(contexts, responses, loss_masks, part, temperature=cfg.rollout.temperature)
                    ref = None
                    if cfg.grpo.kl_coef > 0:
                        with torch.no_grad(), self.model.disable_adapter():  # the unwrapped peft model
                            ref = self.policy.score(contexts, responses, loss_masks, part, temperature=cfg.rollout.temperature).logprobs
                    old = logp.detach()  # one update per batch: the proximal policy is this one
                    gap = engine_gap(old, self._engine_logprobs([samples[i][0] for i in indices], mask), mask, cap=cfg.grpo.is_cap)
                    adv = torch.tensor([samples[i][1] for i in indices], device=logp.device)
                    terms = grpo_loss(
                        logp,
                        old,
                        adv,
                        mask,
                        clip_eps=cfg.grpo.clip_eps,
                        entropy=entropy,
                        entropy_coef=cfg.grpo.entropy_coef,
                        ref_logprobs=ref,
                        kl_coef=cfg.grpo.kl_coef,
                        num_tokens=num_tokens,
                        is_weights=gap.weights if correct else None,
                    )
                    terms.loss.backward()
                totals["gap_sum"] += gap.gap_sum
                totals["gap_tokens"] += gap.tokens
                totals["truncated"] += gap.truncated if correct else 0
                gap_max = max(gap_max, gap.gap_max)
                totals["policy_loss"] += terms.policy_loss
                totals["kl"] += terms.kl
                totals["entropy"] += terms.entropy
                totals["clip"] += terms.clip_fraction
        num_samples, num_rows = len(samples), len(groups)
        if self.parallel is not None:  # every worker's share: the loss terms are already over the global token count
            summed = self.parallel.sum([*totals.values(), num_samples, num_rows])
            totals = dict(zip(totals, summed[: len(totals)], strict=True))
            num_samples, num_rows = int(summed[-2]), int(summed[-1])
            gap_max = max(self.parallel.gather(gap_max))
        gap_mean = totals["gap_sum"] / max(totals["gap_tokens"], 1.0)
        if gap_mean > LOGPROB_GAP_WARN and self.is_writer:
            print(
                f"warning: step {self.step + 1}: the rollout engine's log-probs are {gap_mean:.3f} nats/token (max {gap_max:.2f}) from "
                f"the trainer's (expected under {LOGPROB_GAP_WARN}: bf16 noise is about 0.02). Likely causes: the engine serves a "
                "stale or misapplied adapter, LoRA on modules the engine does not serve (set lora.exclude_modules to the vision "
                "tower), or sampling settings that differ (a generation_config.json, top-k/top-p)",
                flush=True,
            )
        grad_norm = torch.nn.utils.clip_grad_norm_([p for p in self.model.parameters() if p.requires_grad], cfg.grpo.max_grad_norm)
        self.optimizer.step()
        self.model.eval()
        return {
            "policy/policy_loss": totals["policy_loss"],
            "policy/policy_kl": totals["kl"],
            "policy/policy_entropy": totals["entropy"],
            "policy/ppo_clip_ratio": totals["clip"],
            "policy/grad_norm": float(grad_norm),
            "policy/policy_lr": cfg.grpo.lr,
            # SkyRL's name and meaning: the mean over sampled tokens of |trainer - rollout engine| (nats/token)
            "policy/rollout_train_logprobs_abs_diff_mean": gap_mean,
            "rollout/logprob_gap_mean": gap_mean,
            "rollout/logprob_gap_max": gap_max,
            "rollout/is_truncated_fraction": totals["truncated"] / max(totals["gap_tokens"], 1.0),
            "trainer/num_samples": float(num_samples),
            "trainer/num_forward_rows": float(num_rows),
            "trainer/num_tokens": float(num_tokens),
        }

    @staticmethod
    def _engine_logprobs(turns: list[Any], mask: torch.Tensor) -> torch.Tensor:
        """(M, L) the rollout engine's log-probs of each sample's sampled tokens, at ``mask``'s positions."""
        out = torch.zeros(mask.shape, dtype=torch.float32)
        cpu_mask = mask.cpu()
        for k, turn in enumerate(turns):
            lps = turn.action.token_logprobs
            if lps is None:  # only the sum is known: spread evenly (one sampled token in the constrained path)
                n = int(cpu_mask[k].sum())
                lps = [turn.action.logprob / max(n, 1)] * n
            out[k][cpu_mask[k]] = torch.tensor(lps, dtype=torch.float32)
        return out.to(mask.device)

    def _step(self) -> MetricRecord:
        cfg = self.config
        t0 = time.perf_counter()
        rows = [self.rows[i] for i in self.sampler.take(cfg.data.prompts_per_step)]
        if self.parallel is not None:  # every worker draws the same batch and rolls out its share of whole groups
            rows = self.parallel.share(rows)
        engine_s: dict[str, float] = {}
        if self.engine is not None:
            self.engine.timings.update(generate_s=0.0, sync_s=0.0, sleep_s=0.0, wake_s=0.0)
            self.engine.generated_tokens = 0
            if self._engine_step != self.step:  # the adapter of this step (after an update, or a resume)
                self.engine.sync_adapter(self.model)
                self._engine_step = self.step
        # on the CPU the vision tower encodes an observation for its rollout, and the update reuses that
        # (MazePolicy.reusing_image_features; the vision tower is frozen, the features leave with the step)
        reuse = self.policy.reusing_image_features() if self.device.type == "cpu" else nullcontext()
        with reuse:
            episodes = play_episodes(
                self.engine if self.engine is not None else self.policy,
                rows,
                group_size=cfg.grpo.group_size,
                temperature=cfg.rollout.temperature,
                max_turns=cfg.rollout.max_turns,
                generator=self.generator,
                batch_size=10**9 if self.engine is not None else 128,  # vLLM schedules a whole turn at once
            )
            if self.engine is not None:
                self.engine.sleep()  # the update gets the GPU
                engine_s = dict(self.engine.timings)
            t_gen = time.perf_counter() - t0
            G = cfg.grpo.group_size
            returns = torch.tensor([ep.total_return for ep in episodes]).view(len(rows), G)
            step_rewards = [[[t.reward for t in ep.turns] for ep in episodes[g * G : (g + 1) * G]] for g in range(len(rows))]
            if cfg.grpo.advantage == "process":
                nested = process_advantages(step_rewards, gamma=cfg.grpo.gamma)
                turn_adv = [adv for group in nested for adv in group]
            else:
                per_episode = group_advantages(returns, normalize_std=cfg.grpo.normalize_std).view(-1).tolist()
                turn_adv = [[per_episode[i]] * len(ep.turns) for i, ep in enumerate(episodes)]
            t1 = time.perf_counter()
            values = self._update(episodes, turn_adv)
            t_train = time.perf_counter() - t1
        self.step += 1
        # the batch's episodes (every worker's, in rank order: the order one process would have)
        summary = [
            (
                ep.total_return,
                [t.reward for t in ep.turns],
                float(bool(ep.turns and ep.turns[-1].metadata.get("solved"))),
                ep.metrics,
                [len(t.action.response_ids) for t in ep.turns],
            )
            for ep in episodes
        ]
        if self.parallel is not None:
            summary = [s for part in self.parallel.gather(summary) for s in part]
            returns = torch.tensor([s[0] for s in summary]).view(-1, G)
            step_rewards = [[s[1] for s in summary[g * G : (g + 1) * G]] for g in range(len(summary) // G)]
        if cfg.grpo.advantage == "process":
            tied_share = float(np.mean([is_tied([r for ep in group for r in ep]) for group in step_rewards]))
        else:
            tied_share = float(tied_groups(returns).float().mean())
        solved = torch.tensor([s[2] for s in summary]).view(-1, G)
        values.update({f"environment/{k}": float(v) for k, v in self.task.aggregate_metrics([s[3] for s in summary]).items()})
        resp_tokens = [n for s in summary for n in s[4]]
        step_s = time.perf_counter() - t0
        values.update(
            {
                "reward/avg_raw_reward": float(returns.mean()),
                "reward/min_raw_reward": float(returns.min()),
                "reward/max_raw_reward": float(returns.max()),
                "reward/std_raw_reward": float(returns.std()),
                TIED_GROUP_METRIC: tied_share,
                f"reward/avg_pass_at_{cfg.grpo.group_size}": float((solved.max(dim=1).values > 0).float().mean()),
                "policy/response_length": float(np.mean(resp_tokens)),
                "generate/avg_num_turns": float(np.mean([len(s[1]) for s in summary])),
                "timing/generate": t_gen,
                "timing/policy_train": t_train,
                **(
                    {
                        "timing/sync_weights": engine_s["sync_s"],
                        "timing/engine_sleep": engine_s["sleep_s"],
                        "timing/engine_wake": engine_s["wake_s"],
                        "generate/tokens_per_second": (sum(resp_tokens) / engine_s["generate_s"]) if engine_s["generate_s"] else 0.0,
                    }
                    if engine_s
                    else {}
                ),
                "timing/step": step_s,
                "trainer/tokens_per_second": values["trainer/num_tokens"] / step_s,
                "trainer/epoch": float(self.sampler.epoch),
            }
        )
        return MetricRecord(run_id=cfg.run_id, step=self.step, total_steps=cfg.trainer.steps, time_s=time.time(), values=values)

    # ------------------------------------------------------------------ run
    def train(self) -> Path:
        """Run (or resume) training to ``trainer.steps`` and export the adapter.

        A finished run (its adapter exported with this config) is not trained again: its
        adapter directory is returned as is.

        Returns:
            The adapter directory ``<run dir>/adapter`` (a full-parameter SFT run:
            ``<run dir>/model``, :attr:`export_dir`).

        Raises:
            CheckpointError: see the class docstring.
        """
        out = self.train_until(None)
        assert out is not None  # no hook: the run ends at trainer.steps
        return out

    def train_until(self, after_step: Callable[[ReferenceTrainer], bool] | None) -> Path | None:
        """:meth:`train`, with ``after_step(self)`` called after every step (its metrics written,
        its checkpoint saved when one is due), in this process, with the model in memory (e.g. to
        evaluate it with :meth:`evaluate_policy`).

        When the hook returns True the run pauses: a checkpoint of that step is written (unless
        one was just written; a checkpoint holds the run's RNG states, so a resumed run continues
        as if it never paused), nothing is exported and None is returned; a later :meth:`train`
        or :meth:`train_until` of the same run resumes there. Single-process runs only.

        Returns:
            What :meth:`train` returns, or None where the hook paused the run.

        Raises:
            CheckpointError: see the class docstring.
            ConfigError: a hook in a data-parallel run.
        """
        if after_step is not None and self.parallel is not None:
            raise ConfigError("train_until's hook runs in a single-process run: trainer.workers must be 1")
        with self._run_lock():
            writer = self.is_writer  # in a data-parallel group rank 0 does the run-directory work
            if self.fresh and writer:
                self._wipe()
            done = self._check_same_run() if writer else None
            if self.parallel is not None:
                done = self.parallel.broadcast(done)
            if done is not None:
                if writer:
                    print(f"run {self.config.run_id} already finished ({done}); resubmit with --fresh to train it again", flush=True)
                return done
            self._build()
            resumed_from = self._resume()
            if writer:
                self._start_manifest(resumed_from)
            try:
                if writer:
                    self._benchmark_base()
                if not self._loop(after_step):
                    return None
                adapter = self.export_adapter() if writer else self.export_dir
            except BaseException:
                if writer:
                    try:
                        self._update_provenance(status="failed")
                    except Exception as err:  # noqa: BLE001 - the training error matters more
                        log.warning("could not mark the run failed in its provenance record: %s", err)
                raise
            if writer:
                self._update_provenance(status="succeeded", adapter=self._export_record(adapter))
            return adapter

    @property
    def export_dir(self) -> Path:
        """Where the run's result is exported: ``<run dir>/adapter``."""
        return self.paths.adapter

    def _export_record(self, path: Path) -> dict[str, Any]:
        """The provenance record's ``adapter`` entry of the exported result at ``path``."""
        return {"path": "adapter", "sha256": file_sha256(path / "adapter_model.safetensors"), "steps": self.step}

    def evaluate_policy(self, rows: list[dict[str, Any]], *, adapter: bool = True) -> tuple[dict[str, float], list[dict[str, Any]]]:
        """The model as it is now, greedy on ``rows`` (:func:`~hyperpod_rl.eval.benchmark.greedy_benchmark`
        with this run's policy; ``adapter=False``: the base model, the adapter disabled). The RNG
        states are restored after, so it changes no training number.

        Returns:
            ``(metrics, per_maze)`` as :func:`~hyperpod_rl.eval.benchmark.greedy_benchmark` returns them
            (intervals: :func:`hyperpod_rl.eval.stats.bootstrap_interval` over ``per_maze``).
        """
        states = (random.getstate(), np.random.get_state(), torch.get_rng_state(), self.generator.get_state())
        cuda = torch.cuda.get_rng_state(self.device) if self.device.type == "cuda" else None
        try:
            with torch.no_grad(), nullcontext() if adapter else self.model.disable_adapter():
                return greedy_benchmark(self.policy, rows)
        finally:
            random.setstate(states[0])
            np.random.set_state(states[1])
            torch.set_rng_state(states[2])
            self.generator.set_state(states[3])
            if cuda is not None:
                torch.cuda.set_rng_state(cuda, self.device)

    def _loop(self, after_step: Callable[[ReferenceTrainer], bool] | None = None) -> bool:
        """Train to ``trainer.steps`` (True), or until ``after_step`` asks to pause (False: a checkpoint written)."""
        cfg = self.config
        # a close that fails (the buffered line hits the same full or forbidden disk) is a StorageError
        # naming metrics.jsonl, and never a second raw error over the one a failed write raised
        with appending(self.metrics_path) if self.is_writer else nullcontext() as sink:
            while self.step < cfg.trainer.steps:
                record = self._step()
                if sink is not None:
                    with storage_errors(self.metrics_path):  # a full disk: named, as every run write
                        sink.write(record.model_dump_json() + "\n")
                        sink.flush()
                    print(record.to_line(), flush=True)
                saved = bool(cfg.checkpoint.interval and self.step % cfg.checkpoint.interval == 0 and self.step < cfg.trainer.steps)
                if saved:
                    self._save_checkpoint()
                if after_step is not None and after_step(self) and self.step < cfg.trainer.steps:
                    if not saved:
                        self._save_checkpoint()
                    return False
        return True

    def export_adapter(self) -> Path:
        """Write ``adapter/`` (PEFT files + ``provenance.json``) atomically."""
        cfg = self.config

        def write(tmp: Path) -> None:
            self.model.save_pretrained(tmp)
            for extra in tmp.iterdir():
                if extra.is_dir():  # peft nests non-default adapters; keep the flat layout
                    raise CheckpointError(f"unexpected adapter sub-directory {extra.name}")
            canonicalize_adapter_config(tmp / "adapter_config.json")  # peft writes target_modules in set order
            prov = provenance_record(
                run_id=cfg.run_id,
                backend=cfg.backend,
                base_model_id=self.base_model_id,
                base_model_revision=self.base_model_revision,
                config_hash=cfg.config_hash(),
                dataset_hashes={"train": file_sha256(cfg.data.train_path), "heldout": file_sha256(cfg.data.heldout_path)},
                reward_version=self.task.reward_version,
                seeds={"trainer": cfg.trainer.seed},
                lora=cfg.lora.model_dump(mode="json"),
                adapter_sha256=file_sha256(tmp / "adapter_model.safetensors"),
                steps=self.step,
            )
            prov["action_constraint"] = cfg.rollout.action_constraint
            prov["task"] = cfg.task.name
            prov["lora_matched_modules"] = self.lora_counts
            prov["prompt_filter"] = self.prompt_filter
            prov["workers"] = cfg.trainer.workers
            prov.update(self._lineage_fields(prov))
            write_json_atomic(tmp / "provenance.json", prov)

        return write_dir_atomically(self.paths.adapter, write)

    def _lineage_fields(self, prov: dict[str, Any]) -> dict[str, Any]:
        """``stage``, ``init_adapter`` and ``lineage`` (:mod:`hyperpod_rl.runs.lineage`) of the exported adapter."""
        from hyperpod_rl.runs.lineage import adapter_lineage

        init = getattr(self, "init_adapter", None)
        entry = {k: prov.get(k) for k in ("run_id", "steps", "adapter_sha256", "config_hash")}
        lineage = adapter_lineage(
            base_model_id=self.base_model_id,
            base_model_revision=self.base_model_revision,
            init_record=None if init is None else init["record"],
            run={"stage": self.config.stage, **entry},
        )
        return {
            "stage": self.config.stage,
            "init_adapter": None if init is None else {k: v for k, v in init.items() if k != "record"},
            "lineage": lineage,
        }
