"""Exception hierarchy for hyperpod_rl: every error the package raises on purpose.

::

    HyperpodRLError
    ├── ConfigError          bad RunConfig / option / path / request setting; names the field and the fix
    │   └── LogprobInputError    tensors given to the log-prob functions disagree in shape or type
    ├── TaskError            unknown or broken task plug-in, bad task options or task data (any task)
    │   └── MazeError            bad maze, generator or dataset settings
    ├── ClusterError         Ray cluster could not be reached, started or used
    │   ├── ClusterNotReady
    │   ├── ClusterTimeout
    │   └── ClusterRefused       the KubeRay operator refused the RayCluster (terminal)
    ├── JobError             Ray Job submission / lookup failed
    ├── CheckpointError      missing, truncated or corrupt checkpoint / adapter / run file
    ├── ServeError           serving or preflight failed
    │   └── PromotionRefused     the promotion gate refused an adapter (``.decision``)
    └── AWSError             an AWS or Studio call failed or is not allowed (names the fix)

``ConfigError``, ``TaskError`` (so ``MazeError``) and ``LogprobInputError`` are also ``ValueError`` s. Every message
says what to change. No message ever contains a token or cookie.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AWSError",
    "CheckpointError",
    "ClusterError",
    "ClusterNotReady",
    "ClusterRefused",
    "ClusterTimeout",
    "ConfigError",
    "HyperpodRLError",
    "JobError",
    "LogprobInputError",
    "MazeError",
    "PromotionRefused",
    "ServeError",
    "TaskError",
]


class HyperpodRLError(Exception):
    """Base class of every error this package raises on purpose."""


class ConfigError(HyperpodRLError, ValueError):
    """A configuration value is invalid. The message names the field and the fix."""


class LogprobInputError(ConfigError):
    """Tensors given to the log-prob functions have inconsistent shapes or types, or a response
    cannot be scored (it holds a vision token, or a token outside the policy's vocabulary)."""


class TaskError(HyperpodRLError, ValueError):
    """A task is not registered or its plug-in is broken, or task options or task data are invalid.

    The one error of the task layer: every task's own error subclasses it (:class:`MazeError`), so
    ``except TaskError`` catches any task's failure and no layer converts between them.
    """


class MazeError(TaskError):
    """A maze, generator or dataset setting is invalid, or a dataset file is unreadable (a :class:`TaskError`)."""


class ClusterError(HyperpodRLError):
    """The Ray cluster could not be started, reached or used."""


class ClusterNotReady(ClusterError):
    """The cluster exists but cannot take work yet."""


class ClusterTimeout(ClusterError, TimeoutError):
    """Waiting for the cluster ran past its timeout (seconds in the message)."""


class ClusterRefused(ClusterError):
    """The KubeRay operator refused the RayCluster; waiting cannot help (the event's message is in the text)."""


class JobError(HyperpodRLError):
    """A Ray Job could not be submitted, found or controlled."""


class CheckpointError(HyperpodRLError):
    """A checkpoint, adapter or run file is missing, truncated or corrupt."""


class ServeError(HyperpodRLError):
    """Serving failed, or an adapter failed a preflight check."""


class PromotionRefused(ServeError):
    """The promotion gate refused the adapter; ``decision`` holds the recorded decision."""

    def __init__(self, decision: Any) -> None:
        super().__init__(f"adapter {decision.adapter} not promoted: {decision.reason}")
        self.decision = decision


class AWSError(HyperpodRLError):
    """An AWS or SageMaker Studio call failed or is not allowed; the message names the fix."""
