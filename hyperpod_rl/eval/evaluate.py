"""Evaluate a base model, with or without an adapter, on held-out and out-of-distribution mazes.

One greedy episode per maze (:func:`hyperpod_rl.eval.benchmark.greedy_benchmark`). Metrics are
the maze env's own (:func:`hyperpod_rl.maze.aggregate_metrics`), averaged over mazes:

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
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from hyperpod_rl.errors import ConfigError
from hyperpod_rl.eval.benchmark import greedy_benchmark
from hyperpod_rl.eval.result import EvalResult
from hyperpod_rl.eval.stats import DEFAULT_RESAMPLES, REPORTED, bootstrap_interval, breakdown, metric_values
from hyperpod_rl.maze import DatasetSpec, Maze, RenderStyle, build_dataset, build_prompt
from hyperpod_rl.model.adapter import load_policy
from hyperpod_rl.model.loading import resolve_base_model
from hyperpod_rl.model.policy import MazePolicy

__all__ = ["evaluate", "evaluate_run", "ood_rows", "text_twin_rows"]


def text_twin_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same mazes with text-grid observations (``observation="text"``, no images).

    Each twin keeps the layout hash, size, stratum, turn limit and prompt style of its row; only
    the prompt and the per-turn observations become text (:func:`hyperpod_rl.maze.build_prompt`).
    """
    out = []
    for row in rows:
        maze = Maze.from_json(row["maze"])
        style = RenderStyle.model_validate_json(row["render_style"]) if row.get("render_style") else None
        prompt = build_prompt(
            maze,
            mode=row.get("mode", "step"),
            max_turns=int(row["max_turns"]),
            style=style,
            observation="text",
            prompt_style=row.get("prompt_style", "full"),
        )
        out.append({**row, "prompt": prompt, "observation": "text", "image_tokens": 0})
    return out


def ood_rows(
    spec: dict[str, Any] | DatasetSpec, count: int, *, in_distribution: list[dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """Build the out-of-distribution split of a dataset spec: ``ood_sizes`` grids, longer paths.

    Args:
        spec: the dataset's :class:`~hyperpod_rl.maze.DatasetSpec` (or its JSON dict, e.g.
            ``DatasetPaths.spec`` from the quickstart).
        count: ood mazes.
        in_distribution: train/held-out rows; the ood paths are made longer than all of them
            (unless the spec sets ``ood_min_path_length``).

    Raises:
        ConfigError: ``count`` < 1.
    """
    if count < 1:
        raise ConfigError(f"ood count must be >= 1, got {count}")
    base = spec.model_dump() if isinstance(spec, DatasetSpec) else dict(spec)
    base["counts"] = {"ood": count}
    if base.get("ood_min_path_length") is None and in_distribution:
        base["ood_min_path_length"] = max(int(r["shortest_path_length"]) for r in in_distribution) + 1
    return build_dataset(DatasetSpec.model_validate(base))["ood"]


def _finish(result: EvalResult, *, n_resamples: int, seed: int) -> EvalResult:
    for metric in REPORTED:
        iv = bootstrap_interval(metric_values(result.per_maze, metric), n_resamples=n_resamples, seed=seed)
        if iv.n:
            result.ci[metric] = [iv.low, iv.high]
    result.breakdown = {
        key: {
            label: {m: asdict(iv) for m, iv in metrics.items() if iv.n}
            for label, metrics in breakdown(result.per_maze, key, n_resamples=n_resamples, seed=seed).items()
        }
        for key in ("stratum", "size")
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
    pol = policy or load_policy(model_path, adapter_path)
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
