"""The walkthrough's learning curve on one GPU (issue 40): SFT from scratch to about 0.45, then GRPO.

Usage (repository root; the GPU machine: ``python3 -m benchmarks.gpu.maze_curve ...``)::

    python -m benchmarks.gpu.maze_curve run --state STATE --out curve_s0.json --seed 0 --time-budget 540
    python -m benchmarks.gpu.maze_curve run --state STATE --out curve_s0.json --seed 0 --time-budget 540   # resumes
    python -m benchmarks.gpu.maze_curve pack --state STATE --to OUTDIR     # STATE as <= 15 MiB parts
    python -m benchmarks.gpu.maze_curve unpack --from OUTDIR --state STATE # and back
    python -m benchmarks.gpu.maze_curve render curve_s0.json curve_s1.json --png docs/img/maze_curve.png
    python -m benchmarks.gpu.maze_curve explore --state STATE --out explore_s0.json  # greedy against sampled (CPU too)

On the GPU machine (vLLM, transformers 5.8 and peft staged: ``benchmarks/gpu/stage.sh``), one seed in
device calls of 570 s, the state kept under the ignored ``build/`` (it stays while the machine is
warm) and packed into ``$OUT`` for a cold one::

    source $HOME/stage/env.sh && export PYTHONPATH=$HPRL_SITE_SKYRL:$PYTHONPATH
    python3 -m benchmarks.gpu.maze_curve run --state build/maze_curve/s0 --out $OUT/maze_curve_s0.json \
        --seed 0 --engine vllm --time-budget 540; python3 -m benchmarks.gpu.maze_curve pack --state build/maze_curve/s0 --to $OUT/s0

Workload: the quickstart's maze data (3x3..5x5 mazes, turn limit 6; train, validation and held-out
splits, disjoint by layout hash, :func:`hyperpod_rl.quickstart.prepare_dataset`) and a random-init
Qwen3-VL built in code, larger than the quickstart's (``--text HIDDENxLAYERS``, ``--vision
HIDDENxDEPTH``, ``--head-dim``: 64 by default, so vLLM's attention kernels take it; the tokenizer is
the quickstart's, trained on the env's own texts).

1. **SFT from scratch**: full-parameter training of the random-init model on the maze's
   shortest-path demonstrations (:class:`hyperpod_rl.train.sft.SFTTrainer`, ``sft.parameters=full``,
   float32 weights), evaluated greedily on the validation split every ``--sft-eval-every`` steps;
   it stops at the first evaluation whose validation solve rate reaches ``--sft-target`` (the
   walkthrough's start, 0.45) or at ``--sft-max-steps``, and that model directory (``<state>/home/runs/
   sft/model``, safetensors shards of at most 15 MB) is the GRPO stage's base model, with its revision.
2. **GRPO from it** on the reference backend, in this process
   (:class:`hyperpod_rl.train.reference.ReferenceTrainer`; no Ray cluster), with ``rollout.engine``
   ``--engine`` (vllm on the GPU, hf for a CPU smoke run), a fresh LoRA adapter of rank
   ``--lora-rank`` (32), groups of ``--group-size`` (8), ``--grpo-steps`` (160) steps, the
   quickstart's GRPO settings from an SFT start (:func:`hyperpod_rl.quickstart.grpo_defaults`) and
   ``--set`` on top. Held-out evaluation, greedy, with transformers on the trainer's own model (the
   engine sleeps): at step 0 (the SFT model: the trainer's base benchmark) and every ``--eval-every``
   steps, on the quickstart's 200 held-out mazes; the walkthrough's 64 are the first 64 of them
   (the same greedy episodes), each with a 95 % bootstrap interval. Held-out is read only there,
   never to choose a setting.

Resumable: ``--state DIR`` holds everything (``state.json``: the options, the SFT curve, the GRPO
points; the runs under ``home/``); the same command again continues where it stopped (SFT is not
trained again once its model is saved; GRPO resumes from its newest checkpoint, written at every
evaluation point and kept one at a time; earlier points are kept). ``--time-budget S`` pauses
cleanly (a checkpoint written) before S seconds from the start, so a 570-s device call ends with
its state saved. Data and the random-init base model are rebuilt from the seed, byte for byte,
never stored. Moving the state between machines: ``pack`` writes it (without what is rebuilt) as
parts of at most 15 MiB (``unpack`` joins and checks them): the SFT model (float32: about 4 bytes
a parameter) and one GRPO checkpoint (LoRA weights and AdamW state). A paused SFT stage holds a
full-parameter checkpoint (about 12 bytes a parameter): finish SFT on the machine that started it.

Lever runs (settings are chosen on validation, never on held-out): ``run --sft-from STATE
--eval-split validation --set ...`` starts GRPO from another state's finished SFT model (its SFT
options must match) and reads validation at every point; ``pack --sft-only`` packs just that SFT
stage (about 4 bytes a parameter) for a device call's carry; :mod:`benchmarks.gpu.curve_batch`
runs several such runs side by side in one device call. A diagnosis run, ``--grpo-train N
--eval-split train``, gives GRPO only the first N train mazes and reads those same N greedily at
every point: whether GRPO improves the mazes it trains on at all, apart from whether that carries
to unseen ones. Every GRPO point also keeps its window's training-batch figures: ``sampled_reward``,
``sampled_solve`` (the share of sampled episodes solved) and ``pass_at_group`` (the share of groups
with a solved episode: where GRPO has a signal to follow).

``--out PATH.json`` is written after every evaluation point (so a killed call still returns it),
with :mod:`benchmarks._record`'s fields (commit, packages, machine, date, load).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import math
import os
import shutil
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

from benchmarks._record import Recording
from benchmarks._sweep import parse_settings

#: The walkthrough's points (the AWS walkthrough, as quoted in issue 40): Qwen3-VL-8B, LoRA r32,
#: group 8, from an SFT checkpoint: held-out solve rate at GRPO step 0 and step 160, on 64 mazes.
WALKTHROUGH_POINTS: tuple[tuple[int, float], ...] = ((0, 0.4375), (160, 0.969))
WALKTHROUGH = {"source": "the AWS walkthrough, as quoted in issue 40", "mazes": 64, "points": [list(p) for p in WALKTHROUGH_POINTS]}

#: Largest part ``pack`` writes (bytes): under the 16 MiB a file that comes back from a device call.
PART_BYTES = 15 * 2**20
#: Most bytes ``pack`` writes in all: a device call returns at most 64 MiB (8 files), the result file too.
PACK_LIMIT = 60 * 2**20

#: Options that may change between calls of one state (they change nothing trained or measured).
_PER_CALL = ("state", "out", "time_budget", "until_step", "cmd", "engine")
#: ``--engine`` may change between calls only until GRPO has trained a step with one (a vLLM engine
#: that does not start on a machine can give way to transformers' generate, said in the result).

#: Under ``home/``: what is rebuilt from the seed (never packed), and the engine's weight-sync folder.
_REBUILT = ("home/datasets", "home/models")


class CurveError(Exception):
    """A bad option or state, said in one line with its fix."""


# ---------------------------------------------------------------------------------------------- options
def _size(spec: str) -> tuple[int, int]:
    """``"384x6"`` as (hidden size, layers or depth)."""
    hidden, sep, depth = spec.partition("x")
    if not sep or not hidden.isdigit() or not depth.isdigit() or int(hidden) < 1 or int(depth) < 1:
        raise argparse.ArgumentTypeError(f"{spec!r} is not HIDDENxLAYERS with both above 0 (e.g. 384x6)")
    return int(hidden), int(depth)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be at least 1")
    return value


def _rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{value} is not a solve rate in [0, 1]")
    return value


def _settings(text: str) -> dict[str, Any]:
    try:
        return parse_settings(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


class _MergeSettings(argparse.Action):
    """``--set`` given more than once: later settings on top of earlier ones."""

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option_string: str | None = None
    ) -> None:
        setattr(namespace, self.dest, {**(getattr(namespace, self.dest) or {}), **values})


class _Parser(argparse.ArgumentParser):
    """argparse, with a bad option said as one ``error: ...`` line (exit status 2)."""

    def error(self, message: str) -> Any:
        self.exit(2, f"error: {self.prog}: {message} (see --help)\n")


def parser() -> argparse.ArgumentParser:
    """The command line: ``run``, ``pack``, ``unpack`` and ``render``."""
    p = _Parser(prog="python -m benchmarks.gpu.maze_curve", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=_Parser)
    r = sub.add_parser("run", help="SFT from scratch, then GRPO with held-out points (resumable)")
    r.add_argument("--state", type=Path, required=True, help="the run's state folder (created; the same folder resumes it)")
    r.add_argument("--out", type=Path, required=True, help="the result JSON, written after every evaluation point")
    r.add_argument("--seed", type=int, default=0, help="seed of the data, the model and training")
    r.add_argument("--text", type=_size, default=(384, 6), metavar="HIDDENxLAYERS", help="text decoder: hidden size x layers")
    r.add_argument("--vision", type=_size, default=(128, 2), metavar="HIDDENxDEPTH", help="vision tower: hidden size x blocks")
    r.add_argument("--head-dim", type=int, default=64, choices=(32, 64, 128), help="attention head size (text and vision)")
    r.add_argument("--train", type=_positive, default=2000, help="train mazes")
    r.add_argument("--validation", type=_positive, default=200, help="validation mazes: SFT stops on these")
    r.add_argument("--heldout", type=_positive, default=200, help="held-out mazes (the quickstart's 200)")
    r.add_argument("--heldout-small", type=_positive, default=64, help="the first N held-out mazes reported apart (the walkthrough's 64)")
    r.add_argument("--sft-lr", type=float, default=1e-3, help="SFT AdamW learning rate (full-parameter)")
    r.add_argument("--sft-rows-per-step", type=_positive, default=8, help="mazes per SFT step")
    r.add_argument("--sft-eval-every", type=_positive, default=50, help="SFT steps between validation evaluations")
    r.add_argument("--sft-target", type=_rate, default=0.45, help="stop SFT once validation solve rate reaches this")
    r.add_argument("--sft-max-steps", type=_positive, default=3000, help="stop SFT here if the target is not reached")
    r.add_argument("--grpo-steps", type=_positive, default=160, help="GRPO steps (the walkthrough's 160)")
    r.add_argument("--eval-every", type=_positive, default=20, help="GRPO steps between held-out evaluations")
    r.add_argument("--lora-rank", type=_positive, default=32, help="GRPO LoRA rank (alpha = 2 x rank)")
    r.add_argument("--group-size", type=_positive, default=8, help="episodes per maze (GRPO group)")
    r.add_argument("--prompts-per-step", type=_positive, default=8, help="mazes per GRPO step")
    r.add_argument("--engine", choices=("vllm", "hf", "auto"), default="vllm", help="GRPO rollout engine (rollout.engine)")
    r.add_argument(
        "--set",
        type=_settings,
        action=_MergeSettings,
        default={},
        metavar="SETTINGS",
        help="GRPO run-config fields by dotted path, e.g. 'grpo.lr=2e-4' (repeatable: later ones on top)",
    )
    r.add_argument(
        "--sft-from",
        type=Path,
        default=None,
        metavar="STATE",
        help="start GRPO from another state's finished SFT model (same seed, model, data and SFT options): a lever run",
    )
    r.add_argument(
        "--eval-split",
        choices=("heldout", "validation", "train"),
        default="heldout",
        help="the split GRPO's evaluation points read: validation for a lever run (settings are chosen there), held-out for "
        "the curve, train for a diagnosis (the first --grpo-train train mazes, or --validation of them: the mazes GRPO trains on)",
    )
    r.add_argument(
        "--grpo-train",
        type=_positive,
        default=None,
        metavar="N",
        help="GRPO samples only the first N train mazes (SFT still trains on all --train): a diagnosis of whether GRPO "
        "improves the mazes it trains on, with --eval-split train",
    )
    r.add_argument("--time-budget", type=float, default=None, metavar="S", help="pause cleanly (state saved) before S seconds")
    r.add_argument("--until-step", type=_positive, default=None, metavar="N", help="this call: pause GRPO once it reaches step N")
    k = sub.add_parser("pack", help="write a state folder as parts of at most 15 MiB")
    k.add_argument("--state", type=Path, required=True)
    k.add_argument("--to", type=Path, required=True, help="folder the parts and their manifest go to")
    k.add_argument(
        "--sft-only",
        action="store_true",
        help="only the finished SFT stage (its model and state; GRPO left out): a --sft-from source for lever runs, about 4 bytes a parameter",
    )
    u = sub.add_parser("unpack", help="rebuild a state folder from pack's parts")
    u.add_argument("--from", dest="source", type=Path, required=True, help="folder holding the parts and manifest")
    u.add_argument("--state", type=Path, required=True)
    e = sub.add_parser("explore", help="what sampling finds that greedy decoding misses: the SFT model and the GRPO adapter")
    e.add_argument("--state", type=Path, required=True, help="a state whose SFT stage is done (its GRPO adapter too, if exported)")
    e.add_argument("--out", type=Path, required=True, help="the result JSON")
    e.add_argument("--samples", type=_positive, default=8, help="sampled episodes a maze (the GRPO group's size by default: 8)")
    e.add_argument("--mazes", type=_positive, default=None, help="the first N validation mazes (default: all of the state's)")
    e.add_argument("--sampling-seed", type=int, default=0, help="seed of the sampled episodes")
    d = sub.add_parser("render", help="plot held-out solve rate against GRPO step, one line per result")
    d.add_argument("results", type=Path, nargs="+", help="result JSON files (one per seed)")
    d.add_argument("--png", type=Path, required=True, help="the PNG to write")
    return p


def _check_run(args: argparse.Namespace) -> None:
    """Refuse options that cannot work, before anything is built (one line each, with the fix)."""
    (text, _), (vision, _) = args.text, args.vision
    if text % args.head_dim or text % 32:
        raise CurveError(f"--text hidden size {text} must be a multiple of 32 and of --head-dim {args.head_dim}")
    if vision % args.head_dim or vision % 32:
        raise CurveError(f"--vision hidden size {vision} must be a multiple of 32 and of --head-dim {args.head_dim}")
    if args.heldout_small > args.heldout:
        raise CurveError(f"--heldout-small {args.heldout_small} is more than --heldout {args.heldout}")
    if args.sft_lr <= 0 or not math.isfinite(args.sft_lr):
        raise CurveError(f"--sft-lr must be a positive number, got {args.sft_lr}")
    if args.time_budget is not None and not (math.isfinite(args.time_budget) and args.time_budget > 0):
        raise CurveError(f"--time-budget must be positive seconds, got {args.time_budget}")
    from hyperpod_rl.config.presets import with_overrides
    from hyperpod_rl.config.run import RunConfig
    from hyperpod_rl.errors import HyperpodRLError

    data = {"train_path": "train.parquet", "heldout_path": "heldout.parquet"}  # checked here, not read
    raw = RunConfig.build({"run_id": "curve-check", "backend": "reference", "data": data}).model_dump(mode="json")
    try:
        RunConfig.build(with_overrides(raw, {**_engine_settings(args.engine, args.set), **args.set, "trainer.steps": args.grpo_steps}))
    except HyperpodRLError as err:
        raise CurveError(" ".join(str(err).split())) from None


#: The curve's model's positions (``max_position_embeddings`` of :func:`hyperpod_rl.model.tiny.build_tiny_qwen3vl`'s
#: text config). vLLM refuses a ``max_model_len`` beyond them: the run config's default (``rollout.max_input_tokens``
#: 8192 + ``max_new_tokens`` 32 = 8224) stopped the engine before GRPO's first step on the GPU (2026-12-07, commit
#: 678b7c636c). A maze conversation is far shorter (the longest prompt is 45 tokens; at most 6 turns of 32 new tokens).
MODEL_POSITIONS = 4096


def _engine_settings(engine: str, settings: dict[str, Any] | None = None) -> dict[str, Any]:
    """The GRPO run's rollout settings for ``--engine``: vLLM decodes free text, so the maze's
    one-word constrained answer (``rollout.action_constraint='directions'``, a single forward pass
    of the trainer's own model) gives way to ``none`` there, and its context is the model's
    (:data:`MODEL_POSITIONS`: ``rollout.max_model_len``, the conversation limit below it by one
    response of ``rollout.max_new_tokens``, from ``settings`` (``--set``) or its default); hf and
    auto keep the quickstart's."""
    if engine != "vllm":
        return {"rollout.engine": engine}
    from hyperpod_rl.config.sections import RolloutConfig

    new_tokens = int((settings or {}).get("rollout.max_new_tokens", RolloutConfig.model_fields["max_new_tokens"].default))
    return {
        "rollout.engine": engine,
        "rollout.action_constraint": "none",
        "rollout.max_model_len": MODEL_POSITIONS,
        "rollout.max_input_tokens": MODEL_POSITIONS - new_tokens,
    }


#: The options that define the SFT stage: a ``--sft-from`` state must have been started with the same.
_SFT_OPTIONS = (
    "seed", "text", "vision", "head_dim", "train", "validation", "heldout",
    "sft_lr", "sft_rows_per_step", "sft_eval_every", "sft_target", "sft_max_steps",
)  # fmt: skip


def _sft_source(args: argparse.Namespace) -> dict[str, Any]:
    """``--sft-from``'s state, checked before anything is created: its finished SFT stage, started with
    this run's SFT options, with its model directory there.

    Raises:
        CurveError: the source holds no finished SFT stage, was started with other SFT options, or
            lacks its model.
    """
    source = args.sft_from.resolve()
    try:
        src = json.loads((source / "state.json").read_text())
    except OSError:
        raise CurveError(f"--sft-from {args.sft_from} holds no maze_curve state (no state.json there): give the --state of a run") from None
    except json.JSONDecodeError:
        raise CurveError(f"--sft-from {args.sft_from}: its state.json is not JSON: unpack that state again") from None
    if not src.get("sft", {}).get("done"):
        raise CurveError(f"--sft-from {args.sft_from} has not finished SFT: run (or resume) it first")
    mine = _fingerprint(args)
    differ = [k for k in _SFT_OPTIONS if src.get("options", {}).get(k) != mine.get(k)]
    if differ:
        raise CurveError(f"--sft-from {args.sft_from} was started with other SFT options ({', '.join(differ)} differ): pass its own")
    model = source / src["sft"]["model_dir"]
    if not model.is_dir():
        raise CurveError(f"--sft-from {args.sft_from} lacks its SFT model ({model}): unpack that state again")
    return src


def _sft_from(args: argparse.Namespace, st: State, src: dict[str, Any]) -> None:
    """Copy the checked ``--sft-from`` state's SFT stage (its section and model directory) into ``st``."""
    model = args.sft_from.resolve() / src["sft"]["model_dir"]
    dest = st.root / src["sft"]["model_dir"]
    tmp = dest.with_name(dest.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(model, tmp)
    shutil.rmtree(dest, ignore_errors=True)
    tmp.rename(dest)
    st.data["sft"] = {**src["sft"], "from_state": str(args.sft_from)}
    st.save()


def _fingerprint(args: argparse.Namespace) -> dict[str, Any]:
    """The options a state was started with (all but :data:`_PER_CALL`; ``--sft-from`` and
    ``--eval-split`` only where given, so a curve state started before them resumes), as JSON values."""
    unset = {"sft_from": None, "eval_split": "heldout", "grpo_train": None}
    return {
        k: (str(v) if isinstance(v, Path) else list(v) if isinstance(v, tuple) else v)
        for k, v in sorted(vars(args).items())
        if k not in _PER_CALL and not (k in unset and v == unset[k])
    }


# ---------------------------------------------------------------------------------------------- state
class State:
    """``<state>/state.json``: the options, the SFT curve and outcome, the GRPO points; written atomically."""

    def __init__(self, root: Path, options: dict[str, Any]) -> None:
        self.root = root
        self.file = root / "state.json"
        if root.exists() and not root.is_dir():
            raise CurveError(f"--state {root} is a file, not a folder: give a folder (it is created)")
        if self.file.is_file():
            try:
                self.data = json.loads(self.file.read_text())
            except json.JSONDecodeError as err:
                raise CurveError(f"{self.file} is not JSON ({err}): restore it, or start over with another --state") from None
            old = self.data.get("options")
            if old != options:
                differ = sorted(k for k in {**(old or {}), **options} if (old or {}).get(k) != options.get(k))
                raise CurveError(
                    f"--state {root} was started with other options ({', '.join(differ)} differ): rerun with its own, "
                    "or give another --state"
                )
        else:
            root.mkdir(parents=True, exist_ok=True)
            self.data = {"options": options, "sft": {"curve": [], "done": False}, "grpo": {"points": [], "done": False}}

    def save(self) -> None:
        tmp = self.file.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=1))
        tmp.replace(self.file)


# ---------------------------------------------------------------------------------------------- the model
def _base_model(args: argparse.Namespace, home: Path, rows: list[Any]) -> tuple[Path, str, dict[str, int]]:
    """The random-init Qwen3-VL of ``--text``/``--vision``/``--head-dim``, saved as vLLM loads it
    (:func:`benchmarks.gpu.workload.save_for_vllm`), rebuilt from the seed byte for byte; its
    directory, revision and parameter counts."""
    from benchmarks.gpu.workload import save_for_vllm
    from hyperpod_rl.model.loading import revision_of
    from hyperpod_rl.model.revision import TINY_MODEL_ID
    from hyperpod_rl.model.tiny import build_tiny_qwen3vl
    from hyperpod_rl.quickstart import tokenizer_corpus
    from hyperpod_rl.tasks import get_task

    (text, layers), (vision, depth) = args.text, args.vision
    final = home / "models" / f"curve-{text}x{layers}-{vision}x{depth}-h{args.head_dim}-s{args.seed}"
    model, processor = build_tiny_qwen3vl(
        seed=args.seed,
        hidden_size=text,
        num_layers=layers,
        vision_hidden_size=vision,
        vision_depth=depth,
        corpus=tokenizer_corpus(rows),
        answer_words=get_task("maze").answer_words,
        head_dim=args.head_dim,
        vision_heads=vision // args.head_dim,
    )
    total = sum(p.numel() for p in model.parameters())
    visual = sum(p.numel() for p in model.model.visual.parameters())
    counts = {"total": total, "vision": visual, "text": total - visual}
    if not (final / "hyperpod_rl_model.json").is_file():
        tmp = final.with_name(final.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        save_for_vllm(tmp, model, processor)
        (tmp / "hyperpod_rl_model.json").write_text(json.dumps({"model_id": TINY_MODEL_ID, "seed": args.seed}))
        shutil.rmtree(final, ignore_errors=True)
        tmp.rename(final)
    return final, revision_of(final), counts


def _options(args: argparse.Namespace) -> Any:
    from hyperpod_rl.quickstart import QuickstartOptions, grpo_defaults

    text, layers = args.text
    vision, depth = args.vision
    chosen = grpo_defaults(from_adapter=True)  # GRPO from an SFT start: the quickstart's settings chosen on validation
    return QuickstartOptions.build(
        seed=args.seed,
        train_rows=args.train,
        validation_rows=args.validation,
        heldout_rows=args.heldout,
        serve=False,
        tiny_hidden_size=text,
        tiny_layers=layers,
        tiny_vision_hidden_size=vision,
        tiny_vision_depth=depth,
        lora_rank=args.lora_rank,
        group_size=args.group_size,
        prompts_per_step=args.prompts_per_step,
        steps=args.grpo_steps,
        lr=chosen["lr"],
        entropy_coef=chosen["entropy_coef"],
        sft_steps=args.sft_max_steps,
        sft_lr=args.sft_lr,
        sft_rows_per_step=args.sft_rows_per_step,
    )


class Clock:
    """The call's time budget: :meth:`must_pause` before a step that might not end (with its
    evaluation and a checkpoint) inside it. Step times are the intervals between :meth:`tick`
    calls, less the evaluations (:meth:`evaluated`); the first of a stage (model loading, the
    engine's start) is not a step."""

    def __init__(self, budget: float | None) -> None:
        self.start, self.budget = time.monotonic(), budget
        self.step_s, self.eval_s = 0.0, 0.0
        self.last: float | None = None

    def stage(self) -> None:
        """A stage starts: its first step's interval holds its set-up, not counted."""
        self.last = None

    def tick(self) -> None:
        now = time.monotonic()
        if self.last is not None:
            self.step_s = max(self.step_s, now - self.last)
        self.last = now

    def evaluated(self, since: float) -> None:
        """An evaluation ran from ``since`` to now: its time is the next evaluation's estimate, not a step's."""
        now = time.monotonic()
        self.eval_s = max(self.eval_s, now - since)
        self.last = now

    def must_pause(self, next_evaluates: bool) -> bool:
        if self.budget is None:
            return False
        need = 1.5 * self.step_s + (self.eval_s if next_evaluates else 0.0) + 15.0  # 15 s: a checkpoint and the exit
        return time.monotonic() - self.start + need > self.budget

    def elapsed(self) -> float:
        return time.monotonic() - self.start


def _window(steps: list[dict[str, Any]], key: str) -> float | None:
    """The mean of ``key`` over a window's metric lines (4 decimals); None when no line has it."""
    values = [v[key] for v in steps if key in v]
    return round(sum(values) / len(values), 4) if values else None


def _iv(values: list[float]) -> dict[str, float]:
    import numpy as np

    from hyperpod_rl.eval.stats import bootstrap_interval

    i = bootstrap_interval(np.asarray(values, dtype=float))
    return {"value": round(i.value, 4), "low": round(i.low, 4), "high": round(i.high, 4), "n": len(values)}


def _last_values(metrics: Path, since: int) -> list[dict[str, float]]:
    from hyperpod_rl.metrics import read_metrics

    return [dict(r.values) for r in read_metrics(metrics) if r.step > since]


# ---------------------------------------------------------------------------------------------- the stages
def _sft(args: argparse.Namespace, st: State, clock: Clock, opts: Any, home: Path, base: tuple[Path, str], data: Any) -> bool:
    """Train (or resume) the SFT stage; True once its model is saved, False when paused."""
    from hyperpod_rl.config.presets import with_overrides
    from hyperpod_rl.config.run import RunConfig
    from hyperpod_rl.model.loading import revision_of
    from hyperpod_rl.quickstart import make_run_config
    from hyperpod_rl.runs.files import verify_checksums
    from hyperpod_rl.tasks.maze import read_rows
    from hyperpod_rl.train.sft import SFTTrainer

    sft = st.data["sft"]
    validation = read_rows(data.validation)
    raw = make_run_config(opts, run_id="curve-sft", model_path=base[0], revision=base[1], data=data, stage="sft").model_dump(mode="json")
    settings = {
        "sft.parameters": "full",
        "rollout.engine": "hf",  # SFT replays demonstrations: no engine
        "data.heldout_path": str(data.validation),  # the trainer's step-0 benchmark: the random model on validation
        "trainer.eval_rows": args.validation,
        "checkpoint.interval": 0,  # a full checkpoint only where a call pauses (about 12 bytes a parameter)
        "checkpoint.keep": 1,
    }
    cfg = RunConfig.build(with_overrides(raw, settings))
    run_dir = home / "runs" / "curve-sft"
    trainer = SFTTrainer(cfg, run_dir)
    every, stopped = args.sft_eval_every, {"target": False}

    def after_step(t: Any) -> bool:
        clock.tick()
        if t.step % every == 0 or t.step == cfg.trainer.steps:
            t0 = time.monotonic()
            metrics, per_maze = t.evaluate_policy(validation)
            clock.evaluated(t0)
            steps = _last_values(t.metrics_path, since=t.step - every)
            solve = [float(m["solved"]) for m in per_maze]
            point = {
                "step": t.step,
                "validation_solve": _iv(solve),
                "optimal_move_rate": round(metrics["optimal_move_rate"], 4),
                "loss": round(sum(v["sft/loss"] for v in steps) / max(len(steps), 1), 4),
                "seconds": round(clock.elapsed(), 1),
            }
            sft["curve"] = [p for p in sft["curve"] if p["step"] < t.step] + [point]
            st.save()
            print(
                f"SFT step {t.step}: validation solve {point['validation_solve']['value']:.3f} "
                f"[{point['validation_solve']['low']:.3f}, {point['validation_solve']['high']:.3f}], loss {point['loss']:.3f}",
                flush=True,
            )
            if point["validation_solve"]["value"] >= args.sft_target:
                stopped["target"] = True
                return True
        return clock.must_pause(next_evaluates=(t.step + 1) % every == 0)

    clock.stage()
    done = trainer.export_dir
    if (done / "provenance.json").is_file() and verify_checksums(done) is None:  # exported, the state not yet saved
        model_dir: Path | None = done
        stopped["target"] = bool(sft["curve"]) and sft["curve"][-1]["validation_solve"]["value"] >= args.sft_target
        trainer.step = json.loads((done / "provenance.json").read_text())["steps"]
    else:
        model_dir = trainer.train_until(after_step)
    if model_dir is None and not stopped["target"]:
        print(f"SFT paused at step {trainer.step} (time budget); the same command resumes it", flush=True)
        return False
    if model_dir is None:  # stopped on the target: this step's weights are the GRPO stage's base
        model_dir = trainer.export_adapter()
    base_eval = json.loads((run_dir / "eval" / "base.json").read_text())
    sft.update(
        done=True,
        reached_target=stopped["target"],
        stop_step=trainer.step,
        model_dir=str(model_dir.relative_to(st.root)),
        revision=revision_of(model_dir),
        random_init_validation_solve=round(base_eval["metrics"]["solve_rate"], 4),
    )
    shutil.rmtree(run_dir / "checkpoints", ignore_errors=True)  # full-parameter checkpoints: the model dir is what is kept
    st.save()
    return True


def _grpo(args: argparse.Namespace, st: State, clock: Clock, opts: Any, home: Path, data: Any, rec: Any) -> bool:
    """Train (or resume) the GRPO stage from the SFT model; True when it reached ``--grpo-steps``."""
    from hyperpod_rl.config.presets import with_overrides
    from hyperpod_rl.config.run import RunConfig
    from hyperpod_rl.quickstart import make_run_config
    from hyperpod_rl.tasks.maze import read_rows
    from hyperpod_rl.train.reference import ReferenceTrainer

    sft, grpo = st.data["sft"], st.data["grpo"]
    model_dir = st.root / sft["model_dir"]
    split = args.eval_split
    train_path = data.train
    if args.grpo_train is not None:  # the diagnosis: GRPO on the first N train mazes only
        from hyperpod_rl.tasks.dataset import read_rows as read_any
        from hyperpod_rl.tasks.dataset import write_parquet

        train_path = home / "datasets" / f"grpo-train-{args.grpo_train}.parquet"
        if not train_path.is_file():
            write_parquet(read_any(data.train)[: args.grpo_train], train_path)
    split_path, split_rows = {
        "heldout": (data.heldout, args.heldout),
        "validation": (data.validation, args.validation),
        "train": (train_path, args.grpo_train or args.validation),
    }[split]
    rows = read_rows(split_path)[:split_rows]
    raw = make_run_config(opts, run_id="curve-grpo", model_path=model_dir, revision=sft["revision"], data=data).model_dump(mode="json")
    settings = {
        **_engine_settings(args.engine, args.set),
        "data.heldout_path": str(split_path),  # step 0: the trainer's benchmark of its base, the SFT model, on the split
        "data.train_path": str(train_path),
        "trainer.eval_rows": split_rows,
        "checkpoint.interval": args.eval_every,
        "checkpoint.keep": 1,
        **args.set,
    }
    cfg = RunConfig.build(with_overrides(raw, settings))
    run_dir = home / "runs" / "curve-grpo"
    before = grpo.get("engine_option")
    if before is not None and before != args.engine:
        if any(p["step"] > 0 for p in grpo["points"]):
            raise CurveError(f"GRPO in --state {st.root} trains with --engine {before}: rerun with it, or give another --state")
        shutil.rmtree(run_dir, ignore_errors=True)  # the other engine's attempt trained no step
    grpo["engine_option"] = args.engine
    st.save()
    trainer = ReferenceTrainer(cfg, run_dir)
    grpo["settings"] = {
        "grpo": cfg.grpo.model_dump(mode="json"),
        "lora": cfg.lora.model_dump(mode="json"),
        "rollout": cfg.rollout.model_dump(mode="json"),
        "data": {"prompts_per_step": cfg.data.prompts_per_step},
        "trainer": {"steps": cfg.trainer.steps, "seed": cfg.trainer.seed, "dtype": cfg.trainer.dtype},
    }

    def record(point: dict[str, Any]) -> None:
        grpo["points"] = [p for p in grpo["points"] if p["step"] < point["step"]] + [point]
        st.save()
        rec.results = _result(st)
        rec.write()
        h = point[split]
        print(f"GRPO step {point['step']}: {split} solve {h['value']:.3f} [{h['low']:.3f}, {h['high']:.3f}]", flush=True)

    def point_of(step: int, per_maze: list[dict[str, Any]], since: int) -> dict[str, Any]:
        solve = [float(m["solved"]) for m in per_maze]
        steps = [v for v in _last_values(run_dir / "metrics.jsonl", since=since) if "reward/avg_raw_reward" in v]
        return {
            "step": step,
            split: _iv(solve),
            **({"heldout_small": _iv(solve[: args.heldout_small])} if split == "heldout" else {}),
            "sampled_reward": _window(steps, "reward/avg_raw_reward"),
            # the training batch's sampled episodes: the share solved, and the share of groups with one solved at least
            "sampled_solve": _window(steps, "environment/solve_rate"),
            "pass_at_group": _window(steps, f"reward/avg_pass_at_{cfg.grpo.group_size}"),
            "tied_group_share": round(sum(v.get("reward/tied_group_share", 0.0) for v in steps) / len(steps), 4) if steps else None,
            "train_s": round(sum(v["timing/step"] for v in _last_values(run_dir / "metrics.jsonl", since=0)), 1),
        }

    started = {"base": False}

    def after_step(t: Any) -> bool:
        clock.tick()
        if not started["base"]:
            started["base"] = True
            base = run_dir / "eval" / "base.json"
            if not any(p["step"] == 0 for p in grpo["points"]) and base.is_file():
                record(
                    point_of(0, json.loads(base.read_text())["per_maze"], since=0)
                    | {"train_s": 0.0, "sampled_reward": None, "sampled_solve": None, "pass_at_group": None, "tied_group_share": None}
                )
        if t.step % args.eval_every == 0 or t.step == cfg.trainer.steps:
            t0 = time.monotonic()
            _, per_maze = t.evaluate_policy(rows)
            clock.evaluated(t0)
            record(point_of(t.step, per_maze, since=t.step - args.eval_every) | {"eval_s": round(time.monotonic() - t0, 1)})
        if args.until_step is not None and t.step >= args.until_step:
            return True
        return clock.must_pause(next_evaluates=(t.step + 1) % args.eval_every == 0)

    clock.stage()
    adapter = trainer.train_until(after_step)
    grpo["engine"] = {
        "rollout.engine": cfg.rollout.engine,
        "ran": "vllm" if getattr(trainer, "engine", None) is not None else "hf",
        "evaluation": "transformers, greedy, on the trainer's model",
    }
    st.save()
    if adapter is None:
        print(f"GRPO paused at step {trainer.step} (time budget or --until-step); the same command resumes it", flush=True)
        return False
    grpo["done"] = True
    shutil.rmtree(run_dir / "lora-sync", ignore_errors=True)
    st.save()
    return True


def _result(st: State) -> dict[str, Any]:
    """The result file's ``results`` from the state."""
    d = st.data
    opts = d["options"]
    return {
        "task": "maze (quickstart data: 3x3..5x5, turn limit 6)",
        "model": {
            "text": {"hidden_size": opts["text"][0], "layers": opts["text"][1]},
            "vision": {"hidden_size": opts["vision"][0], "depth": opts["vision"][1]},
            "head_dim": opts["head_dim"],
            "parameters": d.get("parameters"),
        },
        "seed": opts["seed"],
        "sft": {k: v for k, v in d["sft"].items() if k != "model_dir"}
        | {"parameters": "full", "lr": opts["sft_lr"], "rows_per_step": opts["sft_rows_per_step"], "target": opts["sft_target"]},
        "grpo": {
            "backend": "reference",
            "steps": opts["grpo_steps"],
            "eval_every": opts["eval_every"],
            "heldout_mazes": opts["heldout"],
            "heldout_small_mazes": opts["heldout_small"],
            "heldout_small_is": f"the first {opts['heldout_small']} of the {opts['heldout']} held-out mazes",
            "eval_split": opts.get("eval_split", "heldout"),
            **{k: v for k, v in d["grpo"].items()},
        },
        "walkthrough": WALKTHROUGH,
        "selection": (
            "SFT stop on validation; held-out read only at the GRPO evaluation points"
            if opts.get("eval_split", "heldout") == "heldout"
            else "a lever run: GRPO evaluated on validation (where settings are chosen); held-out not read"
        ),
    }


def run(args: argparse.Namespace) -> int:
    """``run``: SFT (unless done), then GRPO, resumable; the result written at every point."""
    _check_run(args)
    source = _sft_source(args) if args.sft_from is not None else None
    state_dir = args.state.resolve()
    st = State(state_dir, _fingerprint(args))
    clock = Clock(args.time_budget)
    home = state_dir / "home"
    os.environ["HYPERPOD_RL_HOME"] = str(home)
    os.environ["HYPERPOD_RL_LEDGER"] = "off"
    import torch

    from hyperpod_rl.quickstart import prepare_dataset
    from hyperpod_rl.tasks.maze import read_rows

    if torch.cuda.is_available():
        torch.backends.cuda.matmul.allow_tf32 = True  # the full-parameter SFT's float32 matmuls
    if source is not None and not st.data["sft"]["done"]:
        _sft_from(args, st, source)
    opts = _options(args)
    data = prepare_dataset(opts, home)
    model_dir, revision, counts = _base_model(args, home, read_rows(data.train))
    st.data["parameters"] = counts
    st.save()
    print(f"model: {counts['total'] / 1e6:.1f} M parameters (text {counts['text'] / 1e6:.1f} M, vision {counts['vision'] / 1e6:.2f} M)")
    params = {**_fingerprint(args), "state": str(args.state), "time_budget": args.time_budget}
    with Recording(args.out.stem, params=params, path=args.out.resolve()) as rec:  # the name is the file's stem, as results/ wants
        rec.results = _result(st)
        if not st.data["sft"]["done"] and not _sft(args, st, clock, opts, home, (model_dir, revision), data):
            rec.results = _result(st)
            rec.notes = "paused in SFT (time budget); rerun the same command to continue"
            return 0
        rec.results = _result(st)
        if not st.data["grpo"]["done"] and not _grpo(args, st, clock, opts, home, data, rec):
            rec.results = _result(st)
            rec.notes = "paused in GRPO (time budget or --until-step); rerun the same command to continue"
            return 0
        rec.results = _result(st)
    return 0


# ---------------------------------------------------------------------------------------------- pack
def _packed_members(state: Path) -> list[Path]:
    """The state's files ``pack`` takes: all but what is rebuilt from the seed and the engine's sync folder."""
    out = []
    for f in sorted(state.rglob("*")):
        rel = f.relative_to(state).as_posix()
        if f.is_file() and not rel.startswith(_REBUILT) and "/lora-sync/" not in rel:
            out.append(f)
    return out


def pack(state: Path, to: Path, sft_only: bool = False) -> list[Path]:
    """Write ``state`` (without what is rebuilt) as a tar cut into parts of at most :data:`PART_BYTES`
    (``maze_state.partNN``) and ``maze_state.json`` (each part's sha256); returns the files written.
    ``sft_only``: only ``state.json`` with its GRPO stage emptied and the SFT model directory (what
    ``run --sft-from`` reads).

    Raises:
        CurveError: no state there, ``sft_only`` on a state whose SFT has not finished, or more
            than :data:`PACK_LIMIT` bytes to pack.
    """
    if not (state / "state.json").is_file():
        raise CurveError(f"{state} holds no maze_curve state (no state.json): give the --state of a run")
    members = _packed_members(state)
    head = None
    if sft_only:
        data = json.loads((state / "state.json").read_text())
        if not data["sft"].get("done"):
            raise CurveError(f"{state} has not finished SFT: --sft-only packs a finished SFT stage; drop it, or finish SFT")
        model = state / data["sft"]["model_dir"]
        members = [f for f in members if f.is_relative_to(model)]
        head = json.dumps({**data, "grpo": {"points": [], "done": False}}, indent=1).encode()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        if head is not None:
            info = tarfile.TarInfo("state.json")
            info.size = len(head)
            tar.addfile(info, io.BytesIO(head))
        for f in members:
            tar.add(f, arcname=f.relative_to(state).as_posix())
    blob = buffer.getvalue()
    if len(blob) > PACK_LIMIT:
        largest = sorted(_packed_members(state), key=lambda f: -f.stat().st_size)[:3]
        names = ", ".join(f"{f.relative_to(state)} ({f.stat().st_size / 2**20:.0f} MiB)" for f in largest)
        raise CurveError(
            f"the state is {len(blob) / 2**20:.0f} MiB, over the {PACK_LIMIT // 2**20} MiB a device call returns (largest: {names}): "
            "finish SFT before packing (a paused SFT holds a full checkpoint), or use a smaller --text"
        )
    to.mkdir(parents=True, exist_ok=True)
    written, parts = [], []
    for i in range(0, max(len(blob), 1), PART_BYTES):
        part = to / f"maze_state.part{i // PART_BYTES:02d}"
        part.write_bytes(blob[i : i + PART_BYTES])
        parts.append({"name": part.name, "sha256": hashlib.sha256(part.read_bytes()).hexdigest()})
        written.append(part)
    manifest = to / "maze_state.json"
    manifest.write_text(json.dumps({"parts": parts, "bytes": len(blob)}, indent=1))
    return [manifest, *written]


def unpack(source: Path, state: Path) -> None:
    """Rebuild ``state`` from :func:`pack`'s files in ``source`` (each part's sha256 checked first).

    Raises:
        CurveError: the manifest or a part is missing or damaged, or ``state`` already holds a state.
    """
    manifest = source / "maze_state.json"
    if not manifest.is_file():
        raise CurveError(f"{source} has no maze_state.json: give the folder pack wrote")
    if (state / "state.json").exists():
        raise CurveError(f"{state} already holds a state: unpack into an empty folder")
    try:
        info = json.loads(manifest.read_text())
        parts_info = list(info["parts"])
    except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError) as err:
        raise CurveError(f"{manifest} is not pack's manifest ({type(err).__name__}): copy the folder pack wrote again") from None
    blob = b""
    for part in parts_info:
        f = source / part["name"]
        data = f.read_bytes() if f.is_file() else b""
        if hashlib.sha256(data).hexdigest() != part["sha256"]:
            raise CurveError(f"{f} is missing or damaged (its sha256 differs from maze_state.json): copy it again")
        blob += data
    state.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(blob), mode="r") as tar:
        tar.extractall(state, filter="data")


# ---------------------------------------------------------------------------------------------- render
def render(results: list[Path], png: Path) -> Path:
    """Held-out solve rate (the quickstart's 200 mazes, 95 % interval band; the first 64 dashed)
    against GRPO step, one colour per result file (seed), the walkthrough's two points marked;
    or, for lever runs (``--eval-split validation``), validation solve rate, one colour per file.
    Written as a PNG with matplotlib.

    Raises:
        CurveError: a file is not a maze_curve result, has no GRPO point, or the files read
            different splits.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.5), dpi=120)
    splits: set[str] = set()
    for path in results:
        try:
            r = json.loads(path.read_text())["results"]
            points = r["grpo"]["points"]
            split = r["grpo"].get("eval_split", "heldout")
            steps = [p["step"] for p in points]
            main = [p[split] for p in points]
        except (OSError, json.JSONDecodeError, KeyError, TypeError) as err:
            raise CurveError(f"{path} is not a maze_curve result ({type(err).__name__}: {err})") from None
        if not points:
            raise CurveError(f"{path} has no GRPO evaluation point yet: run (or resume) it first")
        splits.add(split)
        what = f"seed {r['seed']}" if split == "heldout" else f"{path.stem}"
        line = ax.plot(steps, [m["value"] for m in main], marker="o", label=f"{what}: {main[0]['n']} {split} mazes")[0]
        ax.fill_between(steps, [m["low"] for m in main], [m["high"] for m in main], color=line.get_color(), alpha=0.15)
        if split == "heldout":
            small = [p["heldout_small"] for p in points]
            ax.plot(steps, [s["value"] for s in small], ls="--", color=line.get_color(), alpha=0.7, label=f"{what}: first {small[0]['n']}")
    if len(splits) > 1:
        raise CurveError("the results read different splits (held-out curves and validation lever runs): draw them apart")
    if splits == {"heldout"}:
        (x0, y0), (x1, y1) = WALKTHROUGH_POINTS
        ax.scatter([x0, x1], [y0, y1], marker="*", s=160, color="black", zorder=5, label="walkthrough (8B, 64 mazes)")
    ax.set_xlabel("GRPO step")
    ax.set_ylabel(f"{'held-out' if splits == {'heldout'} else 'validation'} solve rate (greedy)")
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title("Maze: GRPO from a from-scratch SFT start (bands: 95 % bootstrap)", fontsize=10)
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(png)
    plt.close(fig)
    return png


def explore(args: argparse.Namespace) -> int:
    """``explore``: on the state's validation mazes (settings are chosen there; held-out is not read),
    for the SFT model and, where the state's GRPO stage exported one, its adapter: the greedy solve
    rate, the sampled one (``--samples`` episodes a maze at the GRPO run's ``rollout.temperature``
    and turn limit, constrained answers as in training) and pass@k (a maze solved by one sample at
    least), each with a 95 % bootstrap interval over mazes; the share of mazes that greedy decoding
    fails and a sample solves (where GRPO's group has a signal it could carry to the greedy answer);
    and GRPO less SFT per maze (paired). Written as a result (:class:`benchmarks._record.Recording`)
    with the per-maze outcomes. Runs on the CPU as well (about 10 M parameters).

    Raises:
        CurveError: the state is missing or its SFT stage is not done.
    """
    import torch

    from hyperpod_rl.eval.benchmark import greedy_benchmark
    from hyperpod_rl.model.adapter import load_policy
    from hyperpod_rl.model.rollout import play_episodes
    from hyperpod_rl.quickstart import prepare_dataset
    from hyperpod_rl.tasks.maze import read_rows

    started, load = time.time(), list(os.getloadavg())
    root = args.state.resolve()
    try:
        st = json.loads((root / "state.json").read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise CurveError(f"--state {args.state} holds no readable state.json ({err}): give a state that ran, or unpack one") from None
    if not st["sft"].get("done"):
        raise CurveError(f"--state {args.state} has no finished SFT stage: run it first")
    home = root / "home"
    os.environ["HYPERPOD_RL_HOME"] = str(home)
    os.environ["HYPERPOD_RL_LEDGER"] = "off"
    options = {k: tuple(v) if isinstance(v, list) else v for k, v in st["options"].items()}
    data = prepare_dataset(_options(argparse.Namespace(**options)), home)
    rows = read_rows(data.validation)[: args.mazes]
    grpo_run = home / "runs" / "curve-grpo"
    manifest = json.loads((grpo_run / "manifest.json").read_text()) if (grpo_run / "manifest.json").is_file() else None
    rollout = (manifest or {}).get("config", {}).get("rollout", {})
    temperature, max_turns = float(rollout.get("temperature", 1.0)), rollout.get("max_turns")
    policies = {"sft": None}
    if st["grpo"].get("done") and (grpo_run / "adapter" / "adapter_model.safetensors").is_file():
        policies["grpo"] = grpo_run / "adapter"
    per: dict[str, dict[str, list[float]]] = {}
    model_dir = root / st["sft"]["model_dir"]
    for name, adapter in policies.items():
        t0 = time.monotonic()
        policy = load_policy(model_dir, adapter)
        with torch.no_grad():
            _, greedy = greedy_benchmark(policy, rows, max_turns=max_turns)
            gen = torch.Generator().manual_seed(args.sampling_seed)
            episodes = play_episodes(policy, rows, group_size=args.samples, temperature=temperature, max_turns=max_turns, generator=gen)
        k = args.samples
        solved = [[float(ep.metrics["solved"]) for ep in episodes[i * k : (i + 1) * k]] for i in range(len(rows))]
        g = [float(m["solved"]) for m in greedy]
        per[name] = {
            "greedy": g,
            "sampled": [sum(x) / k for x in solved],
            "pass": [float(max(x)) for x in solved],
            "found": [float(max(x) > 0 and gi == 0) for x, gi in zip(solved, g, strict=True)],
        }
        print(f"{name}: greedy {sum(g) / len(g):.3f}, sampled {sum(per[name]['sampled']) / len(g):.3f}, "
              f"pass@{k} {sum(per[name]['pass']) / len(g):.3f} ({time.monotonic() - t0:.0f} s)", flush=True)  # fmt: skip
    results: dict[str, Any] = {
        "task": "maze (quickstart data: 3x3..5x5, turn limit 6)",
        "split": "validation",
        "mazes": len(rows),
        "samples": args.samples,
        "temperature": temperature,
        "max_turns": max_turns,
        "sft_revision": st["sft"]["revision"],
        "grpo_steps": st["grpo"]["points"][-1]["step"] if "grpo" in policies else None,
        "policies": {
            name: {
                "greedy_solve": _iv(v["greedy"]),
                "sampled_solve": _iv(v["sampled"]),
                f"pass_at_{args.samples}": _iv(v["pass"]),
                "greedy_fails_a_sample_solves": _iv(v["found"]),
                "per_maze": {"greedy": [int(x) for x in v["greedy"]], "sampled_solved": [round(x * args.samples) for x in v["sampled"]]},
            }
            for name, v in per.items()
        },
    }
    if "grpo" in per:
        # the GRPO run's own training batches, its first and last 20 steps (metrics.jsonl): where the policy changed
        lines = _last_values(grpo_run / "metrics.jsonl", since=0)
        group = st["options"]["group_size"]
        keys = {
            "entropy": "policy/policy_entropy",
            "sampled_solve": "environment/solve_rate",
            "pass_at_group": f"reward/avg_pass_at_{group}",
        }
        results["grpo_training_batches"] = {
            "window_steps": 20,
            "group_size": group,
            "first": {name: _window(lines[:20], key) for name, key in keys.items()},
            "last": {name: _window(lines[-20:], key) for name, key in keys.items()},
        }
        results["grpo_minus_sft"] = {
            key: _iv([a - b for a, b in zip(per["grpo"][key], per["sft"][key], strict=True)]) for key in ("greedy", "sampled", "pass")
        }
    params = {
        "state": str(args.state),
        "options": st["options"],
        "samples": args.samples,
        "mazes": len(rows),
        "sampling_seed": args.sampling_seed,
    }
    with Recording(args.out.stem, params=params, path=args.out.resolve(), started_at=started, load_avg_start=load) as rec:
        rec.results = results
    return 0


def main(argv: list[str] | None = None) -> int:
    from hyperpod_rl.errors import HyperpodRLError

    p = parser()
    args = p.parse_args(argv)
    try:
        if args.cmd == "run":
            return run(args)
        if args.cmd == "pack":
            for f in pack(args.state.resolve(), args.to, sft_only=args.sft_only):
                print(f"{f} ({f.stat().st_size / 2**20:.1f} MiB)")
            return 0
        if args.cmd == "unpack":
            unpack(args.source, args.state)
            return 0
        if args.cmd == "explore":
            return explore(args)
        print(render(args.results, args.png))
        return 0
    except (CurveError, HyperpodRLError) as err:
        print("error: " + " ".join(str(err).split()), file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
