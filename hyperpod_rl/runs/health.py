"""Which files of a run directory are damaged, each with the way back (nothing deleted).

A command that shows a run (``hyperpod-rl runs show``) reads only what it shows: the ledger
record and the provenance record. A damaged ``config.json`` or adapter file was then found only
by the command that needed it later (``serve``). :func:`damaged_files` reads every file a later
command will need, as that command reads it, and says for each damaged one what its own loader
would say: the file, what is wrong, and the way back (the run files' recovery advice of
:mod:`hyperpod_rl.runs.store` and :mod:`hyperpod_rl.runs.provenance`, the adapter's of
:func:`hyperpod_rl.model.recovery.adapter_recovery`: move it aside, never delete it).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hyperpod_rl.errors import HyperpodRLError
from hyperpod_rl.model.recovery import adapter_recovery
from hyperpod_rl.runs.files import file_sha256, safetensors_header
from hyperpod_rl.runs.layout import RunPaths, run_paths
from hyperpod_rl.runs.provenance import read_provenance
from hyperpod_rl.runs.store import read_config, read_json

__all__ = ["DamagedFile", "damaged_files"]

#: The adapter's files (:mod:`hyperpod_rl.model.adapter`'s names; that module imports torch).
_ADAPTER_JSON = ("adapter_config.json", "provenance.json")
_ADAPTER_WEIGHTS = "adapter_model.safetensors"


@dataclass(frozen=True)
class DamagedFile:
    """One damaged file of a run.

    Attributes:
        path: the file.
        message: what is wrong with it and the way back, as the command that reads it says it
            (it names ``path``; the way back never deletes anything).
    """

    path: Path
    message: str


def damaged_files(run: str | Path | RunPaths, *, weights: bool = True) -> list[DamagedFile]:
    """The damaged files of a run directory, in the order a reader meets them: ``config.json``
    (not JSON, or a config that no longer validates), ``manifest.json``, ``submissions.json``,
    ``promotion.json``, ``quickstart.json``, ``quickstart-options.json``, ``eval/*.json``, then
    the adapter's ``adapter_config.json``, ``provenance.json`` (not JSON objects, or missing) and
    ``adapter_model.safetensors`` (missing, cut short, or not the bytes its ``adapter_sha256``
    records). A file that is absent because it was never written is not damaged.

    Args:
        run: a run id, a run directory, or its :class:`RunPaths`.
        weights: also read the adapter's weights whole (their sha256); False checks only their
            framing, as a list of many runs does.
    """
    paths = run if isinstance(run, RunPaths) else run_paths(run)
    found: list[DamagedFile] = []

    def check(path: Path, read: Callable[[], object]) -> bool:
        try:
            read()
        except HyperpodRLError as err:
            found.append(DamagedFile(path, str(err)))
            return False
        return True

    if paths.config.exists() and check(paths.config, lambda: read_json(paths.config)):
        check(paths.config, lambda: read_config(paths))  # valid JSON: is it still a run config?
    check(paths.provenance, lambda: read_provenance(paths.root))
    for path in (paths.submissions, paths.promotion, paths.quickstart, paths.quickstart_options):
        check(path, lambda path=path: read_json(path))
    for path in sorted(paths.eval_dir.glob("*.json")):
        check(path, lambda path=path: read_json(path))
    if paths.adapter.is_dir():
        found.extend(_adapter_damage(paths, weights=weights))
    return found


def _adapter_damage(paths: RunPaths, *, weights: bool) -> list[DamagedFile]:
    """:func:`damaged_files` of the run's exported adapter (its directory exists: it was written whole)."""
    adapter = paths.adapter
    fix = adapter_recovery(adapter)
    out: list[DamagedFile] = []
    records: dict[str, dict[str, object]] = {}
    for name in _ADAPTER_JSON:
        path = adapter / name
        if not path.is_file():
            out.append(DamagedFile(path, f"adapter file {path} is missing (the export writes it): {fix}"))
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as err:
            out.append(DamagedFile(path, f"adapter file {path} is not valid JSON ({_reason(err)}): {fix}"))
            continue
        if not isinstance(data, dict):
            out.append(DamagedFile(path, f"adapter file {path} holds a JSON {type(data).__name__}, not an object: {fix}"))
            continue
        records[name] = data
    path = adapter / _ADAPTER_WEIGHTS
    if not path.is_file():
        out.append(DamagedFile(path, f"adapter weights {path} are missing (the export writes them): {fix}"))
        return out
    try:
        safetensors_header(path)
    except (OSError, ValueError) as err:
        out.append(DamagedFile(path, f"adapter weights {path} are cut short or damaged ({_reason(err)}): {fix}"))
        return out
    expected = records.get("provenance.json", {}).get("adapter_sha256")
    if weights and isinstance(expected, str) and file_sha256(path) != expected:
        problem = "its bytes do not match the adapter_sha256 its provenance.json records (damaged or replaced)"
        out.append(DamagedFile(path, f"adapter weights {path}: {problem}: {fix}"))
    return out


def _reason(err: BaseException) -> str:
    return str(err).splitlines()[0] if str(err) else type(err).__name__
