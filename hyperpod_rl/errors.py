"""Exception hierarchy for hyperpod_rl.

::

    HyperpodRLError
    ├── ConfigError          bad RunConfig / option / path; message names the field and the fix
    ├── MazeError            bad maze, generator or dataset settings
    ├── ClusterError         Ray cluster could not be reached, started or used
    │   ├── ClusterNotReady
    │   └── ClusterTimeout
    ├── JobError             Ray Job submission / lookup failed
    ├── CheckpointError      missing, truncated or corrupt checkpoint / adapter
    └── ServeError           serving or preflight failed

Every message says what to change. No message ever contains a token or cookie.
"""

from __future__ import annotations

__all__ = [
    "CheckpointError",
    "ClusterError",
    "ClusterNotReady",
    "ClusterTimeout",
    "ConfigError",
    "HyperpodRLError",
    "JobError",
    "MazeError",
    "ServeError",
]


class HyperpodRLError(Exception):
    """Base class of every error this package raises on purpose."""


class ConfigError(HyperpodRLError, ValueError):
    """A configuration value is invalid. The message names the field and the fix."""


class MazeError(HyperpodRLError, ValueError):
    """A maze, generator or dataset setting is invalid."""


class ClusterError(HyperpodRLError):
    """The Ray cluster could not be started, reached or used."""


class ClusterNotReady(ClusterError):
    """The cluster exists but cannot take work yet."""


class ClusterTimeout(ClusterError, TimeoutError):
    """Waiting for the cluster ran past its timeout (seconds in the message)."""


class JobError(HyperpodRLError):
    """A Ray Job could not be submitted, found or controlled."""


class CheckpointError(HyperpodRLError):
    """A checkpoint or adapter directory is missing, truncated or corrupt."""


class ServeError(HyperpodRLError):
    """Serving failed, or an adapter failed a preflight check."""
