"""SkyRL's per-step metric payloads -> the project's :class:`~hyperpod_rl.metrics.schema.MetricRecord` stream.

SkyRL 0.3.0's trainer (``skyrl/train/trainer.py``) commits one dict per step through its tracker:
``reward/avg_raw_reward``, ``reward/avg_pass_at_{n}``, ``policy/{policy_loss, policy_entropy,
policy_kl, grad_norm, policy_lr, response_length}``, ``timing/{generate, policy_train, step,
sync_weights, ...}``, ``trainer/{epoch, global_step, tokens_per_second_per_gpu}``,
``environment/*``, ``eval/*``. :class:`MetricRecordSink` keeps the numeric entries under their
SkyRL names and writes them exactly as the reference backend does: one JSON line per step in
``metrics.jsonl`` and one ``HPRL_METRIC {json}`` line on stdout (the job log).

Pure Python: importable without SkyRL, so it is tested on CPU.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from hyperpod_rl.metrics.schema import MetricRecord
from hyperpod_rl.runs.files import appending, storage_errors

__all__ = ["MetricRecordSink", "core_metric_names", "numeric_values"]


def core_metric_names(group_size: int) -> frozenset[str]:
    """Metric names every backend writes every step (SkyRL's names).

    ``policy/policy_kl`` is left out: SkyRL logs it only when the KL loss is on.
    """
    return frozenset(
        {
            "reward/avg_raw_reward",
            f"reward/avg_pass_at_{group_size}",
            "policy/policy_loss",
            "policy/policy_entropy",
            "policy/grad_norm",
            "policy/policy_lr",
            "policy/response_length",
            "timing/generate",
            "timing/policy_train",
            "timing/step",
            "trainer/epoch",
        }
    )


def numeric_values(payload: dict[str, Any]) -> dict[str, float]:
    """The finite numeric entries of a tracker payload as floats.

    Tensors, NumPy scalars and bools convert through ``float()``; strings, tables, lists and
    non-finite numbers (NaN, inf: JSON has no spelling for them) are dropped.
    """
    out: dict[str, float] = {}
    for key, value in payload.items():
        if isinstance(value, (str, bytes, dict, list, tuple)) or value is None:
            continue
        try:
            number = float(value)
        except (TypeError, ValueError):
            continue
        if math.isfinite(number):
            out[str(key)] = number
    return out


class MetricRecordSink:
    """Append SkyRL tracker payloads to ``metrics.jsonl`` and the job log.

    One record per training step, as the reference backend writes: SkyRL's eval-before-train
    payload (only ``eval/*`` keys, logged at the step training starts from) is held back and
    merged into the next step's record instead of becoming a record without training metrics.

    Args:
        run_id: the run the records belong to.
        total_steps: planned steps (``trainer.steps``).
        metrics_path: ``<run dir>/metrics.jsonl`` (appended; created with its directory).
        stream: where ``HPRL_METRIC`` lines go (default stdout, which Ray forwards to the job log).
    """

    def __init__(
        self,
        run_id: str,
        total_steps: int,
        metrics_path: str | Path,
        stream: TextIO | None = None,
    ) -> None:
        self.run_id = run_id
        self.total_steps = total_steps
        self.metrics_path = Path(metrics_path)
        self.metrics_path.parent.mkdir(parents=True, exist_ok=True)
        self.stream = stream
        self._pending: dict[str, float] = {}

    def write(self, payload: dict[str, Any], step: int) -> MetricRecord | None:
        """Write one record for ``step``.

        Returns:
            The record, or ``None`` when nothing was written: no numeric value, or an eval-only
            payload held for the next record.
        """
        values = numeric_values(payload)
        if not values:
            return None
        if all(key.startswith("eval/") for key in values):
            self._pending.update(values)
            return None
        values = {**self._pending, **values}
        self._pending = {}
        record = MetricRecord(
            run_id=self.run_id,
            step=max(int(step), 0),
            total_steps=self.total_steps,
            time_s=time.time(),
            values=values,
        )
        with appending(self.metrics_path) as sink, storage_errors(self.metrics_path):  # one StorageError naming it
            sink.write(record.model_dump_json() + "\n")
        print(record.to_line(), file=self.stream or sys.stdout, flush=True)
        return record
