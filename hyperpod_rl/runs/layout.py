"""Where a run's files are: ``<storage root>/runs/<run_id>/``.

===========================  ===================================================================
``config.json``              the :class:`~hyperpod_rl.config.run.RunConfig` the job trains with
                             (written once per submission, under the submit lock, never changed
                             while a job of the run is alive)
``submissions.json``         the Ray submission ids of the run, oldest first
``metrics.jsonl``            one :class:`~hyperpod_rl.metrics.schema.MetricRecord` per step
``manifest.json``            the run's provenance record (:mod:`hyperpod_rl.runs.provenance`;
                             the file keeps its first name so existing runs stay readable)
``checkpoints/``             ``step_N/`` directories, atomic and checksummed (:mod:`.files`)
``adapter/``                 the exported PEFT adapter + its ``provenance.json``
                             (format: :mod:`hyperpod_rl.model.adapter`)
``eval/<name>.json``         saved evaluations (``base``, ``adapter``, ``comparison``, ...)
``promotion.json``           the latest promotion decision
``quickstart.json``          the quickstart's summary, when the run came from it
``quickstart-options.json``  the quickstart's options, written when it starts (``--resume``
                             finishes an interrupted quickstart from them)
``ray-train/``               Ray Train's run storage (``trainer.workers > 1``: the ``TorchTrainer``'s
                             ``storage_path``; its own state, no training results)
===========================  ===================================================================

Only :mod:`hyperpod_rl.runs` opens these files; everything else asks it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from hyperpod_rl.base import listed
from hyperpod_rl.errors import ConfigError
from hyperpod_rl.paths import RUN_ID_PATTERN, storage_root

__all__ = [
    "RUN_ID_PATTERN",
    "SUBMISSION_ID_PATTERN",
    "RunPaths",
    "check_run_id",
    "run_paths",
    "runs_root",
    "sft_run_id",
    "submission_id_note",
    "unknown_run",
]

_RUN_ID = re.compile(RUN_ID_PATTERN)

#: A Ray submission id of a run (``hprl-<run id>-<n>``, :func:`hyperpod_rl.jobs.submit_run`), which
#: a user may pass where a run id is asked for (the quickstart prints both).
SUBMISSION_ID_PATTERN = re.compile(r"^hprl-(?P<run>.+)-(?P<n>\d+)$")


def submission_id_note(run_id: str) -> str | None:
    """What to pass instead when ``run_id`` is a submission id: ``it looks like a submission id (job 3
    of run 'x'): these commands take the run id, e.g. 'x'``; None when it does not look like one."""
    found = SUBMISSION_ID_PATTERN.match(run_id)
    if found is None:
        return None
    return (
        f"it looks like a submission id (job {found['n']} of run {found['run']!r}): these commands take the run id, e.g. {found['run']!r}"
    )


def unknown_run(run_id: str, places: list[str]) -> ConfigError:
    """The error for a run id that matches no run: it says so plainly, names where runs were looked
    for (``places``, e.g. ``the ledger /x/ledger.sqlite``) and how to see the known runs, or, for a
    submission id, which run id to pass (:func:`submission_id_note`).

    ``hyperpod-rl runs show``, ``runs compare`` and every command that takes a run id say this
    (:meth:`hyperpod_rl.ledger.Ledger.require_run`)."""
    fix = submission_id_note(run_id) or "hyperpod-rl runs list shows the known runs"
    return ConfigError(f"unknown run id {run_id!r}: no run has this id (looked in: {listed(places)}); {fix}")


def sft_run_id(run_id: str) -> str:
    """The run id of a quickstart's SFT warm start: ``<run id>-sft`` (the run id cut to fit 63 characters)."""
    return f"{run_id[:59].rstrip('-')}-sft"


def check_run_id(run_id: str) -> str:
    """Return ``run_id`` if it is valid.

    Raises:
        ConfigError: it does not match :data:`RUN_ID_PATTERN` (the message shows the rule).
    """
    if not isinstance(run_id, str) or not _RUN_ID.fullmatch(run_id):
        raise ConfigError(f"run id {run_id!r} is invalid: use 3-63 lower-case letters, digits and '-', starting with a letter or digit")
    return run_id


def runs_root(storage: str | Path | None = None) -> Path:
    """``<storage root>/runs`` (not created). ``storage`` defaults to :func:`hyperpod_rl.paths.storage_root`."""
    return (Path(storage).expanduser() if storage is not None else storage_root()) / "runs"


@dataclass(frozen=True)
class RunPaths:
    """The paths of one run directory (nothing is created or read).

    Attributes:
        root: the run directory, ``<storage root>/runs/<run_id>``.
    """

    root: Path

    @property
    def run_id(self) -> str:
        return self.root.name

    @property
    def config(self) -> Path:
        return self.root / "config.json"

    @property
    def submissions(self) -> Path:
        return self.root / "submissions.json"

    @property
    def metrics(self) -> Path:
        return self.root / "metrics.jsonl"

    @property
    def provenance(self) -> Path:
        return self.root / "manifest.json"

    @property
    def checkpoints(self) -> Path:
        return self.root / "checkpoints"

    @property
    def adapter(self) -> Path:
        return self.root / "adapter"

    @property
    def eval_dir(self) -> Path:
        return self.root / "eval"

    def eval_file(self, name: str) -> Path:
        """``eval/<name>.json``.

        Raises:
            ConfigError: ``name`` is not a plain file stem (letters, digits, ``-``, ``_``, ``.``).
        """
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,80}", name) or name.endswith(".json"):
            raise ConfigError(f"evaluation name {name!r} is invalid: use letters, digits, '-', '_' (e.g. 'adapter' or 'base')")
        return self.eval_dir / f"{name}.json"

    @property
    def promotion(self) -> Path:
        return self.root / "promotion.json"

    @property
    def quickstart(self) -> Path:
        return self.root / "quickstart.json"

    @property
    def quickstart_options(self) -> Path:
        """The options a quickstart started with (``hyperpod-rl quickstart --resume`` reads them)."""
        return self.root / "quickstart-options.json"

    @property
    def ray_train(self) -> Path:
        """Ray Train's ``storage_path`` of a data-parallel run (``trainer.workers > 1``)."""
        return self.root / "ray-train"

    @property
    def trainer_lock(self) -> Path:
        """Held by the trainer process while it trains (``fcntl``; released when it dies)."""
        return self.root / "trainer.lock"

    @property
    def submit_lock(self) -> Path:
        """Held by a submitter from choosing a submission id until it is recorded."""
        return self.root / "submit.lock"


def run_paths(run: str | Path, *, storage: str | Path | None = None) -> RunPaths:
    """The :class:`RunPaths` of a run id, or of a run directory given as a path.

    Args:
        run: a run id (looked up under ``storage``) or a run directory (``Path``, or a string
            containing ``/``).
        storage: the storage root (default :func:`hyperpod_rl.paths.storage_root`).

    Raises:
        ConfigError: ``run`` is neither a valid run id nor a path.
    """
    if isinstance(run, Path) or "/" in str(run):
        return RunPaths(Path(run).expanduser())
    return RunPaths(runs_root(storage) / check_run_id(str(run)))
