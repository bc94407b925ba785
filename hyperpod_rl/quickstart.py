"""The local quickstart: the whole loop at small scale, as one library function and its steps.

:func:`run` is the flow the CLI (``hyperpod-rl quickstart``), notebook 01 and the tests share:

1. dataset: :func:`prepare_dataset`, parquet splits of the task (train / held-out, disjoint; the
   visual maze unless ``task`` names another registered task), first, so that counts its
   options cannot fill are reported before a cluster starts;
2. cluster: the embedded local Ray cluster with token auth (reused if running), unless a job
   client is given;
3. base_model: :func:`prepare_base_model`, the tiny random-init Qwen3-VL (or a local checkpoint);
4. eval_base: :func:`hyperpod_rl.eval.evaluate` of the base model on the held-out mazes;
5. sft: the supervised warm start (``stage='sft'``): a detached Ray Job training a LoRA adapter
   on the task's own demonstrations (the maze's shortest paths) as run ``<run id>-sft``;
6. eval_sft: the SFT adapter on the same held-out mazes, compared with the base;
7. train: :func:`make_run_config` + :func:`hyperpod_rl.jobs.submit_run`, a detached Ray Job
   running the reference GRPO backend from the SFT adapter (``model.init_adapter``), followed
   until it ends;
8. eval_adapter: the adapter on the same held-out mazes, and the paired comparisons: against
   its SFT start (the promotion decision) and against the base;
9. serve: :func:`hyperpod_rl.serve.local.deploy_local` and one held-out maze asked.

``sft=False`` (``--no-sft``) skips steps 5 and 6: GRPO starts from the base model, as before.

Front-ends watch it through two callbacks: ``on_phase`` gets a :class:`Phase` when a step starts
and when it ends, ``follow`` follows the training job (a progress bar, a tqdm bar, or nothing).

Ctrl-C stops it with :class:`QuickstartInterrupted`, which says what was not done;
``hyperpod-rl quickstart --resume RUN_ID`` (:func:`resume`) finishes it: the steps that ended are
kept (their results are in the run directories), a job still running is followed, the rest is done.
"""

from __future__ import annotations

import hashlib
import json
import re
import signal
import threading
import time
import warnings as _warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from hyperpod_rl.base import Model, load_user_data
from hyperpod_rl.cluster.local import start_local_cluster
from hyperpod_rl.config.run import RunConfig
from hyperpod_rl.errors import ConfigError, HyperpodRLError, JobError, TaskError
from hyperpod_rl.model.loading import revision_of, save_tiny_base_model
from hyperpod_rl.model.revision import check_model_dir
from hyperpod_rl.paths import storage_root
from hyperpod_rl.runs import RunPaths, run_paths, sft_run_id, write_json
from hyperpod_rl.tasks import get_task, make_env
from hyperpod_rl.tasks import read_rows as read_task_rows
from hyperpod_rl.tasks.maze import DatasetSpec, MazeRow, build_dataset, read_rows, write_parquet
from hyperpod_rl.tasks.maze.grid import MAX_SIDE, MIN_SIDE
from hyperpod_rl.tasks.maze.render import RenderStyle

if TYPE_CHECKING:
    from hyperpod_rl.eval import Comparison, EvalResult

__all__ = [
    "MAX_ROWS",
    "MAX_STEPS",
    "PHASES",
    "RESUME_OVERRIDES",
    "DatasetPaths",
    "Phase",
    "QuickstartInterrupted",
    "QuickstartOptions",
    "QuickstartSummary",
    "check_serve_port",
    "check_start",
    "default_run_id",
    "follow_quietly",
    "follow_with_tqdm",
    "sft_run_id",
    "make_run_config",
    "prepare_base_model",
    "prepare_dataset",
    "phase_text",
    "print_phase",
    "resume",
    "resume_options",
    "run",
    "start_local_cluster",
    "tokenizer_corpus",
]

#: The quickstart's steps, in order, with what a front-end shows while each runs; ``{task}``,
#: ``{item}`` and ``{items}`` are the task's name and what its rows are called (:func:`phase_text`).
_PHASE_TEXT: dict[str, str] = {
    "dataset": "generating {task} data",
    "cluster": "starting the local Ray cluster (token auth, dashboard on 127.0.0.1)",
    "base_model": "preparing the base model",
    "eval_base": "evaluating the base model on the held-out {items}",
    "sft": "supervised warm start (SFT on the task's demonstrations): detached Ray Job",
    "eval_sft": "evaluating the SFT adapter on the same held-out {items}",
    "train": "GRPO training: detached Ray Job",
    "eval_adapter": "evaluating the adapter on the same held-out {items}",
    "serve": "serving the adapter with Ray Serve and asking it one held-out {item}",
}


def phase_text(name: str, task: str = "maze") -> str:
    """What a front-end shows while step ``name`` runs, in the words of ``task`` (its
    :func:`~hyperpod_rl.tasks.item_names`: ``held-out documents`` for doc_read)."""
    from hyperpod_rl.tasks import item_names

    item, items = item_names(get_task(task))
    return _PHASE_TEXT[name].format(task=task, item=item, items=items)


#: The quickstart's steps, in order, with what a front-end shows while each runs (the maze's words;
#: :attr:`Phase.text` holds the run's own task's, :func:`phase_text`).
PHASES: dict[str, str] = {name: text.format(task="maze", item="maze", items="mazes") for name, text in _PHASE_TEXT.items()}

#: What is left when the quickstart stops before a step ends (:class:`QuickstartInterrupted`).
_LEFT: dict[str, str] = {
    "dataset": "the dataset",
    "cluster": "the local cluster",
    "base_model": "the base model",
    "eval_base": "the base model's evaluation",
    "sft": "the SFT warm start",
    "eval_sft": "the SFT adapter's evaluation",
    "train": "the GRPO job",
    "eval_adapter": "the adapter's evaluation and the comparison table",
    "serve": "serving",
}

#: Options :func:`resume_options` may change: they change nothing that is trained or measured.
RESUME_OVERRIDES = ("serve", "serve_port", "dashboard_port")


#: The most GRPO or SFT steps a quickstart takes: 500 times the default run's 200 GRPO steps (days
#: on a CPU); a larger count is a typo (reported: --steps 1000000000000 was accepted).
MAX_STEPS = 100_000
#: The most rows of one split a quickstart generates (train, held-out, validation): 500 times the
#: default 2,000 train rows; a larger count is a typo, not a dataset a local run can hold.
MAX_ROWS = 1_000_000


class QuickstartOptions(Model):
    """Options of the quickstart (defaults: the 10-minute CPU run). The CLI's options are these fields.

    A row is one prompt of the task's dataset (for the maze: one maze). ``train_mazes``,
    ``heldout_mazes`` and ``mazes_per_step`` are the deprecated names of ``train_rows``,
    ``heldout_rows`` and ``prompts_per_step`` (accepted with a warning; CLI: ``--train-mazes`` ...).
    """

    model_config = ConfigDict(**Model.model_config, allow_inf_nan=False)  # reported: --lr inf was accepted
    error_what = "quickstart options"
    renamed_fields: ClassVar[Mapping[str, str]] = {
        "train_mazes": "train_rows",
        "heldout_mazes": "heldout_rows",
        "mazes_per_step": "prompts_per_step",
    }

    run_id: str | None = None
    """run id; default quickstart-<UTC time>"""
    model_path: str | None = None
    """local Qwen3-VL checkpoint directory instead of the embedded tiny model"""
    tiny_hidden_size: int = Field(128, gt=0, multiple_of=32)
    """text hidden size of the embedded tiny model (a multiple of 32; ignored with model_path)"""
    tiny_layers: int = Field(2, gt=0)
    """decoder layers of the embedded tiny model (ignored with model_path)"""
    tiny_vision_hidden_size: int = Field(64, gt=0, multiple_of=32)
    """vision-tower hidden size of the embedded tiny model (a multiple of 32; ignored with model_path)"""
    tiny_vision_depth: int = Field(2, gt=0)
    """vision-tower blocks of the embedded tiny model (ignored with model_path)"""
    cell_px: int = Field(30, ge=18, le=128)
    """maze: cell pitch of the rendered mazes in pixels, walls included (18..128; the task's render_style.cell_px)"""
    seed: int = 0
    """seed for data, model and training"""
    min_size: int = Field(3, ge=MIN_SIDE, le=MAX_SIDE)
    """smallest maze side (cells, 2..64)"""
    max_size: int = Field(5, ge=MIN_SIDE, le=MAX_SIDE)
    """largest maze side (cells, 2..64)"""
    train_rows: int = Field(2000, gt=0, le=MAX_ROWS)
    """train rows (mazes for the maze task); at most 1,000,000"""
    heldout_rows: int = Field(200, gt=0, le=MAX_ROWS)
    """held-out rows, evaluated before and after; at most 1,000,000"""
    validation_rows: int = Field(0, ge=0, le=MAX_ROWS)
    """validation rows (disjoint from train and held-out), for choosing settings without touching held-out; 0: none; at most 1,000,000"""
    max_turns: int = Field(6, gt=0)
    """turn limit per episode"""
    group_size: int = 8
    """episodes per row (GRPO group size)"""
    prompts_per_step: int = Field(8, gt=0)
    """rows (prompts) per GRPO step"""
    steps: int = Field(200, gt=0, le=MAX_STEPS)
    """GRPO steps (at most 100,000)"""
    lr: float | None = Field(None, gt=0)
    """GRPO's AdamW learning rate of the LoRA adapter; default 5e-4 from the base model (benchmarks/lr_sweep.py), 1e-4 from the SFT adapter (benchmarks/sft_sweep.py), each chosen on validation"""
    entropy_coef: float | None = Field(None, ge=0)
    """GRPO's entropy bonus coefficient; default 0.01 from the base model, 0 from the SFT adapter (chosen on validation: benchmarks/sft_sweep.py)"""
    advantage: Literal["outcome", "process"] = "process"
    """GRPO advantage: 'process' (per-turn, DeepSeekMath §4.1.3) or 'outcome' (per-episode)"""
    gamma: float = Field(0.5, ge=0, le=1)
    """discount over turns for advantage='process'"""
    lora_rank: int = Field(16, gt=0)
    """LoRA rank of the adapter"""
    sft: bool = True
    """warm-start GRPO from an SFT adapter trained on the task's demonstrations (--no-sft: GRPO from the base model)"""
    sft_steps: int = Field(450, ge=0, le=MAX_STEPS)
    """SFT steps of the warm start (chosen on validation: benchmarks/sft_sweep.py); 0 only with sft off; at most 100,000"""
    sft_lr: float = Field(5e-4, gt=0)
    """AdamW learning rate of the SFT warm start"""
    sft_rows_per_step: int = Field(8, gt=0)
    """mazes per SFT step (every turn of each maze's demonstration is a training example)"""
    serve: bool = True
    """serve the adapter with Ray Serve and ask it one maze"""
    task: str = "maze"
    """registered task to train on (hyperpod-rl tasks list)"""
    task_options: dict[str, Any] = Field(default_factory=dict)
    """the task's own options (its options model); seed and counts come from seed, train_rows and heldout_rows"""
    serve_port: int = Field(8000, gt=0, lt=65536)
    """Ray Serve HTTP port on 127.0.0.1"""
    dashboard_port: int | None = Field(None, gt=0, lt=65536)
    """local dashboard / job API port (default 8265 or a free one)"""

    @field_validator("run_id")
    @classmethod
    def _run_id(cls, v: str | None) -> str | None:
        from hyperpod_rl.runs import check_run_id

        if v is not None:
            try:
                check_run_id(v)
            except ConfigError as err:
                raise ValueError(str(err)) from None
        return v

    @field_validator("serve_port", "dashboard_port")
    @classmethod
    def _outside_ray_workers(cls, v: int | None) -> int | None:
        from hyperpod_rl.cluster.local import ray_worker_port_problem

        problem = None if v is None else ray_worker_port_problem(v)
        if problem:
            raise ValueError(problem)
        return v

    @field_validator("group_size")
    @classmethod
    def _group(cls, v: int) -> int:
        if v < 2:
            raise ValueError("must be >= 2 (GRPO compares samples within a group)")
        return v

    @model_validator(mode="after")
    def _cross_field(self) -> QuickstartOptions:
        problems = []
        if self.min_size > self.max_size:
            problems.append(f"min_size ({self.min_size}) is larger than max_size ({self.max_size})")
        if self.sft and self.sft_steps == 0:
            problems.append("sft_steps: must be > 0 with the SFT warm start on (got 0); or turn it off (--no-sft)")
        if self.prompts_per_step > self.train_rows:  # refused here, before data, cluster or evaluation (the job would be)
            problems.append(
                f"prompts_per_step ({self.prompts_per_step}) is more than train_rows ({self.train_rows}): each GRPO step takes "
                f"{self.prompts_per_step} different training rows; give train_rows {self.prompts_per_step} or more, or a smaller "
                "prompts_per_step"
            )
        if self.model_path is not None:
            try:  # checked before anything runs, so no step is reported done before it fails
                check_model_dir(self.model_path, "model_path")
            except ConfigError as err:
                problems.append(f"{err} (or omit it for the embedded tiny model)")
        problems += _task_problems(self)
        if problems:
            raise ValueError("\n".join(problems))
        return self


def _task_problems(opts: QuickstartOptions) -> list[str]:
    try:
        task = get_task(opts.task)
    except HyperpodRLError as err:
        return [f"task: {err}"]
    if opts.task == "maze":
        return (
            []
            if not opts.task_options
            else ["task_options: the maze quickstart takes its options from min_size, max_size, max_turns and cell_px"]
        )
    if opts.cell_px != type(opts).model_fields["cell_px"].default:
        return [f"cell_px is the maze's cell size; task {opts.task!r} takes its drawing options in task_options"]
    try:
        task.options_model.build(_task_options_data(opts, task))
    except HyperpodRLError as err:
        return [
            f"task_options.{line.strip()}" for line in str(err).splitlines() if line.strip() and not line.strip().startswith("invalid ")
        ]
    return []


def _task_options_data(opts: QuickstartOptions, task: Any) -> dict[str, Any]:
    data = {**opts.task_options, "seed": opts.seed, "counts": _counts(opts)}
    if "prompt_style" in task.options_model.model_fields and "prompt_style" not in opts.task_options:
        # The embedded tiny model gets terse prompts; a real checkpoint gets the full instructions.
        data["prompt_style"] = "terse" if opts.model_path is None else "full"
    return data


def _counts(opts: QuickstartOptions) -> dict[str, int]:
    """Rows per split; validation only when asked for (so a dataset without it keeps its spec and folder)."""
    counts = {"train": opts.train_rows, "heldout": opts.heldout_rows}
    if opts.validation_rows:
        counts["validation"] = opts.validation_rows
    return counts


@dataclass(frozen=True)
class DatasetPaths:
    """Parquet files of one generated dataset and their sha256 hashes (``validation``: None when
    the options asked for no validation rows)."""

    train: Path
    heldout: Path
    hashes: dict[str, str]
    spec: dict[str, Any]
    validation: Path | None = None

    @classmethod
    def of(cls, root: Path, info: dict[str, Any]) -> DatasetPaths:
        """The dataset written under ``root`` whose ``dataset.json`` holds ``info``."""
        validation = root / "validation.parquet" if "validation" in info["hashes"] else None
        return cls(
            train=root / "train.parquet", heldout=root / "heldout.parquet", hashes=info["hashes"], spec=info["spec"], validation=validation
        )


def _spec(opts: QuickstartOptions) -> DatasetSpec:
    sizes = tuple((n, n) for n in range(opts.min_size, opts.max_size + 1))
    # The embedded tiny model gets terse prompts; a real checkpoint gets the full instructions.
    style = "terse" if opts.model_path is None else "full"
    return DatasetSpec(
        seed=opts.seed,
        sizes=sizes,
        counts=_counts(opts),
        max_turns=opts.max_turns,
        prompt_style=style,
        render_style=RenderStyle(cell_px=opts.cell_px),
    )


def prepare_dataset(opts: QuickstartOptions, storage: Path) -> DatasetPaths:
    """Generate (or reuse) the task's dataset under ``storage/datasets/<spec hash>/``.

    Train and held-out items are disjoint (checked by content hash: the maze's layout hash, or
    :func:`hyperpod_rl.tasks.check_splits` for other tasks).

    Raises:
        ConfigError: the options ask for more distinct items than the task can make (e.g. more
            mazes than ``min_size``..``max_size`` have layouts); the message names the options.
    """
    from hyperpod_rl.errors import TaskError

    try:
        return _prepare_task_dataset(opts, storage) if opts.task != "maze" else _prepare_maze_dataset(opts, storage)
    except TaskError as err:
        raise ConfigError(f"the quickstart's data: {_in_option_terms(str(err), opts.task)}") from None


#: The quickstart option that sets each split's count (the task's ``counts.<split>``).
_COUNT_OPTIONS = {"train": "train_rows", "heldout": "heldout_rows", "validation": "validation_rows"}


def _in_option_terms(message: str, task: str) -> str:
    """A dataset error in the quickstart's option names (``train_rows``, not ``counts.train``)."""
    out = re.sub(r"\bcounts\.(train|heldout|validation)\b", lambda m: _COUNT_OPTIONS[m.group(1)], message)
    return re.sub(r"\bChange sizes\b", "Change min_size / max_size", out) if task == "maze" else out


def _prepare_maze_dataset(opts: QuickstartOptions, storage: Path) -> DatasetPaths:
    spec = _spec(opts)
    spec_json = spec.model_dump_json()
    key = hashlib.sha256(spec_json.encode()).hexdigest()[:12]
    root = storage / "datasets" / key
    meta = root / "dataset.json"
    if meta.exists():
        return DatasetPaths.of(root, _dataset_record(meta))
    splits = build_dataset(spec)
    root.mkdir(parents=True, exist_ok=True)
    hashes = {name: write_parquet(rows, root / f"{name}.parquet") for name, rows in splits.items()}
    info = {"hashes": hashes, "spec": json.loads(spec_json)}
    meta.write_text(json.dumps(info, sort_keys=True))
    return DatasetPaths.of(root, info)


def _prepare_task_dataset(opts: QuickstartOptions, storage: Path) -> DatasetPaths:
    from hyperpod_rl.tasks import write_dataset

    task = get_task(opts.task)
    options = task.options_model.build(_task_options_data(opts, task))
    spec = {"task": task.name, "options": options.model_dump(mode="json")}
    spec_json = json.dumps(spec, sort_keys=True)
    root = storage / "datasets" / hashlib.sha256(spec_json.encode()).hexdigest()[:12]
    meta = root / "dataset.json"
    if not meta.exists():
        write_dataset(task, options, root)
    return DatasetPaths.of(root, _dataset_record(meta))


def _dataset_record(meta: Path) -> dict[str, Any]:
    """A cached dataset's ``dataset.json``, or a :class:`~hyperpod_rl.errors.TaskError` naming it and the fix."""
    fix = f"move the folder aside (mv {meta.parent} {meta.parent}.damaged; nothing is deleted) and run again: the dataset is built again"
    record = load_user_data(meta, "dataset record", syntax="json", error=TaskError, repair=fix)
    if not isinstance(record, dict):
        raise TaskError(f"dataset record {meta} is not a JSON object: {fix}")
    return record


def tokenizer_corpus(rows: list[MazeRow]) -> tuple[str, ...]:
    """Texts the env shows the model (prompts and turn feedback), to train the tiny BPE on."""
    task = get_task(None if not rows else _task_name(rows[0]))
    answers = (*(f"<answer>{w}</answer>" for w in task.answer_words), "no")
    texts: list[str] = []
    for row in rows[:20]:
        for msg in row["prompt"]:
            content = msg["content"]
            texts.extend([content] if isinstance(content, str) else [p["text"] for p in content if p.get("type") == "text"])
        env = make_env(None, row)
        env.init(list(row["prompt"]))
        for answer in answers:
            out = env.step(answer)
            texts.extend(p["text"] for m in out["observations"] for p in m["content"] if p.get("type") == "text")
            if out["done"]:
                break
    return tuple(sorted(set(texts)))


def prepare_base_model(opts: QuickstartOptions, storage: Path, rows: list[MazeRow]) -> tuple[Path, str]:
    """The base model directory and its revision (content hash).

    With ``model_path`` unset, builds the tiny random-init Qwen3-VL in code (``tiny_*`` sizes;
    tokenizer trained on the env's own texts) and saves it under
    ``storage/models/``; the same seed and sizes give the same revision.

    Raises:
        ConfigError: ``model_path`` is not a Qwen3-VL checkpoint directory
            (:func:`hyperpod_rl.model.revision.check_model_dir`).
    """
    if opts.model_path:
        path = check_model_dir(opts.model_path, "model_path")
        return path, revision_of(path)
    words = get_task(opts.task).answer_words
    return save_tiny_base_model(
        storage / "models",
        seed=opts.seed,
        hidden_size=opts.tiny_hidden_size,
        num_layers=opts.tiny_layers,
        vision_hidden_size=opts.tiny_vision_hidden_size,
        vision_depth=opts.tiny_vision_depth,
        corpus=tokenizer_corpus(rows),
        answer_words=words,
    )


def grpo_defaults(*, from_adapter: bool) -> dict[str, float]:
    """The quickstart's GRPO settings that its options leave unset, each chosen on the validation
    split: from the base model lr 5e-4 (``benchmarks/results/lr_sweep.json``) with the run config's
    own entropy bonus; from the SFT adapter lr 1e-4 and no entropy bonus
    (``benchmarks/results/sft_grpo_levers.json``: the best mean gain over its SFT start in 3 seeds)."""
    return {"lr": 1e-4, "entropy_coef": 0.0} if from_adapter else {"lr": 5e-4}


def make_run_config(
    opts: QuickstartOptions,
    *,
    run_id: str,
    model_path: Path,
    revision: str,
    data: DatasetPaths,
    stage: Literal["grpo", "sft"] = "grpo",
    init_adapter: Path | None = None,
) -> RunConfig:
    """The :class:`RunConfig` of a quickstart run (reference backend): the GRPO run (from
    ``init_adapter`` when given) or, with ``stage='sft'``, its SFT warm start (``opts.sft_*``)."""
    task = get_task(opts.task)
    extra: dict[str, Any] = {}
    if opts.task != "maze":  # the maze keeps the default task section (its options live in dataset.json)
        extra["task"] = {"name": task.name, "options": data.spec.get("options", {})}
    rollout: dict[str, Any] = {"max_turns": opts.max_turns}
    if not task.answer_words:
        rollout["action_constraint"] = "none"
    if stage == "sft":
        extra["stage"] = "sft"
        extra["sft"] = {"lr": opts.sft_lr, "rows_per_step": opts.sft_rows_per_step}
    steps = opts.sft_steps if stage == "sft" else opts.steps
    defaults = grpo_defaults(from_adapter=init_adapter is not None)
    chosen = {k: v for k, v in (("lr", opts.lr), ("entropy_coef", opts.entropy_coef)) if v is not None}
    grpo = {"group_size": opts.group_size, **defaults, **chosen, "advantage": opts.advantage, "gamma": opts.gamma}
    model: dict[str, Any] = {"path": str(model_path), "revision": revision}
    if init_adapter is not None:
        model["init_adapter"] = str(init_adapter)
    return RunConfig.build(
        {
            "run_id": run_id,
            "backend": "reference",
            **extra,
            "model": model,
            "lora": {"rank": opts.lora_rank, "alpha": 2.0 * opts.lora_rank},
            "grpo": grpo,
            "rollout": rollout,
            "data": {"train_path": str(data.train), "heldout_path": str(data.heldout), "prompts_per_step": opts.prompts_per_step},
            "trainer": {"steps": steps, "seed": opts.seed, "eval_rows": opts.heldout_rows},
            "checkpoint": {"interval": max(steps // 4, 1)},
        }
    )


def check_serve_port(port: int) -> None:
    """Refuse a serve port that another program holds (a Ray Serve proxy of ours may hold it).

    Raises:
        ConfigError: the port is taken by something that is not a Ray Serve HTTP proxy.
    """
    import requests

    from hyperpod_rl.cluster.local import find_free_port

    if find_free_port(port) == port:
        return
    try:
        resp = requests.get(f"http://127.0.0.1:{port}/-/healthz", timeout=2)
        if resp.status_code == 200 and "success" in resp.text:
            return  # Ray Serve's proxy: redeploying replaces the app
    except requests.RequestException:
        pass
    raise ConfigError(f"--serve-port {port} is in use by another program: pass a free port, e.g. --serve-port {find_free_port()}")


def _dashboard_link(url: str) -> str:
    """``url``, plus the path a browser on this JupyterLab opens (``<base_url>proxy/<port>/``) when one runs."""
    from hyperpod_rl.jupyter import browser_link

    href = browser_link(url, "dashboard").href
    return url if href == url else f"{url} (in this JupyterLab's browser tab: {href})"


def default_run_id() -> str:
    """``quickstart-YYYYMMDD-HHMMSS`` (UTC)."""
    return "quickstart-" + time.strftime("%Y%m%d-%H%M%S", time.gmtime())


@dataclass(frozen=True)
class Phase:
    """A quickstart step starting (``done=False``) or ending (``done=True``).

    Attributes:
        name: a key of :data:`PHASES`.
        done: the step has ended.
        message: what happened, when it ended (e.g. the cluster's dashboard address).
        seconds: wall time of the step in seconds, when it ended.
        text: what the step does, in the run's task's words (:func:`phase_text`); empty: :data:`PHASES`'.
        number: the step's place among the steps this quickstart runs (1 first); 0: its place in
            :data:`PHASES`.
        total: how many steps this quickstart runs (``--no-serve``, ``--no-sft`` and a caller's
            cluster leave some out); 0: all of :data:`PHASES`.
        note: when not empty, this is no start or end but a line to show the user before the
            step goes on, e.g. that a stopped job is submitted again and where the new one
            starts (:func:`hyperpod_rl.jobs.resubmission_note`); ``done`` is False.
    """

    name: str
    done: bool
    message: str = ""
    seconds: float = 0.0
    text: str = ""
    number: int = 0
    total: int = 0
    note: str = ""

    @property
    def description(self) -> str:
        """:attr:`text`, else the step's :data:`PHASES` line."""
        return self.text or PHASES[self.name]

    @property
    def counter(self) -> str:
        """``3/8``: the step's place and how many this quickstart runs (:attr:`number`, :attr:`total`),
        so a run without serving ends at ``8/8``, not ``8/9``. Every front-end numbers steps with it."""
        if self.number and self.total:
            return f"{self.number}/{self.total}"
        return f"{list(PHASES).index(self.name) + 1}/{len(PHASES)}"


class QuickstartInterrupted(KeyboardInterrupt):
    """Ctrl-C (a kernel interrupt) or SIGTERM (``kill PID``, ``timeout``) stopped :func:`run` before
    it ended; a ``KeyboardInterrupt``.

    Its message says what was not done and the one command that finishes it,
    ``hyperpod-rl quickstart --resume <run id>`` (in Python :func:`resume`): the resume keeps
    every step that ended, follows a training job that kept running, and does the rest.

    Attributes:
        run_id: the quickstart's run.
        phase: the step that was running (a key of :data:`PHASES`), or None before the first.
        left: what was not done, in order (e.g. ``["the SFT adapter's evaluation", "the GRPO job
            (not submitted)", ...]``).
        job: the submission id of a training job that keeps running, or None.
        signum: the signal that stopped it (``signal.SIGINT`` for Ctrl-C, ``signal.SIGTERM``).
        exit_code: the exit status a command that stops on it uses, ``128 + signum`` (130, 143).
    """

    def __init__(self, run_id: str, phase: str | None, left: list[str], job: str | None, signum: int = signal.SIGINT) -> None:
        self.run_id, self.phase, self.left, self.job, self.signum = run_id, phase, left, job, int(signum)
        self.exit_code = 128 + self.signum
        during = f" during {_LEFT[phase]}" if phase else ""
        running = f"; its job {job} keeps running" if job else ""
        super().__init__(
            f"interrupted{during}{running}. Not done: {', '.join(left) or 'nothing'}. "
            f"Finish it: hyperpod-rl quickstart --resume {run_id} (in Python: hp.quickstart.resume({run_id!r}))"
        )


@dataclass
class QuickstartSummary:
    """What one quickstart produced.

    Attributes:
        run_id, run_dir, submission_id: the run and its Ray Job.
        wall_s: seconds per phase (keys of :data:`PHASES`) and ``total``.
        heldout_rows: held-out rows evaluated (``heldout_mazes``: its deprecated name, a property).
        base, adapter: the base model's and the GRPO adapter's evaluations (same mazes).
        comparison: the GRPO adapter against its start (the SFT adapter, or the base model with
            ``sft=False``), paired, with the promotion decision.
        sft: the SFT warm start's evaluation (None with ``sft=False``).
        sft_comparison: the SFT adapter against the base (None with ``sft=False``).
        base_comparison: the GRPO adapter against the base (the same as ``comparison`` with ``sft=False``).
        sft_run_id: the SFT warm start's run id (None with ``sft=False``).
        served_answer: ``{"endpoint", "model", "answer", "latency_ms"}``, or ``None`` without serving.
        dashboard_url: the local Ray dashboard (``None`` with a caller's job client).
        warnings: what the user should know about the result, e.g. that no rollout produced
            a valid answer (:func:`hyperpod_rl.tasks.no_valid_answer_note`).
    """

    run_id: str
    run_dir: Path
    submission_id: str
    wall_s: dict[str, float]
    heldout_rows: int
    base: EvalResult
    adapter: EvalResult
    comparison: Comparison
    sft: EvalResult | None = None
    sft_comparison: Comparison | None = None
    base_comparison: Comparison | None = None
    sft_run_id: str | None = None
    served_answer: dict[str, Any] | None = None
    dashboard_url: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    @property
    def heldout_mazes(self) -> int:
        """Deprecated name of :attr:`heldout_rows` (warns)."""
        _warnings.warn("QuickstartSummary.heldout_mazes is deprecated: call it heldout_rows", FutureWarning, stacklevel=2)
        return self.heldout_rows

    def to_json(self) -> dict[str, Any]:
        """The JSON form written to ``<run dir>/quickstart.json`` (figures, not per-maze records)."""
        return {
            "run_id": self.run_id,
            "run_dir": str(self.run_dir),
            "submission_id": self.submission_id,
            "wall_s": self.wall_s,
            "heldout_rows": self.heldout_rows,
            "heldout_mazes": self.heldout_rows,  # the key before the rename, for readers of older summaries
            "base": self.base.metrics,
            "adapter": self.adapter.metrics,
            "comparison": self.comparison.to_json(),
            "sft_run_id": self.sft_run_id,
            "sft": None if self.sft is None else self.sft.metrics,
            "sft_comparison": None if self.sft_comparison is None else self.sft_comparison.to_json(),
            "base_comparison": (self.base_comparison or self.comparison).to_json(),
            "served_answer": self.served_answer,
            "warnings": self.warnings,
        }


Follow = Callable[[Any, str, int], str]


def follow_quietly(client: Any, submission_id: str, total_steps: int) -> str:
    """Follow a job without output until it ends; return its final Ray status."""
    from hyperpod_rl.jobs import follow_run

    status = "PENDING"
    for update in follow_run(client, submission_id):
        status = update.status
    return status


def follow_with_tqdm(client: Any, submission_id: str, total_steps: int) -> str:
    """Follow a job with a ``tqdm.auto`` bar (a widget in a notebook, text elsewhere) until it ends.

    The bar is labelled with the run's stage (``grpo``, ``sft``) and shows the step, the figures
    (GRPO: reward and loss; SFT: its loss) and the ETA of :class:`hyperpod_rl.jobs.RunProgress`
    (from the steps' own finish times); trainer notices (a corrupt checkpoint skipped, the step a
    job resumed from) are written above it as they come. :func:`run`'s default ``follow``.

    Returns:
        The job's final Ray status (``"SUCCEEDED"``, ``"FAILED"``, ``"STOPPED"``).
    """
    from tqdm.auto import tqdm

    from hyperpod_rl.jobs import RunProgress, follow_run, format_duration

    status = "PENDING"
    state = RunProgress(total_steps)
    # tqdm's own remaining-time estimate is left out: it is taken from when steps were seen
    with tqdm(total=total_steps, desc="train", unit="step", bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}{postfix}]") as bar:
        for update in follow_run(client, submission_id):
            status = update.status
            for notice in state.add(update):
                bar.write(f"note: {notice}")
            bar.set_description_str(state.label, refresh=False)
            if update.records:
                eta = state.eta_s
                bar.n = state.step
                bar.set_postfix_str(
                    state.figures(sep=", ") + ("" if eta is None else f", ETA {format_duration(eta)}"),
                    refresh=False,
                )
            bar.refresh()
    return status


def print_phase(phase: Phase) -> None:
    """Print a phase as it starts (``1/8 generating maze data ...``) and ends (``✓ 1/8 <message> (3 s)``),
    numbered among the steps this quickstart runs (:attr:`Phase.counter`: without serving, the last is 8/8).

    :func:`run`'s default ``on_phase``: plain ``print`` lines, which a notebook cell, a terminal
    and a piped log all show as they come.
    """
    if phase.note:
        print(f"note: {phase.note}", flush=True)
    elif phase.done:
        print(f"✓ {phase.counter} {phase.message} ({phase.seconds:.0f} s)", flush=True)
    else:
        print(f"{phase.counter} {phase.description} ...", flush=True)


def run(
    opts: QuickstartOptions,
    *,
    client: Any = None,
    storage: Path | None = None,
    on_phase: Callable[[Phase], None] | None = None,
    follow: Follow | None = None,
    resume: bool = False,
) -> QuickstartSummary:
    """Run the whole quickstart loop (module docstring) and return what it produced.

    Args:
        opts: the options (written to ``<run dir>/quickstart-options.json`` first, for ``resume``).
        client: a ``JobSubmissionClient`` of the cluster to train on; default: the embedded
            local cluster, started (or reused) here.
        storage: storage root (default :func:`hyperpod_rl.paths.storage_root`).
        on_phase: called with a :class:`Phase` when each step starts and ends (default:
            :func:`print_phase`, a line per start and end; ``lambda phase: None`` for silence).
        follow: ``follow(client, submission_id, total_steps) -> final status``, called while a
            job trains (default: :func:`follow_with_tqdm`, a ``tqdm.auto`` bar;
            :func:`follow_quietly` for none). A ``KeyboardInterrupt`` in it detaches: the job
            keeps running, and :class:`QuickstartInterrupted` says how to finish.
        resume: finish the interrupted quickstart of ``opts.run_id``, with the options it started
            with (:func:`resume_options`; :func:`resume` does both): each step whose result its run
            directories hold (an evaluation, a finished job's adapter) is kept, a job of the run
            still running is followed, not submitted again, and the rest is done.

    Returns:
        The :class:`QuickstartSummary`, also written to ``<run dir>/quickstart.json`` (with
        ``resume``, ``wall_s`` holds the steps this call ran).

    Raises:
        QuickstartInterrupted: Ctrl-C or SIGTERM stopped it (a ``KeyboardInterrupt``; the message
            says what was not done and the command that finishes it).
        ConfigError: the run id exists already (without ``resume``), the run has no quickstart
            record or was started with other options (with ``resume``), or the serve port is taken.
        ClusterError: the local cluster could not start.
        JobError: the training job did not succeed (the message says how to read its log).
        ServeError: serving failed its checks or did not answer.
    """
    storage = storage or storage_root()
    rid = opts.run_id or default_run_id()
    check_start(opts, storage=storage, resume=resume, run_id=rid)
    paths = run_paths(rid, storage=storage)
    sft_paths = run_paths(sft_run_id(rid), storage=storage) if opts.sft else None
    write_json(paths.quickstart_options, {**opts.model_dump(mode="json"), "run_id": rid})
    order = [
        name
        for name in PHASES
        if (name != "cluster" or client is None) and (opts.sft or name not in ("sft", "eval_sft")) and (opts.serve or name != "serve")
    ]
    flow = _Flow(rid, order, on_phase or print_phase, opts.task, resume)
    try:
        with _sigterm_interrupts():
            return _run(flow, opts, client, storage, paths, sft_paths, follow or follow_with_tqdm)
    except QuickstartInterrupted:
        raise
    except KeyboardInterrupt as err:
        raise flow.interrupted(getattr(err, "signum", signal.SIGINT)) from None


def check_start(opts: QuickstartOptions, *, storage: Path | None = None, resume: bool = False, run_id: str | None = None) -> None:
    """The checks :func:`run` makes before it writes or starts anything, for a front-end to make
    before it shows anything (``hyperpod-rl quickstart`` says an error before its header): the
    run id is new (a quickstart that did not finish is resumed, not started again), or with
    ``resume``, the run is a quickstart's and ``opts`` are the options it started with; and the
    serve port is free. ``run_id``: the run's id when ``opts`` leave it to :func:`run` (a new one).

    Raises:
        ConfigError: what :func:`run` would raise for these (its ``Raises``).
    """
    storage = storage or storage_root()
    rid = run_id or opts.run_id
    if rid is not None:
        paths = run_paths(rid, storage=storage)
        if resume:
            _check_resume(opts, rid, paths)
        else:
            _check_new(rid, paths, run_paths(sft_run_id(rid), storage=storage) if opts.sft else None)
    if opts.serve:
        check_serve_port(opts.serve_port)


class _Terminated(KeyboardInterrupt):
    """SIGTERM arrived inside :func:`_sigterm_interrupts`: a ``KeyboardInterrupt`` (so every step
    that cleans up after Ctrl-C cleans up after it too) that remembers its signal."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"signal {signum}")
        self.signum = signum


@contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """Inside the block, SIGTERM (``kill PID``, ``timeout``, a job scheduler) stops the work as
    Ctrl-C does: :class:`_Terminated` is raised where the main thread is, so :func:`run` says what
    was not done and how to finish it (:class:`QuickstartInterrupted`, ``exit_code`` 143) instead
    of dying silently. The handler it replaces is put back after. Off the main thread (where
    Python cannot set signal handlers) it changes nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def _terminate(signum: int, frame: object) -> None:
        raise _Terminated(signum)

    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _flag(name: str, value: Any) -> str:
    """A quickstart option as the CLI spells it: ``--sft-steps``; a switch by its value (``--no-sft``)."""
    dashed = name.replace("_", "-")
    return f"--no-{dashed}" if value is False else f"--{dashed}"


def resume_options(run_id: str, *, storage: Path | None = None, **overrides: Any) -> QuickstartOptions:
    """The options the quickstart of ``run_id`` started with (``<run dir>/quickstart-options.json``),
    with ``overrides`` of :data:`RESUME_OVERRIDES` (e.g. another ``serve_port``); an override
    equal to the recorded value is accepted too.

    Raises:
        ConfigError: ``run_id`` is not a run id (a path is refused: the run is looked up under the
            storage root), the run did not come from a quickstart (no recorded options), the
            recorded options no longer validate (the message names the file and each key, and
            changes nothing: the run resumes once the file is fixed), or an override would change
            what is trained or measured (the message names it).
    """
    from hyperpod_rl.runs import check_run_id, invalid_saved_file

    paths = run_paths(check_run_id(run_id), storage=storage)
    recorded = _recorded_options(run_id, paths)
    try:
        QuickstartOptions.build({**recorded, "run_id": run_id})
    except ConfigError as err:  # the file, not a value the user gave: say which file and key
        raise invalid_saved_file(
            err,
            paths.quickstart_options,
            what=f"the options quickstart {run_id!r} started with",
            fix="edit that file: fix each key named above (a value: put back the one the quickstart started with), then run "
            f"hyperpod-rl quickstart --resume {run_id} again",
        ) from None
    changed = sorted(k for k, v in overrides.items() if k not in RESUME_OVERRIDES and recorded.get(k) != v)
    if changed:
        # as the CLI spells them: a switch by the side given (--no-sft), the overrides both ways (--serve/--no-serve)
        flags = ", ".join(_flag(k, overrides[k]) for k in changed)
        may = ", ".join(
            f"--{k.replace('_', '-')}/--no-{k.replace('_', '-')}" if isinstance(recorded.get(k), bool) else _flag(k, None)
            for k in RESUME_OVERRIDES
        )
        raise ConfigError(
            f"--resume finishes run {run_id!r} with the options it started with: leave out {flags} (only {may} may change), "
            "or start a new run without --resume"
        )
    return QuickstartOptions.build({**recorded, **overrides, "run_id": run_id})


def resume(
    run_id: str,
    *,
    storage: Path | None = None,
    client: Any = None,
    on_phase: Callable[[Phase], None] | None = None,
    follow: Follow | None = None,
    **overrides: Any,
) -> QuickstartSummary:
    """Finish an interrupted quickstart (what ``hyperpod-rl quickstart --resume RUN_ID`` runs):
    :func:`run` with the options it started with (:func:`resume_options`, ``overrides`` of
    :data:`RESUME_OVERRIDES` applied) and ``resume=True``.

    Raises:
        ConfigError: see :func:`resume_options`; and what :func:`run` raises.
    """
    opts = resume_options(run_id, storage=storage, **overrides)
    return run(opts, client=client, storage=storage, on_phase=on_phase, follow=follow, resume=True)


def _recorded_options(run_id: str, paths: RunPaths) -> dict[str, Any]:
    from hyperpod_rl.runs import read_json

    recorded = read_json(paths.quickstart_options)
    if recorded is not None and not isinstance(recorded, dict):
        raise ConfigError(
            f"the file {paths.quickstart_options}, which holds the options quickstart {run_id!r} started with, holds a JSON "
            f"{type(recorded).__name__}, not an object (it was edited or damaged since it was written): put back the object of "
            f"options it held, then run hyperpod-rl quickstart --resume {run_id} again; nothing else in the run directory was changed"
        )
    if not isinstance(recorded, dict):
        raise ConfigError(
            f"run {run_id!r} has no quickstart record ({paths.quickstart_options}): only a run the quickstart started can be "
            "resumed; check the run id (hyperpod-rl runs list), or start a new quickstart without --resume"
        )
    return recorded


def _check_new(rid: str, paths: RunPaths, sft_paths: RunPaths | None) -> None:
    """Refuse a run id a quickstart (or any run) already used; one whose quickstart stopped before
    it wrote anything but its options (e.g. on a count its options could not fill) may start again."""
    wrote = paths.root.is_dir() and any(p.name != paths.quickstart_options.name for p in paths.root.iterdir())
    if paths.quickstart_options.exists() and not paths.quickstart.exists() and wrote:
        raise ConfigError(
            f"run {rid!r} was started by a quickstart that did not finish: finish it with hyperpod-rl quickstart --resume {rid}, "
            "or pick another run id (or omit it)"
        )
    for p in (paths, sft_paths):
        if p is not None and (p.submissions.exists() or p.config.exists() or p.quickstart.exists()):
            raise ConfigError(f"run {p.run_id!r} already exists at {p.root}: pick another run id (or omit it)")


def _check_resume(opts: QuickstartOptions, rid: str, paths: RunPaths) -> None:
    """Refuse to resume a run the quickstart did not start, or with other options than it started with."""
    recorded = _recorded_options(rid, paths)
    mine = {**opts.model_dump(mode="json"), "run_id": rid}
    differ = sorted(k for k, v in mine.items() if k not in RESUME_OVERRIDES and recorded.get(k) != v)
    if differ:
        raise ConfigError(
            f"run {rid!r} started with other options ({', '.join(differ)} differ): resume it with its own, "
            f"hyperpod-rl quickstart --resume {rid} (hp.quickstart.resume({rid!r}))"
        )


class _Flow:
    """The steps of one quickstart call: each announced, timed and remembered, so that an
    interrupt can say what is left (:meth:`interrupted`); with ``resume``, a step found done is
    announced as kept."""

    def __init__(self, run_id: str, order: list[str], notify: Callable[[Phase], None], task: str, resume: bool) -> None:
        self.run_id, self.order, self.notify, self.task, self.resume = run_id, order, notify, task, resume
        self.timings: dict[str, float] = {}
        self.done: set[str] = set()
        self.phase: str | None = None
        self.job: str | None = None  # a training job that keeps running when the quickstart stops
        self.started = time.perf_counter()

    def step(self, name: str, work: Callable[[], Any], message: Callable[[Any], str], *, found: Any = None) -> Any:
        """Run step ``name`` (``work()``), or with ``found`` (its result, kept from before) only announce it."""
        self.phase = name
        text = phase_text(name, self.task)
        place = {"number": self.order.index(name) + 1, "total": len(self.order)}  # among the steps this call runs
        if found is not None:
            self.notify(Phase(name, done=True, message=f"{message(found)} (kept from the earlier quickstart)", text=text, **place))
            self.done.add(name)
            return found
        self.notify(Phase(name, done=False, text=text, **place))
        start = time.perf_counter()
        out = work()
        self.timings[name] = round(time.perf_counter() - start, 2)
        self.notify(Phase(name, done=True, message=message(out), seconds=self.timings[name], text=text, **place))
        self.done.add(name)
        return out

    def note(self, name: str, text: str) -> None:
        """Show ``text`` before step ``name`` goes on (a :class:`Phase` with its ``note``)."""
        place = {"number": self.order.index(name) + 1, "total": len(self.order)}
        self.notify(Phase(name, done=False, text=phase_text(name, self.task), note=text, **place))

    def interrupted(self, signum: int = signal.SIGINT) -> QuickstartInterrupted:
        """What the interrupt (the signal ``signum``) left undone, and the job that keeps running."""
        now = self.order.index(self.phase) if self.phase in self.order else -1
        left = []
        for i, name in enumerate(self.order):
            if name in self.done or (name == self.phase and self.job):
                continue
            submitted_later = name in ("sft", "train") and i > now
            left.append(_LEFT[name] + (" (not submitted)" if submitted_later else ""))
        return QuickstartInterrupted(self.run_id, self.phase, left, self.job, signum)


def _run(
    flow: _Flow,
    opts: QuickstartOptions,
    client: Any,
    storage: Path,
    paths: RunPaths,
    sft_paths: RunPaths | None,
    follow: Follow,
) -> QuickstartSummary:
    """:func:`run`'s steps, after its checks."""
    from hyperpod_rl.eval import Comparison, EvalResult, compare, evaluate
    from hyperpod_rl.runs import read_eval
    from hyperpod_rl.tasks import item_names

    def kept(run: RunPaths, *names: str) -> list[dict[str, Any]] | None:
        """The saved evaluations ``names`` of the run being resumed (None unless each is there)."""
        found = [read_eval(run, name) for name in names] if flow.resume else []
        return [f for f in found if f is not None] if found and all(f is not None for f in found) else None

    # the data first: a count its options cannot fill is reported before a cluster starts
    written = item_names(get_task(opts.task))[1]
    data = flow.step("dataset", lambda: prepare_dataset(opts, storage), lambda d: f"{written} written under {d.train.parent}")
    dashboard_url = None
    if client is None:
        cluster = flow.step(
            "cluster",
            lambda: start_local_cluster(dashboard_port=opts.dashboard_port),
            lambda c: (
                f"local Ray cluster at {_dashboard_link(c.dashboard_url)}"
                + (" (a stale cluster was found and restarted)" if c.restarted_stale else "")
            ),
        )
        client, dashboard_url = cluster.job_client(), cluster.dashboard_url
    reader = read_rows if opts.task == "maze" else read_task_rows
    train_rows, heldout_rows = list(reader(data.train)), list(reader(data.heldout))
    model_dir, revision = flow.step(
        "base_model", lambda: prepare_base_model(opts, storage, train_rows), lambda out: f"base model {out[0].name} (revision {out[1]})"
    )
    found = kept(paths, "base")
    base = flow.step(
        "eval_base",
        lambda: evaluate(model_dir, heldout_rows, label="base"),
        lambda r: _base_message(opts, r),
        found=EvalResult.from_json(found[0]) if found else None,
    )
    _record_evals(paths, base=base)  # before the job starts: its trainer then skips its own base benchmark

    start, sft_result, sft_comparison, sft_id, init_adapter = base, None, None, None, None
    if sft_paths is not None:
        sft_id = sft_paths.run_id
        _record_evals(sft_paths, base=base)
        sft_config = make_run_config(opts, run_id=sft_id, model_path=model_dir, revision=revision, data=data, stage="sft")
        _train_job(flow, client, follow, sft_config, sft_paths, "sft")

        def eval_sft() -> tuple[EvalResult, Comparison]:
            result = evaluate(model_dir, heldout_rows, adapter_path=sft_paths.adapter, label="sft")
            return result, compare(base, result)

        found = kept(sft_paths, "adapter", "comparison")
        sft_result, sft_comparison = flow.step(
            "eval_sft",
            eval_sft,
            lambda out: f"SFT adapter: {out[1].reason}",
            found=(EvalResult.from_json(found[0]), Comparison.from_json(found[1])) if found else None,
        )
        if not found:
            _record_evals(sft_paths, adapter=sft_result, comparison=sft_comparison)
        _record_evals(paths, start=sft_result)
        start, init_adapter = sft_result, sft_paths.adapter
    config = make_run_config(opts, run_id=paths.run_id, model_path=model_dir, revision=revision, data=data, init_adapter=init_adapter)
    submission_id = _train_job(flow, client, follow, config, paths, "train")

    def eval_adapter() -> tuple[EvalResult, Comparison, Comparison]:
        tuned = evaluate(model_dir, heldout_rows, adapter_path=paths.adapter, label="adapter")
        # promotion compares the adapter with where its training started (the SFT adapter), not only the base
        return tuned, compare(start, tuned), compare(base, tuned)

    found = kept(paths, "adapter", "comparison", *(["base_comparison"] if opts.sft else []))
    tuned, comparison, base_comparison = flow.step(
        "eval_adapter",
        eval_adapter,
        lambda out: out[1].reason,
        found=(EvalResult.from_json(found[0]), Comparison.from_json(found[1]), Comparison.from_json(found[-1])) if found else None,
    )
    warnings = _validity_warnings(opts, paths, base, tuned)
    if not found:
        _record_evals(paths, adapter=tuned, comparison=comparison)
        if opts.sft:
            _record_evals(paths, base_comparison=base_comparison)
    answer = None
    if opts.serve:
        answer = flow.step(
            "serve",
            lambda: _serve_and_ask(client, model_dir, paths, heldout_rows[0], port=opts.serve_port, name=opts.task),
            _served_message,
        )
    flow.phase = None
    timings = {**flow.timings, "total": round(time.perf_counter() - flow.started, 2)}
    summary = QuickstartSummary(
        run_id=paths.run_id,
        run_dir=paths.root,
        submission_id=submission_id,
        wall_s=timings,
        heldout_rows=len(heldout_rows),
        base=base,
        adapter=tuned,
        comparison=comparison,
        sft=sft_result,
        sft_comparison=sft_comparison,
        base_comparison=base_comparison,
        sft_run_id=sft_id,
        served_answer=answer,
        dashboard_url=dashboard_url,
        warnings=warnings,
    )
    write_json(paths.quickstart, summary.to_json())
    return summary


def _train_job(flow: _Flow, client: Any, follow: Follow, config: RunConfig, run: RunPaths, phase: str) -> str:
    """Submit the run's job and follow it until it ends (step ``phase``); return its submission id.

    Resuming, a run whose adapter exists is kept, and a job of the run still running is followed
    instead of submitting another (a resubmission resumes from its checkpoints).

    Raises:
        JobError: the job did not succeed.
    """
    from hyperpod_rl.jobs import latest_submission, resubmission_note, run_jobs, submit_run

    flow.phase = phase
    if flow.resume and (run.adapter / "adapter_model.safetensors").is_file():
        done = latest_submission(run.root)
        return str(flow.step(phase, lambda: done, lambda sid: f"job {sid} ended SUCCEEDED", found=done))
    live = [job for job in run_jobs(client, config.run_id, run.root) if job.alive] if flow.resume else []
    note = resubmission_note(run) if flow.resume and not live else None
    if note:  # a job stopped (or failed) since: said before the new one is submitted
        flow.note(phase, note)
    submission_id = live[-1].submission_id if live else submit_run(client, config, run.root).submission_id
    flow.job = submission_id
    status = flow.step(
        phase,
        lambda: follow(client, submission_id, config.trainer.steps),
        lambda st: f"job {submission_id} ended {st}" + (" (followed again after the interrupt)" if live else ""),
    )
    flow.job = None
    if status != "SUCCEEDED":
        raise JobError(f"training job {submission_id} ended {status}; its log: hyperpod-rl job logs {config.run_id}")
    return submission_id


def _validity_warnings(opts: QuickstartOptions, paths: RunPaths, base: EvalResult, tuned: EvalResult) -> list[str]:
    """A warning when no training rollout (or no held-out answer of either model) was well-formed."""
    from hyperpod_rl.metrics.schema import read_metrics
    from hyperpod_rl.tasks import never_valid, no_valid_answer_note

    task = get_task(opts.task)
    records = list(read_metrics(paths.metrics)) if paths.metrics.is_file() else []
    steps = [r.values for r in records]
    if steps and never_valid(task, steps, prefix="environment/"):
        floor = steps[-1].get("reward/max_raw_reward")
        return [no_valid_answer_note(task, f"{len(steps)} training step(s)", floor=floor)]
    if never_valid(task, [base.metrics, tuned.metrics]):
        return [no_valid_answer_note(task, "the held-out evaluation of the base model and the adapter")]
    return []


def _task_name(row: Any) -> str:
    from hyperpod_rl.tasks import task_of_row

    return task_of_row(row).name


def _base_message(opts: QuickstartOptions, result: EvalResult) -> str:
    if opts.task == "maze":
        return f"base model: optimal-move rate {result.metrics['optimal_move_rate']:.3f}, solve rate {result.metrics['solve_rate']:.3f}"
    primary = get_task(opts.task).primary_metric
    return f"base model: {primary} {result.metrics.get(primary, float('nan')):.3f}"


def _record_evals(paths: RunPaths, **results: Any) -> None:
    from hyperpod_rl.runs import record_eval

    for name, result in results.items():
        record_eval(paths, name, result.to_json())


def _serve_and_ask(client: Any, model_dir: Path, paths: RunPaths, row: MazeRow, *, port: int, name: str) -> dict[str, Any]:
    from hyperpod_rl.serve.client import chat, maze_request
    from hyperpod_rl.serve.local import deploy_local

    url = deploy_local(client, model_dir, {name: paths.adapter}, port=port)
    answer, latency = chat(url, maze_request(row, model=name))
    return {
        "endpoint": url,
        "model": name,
        "answer": answer,
        "latency_ms": round(latency * 1000, 1),
        **({"maze_size": [row["rows"], row["cols"]]} if "rows" in row and "cols" in row else {}),
    }


def _served_message(answer: dict[str, Any]) -> str:
    if "maze_size" not in answer:
        return f"served at {answer['endpoint']}/v1/chat/completions · held-out item → {answer['answer']!r} ({answer['latency_ms']:.0f} ms)"
    rows, cols = answer["maze_size"]
    return f"served at {answer['endpoint']}/v1/chat/completions · held-out maze {rows}x{cols} → {answer['answer']!r} ({answer['latency_ms']:.0f} ms)"
