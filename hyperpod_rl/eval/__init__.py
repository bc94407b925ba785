"""Evaluation: greedy held-out benchmarks, bootstrap intervals, paired comparison and promotion rule.

:mod:`.benchmark` plays the episodes (also used by the trainer for the base-model benchmark
before step 1), :mod:`.evaluate` loads a policy and builds an :class:`EvalResult`
(:mod:`.result`), :mod:`.stats` holds the bootstrap, :mod:`.compare` pairs two results and
decides promotion, :mod:`.report` draws them. Evaluation never imports the trainer; recording a
result in a run directory is :func:`hyperpod_rl.runs.record_eval`'s job.
"""

from hyperpod_rl.eval.benchmark import greedy_benchmark
from hyperpod_rl.eval.compare import Comparison, MetricDelta, compare
from hyperpod_rl.eval.evaluate import evaluate, evaluate_run, ood_rows, text_twin_rows
from hyperpod_rl.eval.result import EvalResult
from hyperpod_rl.eval.stats import DEFAULT_RESAMPLES, GUARDS, HIGHER_IS_BETTER, REPORTED, Interval, bootstrap_interval

__all__ = [
    "DEFAULT_RESAMPLES",
    "GUARDS",
    "HIGHER_IS_BETTER",
    "REPORTED",
    "Comparison",
    "EvalResult",
    "Interval",
    "MetricDelta",
    "bootstrap_interval",
    "compare",
    "evaluate",
    "evaluate_run",
    "greedy_benchmark",
    "ood_rows",
    "text_twin_rows",
]
