"""``hyperpod-rl runs ...`` over a ledger and run directories, and the reproduce checks."""

from __future__ import annotations

import json
import shutil

import pytest
from typer.testing import CliRunner

from hyperpod_rl.cli import runs as runs_cli
from hyperpod_rl.cli.runs import app
from hyperpod_rl.errors import CheckpointError, ConfigError
from hyperpod_rl.paths import storage_root
from hyperpod_rl.quickstart import make_run_config
from hyperpod_rl.runs.files import file_sha256
from hyperpod_rl.runs.provenance import new_provenance, reproduce_config, update_provenance
from hyperpod_rl.tasks.maze import REWARD_VERSION

runner = CliRunner()


def _run_dir(setup, run_id: str, lr: float, solve: float, data=None):
    data = data or setup["data"]
    cfg = make_run_config(setup["opts"], run_id=run_id, model_path=setup["model_dir"], revision=setup["revision"], data=data)
    cfg = type(cfg).build({**cfg.model_dump(mode="json"), "grpo": {**cfg.grpo.model_dump(mode="json"), "lr": lr}})
    rdir = storage_root() / "runs" / run_id
    hashes = {"train": file_sha256(cfg.data.train_path), "heldout": file_sha256(cfg.data.heldout_path)}

    def change(_):
        m = new_provenance(
            cfg,
            base_model_id="hyperpod-rl/tiny-qwen3-vl",
            base_model_revision=setup["revision"],
            dataset_hashes=hashes,
            reward_version=REWARD_VERSION,
        )
        m["status"] = "succeeded"
        m["eval"] = {
            "adapter": {
                "metrics": {"solve_rate": solve, "optimal_move_rate": 0.5, "invalid_move_rate": 0.0},
                "ci": {"solve_rate": [solve - 0.05, solve + 0.05]},
                "num_mazes": 16,
            }
        }
        return m

    update_provenance(rdir, change)
    return cfg, rdir


@pytest.fixture
def runs(tiny_setup, tmp_path, monkeypatch):
    monkeypatch.setenv("HYPERPOD_RL_LEDGER", str(tmp_path / "ledger.sqlite"))
    monkeypatch.setattr(runs_cli.console, "width", 250)  # no wrapping inside table cells
    a = _run_dir(tiny_setup, "cli-run-a", 5e-4, 0.41)
    b = _run_dir(tiny_setup, "cli-run-b", 3e-3, 0.12)
    yield a, b
    for _, rdir in (a, b):
        shutil.rmtree(rdir, ignore_errors=True)


def test_list_show_search_note_compare(runs):
    out = runner.invoke(app, ["list"])
    assert out.exit_code == 0, out.output
    assert "cli-run-a" in out.output and "cli-run-b" in out.output and "0.410 [0.360, 0.460]" in out.output
    out = runner.invoke(app, ["note", "lr 3e-3 collapses the policy to one direction", "--run", "cli-run-b", "--kind", "finding"])
    assert out.exit_code == 0 and "added to run cli-run-b" in out.output
    out = runner.invoke(app, ["search", "collapses"])
    assert out.exit_code == 0 and "cli-run-b" in out.output and "cli-run-a" not in out.output
    out = runner.invoke(app, ["search", "grpo.lr=0.0005"])
    assert out.exit_code == 0 and "cli-run-a" in out.output and "cli-run-b" not in out.output
    out = runner.invoke(app, ["search", "solve_rate>0.3"])
    assert "cli-run-a" in out.output and "cli-run-b" not in out.output
    assert runner.invoke(app, ["search", "nothing-like-this"]).exit_code == 1
    out = runner.invoke(app, ["show", "cli-run-b"])
    assert (
        out.exit_code == 0
        and "[finding]" in out.output
        and "0.120 [0.070, 0.170]" in out.output
        and "base model hyperpod-rl/tiny-qwen3-vl" in out.output
    )
    shown = json.loads(runner.invoke(app, ["show", "cli-run-a", "--json"]).output)
    assert shown["manifest"]["config"]["grpo"]["lr"] == 0.0005
    out = runner.invoke(app, ["compare", "cli-run-a", "cli-run-b"])
    assert out.exit_code == 0 and "grpo.lr" in out.output and "eval adapter.solve_rate" in out.output
    out = runner.invoke(app, ["show", "no-such-run"])
    assert out.exit_code == 2 and "unknown run id 'no-such-run'" in out.output


def test_reproduce_checks_inputs_and_keeps_the_config_hash(runs, tiny_setup, tmp_path):
    (cfg, rdir), _ = runs
    again, warns = reproduce_config(rdir, run_id="cli-run-a-r1")
    assert again.run_id == "cli-run-a-r1" and again.config_hash() == cfg.config_hash()
    assert again.model_dump(exclude={"run_id"}) == cfg.model_dump(exclude={"run_id"})
    assert all("dataset" not in w for w in warns)
    # a dataset that changed since the run makes an exact reproduction impossible
    copy = tmp_path / "data"
    shutil.copytree(tiny_setup["data"].train.parent, copy)
    from dataclasses import replace

    moved = replace(tiny_setup["data"], train=copy / "train.parquet", heldout=copy / "heldout.parquet")
    _, cdir = _run_dir(tiny_setup, "cli-run-c", 5e-4, 0.3, data=moved)
    (copy / "train.parquet").write_bytes((copy / "train.parquet").read_bytes() + b"x")
    with pytest.raises(ConfigError, match="dataset train: .* changed since the run"):
        reproduce_config(cdir, run_id="cli-run-c-r1")
    shutil.rmtree(cdir)
    with pytest.raises(CheckpointError, match="no manifest.json"):
        reproduce_config(tmp_path, run_id="x-r1")
    (storage_root() / "runs" / "never-ran").mkdir(parents=True)  # a run with no record (an unknown id: tests/cli/test_unknown_run.py)
    out = runner.invoke(app, ["reproduce", "never-ran"])
    assert out.exit_code == 2 and "no manifest.json" in out.output


def test_reproduce_takes_a_cluster_address(runs, tmp_path, monkeypatch):
    """`--address sagemaker_ray://...` resolves like the job commands: here no kubeconfig and no HyperPod cluster named."""
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))
    monkeypatch.delenv("HYPERPOD_RL_HYPERPOD_CLUSTER", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    out = runner.invoke(app, ["reproduce", "cli-run-a", "--address", "sagemaker_ray://maze/hyperpod-ns-a"])
    assert out.exit_code == 2 and "Traceback" not in out.output
    assert "cannot reach sagemaker_ray://maze/hyperpod-ns-a: no HyperPod cluster named" in " ".join(out.output.split())


# ---------------------------------------------------------------- files that are not what they claim (issue 42 item 3)
def _damage_pages(path) -> None:
    """Overwrite every page after the first (the schema) with a pattern: the tables' b-trees are garbage."""
    data = bytearray(path.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    data[page:] = bytes((i * 7) & 0xFF for i in range(page, len(data)))
    path.write_bytes(bytes(data))


def _damage_a_row(path) -> None:
    import sqlite3

    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE runs SET config_json = '{\"grpo\": {\"lr\": ' WHERE run_id = 'cli-run-a'")
    conn.close()


def _not_sqlite(path) -> None:
    path.write_text("run_id,status\ncli-run-a,succeeded\n" * 100)  # a spreadsheet saved under the ledger's name


def _truncated(path) -> None:
    path.write_bytes(path.read_bytes()[: 4096 + 100])  # cut inside its second page, as a full disk or a bad copy leaves it


@pytest.mark.parametrize(
    ("damage", "words"),
    [
        (_not_sqlite, ("is not an SQLite database",)),
        (_damage_pages, ("is damaged (database disk image is malformed)",)),
        (_truncated, ("is damaged",)),
        (_damage_a_row, ("a row of run 'cli-run-a', is not valid JSON", "rebuild it")),
    ],
    ids=lambda d: getattr(d, "__name__", ""),
)
def test_a_damaged_ledger_is_one_error_line_and_one_command_rebuilds_it(runs, tmp_path, damage, words):
    path = tmp_path / "ledger.sqlite"
    assert runner.invoke(app, ["list"]).exit_code == 0  # the ledger, filled from the run directories
    runner.invoke(app, ["note", "keep this finding", "--run", "cli-run-a"])
    damage(path)
    for wal in (tmp_path / "ledger.sqlite-wal", tmp_path / "ledger.sqlite-shm"):
        wal.unlink(missing_ok=True)  # the damage is the main file's (a checkpointed WAL is empty)
    damaged = path.read_bytes()
    commands = [["list"], ["show", "cli-run-a"], ["compare", "cli-run-a", "cli-run-b"]]
    if damage is not _damage_a_row:  # search reads the facts table, not the damaged row's config text
        commands.append(["search", "grpo.lr=0.0005"])
    for command in commands:
        out = runner.invoke(app, command)
        assert out.exit_code == 2, (command, out.output, out.exception)
        assert out.stderr.startswith("error: ") and out.stderr.count("error:") == 1 and "Traceback" not in out.output, out.output
        assert str(path) in out.stderr and "hyperpod-rl runs sync --rebuild" in out.stderr, out.stderr
        for word in words:
            assert word in out.stderr, (word, out.stderr)
    out = runner.invoke(app, ["sync", "--rebuild", "--address", "http://127.0.0.1:9"])
    assert out.exit_code == 0, out.output
    assert "imported into a new ledger" in out.output and "the old ledger is kept as" in out.output, out.output
    [aside] = tmp_path.glob("ledger.sqlite.before-rebuild-*Z")  # beside it: its -wal / -shm, when it had them
    assert aside.read_bytes() == damaged  # nothing lost: the old file, notes included, is kept as it was
    out = runner.invoke(app, ["list"])
    assert out.exit_code == 0 and "cli-run-a" in out.output and "0.410 [0.360, 0.460]" in out.output and "cli-run-b" in out.output


def test_another_programs_database_is_refused_and_left_alone(runs, tmp_path):
    import sqlite3

    path = tmp_path / "ledger.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE songs (title TEXT)")
    conn.close()
    before = path.read_bytes()
    for command in (["list"], ["sync", "--rebuild", "--address", "http://127.0.0.1:9"]):
        out = runner.invoke(app, command)
        assert out.exit_code == 2 and out.stderr.count("error:") == 1, out.output
        assert f"{path} is an SQLite database but not a hyperpod-rl ledger (its tables: songs)" in out.stderr, out.stderr
    assert path.read_bytes() == before and not list(tmp_path.glob("ledger.sqlite.before-rebuild-*"))


@pytest.mark.parametrize(
    "text", ['{"run_id": "cli-run-a", "status": ', '{"config": ' + "[" * 100_000 + "]" * 100_000 + "}"], ids=["cut-short", "nested-deep"]
)
def test_a_damaged_run_manifest_is_one_warning_line_naming_it(runs, text):
    """The run is shown from the ledger, with one warning naming the damaged file and the way
    back, exit code 0 (tests/cli/test_damaged_files.py: shown with warnings, as kubectl and git do)."""
    (_, rdir), _ = runs
    assert runner.invoke(app, ["list"]).exit_code == 0
    (rdir / "manifest.json").write_text(text)
    out = runner.invoke(app, ["show", "cli-run-a"])
    assert out.exit_code == 0 and out.stderr.count("warning:") == 1 and "error:" not in out.output, out.output
    assert "Traceback" not in out.output and "run cli-run-a" in out.stdout, out.output
    said = " ".join(out.stderr.split())
    assert f"run manifest '{rdir / 'manifest.json'}'" in said and f"mv {rdir / 'manifest.json'} {rdir / 'manifest.json'}.damaged" in said, (
        said
    )
    assert "nothing is deleted" in said and "--fresh" not in said, said


def test_a_damaged_dataset_record_is_one_error_naming_it(tiny_setup, tmp_path):
    from hyperpod_rl.errors import ConfigError
    from hyperpod_rl.quickstart import prepare_dataset

    first = prepare_dataset(tiny_setup["opts"], tmp_path)
    record = first.train.parent / "dataset.json"
    record.write_text('{"hashes": {"train": ')
    with pytest.raises(
        ConfigError,
        match=rf"the quickstart's data: dataset record '{record}' is not valid JSON at line 1, column \d+: move the folder aside \(mv {first.train.parent} ",
    ):
        prepare_dataset(tiny_setup["opts"], tmp_path)
