"""The run ledger: records, search by config value / note text / eval figure, compare, concurrency."""

from __future__ import annotations

import multiprocessing as mp
import sqlite3
import time

import pytest

from hyperpod_rl.errors import ConfigError
from hyperpod_rl.ledger import JOURNAL_ENV, LEDGER_ENV, Ledger, filesystem_type, ledger_path

WRITERS, WRITES = 4, 200


@pytest.fixture
def ledger(tmp_path):
    with Ledger(tmp_path / "ledger.sqlite") as led:
        led.record_run(
            "run-a",
            status="succeeded",
            config={"grpo": {"lr": 0.0005, "group_size": 8}, "lora": {"rank": 16, "target_modules": "all-linear"}},
            config_hash="aaaa",
        )
        led.record_run(
            "run-b",
            status="failed",
            config={"grpo": {"lr": 0.003, "group_size": 8}, "lora": {"rank": 8, "target_modules": "all-linear"}},
            config_hash="bbbb",
        )
        led.add_eval("run-a", "adapter", {"solve_rate": 0.415, "optimal_move_rate": 0.62}, ci={"solve_rate": [0.35, 0.48]}, num_mazes=200)
        led.add_eval("run-b", "adapter", {"solve_rate": 0.12, "optimal_move_rate": 0.40}, num_mazes=200)
        led.add_note("policy collapsed to always-left after lr 3e-3; lowered the learning rate", run_id="run-b", kind="incident")
        led.add_note("runbook: restart the head node before resubmitting", kind="runbook")
        yield led


def _runs(hits) -> set[str | None]:
    return {h.run_id for h in hits}


def test_search_by_config_value_note_text_and_eval_figure(ledger):
    assert _runs(ledger.search("grpo.lr=0.0005")) == {"run-a"}
    assert _runs(ledger.search("lr=5e-4")) == {"run-a"}  # suffix key, numeric equality
    assert _runs(ledger.search("rank>8")) == {"run-a"}
    assert _runs(ledger.search("group_size=8")) == {"run-a", "run-b"}
    assert _runs(ledger.search("target_modules=all-linear")) == {"run-a", "run-b"}
    assert _runs(ledger.search("solve_rate>=0.4")) == {"run-a"}
    assert _runs(ledger.search("adapter.solve_rate<0.2")) == {"run-b"}
    assert _runs(ledger.search("0.415")) == {"run-a"}  # an eval figure as free text
    hits = ledger.search("collapsed always-left")
    assert [(h.run_id, h.kind) for h in hits] == [("run-b", "note")]
    assert [h.kind for h in ledger.search("head node")] == ["note"]
    assert ledger.search("no such words here") == []
    with pytest.raises(ConfigError, match="empty search"):
        ledger.search("  ")
    with pytest.raises(ConfigError, match="need a number"):
        ledger.search("rank>abc")


def test_show_list_and_compare(ledger):
    rec = ledger.get_run("run-a")
    assert rec is not None and rec.config["grpo"]["lr"] == 0.0005 and rec.evals["adapter"]["ci"] == {"solve_rate": [0.35, 0.48]}
    assert [n["kind"] for n in ledger.get_run("run-b").notes] == ["incident"]
    assert {r.run_id for r in ledger.list_runs()} == {"run-a", "run-b"}
    assert [r.run_id for r in ledger.list_runs(status="failed")] == ["run-b"]
    diff = ledger.compare(["run-a", "run-b"])
    assert diff["config"] == {"grpo.lr": {"run-a": 0.0005, "run-b": 0.003}, "lora.rank": {"run-a": 16, "run-b": 8}}
    assert diff["eval"]["adapter.solve_rate"] == {"run-a": 0.415, "run-b": 0.12}
    with pytest.raises(ConfigError, match="unknown run id 'nope'"):
        ledger.compare(["run-a", "nope"])
    with pytest.raises(ConfigError, match="note text is empty"):
        ledger.add_note(" ")
    assert ledger.get_run("missing") is None


def test_path_is_configurable_and_defaults_to_the_data_dir(tmp_path, monkeypatch):
    monkeypatch.delenv(LEDGER_ENV, raising=False)
    assert ledger_path().name == "ledger.sqlite" and ledger_path().parent.is_dir()
    monkeypatch.setenv(LEDGER_ENV, str(tmp_path / "team" / "l.sqlite"))
    with Ledger() as led:
        assert led.path == tmp_path / "team" / "l.sqlite"
        assert led._conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    with pytest.raises(ConfigError, match="is a directory"):
        Ledger(tmp_path)


def test_an_existing_ledger_keeps_its_journal_mode(tmp_path, monkeypatch):
    """Field report: a DELETE ledger (the advice for FSx) was switched back to WAL by the next opener."""
    monkeypatch.delenv(JOURNAL_ENV, raising=False)
    path = tmp_path / "team.sqlite"
    with Ledger(path, journal_mode="DELETE") as led:
        led.record_run("r", status="running")
        assert led.journal_mode == "DELETE"
    for _ in range(2):  # later openers that say nothing leave it alone
        with Ledger(path) as led:
            assert led.journal_mode == "DELETE"
            led.record_run("r", status="succeeded")
    assert path.read_bytes()[18] == 1  # the file header says rollback journal, not WAL (2)
    with Ledger(path, journal_mode="WAL") as led:  # told to: changed
        assert led.journal_mode == "WAL"


def test_journal_mode_is_one_setting_every_opener_reads(tmp_path, monkeypatch):
    monkeypatch.setenv(JOURNAL_ENV, "delete")
    with Ledger(tmp_path / "a.sqlite") as led:
        assert led.journal_mode == "DELETE"
    monkeypatch.setenv(JOURNAL_ENV, "journal")
    with pytest.raises(ConfigError, match="HYPERPOD_RL_LEDGER_JOURNAL='JOURNAL': use WAL or DELETE"):
        Ledger(tmp_path / "b.sqlite")


def test_wal_on_a_network_file_system_becomes_delete_with_a_warning(tmp_path, monkeypatch):
    import hyperpod_rl.ledger as ledger_mod

    monkeypatch.delenv(JOURNAL_ENV, raising=False)
    mounts = tmp_path / "mounts"
    mounts.write_text(f"overlay / overlay rw 0 0\n10.0.0.2@tcp:/fsx {tmp_path / 'fsx'} lustre rw,flock 0 0\n")
    monkeypatch.setattr(ledger_mod, "MOUNTS_FILE", str(mounts))
    assert filesystem_type(tmp_path / "fsx" / "team" / "l.sqlite") == "lustre"
    assert filesystem_type(tmp_path / "local.sqlite") == "overlay"
    with pytest.warns(UserWarning, match=r"lustre file system, where SQLite's WAL mode is unsafe across hosts: using journal_mode=DELETE"):
        with Ledger(tmp_path / "fsx" / "team" / "l.sqlite", journal_mode="WAL") as led:
            assert led.journal_mode == "DELETE"


def test_import_manifest_and_sync_storage(tmp_path):
    runs = tmp_path / "runs"
    (runs / "r1").mkdir(parents=True)
    manifest = {
        "run_id": "r1",
        "status": "succeeded",
        "config": {"trainer": {"seed": 7}},
        "config_hash": "h",
        "checkpoints": [{"step": 2, "path": "checkpoints/step_000002", "files": {"adapter_model.safetensors": "ab" * 32}}],
        "adapter": {"path": "adapter", "sha256": "cd" * 32},
        "eval": {"base": {"metrics": {"solve_rate": 0.25}, "num_mazes": 10}},
    }
    import json

    (runs / "r1" / "manifest.json").write_text(json.dumps(manifest))
    with Ledger(tmp_path / "l.sqlite") as led:
        assert led.sync_storage(runs) == 1
        assert led.sync_storage(runs) == 0  # unchanged manifests are not re-read
        rec = led.get_run("r1")
        assert rec.status == "succeeded" and {a["kind"] for a in rec.artifacts} == {"checkpoint", "adapter"}
        assert _runs(led.search("seed=7")) == {"r1"} and _runs(led.search("base.solve_rate=0.25")) == {"r1"}


def _writer(path: str, worker: int, barrier) -> None:
    with Ledger(path) as led:
        barrier.wait()
        for i in range(WRITES):
            if i % 2:
                led.add_note(f"worker {worker} note {i} finding", run_id=f"w{worker}-r{i}")
            else:
                led.record_run(f"w{worker}-r{i}", status="running", config={"trainer": {"seed": i}, "worker": worker})


def test_four_processes_writing_at_once_lose_nothing(tmp_path):
    path = str(tmp_path / "ledger.sqlite")  # created by the racing writers themselves
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(WRITERS)
    procs = [ctx.Process(target=_writer, args=(path, w, barrier)) for w in range(WRITERS)]
    t0 = time.perf_counter()
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0] * WRITERS
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert conn.execute("SELECT count(*) FROM runs").fetchone()[0] == WRITERS * WRITES // 2
    assert conn.execute("SELECT count(*) FROM notes").fetchone()[0] == WRITERS * WRITES // 2
    assert conn.execute("SELECT count(*) FROM search_index").fetchone()[0] == WRITERS * WRITES
    assert conn.execute("SELECT count(DISTINCT run_id) FROM facts WHERE key = 'worker'").fetchone()[0] == WRITERS * WRITES // 2
    conn.close()
    print(f"{WRITERS * WRITES} writes from {WRITERS} processes in {time.perf_counter() - t0:.1f} s")


def test_updated_is_the_runs_last_change_not_the_sync_time(tmp_path):
    """Field report (new-user trial): ``runs list``'s "updated" column showed when the ledger
    synced, so every run looked updated a moment ago."""
    import json
    import os

    runs = tmp_path / "runs"
    for rid, when in (("old-run", 1_700_000_000.0), ("new-run", 1_700_000_600.0)):
        (runs / rid).mkdir(parents=True)
        (runs / rid / "manifest.json").write_text(json.dumps({"run_id": rid, "status": "succeeded", "config": {}}))
        (runs / rid / "metrics.jsonl").write_text("{}\n")
        os.utime(runs / rid / "manifest.json", (when, when))
        os.utime(runs / rid / "metrics.jsonl", (when + 60, when + 60))  # its last metric
    with Ledger(tmp_path / "l.sqlite") as led:
        assert led.sync_storage(runs) == 2
        listed = led.list_runs()
        assert [r.run_id for r in listed] == ["new-run", "old-run"]  # most recently changed first
        assert [r.updated_at for r in listed] == [1_700_000_660.0, 1_700_000_060.0]
        assert led.sync_storage(runs) == 0
        os.utime(runs / "old-run" / "metrics.jsonl", (1_700_001_000.0, 1_700_001_000.0))  # a new metric line
        assert led.sync_storage(runs) == 1 and led.get_run("old-run").updated_at == 1_700_001_000.0
