"""The run directory: the one owner of every file under ``<storage root>/runs/<run_id>/``.

Layout and paths (:mod:`.layout`), config, submissions, evaluations and the run-store scan
(:mod:`.store`), the provenance record (:mod:`.provenance`), atomic files and checkpoints
(:mod:`.files`), package and git versions (:mod:`.versions`), damaged files and the way back
(:mod:`.health`). The trainer writes run files through this package only; the run ledger is filled from run directories on the notebook/CLI
side (:meth:`hyperpod_rl.ledger.Ledger.sync_storage`, ``hyperpod-rl runs sync``).
"""

from hyperpod_rl.runs.files import checkpoint_entries, file_sha256, write_dir_atomically, write_json_atomic
from hyperpod_rl.runs.health import DamagedFile, damaged_files
from hyperpod_rl.runs.layout import (
    RUN_ID_PATTERN,
    SUBMISSION_ID_PATTERN,
    RunPaths,
    check_run_id,
    run_paths,
    runs_root,
    sft_run_id,
    submission_id_note,
    unknown_run,
)
from hyperpod_rl.runs.provenance import (
    config_conflict,
    config_from_provenance,
    new_provenance,
    read_provenance,
    reproduce_config,
    update_provenance,
)
from hyperpod_rl.runs.store import (
    FINAL_STATUSES,
    RUN_STATUSES,
    RunSummary,
    add_submission,
    current_status,
    dataset_rows,
    invalid_saved_file,
    last_record,
    list_runs,
    read_config,
    read_eval,
    read_json,
    read_submissions,
    record_eval,
    record_final_status,
    record_promotion,
    submit_lock,
    summarize,
    unsubmitted_quickstart,
    write_config,
    write_json,
)

__all__ = [
    "DamagedFile",
    "damaged_files",
    "FINAL_STATUSES",
    "RUN_STATUSES",
    "RUN_ID_PATTERN",
    "SUBMISSION_ID_PATTERN",
    "RunPaths",
    "RunSummary",
    "add_submission",
    "current_status",
    "check_run_id",
    "dataset_rows",
    "invalid_saved_file",
    "checkpoint_entries",
    "config_conflict",
    "config_from_provenance",
    "file_sha256",
    "last_record",
    "list_runs",
    "new_provenance",
    "read_config",
    "read_eval",
    "read_json",
    "read_provenance",
    "read_submissions",
    "record_eval",
    "record_final_status",
    "record_promotion",
    "reproduce_config",
    "run_paths",
    "runs_root",
    "sft_run_id",
    "submit_lock",
    "submission_id_note",
    "summarize",
    "unknown_run",
    "unsubmitted_quickstart",
    "update_provenance",
    "write_config",
    "write_dir_atomically",
    "write_json",
    "write_json_atomic",
]
