"""The one metrics record type that flows from a job to every consumer."""

from hyperpod_rl.metrics.schema import (
    METRIC_LOG_PREFIX,
    MetricRecord,
    parse_metric_line,
    read_metrics,
)

__all__ = ["METRIC_LOG_PREFIX", "MetricRecord", "parse_metric_line", "read_metrics"]
