"""Where hyperpod_rl keeps its state on this machine.

- ``data_dir()``: ``platformdirs.user_data_dir("hyperpod-rl")`` (e.g. ``~/.local/share/hyperpod-rl``),
  overridable with ``HYPERPOD_RL_HOME``. Holds the local cluster state file (mode 0600) and,
  by default, the storage root.
- ``storage_root()``: where runs live, ``<storage root>/runs/<run_id>/``. Overridable with
  ``HYPERPOD_RL_STORAGE`` (on HyperPod: a directory on the FSx mount, e.g. ``/fsx/hyperpod-rl``).
- ``torch_cache_dir()``: TorchInductor's cache of compiled kernels, ``~/.cache/hyperpod-rl/torchinductor``
  (``XDG_CACHE_HOME`` moves it; ``TORCHINDUCTOR_CACHE_DIR`` wins): kept between runs, as
  ``make test`` keeps it, not in ``TMPDIR`` (:func:`keep_torch_cache`).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["RUN_ID_PATTERN", "data_dir", "keep_torch_cache", "run_dir", "storage_root", "torch_cache_dir"]

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


def torch_cache_dir() -> Path:
    """``<XDG_CACHE_HOME or ~/.cache>/hyperpod-rl/torchinductor`` (not created), where
    ``make test`` keeps TorchInductor's compiled kernels too."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "hyperpod-rl" / "torchinductor"


def keep_torch_cache() -> None:
    """Point TorchInductor's cache (``TORCHINDUCTOR_CACHE_DIR``) at :func:`torch_cache_dir`,
    unless it is set already or that place cannot be written (then torch's own default stands).

    Torch's default is ``<TMPDIR>/torchinductor_<user>``, made as soon as ``torch._dynamo`` is
    imported (transformers and peft import it), compiled or not: each process of ours that loads
    a model (a command, a job, a Serve replica) left an empty folder in ``TMPDIR``. ``import
    hyperpod_rl`` calls this, so those processes, and the local cluster's, which inherit the
    setting, keep it in the user's cache instead.
    """
    if os.environ.get("TORCHINDUCTOR_CACHE_DIR"):
        return
    path = torch_cache_dir()
    existing = next((p for p in (path, *path.parents) if p.exists()), None)
    if existing is not None and existing.is_dir() and os.access(existing, os.W_OK | os.X_OK):
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(path)
