"""Evaluate a base model, with or without an adapter, on held-out and out-of-distribution mazes.

One greedy episode per maze (:func:`hyperpod_rl.eval.benchmark.greedy_benchmark`). Metrics are
the maze env's own (:func:`hyperpod_rl.tasks.maze.aggregate_metrics`), averaged over mazes:

* ``solve_rate``: share of mazes solved within the turn limit;
* ``optimal_move_rate``: share of a maze's turns whose move lies on a shortest path (BFS);
* ``invalid_move_rate``: share of a maze's turns whose answer broke the format;
* ``steps_over_optimal``: turns used minus the shortest path, over *solved* mazes only.

Uncertainty: every figure comes with a percentile-bootstrap 95% confidence interval over mazes
(Efron & Tibshirani 1993, ch. 13; NumPy, 2000 resamples by default), overall and broken down by
difficulty stratum and by grid size. :func:`compare` pairs two evaluations maze by maze (same
layout hashes), bootstraps the difference and decides promotion from the intervals.

Opt-in extra passes: ``text_twin=True`` plays the same mazes as text-grid twins
(``observation="text"``), separating perception from planning; :func:`ood_rows` builds the
out-of-distribution split (larger grids, longer paths) for ``evaluate(..., split="ood")``.

Any registered task (:mod:`hyperpod_rl.tasks`) is evaluated the same way: the task is found from
the rows' ``env_class``; its :meth:`~hyperpod_rl.tasks.Task.aggregate_metrics` gives the metrics,
its :func:`~hyperpod_rl.tasks.metric_spec` the reported ones (with intervals and the per-stratum
breakdown; ``size`` only for rows with ``rows``/``cols``), and its text twin the text pass.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from hyperpod_rl.errors import ConfigError
from hyperpod_rl.eval.benchmark import greedy_benchmark
from hyperpod_rl.eval.result import EvalResult
from hyperpod_rl.eval.stats import DEFAULT_RESAMPLES, breakdown
from hyperpod_rl.model.adapter import load_policy
from hyperpod_rl.model.loading import resolve_base_model
from hyperpod_rl.model.policy import MazePolicy
from hyperpod_rl.tasks import Task, get_task, metric_spec, task_of_row

__all__ = ["evaluate", "evaluate_run", "ood_rows", "text_twin_rows"]


def text_twin_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same rows with text observations (``observation="text"``, no images): the text twin.

    Each twin keeps the content hash, size, stratum, turn limit and prompt style of its row; only
    the prompt and the per-turn observations become text (the task's
    :meth:`~hyperpod_rl.tasks.Task.build_prompt` with ``observation="text"``; the env reads the
    row's ``observation``). For the maze: the text grid (:func:`hyperpod_rl.tasks.maze.build_prompt`).

    Raises:
        ConfigError: the rows' task has no text twin (:meth:`Task.text_twin` returns None).
    """
    out = []
    for row in rows:
        task = task_of_row(row)
        if task.text_twin(row) is None:
            raise ConfigError(f"task {task.name!r} has no text twin: evaluate without text_twin")
        prompt = task.build_prompt(row, prompt_style=row.get("prompt_style") or None, observation="text")
        out.append({**row, "prompt": prompt, "observation": "text", "image_tokens": 0})
    return out


def ood_rows(
    spec: Any,
    count: int,
    *,
    in_distribution: list[dict[str, Any]] | None = None,
    task: str | Task = "maze",
) -> list[dict[str, Any]]:
    """Build the out-of-distribution split of a dataset's options (the task's ``ood`` split).

    Args:
        spec: the dataset's options: the task's options model or its JSON dict (for the maze a
            :class:`~hyperpod_rl.tasks.maze.DatasetSpec`, e.g. ``DatasetPaths.spec`` from the quickstart).
        count: ood rows.
        in_distribution: maze only: train/held-out rows; the ood paths are made longer than all
            of them (unless the spec sets ``ood_min_path_length``).
        task: the task the options belong to.

    Raises:
        ConfigError: ``count`` < 1.
    """
    if count < 1:
        raise ConfigError(f"ood count must be >= 1, got {count}")
    t = get_task(task)
    base = spec.model_dump() if hasattr(spec, "model_dump") else dict(spec)
    base["counts"] = {"ood": count}
    if t.name == "maze" and base.get("ood_min_path_length") is None and in_distribution:
        base["ood_min_path_length"] = max(int(r["shortest_path_length"]) for r in in_distribution) + 1
    return t.build_dataset(t.options_model.model_validate(base))["ood"]


def _finish(result: EvalResult, *, n_resamples: int, seed: int) -> EvalResult:
    spec = metric_spec(get_task(result.task))
    for metric in spec.reported:
        iv = result.interval(metric, n_resamples=n_resamples, seed=seed)
        if iv.n:
            result.ci[metric] = [iv.low, iv.high]
    groups = ("stratum", "size") if any("size" in m for m in result.per_maze) else ("stratum",)
    result.breakdown = {
        key: {
            label: {m: asdict(iv) for m, iv in metrics.items() if iv.n}
            for label, metrics in breakdown(
                result.per_maze, key, n_resamples=n_resamples, seed=seed, metrics=spec.reported, keys=spec.episode_key
            ).items()
        }
        for key in groups
    }
    return result


def evaluate(
    model_path: str | Path,
    rows: list[dict[str, Any]],
    *,
    adapter_path: str | Path | None = None,
    label: str | None = None,
    max_turns: int | None = None,
    policy: MazePolicy | None = None,
    split: str | None = None,
    text_twin: bool = False,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> EvalResult:
    """Play one greedy episode per maze; aggregate the env's metrics with bootstrap intervals.

    Cost: one model pass per maze turn (two with ``text_twin``); the bootstrap (NumPy, on the
    per-maze numbers) takes milliseconds for 200 mazes.

    Args:
        model_path: base model directory.
        rows: held-out (or ood) dataset rows.
        adapter_path: PEFT adapter directory, or ``None`` for the base model.
        label: name in reports (default ``"adapter"`` / ``"base"``).
        max_turns: override the rows' turn limit.
        policy: an already loaded policy (skips loading).
        split: recorded split name (default: the rows' ``split`` column, else ``heldout``).
        text_twin: also play the same mazes as text grids (an extra pass), in ``.text_twin``.
        n_resamples: bootstrap resamples.
        seed: bootstrap seed (evaluation itself is greedy, hence deterministic).

    Returns:
        :class:`EvalResult`.

    Raises:
        ConfigError: no rows.
    """
    if not rows:
        raise ConfigError("evaluate got no rows: pass the held-out rows (read_rows(data.heldout))")
    task = task_of_row(rows[0])
    free = {} if task.answer_words else {"action_constraint": "none"}  # no closed vocabulary: free generation
    pol = policy or load_policy(model_path, adapter_path, answer_words=task.answer_words, **free)
    name = label or ("adapter" if adapter_path else "base")
    split_name = split or str(rows[0].get("split") or "heldout")

    def run(these: list[dict[str, Any]], observation: str) -> EvalResult:
        metrics, per_maze = greedy_benchmark(pol, these, max_turns=max_turns)
        res = EvalResult(
            label=name,
            model_path=str(model_path),
            adapter_path=str(adapter_path) if adapter_path else None,
            num_mazes=len(these),
            metrics=metrics,
            per_maze=per_maze,
            split=split_name,
            observation=observation,
            task=task.name,
        )
        return _finish(res, n_resamples=n_resamples, seed=seed)

    result = run(rows, str(rows[0].get("observation") or "image"))
    if text_twin:
        result.text_twin = run(text_twin_rows(rows), "text")
    return result


def evaluate_run(
    run: str | Path,
    *,
    adapter: bool = True,
    label: str | None = None,
    max_mazes: int | None = None,
    text_twin: bool = False,
) -> EvalResult:
    """Evaluate a run's adapter (or its base model) on the run's held-out mazes and record it in the run.

    Args:
        run: run id or run directory.
        adapter: evaluate the run's adapter (``False``: the base model).
        label: the evaluation's name in ``eval/<label>.json`` (default ``"adapter"`` / ``"base"``).
        max_mazes: evaluate only the first N held-out mazes.
        text_twin: also play the text-grid twins.

    Returns:
        The :class:`EvalResult`, saved through :func:`hyperpod_rl.runs.record_eval`.

    Raises:
        CheckpointError: the run has no config, or (``adapter=True``) no adapter yet.
        MazeError: the held-out dataset is missing.
    """
    from hyperpod_rl.errors import CheckpointError
    from hyperpod_rl.runs import dataset_rows, read_config, record_eval, run_paths

    paths = run_paths(run)
    config = read_config(paths)
    if adapter and not (paths.adapter / "adapter_model.safetensors").is_file():
        raise CheckpointError(f"run {paths.run_id!r} has no adapter yet ({paths.adapter}): train it first, or pass adapter=False")
    rows = list(dataset_rows(paths))[: max_mazes or None]
    name = label or ("adapter" if adapter else "base")
    result = evaluate(
        resolve_base_model(config.model, paths.root), rows, adapter_path=paths.adapter if adapter else None, label=name, text_twin=text_twin
    )
    record_eval(paths, name, result.to_json())
    return result
