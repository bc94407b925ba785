"""``MetricRecord``: one training step's metrics, named as SkyRL 0.3.0 names them.

Both training backends write one record per step to ``<run dir>/metrics.jsonl`` and print it to
the job log as ``HPRL_METRIC {json}``, so a client can follow a run through the job log alone
(Ray's ``get_job_logs``) or through the run directory on shared storage.

Metric names follow SkyRL's trackers (``skyrl/train/trainer.py``): ``reward/avg_raw_reward``,
``policy/policy_loss``, ``policy/policy_kl``, ``policy/policy_entropy``, ``policy/grad_norm``,
``policy/policy_lr``, ``policy/response_length``, ``timing/generate``, ``timing/policy_train``,
``timing/step``, ``trainer/tokens_per_second``, ``environment/*``. Timings are seconds.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["METRIC_LOG_PREFIX", "MetricRecord", "parse_metric_line", "read_metrics"]

#: Prefix of a metric line in the job log.
METRIC_LOG_PREFIX = "HPRL_METRIC "


class MetricRecord(BaseModel):
    """Metrics of one step of one run.

    Attributes:
        run_id: the run these metrics belong to.
        step: 1-based global step.
        total_steps: planned steps of the run.
        time_s: Unix time in seconds when the step finished.
        values: metric name -> value (seconds for ``timing/*``, tokens for lengths).
    """

    model_config = ConfigDict(extra="forbid")

    run_id: str
    step: int = Field(ge=0)
    total_steps: int = Field(ge=0)
    time_s: float
    values: dict[str, float]

    def to_line(self) -> str:
        """The job-log line: ``HPRL_METRIC {json}``."""
        return METRIC_LOG_PREFIX + self.model_dump_json()


def parse_metric_line(line: str) -> MetricRecord | None:
    """Parse one log line; ``None`` when it is not a metric line or is cut off."""
    idx = line.find(METRIC_LOG_PREFIX)
    if idx < 0:
        return None
    try:
        return MetricRecord.model_validate_json(line[idx + len(METRIC_LOG_PREFIX) :].strip())
    except ValueError:
        return None


def read_metrics(path: str | Path) -> Iterator[MetricRecord]:
    """Yield the records of a ``metrics.jsonl`` file, skipping a cut-off last line."""
    p = Path(path)
    if not p.exists():
        return
    with p.open() as fh:
        for line in fh:
            try:
                yield MetricRecord.model_validate(json.loads(line))
            except ValueError:
                continue
