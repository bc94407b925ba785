"""benchmarks/serve_load.py's bad input and unreachable server: one ``error:`` line, no traceback.

Reported: ``python -m benchmarks.serve_load --endpoint http://127.0.0.1:1 ...`` (no server there)
ended in a Python traceback. No cluster is needed: nothing listens on port 1.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from benchmarks import serve_load
from hyperpod_rl.cli import app


@pytest.fixture(scope="module")
def heldout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("serve-load")
    result = CliRunner().invoke(app, ["tasks", "sample", "maze", "--out", str(out), "--split", "heldout", "--count", "1"])
    assert result.exit_code == 0, result.output
    return out / "heldout.parquet"


def _run(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    monkeypatch.setattr(sys, "argv", ["serve_load.py", *args])
    try:
        code = serve_load.main()
    except SystemExit as stop:
        code = int(stop.code or 0)
    captured = capsys.readouterr()
    assert captured.out == ""  # nothing was measured
    return code, captured.err


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (
            ["--endpoint", "http://127.0.0.1:1"],
            1,
            "error: cannot reach http://127.0.0.1:1: ConnectionError; is the server up? Serve the run: hyperpod-rl serve up RUN_ID",
        ),
        (
            ["--endpoint", "127.0.0.1:8000"],
            2,
            "error: --endpoint 127.0.0.1:8000 is not an http(s) URL: give the server's base URL, "
            "e.g. http://127.0.0.1:8000 (see: serve_load.py --help)",
        ),
        (
            ["--endpoint", "http://127.0.0.1:1", "--clients", "0"],
            2,
            "error: argument --clients: must be >= 1 (got 0) (see: serve_load.py --help)",
        ),
    ],
)
def test_one_error_line(monkeypatch, capsys, heldout, args, code, message) -> None:
    got, err = _run(monkeypatch, capsys, *args, "--heldout", str(heldout))
    assert (got, err) == (code, message + "\n")


def test_a_missing_heldout_file_is_bad_input(monkeypatch, capsys, tmp_path) -> None:
    got, err = _run(monkeypatch, capsys, "--endpoint", "http://127.0.0.1:1", "--heldout", str(tmp_path / "none.parquet"))
    assert (got, err) == (
        2,
        f"error: dataset file {tmp_path / 'none.parquet'} does not exist: generate it first (hyperpod-rl tasks sample, or the quickstart)\n",
    )
