"""Where hyperpod_rl keeps its state on this machine.

- ``data_dir()``: ``platformdirs.user_data_dir("hyperpod-rl")`` (e.g. ``~/.local/share/hyperpod-rl``),
  overridable with ``HYPERPOD_RL_HOME``. Holds the local cluster state file (mode 0600) and,
  by default, the storage root.
- ``storage_root()``: where runs live, ``<storage root>/runs/<run_id>/``. Overridable with
  ``HYPERPOD_RL_STORAGE`` (on HyperPod: a directory on the FSx mount, e.g. ``/fsx/hyperpod-rl``).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["RUN_ID_PATTERN", "data_dir", "run_dir", "storage_root"]

#: A run id: lower-case letters, digits and '-', 3-63 characters, starting with a letter or digit.
#: (It becomes part of Ray submission ids and Kubernetes-style names.)
RUN_ID_PATTERN = r"^[a-z0-9][a-z0-9-]{2,62}$"


def data_dir() -> Path:
    """The per-user state directory (created, mode 0700)."""
    env = os.environ.get("HYPERPOD_RL_HOME")
    if env:
        root = Path(env).expanduser()
    else:
        from platformdirs import user_data_dir

        root = Path(user_data_dir("hyperpod-rl", appauthor=False))
    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    return root


def storage_root() -> Path:
    """The storage root that holds ``runs/`` (created)."""
    env = os.environ.get("HYPERPOD_RL_STORAGE")
    root = Path(env).expanduser() if env else data_dir() / "storage"
    root.mkdir(parents=True, exist_ok=True)
    return root


def run_dir(run_id: str) -> Path:
    """``<storage root>/runs/<run_id>`` (not created)."""
    return storage_root() / "runs" / run_id
