"""Job entrypoint: ``python -m hyperpod_rl.train --config <run dir>/config.json [--backend reference|skyrl]``."""

from __future__ import annotations

from pathlib import Path

import typer

app = typer.Typer(add_completion=False, help="Train one run (the Ray Job entrypoint).")


def check_config_hash(config_path: str, expected: str | None) -> None:
    """Refuse to train when ``config.json`` is not the config that was submitted.

    Raises:
        ConfigError: its hash differs from ``expected`` (the config changed after submission).
    """
    if not expected:
        return
    from hyperpod_rl.errors import ConfigError
    from hyperpod_rl.runs import RunPaths, read_config

    config = read_config(RunPaths(Path(config_path).resolve().parent))
    if config.config_hash() != expected:
        raise ConfigError(
            f"{config_path} has config hash {config.config_hash()}, but this job was submitted with {expected}: "
            "the run's config changed after submission; resubmit the run"
        )


def _stage(config_path: str) -> str:
    from hyperpod_rl.runs import RunPaths, read_config

    return read_config(RunPaths(Path(config_path).resolve().parent)).stage


@app.command()
def main(
    config: str = typer.Option(..., help="path of the run's config.json (in its run directory)"),
    backend: str = typer.Option("reference", help="training backend: 'reference' (CPU / one GPU) or 'skyrl'"),
    fresh: bool = typer.Option(False, help="discard this run's checkpoints and start from step 0"),
    config_hash: str | None = typer.Option(None, help="the config hash the job was submitted with (checked before training)"),
) -> None:
    if backend not in ("reference", "skyrl"):
        raise typer.BadParameter(f"unknown backend {backend!r}: use 'reference' or 'skyrl'", param_hint="--backend")
    check_config_hash(config, config_hash)
    if backend == "skyrl" and _stage(config) == "sft":
        from hyperpod_rl.train.skyrl_sft import main as run_skyrl_sft

        run_skyrl_sft(config, fresh=fresh)
        return
    if backend == "skyrl":
        from hyperpod_rl.train.skyrl_backend import main as run_skyrl

        run_skyrl(config, fresh=fresh)
        return
    from hyperpod_rl.train.workers import main as run

    run(config, fresh=fresh)


def run() -> None:
    """Run :data:`app`; a project error that ends the job is printed as one ``error: <message>``
    line on standard error (the end of the job log, and of Ray's message for a failed job)
    instead of a traceback, with exit code 1. So is a storage failure (an ``OSError`` naming a
    file: a read-only, full or forbidden run directory), with its path and the fix
    (:func:`hyperpod_rl.errors.storage_error`). Other exceptions keep their traceback."""
    import sys

    from hyperpod_rl.errors import HyperpodRLError, storage_error

    try:
        app()
    except HyperpodRLError as err:
        print(f"error: {err}", file=sys.stderr, flush=True)
        sys.exit(1)
    except OSError as err:
        if err.filename is None:
            raise
        print(f"error: {storage_error(err)}", file=sys.stderr, flush=True)
        sys.exit(1)


if __name__ == "__main__":
    run()
