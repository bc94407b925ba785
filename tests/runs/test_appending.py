"""``runs.files.appending``: the metrics sink's open/write/close on a disk that fills (a write that raises ENOSPC)."""

from __future__ import annotations

import pytest

from hyperpod_rl.errors import StorageError
from hyperpod_rl.runs.files import appending, storage_errors
from hyperpod_rl.train.skyrl_metrics import MetricRecordSink
from tests.storage_faults import disk_fills_after


def _full_disk_for(monkeypatch: pytest.MonkeyPatch, path) -> None:
    disk_fills_after(monkeypatch, path, 0)


def test_a_failed_write_is_the_one_error_not_the_close_after_it(tmp_path, monkeypatch):
    path = tmp_path / "metrics.jsonl"
    _full_disk_for(monkeypatch, path)
    with pytest.raises(StorageError) as raised, appending(path) as sink, storage_errors(path):
        sink.write("{}\n")
        sink.flush()  # ENOSPC; the close then flushes the same bytes and fails again: dropped
    assert str(raised.value).startswith(f"cannot write {path}: no space left on that file system")
    assert raised.value.__context__ is None or raised.value.__suppress_context__


def test_a_close_that_fails_on_its_own_names_the_path(tmp_path, monkeypatch):
    path = tmp_path / "metrics.jsonl"
    _full_disk_for(monkeypatch, path)
    with pytest.raises(StorageError, match=f"cannot write {path}: no space left") as raised, appending(path) as sink:
        sink.write("{}\n")  # buffered: the close's flush is the write that fails
    assert raised.value.__suppress_context__


def test_an_error_in_the_block_is_kept_and_the_file_closed(tmp_path, monkeypatch):
    path = tmp_path / "metrics.jsonl"
    _full_disk_for(monkeypatch, path)
    with pytest.raises(KeyError), appending(path) as sink:
        sink.write("{}\n")
        raise KeyError("step failed")
    assert sink.closed


def test_an_unwritable_path_is_one_storage_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(StorageError, match=f"cannot write {blocker / 'metrics.jsonl'}: "), appending(blocker / "metrics.jsonl"):
        pass


def test_appends_and_closes(tmp_path):
    path = tmp_path / "metrics.jsonl"
    for line in ("a\n", "b\n"):
        with appending(path) as sink:
            sink.write(line)
    assert path.read_text() == "a\nb\n" and sink.closed


def test_the_skyrl_metric_sink_on_a_full_disk_raises_one_storage_error(tmp_path, monkeypatch):
    path = tmp_path / "metrics.jsonl"
    _full_disk_for(monkeypatch, path)
    sink = MetricRecordSink("sky-run", 10, path)
    with pytest.raises(StorageError, match=f"cannot write {path}: no space left") as raised:
        sink.write({"reward/avg_raw_reward": 0.5}, step=1)
    assert isinstance(raised.value, OSError)  # a StorageError is an OSError
    assert path.read_text() == ""
