"""Bad files given to any command: one ``error:`` line, exit 2, never a traceback (issue 32 items 1, 2, 5).

Field report (new-user trial): a YAML with a Latin-1 "é" in a comment ended ``plan --config``,
``job submit`` and ``cluster validate`` with a ``UnicodeDecodeError`` traceback; ``tasks sample
--out`` at an existing file or an impossible path ended with a traceback; an empty
``--model-path`` folder got a ✓ before it failed. Every command that reads a user file is given a
non-UTF-8 one here, and every output option a path it cannot write.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hyperpod_rl.cli import app
from hyperpod_rl.cli._common import ERROR_PREFIX

runner = CliRunner()

#: A comment with a Latin-1 "é" (byte 0xe9), as an editor set to Latin-1 saves it.
LATIN1_YAML = "# réglages du cluster\nrun_id: x\n".encode("latin-1")


def _one_error(args: list[str], *, words: tuple[str, ...]) -> str:
    result = runner.invoke(app, args, env={"COLUMNS": "300"})
    assert result.exit_code == 2, (args, result.output, result.exception)
    assert result.stderr.startswith(f"{ERROR_PREFIX} ") and result.output.count(ERROR_PREFIX) == 1, (args, result.output)
    assert "Traceback" not in result.output and not isinstance(result.exception, UnicodeDecodeError), args
    assert "✓" not in result.output, (args, result.output)
    for word in words:
        assert word in result.stderr, (args, word, result.stderr)
    return result.stderr


def _latin1_file(tmp_path: Path, name: str = "bad.yaml") -> Path:
    path = tmp_path / name
    path.write_bytes(LATIN1_YAML)
    return path


def _latin1_model_dir(tmp_path: Path) -> Path:
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_bytes(b'{"model_type": "qwen3_vl", "_name_or_path": "caf\xe9"}')
    (model / "model.safetensors").write_bytes(b"\0" * 16)
    return model


#: command -> the arguments that make it read a non-UTF-8 file (``{f}``: a Latin-1 YAML/JSON file,
#: ``{model}``: a model folder whose config.json is Latin-1, ``{out}``: a fresh folder).
READERS = {
    "plan --config": ["plan", "--config", "{f}"],
    "job submit": ["job", "submit", "{f}"],
    "cluster validate": ["cluster", "validate", "{f}"],
    "cluster render --spec": ["cluster", "render", "--spec", "{f}"],
    "cluster render --from-manifest": ["cluster", "render", "--from-manifest", "{f}"],
    "cluster apply --spec": ["cluster", "apply", "--spec", "{f}"],
    "cluster apply --from-manifest": ["cluster", "apply", "--from-manifest", "{f}"],
    "maze build --spec": ["maze", "build", "--spec", "{f}", "--out", "{out}"],
    "quickstart --model-path": ["quickstart", "--model-path", "{model}", "--no-serve"],
    "serve preflight --base": ["serve", "preflight", "{model}", "--base", "{model}"],
}


@pytest.mark.parametrize("command", sorted(READERS))
def test_a_file_that_is_not_utf8_is_one_error_line(command: str, tmp_path: Path) -> None:
    f, model = _latin1_file(tmp_path), _latin1_model_dir(tmp_path)
    args = [a.format(f=f, model=model, out=tmp_path / "out") for a in READERS[command]]
    err = _one_error(args, words=("not UTF-8", "save it as UTF-8"))
    assert str(f) in err or str(model) in err, err  # names the file


@pytest.mark.parametrize("command", [["tasks", "audit", "doc_read"], ["maze", "audit"]], ids=" ".join)
def test_a_reward_module_that_is_not_utf8_is_one_error_line(command: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "latin1_reward.py").write_bytes(b'LABEL = "r\xe9compense"\ndef score(row, completion, state):\n    return 0.0\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "latin1_reward", raising=False)
    _one_error([*command, "--reward-fn", "latin1_reward:score"], words=("latin1_reward", "cannot be imported", "utf-8"))


def test_the_cli_net_catches_a_decode_error_of_any_command(monkeypatch: pytest.MonkeyPatch) -> None:
    """A command that reads a file some other way still ends with one line (HprlGroup's net)."""
    import hyperpod_rl.cli.tasks as tasks_cli

    def broken_sources() -> dict[str, str]:
        return {"x": b"caf\xe9".decode("utf-8")}

    monkeypatch.setattr(tasks_cli, "task_sources", broken_sources)
    _one_error(["tasks", "list"], words=("not UTF-8", "save it as UTF-8"))


@pytest.mark.parametrize("where", ["existing-file", "under-a-file", "impossible"])
def test_tasks_sample_out_that_cannot_be_a_folder(where: str, tmp_path: Path) -> None:
    blocker = tmp_path / "taken.txt"
    blocker.write_text("keep me")
    out, words = {
        "existing-file": (blocker, ("is an existing file", "give a folder")),
        "under-a-file": (blocker / "samples", ("cannot write", "give a path you can write to")),
        "impossible": (Path("/proc/hprl-cannot-exist/samples"), ("cannot write", "/proc/hprl-cannot-exist")),  # root cannot either
    }[where]
    _one_error(["tasks", "sample", "doc_read", "--out", str(out), "--count", "1"], words=words)
    assert blocker.read_text() == "keep me"  # nothing lost


@pytest.mark.parametrize(
    "args",
    [
        ["maze", "build", "--out", "{file}", "--train", "4", "--heldout", "2"],
        ["maze", "build", "--out", "{file}/sub", "--train", "4", "--heldout", "2"],
        ["maze", "show", "--png", "{dir}"],
        ["maze", "show", "--png", "{file}/x.png"],
        ["cluster", "render", "--output", "{dir}"],
        ["cluster", "render", "--output", "{file}/rc.yaml"],
    ],
    ids=lambda a: " ".join(a),
)
def test_every_output_option_refuses_a_path_it_cannot_write(args: list[str], tmp_path: Path) -> None:
    file = tmp_path / "taken.txt"
    file.write_text("keep me")
    _one_error([a.format(file=file, dir=tmp_path) for a in args], words=(str(file) if "{file}" in " ".join(args) else str(tmp_path),))
    assert file.read_text() == "keep me"


def test_an_empty_model_path_folder_fails_before_any_step(tmp_path: Path) -> None:
    empty = tmp_path / "empty-model"
    empty.mkdir()
    err = _one_error(["quickstart", "--model-path", str(empty), "--no-serve"], words=("is an empty folder", "config.json"))
    assert "omit it for the embedded tiny model" in err


def test_a_model_path_without_weights_or_of_another_kind_is_refused(tmp_path: Path) -> None:
    model = tmp_path / "m"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"model_type": "qwen3_vl"}))
    _one_error(["quickstart", "--model-path", str(model), "--no-serve"], words=("has no weights",))
    (model / "config.json").write_text(json.dumps({"model_type": "llama"}))
    _one_error(["quickstart", "--model-path", str(model), "--no-serve"], words=("'llama'", "Qwen3-VL"))


# ---------------------------------------------------------------- untrusted YAML and JSON (issue 42 item 4)
def _bomb(levels: int = 9, fan: int = 9) -> str:
    """The "billion laughs": each anchor lists ``fan`` aliases of the one before (``fan ** levels`` values)."""
    lines = ["l0: &l0 [" + ", ".join(['"lol"'] * fan) + "]"]
    lines += [f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * fan) + "]" for i in range(1, levels + 1)]
    return "\n".join(lines) + "\n"


#: kind -> (file text, words of the error)
UNTRUSTED = {
    "alias bomb": (_bomb(), ("values with its aliases (*name) expanded", "refer to fewer anchors")),
    "wide alias fan-out": (
        "base: &b [" + ", ".join(str(i) for i in range(2000)) + "]\n" + "".join(f"k{i}: *b\n" for i in range(100)),
        ("more than 100000 values",),
    ),
    "alias inside its own anchor": ("run_id: &a [x, *a]\n", ("refers to itself through an alias",)),
    "flow nesting thousands deep": ("run_id: " + "[" * 100_000 + "]" * 100_000 + "\n", ("nests deeper than 64 levels", "flatten it")),
    "block nesting hundreds deep": (
        "".join(f"{'  ' * i}k{i}:\n" for i in range(300)) + "  " * 300 + "v: 1\n",
        ("nests deeper than 64 levels",),
    ),
    "deep through aliases": (
        "a: &a " + "[" * 40 + "1" + "]" * 40 + "\nb: &b [[[[[[[[[[[[[[[[[[[[[[[[[[[[[*a]]]]]]]]]]]]]]]]]]]]]]]]]]]]]\n",
        ("nests deeper than 64 levels with its aliases expanded",),
    ),
    "two mebibytes": ("run_id: x\n" + "# padding\n" * 210_000, ("bytes; the limit is 1048576 bytes",)),
}

YAML_READERS = [c for c in sorted(READERS) if "{f}" in READERS[c] and not READERS[c][0] == "maze"]


@pytest.mark.parametrize("kind", sorted(UNTRUSTED))
@pytest.mark.parametrize("command", YAML_READERS)
def test_untrusted_yaml_is_refused_with_one_error_line(command: str, kind: str, tmp_path: Path) -> None:
    text, words = UNTRUSTED[kind]
    f = tmp_path / "untrusted.yaml"
    f.write_text(text)
    args = [a.format(f=f, model=tmp_path, out=tmp_path / "out") for a in READERS[command]]
    err = _one_error(args, words=words)
    assert str(f) in err, err


#: JSON readers: command -> arguments, ``{f}`` a JSON file, ``{model}`` a model folder whose config.json is ``{f}``'s text.
JSON_READERS = {
    "maze build --spec": ["maze", "build", "--spec", "{f}", "--out", "{out}"],
    "serve preflight --base": ["serve", "preflight", "{model}", "--base", "{model}"],
    "tasks sample --options": ["tasks", "sample", "maze", "--options", "@{f}", "--out", "{out}", "--count", "1"],
}


@pytest.mark.parametrize("command", sorted(JSON_READERS))
def test_json_nested_thousands_deep_is_refused_with_one_error_line(command: str, tmp_path: Path) -> None:
    deep = '{"seed": ' + "[" * 100_000 + "]" * 100_000 + "}"
    f = tmp_path / "deep.json"
    f.write_text(deep)
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(deep)
    (model / "model.safetensors").write_bytes(b"\0" * 16)
    args = [a.format(f=f, model=model, out=tmp_path / "out") for a in JSON_READERS[command]]
    args = [deep if a == f"@{f}" else a for a in args]  # --options takes the text itself
    _one_error(args, words=("nests deeper than 64 levels",))


def test_the_loader_stays_within_a_small_memory_limit_on_a_bomb(tmp_path: Path) -> None:
    """Bounded in memory: the loader, under a 1 GiB address-space limit, refuses a bomb that
    expands to 9**12 (2.8e11) values; expanding it would need terabytes."""
    import subprocess

    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(_bomb(levels=12))
    code = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))\n"
        "from hyperpod_rl.base import load_user_data\n"
        "from hyperpod_rl.errors import ConfigError\n"
        "try:\n    load_user_data(sys.argv[1], 'run config file')\n"
        "except ConfigError as err:\n    print(err)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(bomb)], capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "holds more than 100000 values with its aliases (*name) expanded at line" in proc.stdout, proc.stdout


# ---------------------------------------------------------------- files that are not what they claim (issue 42 item 3)
#: kind -> (config.json bytes, words of the error)
NOT_A_CONFIG = {
    "not JSON": (b"{'model_type': 'qwen3_vl'}", ("is not valid JSON at line 1, column 2",)),
    "a JSON list": (b'["qwen3_vl"]', ("holds a JSON list, not an object",)),
    "binary": (bytes(range(256)) * 4, ("is not UTF-8 text",)),
    "a number json refuses": (b'{"model_type": "qwen3_vl", "n": ' + b"9" * 5000 + b"}", ("holds a number of more than 4300 digits",)),
}


@pytest.mark.parametrize("kind", sorted(NOT_A_CONFIG))
@pytest.mark.parametrize("command", ["quickstart --model-path", "serve preflight --base"])
def test_a_model_whose_config_json_is_not_what_it_claims_is_one_error_naming_it(command: str, kind: str, tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_bytes(NOT_A_CONFIG[kind][0])
    (model / "model.safetensors").write_bytes(b"\0" * 16)
    args = [a.format(f=tmp_path / "none", model=model, out=tmp_path / "out") for a in READERS[command]]
    err = _one_error(args, words=NOT_A_CONFIG[kind][1])
    assert str(model / "config.json") in err, err


@pytest.mark.parametrize("kind", sorted(NOT_A_CONFIG))
def test_plan_of_a_run_whose_model_config_is_not_what_it_claims(kind: str, tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_bytes(NOT_A_CONFIG[kind][0])
    run = tmp_path / "run.yaml"
    run.write_text(f"run_id: bad-model\nmodel: {{path: {model}}}\ndata: {{train_path: /d/t.parquet, heldout_path: /d/h.parquet}}\n")
    err = _one_error(["plan", "--config", str(run)], words=NOT_A_CONFIG[kind][1])
    assert str(model / "config.json") in err, err


def test_the_job_with_a_model_whose_config_json_is_not_json_ends_with_one_error_line(tiny_setup, tmp_path: Path) -> None:
    """The trainer (a Ray job's entry point) given a model folder whose config.json is damaged."""
    import os
    import shutil
    import subprocess

    from hyperpod_rl.quickstart import make_run_config
    from hyperpod_rl.runs import RunPaths, write_config

    model = tmp_path / "model"
    shutil.copytree(tiny_setup["model_dir"], model)
    (model / "config.json").write_text('{"model_type": "qwen3_vl", "text_config": {')  # cut short, as an interrupted copy leaves it
    cfg = make_run_config(tiny_setup["opts"], run_id="bad-model-job", model_path=model, revision=None, data=tiny_setup["data"])
    run_dir = tmp_path / cfg.run_id
    write_config(RunPaths(run_dir), cfg)
    repo = Path(__file__).resolve().parents[2]
    proc = subprocess.run(
        [sys.executable, "-m", "hyperpod_rl.train", "--config", str(run_dir / "config.json")],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(repo)},
        cwd=repo,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and str(model / "config.json") in errors[0] and "is not valid JSON at line 1" in errors[0], proc.stderr[-3000:]
