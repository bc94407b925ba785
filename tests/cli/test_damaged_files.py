"""A damaged file of a run, an adapter or a checkpoint is named with a way back that deletes nothing.

New-user report: ``hyperpod-rl serve ask <run>`` on a run whose ``config.json`` was damaged said
"run file '.../config.json' is not valid JSON ...: restore it or delete it"; deleting loses the run's
config, and the other loaders said the same kind of thing ("delete it and resubmit with --fresh",
"delete <checkpoint> ... or resubmit with --fresh", "delete the folder ..."), where ``--fresh``
deletes the run's checkpoints, metrics and adapter. Now each message names the damaged file and
says how to recover without deleting: move it aside (``mv F F.damaged``, where no reader and no
clean-up looks) and get what it held from where the run keeps it too (the provenance record holds
the config), or from the command that writes it (``quickstart --resume`` evaluates again, a
resubmission resumes from the checkpoints and exports the adapter again). The advice is followed
here where it can be without a cluster: the config comes back from the provenance record.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hyperpod_rl.cli import app
from hyperpod_rl.config.run import RunConfig
from hyperpod_rl.errors import CheckpointError
from hyperpod_rl.runs import add_submission, read_config, read_json, run_paths, update_provenance, write_json

runner = CliRunner()
RUN = "damaged-run"


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A data dir holding :data:`RUN` as its trainer leaves it: config.json, its job, a provenance
    record holding the config, and two checkpoints."""
    monkeypatch.setenv("HYPERPOD_RL_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("HYPERPOD_RL_LEDGER", raising=False)
    monkeypatch.delenv("HYPERPOD_RL_STORAGE", raising=False)
    paths = run_paths(RUN)
    config = RunConfig.build({"run_id": RUN, "data": {"train_path": "/d/train.parquet", "heldout_path": "/d/heldout.parquet"}})
    write_json(paths.config, config.model_dump(mode="json"))
    add_submission(paths, f"hprl-{RUN}-1")
    update_provenance(paths.root, lambda _: {"run_id": RUN, "status": "succeeded", "config": config.model_dump(mode="json")})
    for step in (1, 2):
        (paths.checkpoints / f"step_{step:06d}").mkdir(parents=True)
    return tmp_path / "home"


def _damage(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"cut short": ')


def _assert_nothing_deleted(said: str, path: Path, *, aside: bool = True) -> None:
    said = " ".join(said.split())
    assert str(path) in said, said
    assert not re.search(r"\bdelete\b", said) and "--fresh" not in said, said  # "nothing is deleted" is fine
    if aside:
        assert f"mv {path} {path}.damaged; nothing is deleted" in said, said


def test_serve_ask_on_a_damaged_config_json_says_how_to_get_it_back(home: Path) -> None:
    paths = run_paths(RUN)
    good = paths.config.read_text()
    _damage(paths.config)
    result = runner.invoke(app, ["serve", "ask", RUN])
    said = " ".join(result.output.split())
    assert result.exit_code == 2 and said.count("error:") == 1, said
    _assert_nothing_deleted(said, paths.config)
    assert f"the run's config is then read from its provenance record {paths.provenance}" in said, said
    paths.config.rename(f"{paths.config}.damaged")  # the advice, followed
    assert read_config(RUN).model_dump(mode="json") == RunConfig.build(__import__("json").loads(good)).model_dump(mode="json")
    assert Path(f"{paths.config}.damaged").is_file()


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("submissions.json", f'as a JSON list (["hprl-{RUN}-1", ...]; hyperpod-rl job list shows those the cluster knows)'),
        ("eval/adapter.json", "evaluating the run again writes it"),
        ("promotion.json", f"hyperpod-rl serve promote {RUN} decides again and writes it"),
        ("quickstart.json", f"hyperpod-rl quickstart --resume {RUN} --no-serve writes the quickstart's summary again"),
    ],
)
def test_each_damaged_run_file_names_its_own_way_back(name: str, words: str) -> None:
    path = run_paths(RUN).root / name
    _damage(path)
    with pytest.raises(CheckpointError) as caught:
        read_json(path)
    _assert_nothing_deleted(str(caught.value), path)
    assert words in " ".join(str(caught.value).split()), caught.value


def test_a_quickstarts_damaged_options_and_evaluations(home: Path) -> None:
    paths = run_paths(RUN)
    _damage(paths.quickstart_options)
    with pytest.raises(CheckpointError) as caught:
        read_json(paths.quickstart_options)
    said = " ".join(str(caught.value).split())
    _assert_nothing_deleted(said, paths.quickstart_options, aside=False)  # the resume needs it: fixed, not set aside
    assert f"fix its syntax, or restore it from a backup: it holds the options quickstart '{RUN}' started with" in said, said
    _damage(paths.eval_file("base"))
    with pytest.raises(CheckpointError) as caught:
        read_json(paths.eval_file("base"))
    assert f"hyperpod-rl quickstart --resume {RUN} evaluates again" in " ".join(str(caught.value).split())


def test_a_damaged_manifest_is_set_aside_not_deleted() -> None:
    from hyperpod_rl.runs import read_provenance

    paths = run_paths(RUN)
    _damage(paths.provenance)
    with pytest.raises(CheckpointError) as caught:
        read_provenance(paths.root)
    said = " ".join(str(caught.value).split())
    _assert_nothing_deleted(said, paths.provenance)
    assert f"resubmitting the run (hyperpod-rl job submit {paths.config}) resumes from its checkpoints" in said, said


def test_a_damaged_adapter_is_exported_again_from_the_newest_checkpoint(tmp_path: Path) -> None:
    from hyperpod_rl.model.adapter import read_adapter_provenance

    adapter = run_paths(RUN).adapter
    _damage(adapter / "provenance.json")
    with pytest.raises(CheckpointError) as caught:
        read_adapter_provenance(adapter)
    said = " ".join(str(caught.value).split())
    _assert_nothing_deleted(said, adapter)
    assert f"resubmit the run (hyperpod-rl job submit {run_paths(RUN).config})" in said, said
    assert "resumes from its newest checkpoint and exports the adapter again" in said, said
    # a quickstart's run is finished by its resume; a run with no checkpoint would train again, which is said
    write_json(run_paths(RUN).quickstart_options, {"run_id": RUN})
    for step in run_paths(RUN).checkpoints.iterdir():
        step.rename(tmp_path / step.name)
    with pytest.raises(CheckpointError) as caught:
        read_adapter_provenance(adapter)
    said = " ".join(str(caught.value).split())
    assert f"run {RUN} kept no checkpoint, so its adapter can only be trained again" in said, said
    assert f"hyperpod-rl quickstart --resume {RUN}" in said and f"move {run_paths(RUN).metrics} aside too" in said, said
    # a copy elsewhere (shared storage) is copied again
    copy = tmp_path / "fsx" / "maze-adapter"
    _damage(copy / "provenance.json")
    with pytest.raises(CheckpointError) as caught:
        read_adapter_provenance(copy)
    said = " ".join(str(caught.value).split())
    assert "copy it again from the run directory it came from" in said and f"mv {copy} {copy}.damaged" in said, said


@pytest.mark.parametrize("step", [2, 1])
def test_a_damaged_training_state_is_moved_out_of_checkpoints(step: int) -> None:
    from hyperpod_rl.train.reference import load_training_state

    paths = run_paths(RUN)
    checkpoint = paths.checkpoints / f"step_{step:06d}"
    _damage(checkpoint / "training_state.pt")
    with pytest.raises(CheckpointError) as caught:
        load_training_state(checkpoint / "training_state.pt")
    said = " ".join(str(caught.value).split())
    assert f"mv {checkpoint} {paths.root / checkpoint.name}.damaged; nothing is deleted" in said, said  # out of checkpoints/
    assert not re.search(r"\bdelete\b", said) and "--fresh" not in said, said
    if step == 2:
        assert "it resumes from the checkpoint before it, step_000001" in said, said
    else:
        assert f"the run trains from step 0 and writes {paths.metrics} anew (move that aside too to keep it)" in said, said


def test_no_loader_tells_to_delete() -> None:
    """Every string of the package's code (docstrings aside): none tells to delete a file or folder."""
    import ast

    package = Path(__file__).resolve().parents[2] / "hyperpod_rl"
    told = []
    for path in package.rglob("*.py"):
        tree = ast.parse(path.read_text())
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and node.body
            and isinstance(node.body[0], ast.Expr)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.JoinedStr):
                text = "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                text = node.value
            else:
                continue
            if re.search(r"\bdelete (it\b|the |\{)", str(text)):
                told.append(f"{path.relative_to(package)}:{node.lineno}: {text}")
    assert not told, told


def _export_adapter(paths: Any) -> Path:
    """A run's exported adapter as the trainer writes it (peft's two files and its provenance,
    with the weights' sha256), built by hand: a safetensors file of one float32 tensor."""
    import hashlib
    import json
    import struct

    header = json.dumps({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}).encode()
    weights = struct.pack("<Q", len(header)) + header + struct.pack("<2f", 0.5, -0.5)
    paths.adapter.mkdir(parents=True)
    (paths.adapter / "adapter_model.safetensors").write_bytes(weights)
    write_json(paths.adapter / "adapter_config.json", {"peft_type": "LORA", "r": 8, "lora_alpha": 16})
    write_json(paths.adapter / "provenance.json", {"run_id": RUN, "adapter_sha256": hashlib.sha256(weights).hexdigest()})
    return paths.adapter


def _show(*args: str) -> Any:
    return runner.invoke(app, ["runs", "show", RUN, *args], env={"COLUMNS": "200"})


def test_runs_show_warns_of_each_damaged_file_and_shows_the_rest() -> None:
    """New-user report: ``hyperpod-rl runs show <run>`` exited 0 saying nothing on a run whose
    ``config.json`` and adapter files were damaged; ``serve`` found them later. Now each damaged
    file gets one ``warning:`` line on standard error naming it and the way back (moved aside,
    never deleted), the run is shown all the same, and the exit code is 0, as ``kubectl get`` and
    ``git`` exit 0 on a result shown with warnings; a run with no damage shows no warning."""
    paths = run_paths(RUN)
    adapter = _export_adapter(paths)
    clean = _show()
    assert clean.exit_code == 0 and "warning" not in clean.output, clean.output
    _damage(paths.config)
    _damage(adapter / "adapter_config.json")
    weights = adapter / "adapter_model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-3])  # cut short
    result = _show()
    assert result.exit_code == 0, result.output
    assert f"run {RUN}" in result.stdout and "warning" not in result.stdout, result.stdout  # shown; warnings apart
    warnings = [" ".join(w.split()) for w in re.split(r"(?m)^warning: ", result.stderr)[1:]]
    assert len(warnings) == 3, result.stderr
    for damaged, said in zip((paths.config, adapter / "adapter_config.json", weights), warnings, strict=True):
        _assert_nothing_deleted(said, damaged, aside=False)
    assert f"mv {paths.config} {paths.config}.damaged; nothing is deleted" in warnings[0], warnings[0]
    assert "read from its provenance record" in warnings[0], warnings[0]
    assert "cut short" in warnings[2], warnings[2]
    for said in warnings[1:]:  # the adapter's own way back: set aside, exported again from the newest checkpoint
        assert f"mv {adapter} {adapter}.damaged; nothing is deleted" in said, said
        assert "resumes from its newest checkpoint and exports the adapter again" in said, said
    as_json = _show("--json")
    assert as_json.exit_code == 0 and as_json.stderr.count("warning:") == 3, as_json.output
    listed = __import__("json").loads(as_json.stdout)["damaged_files"]
    assert [d["path"] for d in listed] == [str(paths.config), str(adapter / "adapter_config.json"), str(weights)], listed


def test_runs_show_of_a_run_with_a_damaged_provenance_record_shows_the_ledgers() -> None:
    """A damaged ``manifest.json`` made ``runs show`` fail with nothing shown; the ledger's record
    of the run (from before the damage) is shown, with the warning. A run the ledger never read
    (every record of it damaged) cannot be shown: exit 2, after the warnings naming its files."""
    paths = run_paths(RUN)
    assert _show().exit_code == 0  # imported into the ledger
    _damage(paths.provenance)
    result = _show()
    assert result.exit_code == 0 and f"run {RUN}" in result.stdout, result.output
    assert result.stderr.count("warning:") == 1, result.stderr
    _assert_nothing_deleted(result.stderr, paths.provenance)
    other = run_paths("never-read")
    _damage(other.config)
    result = runner.invoke(app, ["runs", "show", "never-read"], env={"COLUMNS": "200"})
    assert result.exit_code == 2 and result.stderr.count("warning:") == 1 and result.stderr.count("error:") == 1, result.output
    _assert_nothing_deleted(result.stderr, other.config, aside=False)


def test_runs_list_and_job_status_say_it_too() -> None:
    """The other commands that answer about the run without reading its files: ``runs list``
    names each listed run with a damaged file (and a run directory the ledger could not read at
    all), ``job status`` warns as ``runs show`` does; both keep their exit codes."""
    paths = run_paths(RUN)
    _damage(paths.config)
    unread = run_paths("never-read")
    _damage(unread.config)
    listed = runner.invoke(app, ["runs", "list"], env={"COLUMNS": "200"})
    said = " ".join(listed.stderr.split())
    assert listed.exit_code == 0, listed.output
    assert f"warning: run {RUN}: damaged config.json: hyperpod-rl runs show {RUN} says the way back for each" in said, said
    assert "warning: run never-read (not listed: the ledger could not read it): damaged config.json" in said, said
    status = runner.invoke(app, ["job", "status", RUN], env={"COLUMNS": "200"})
    assert status.exit_code == 0 and "SUCCEEDED" in status.stdout, status.output
    assert status.stderr.count("warning:") == 1, status.stderr
    _assert_nothing_deleted(status.stderr, paths.config)
