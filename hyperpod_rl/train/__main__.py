"""Job entrypoint: ``python -m hyperpod_rl.train --config <run dir>/config.json [--backend reference|skyrl]``."""

from __future__ import annotations

import typer

app = typer.Typer(add_completion=False, help="Train one run (the Ray Job entrypoint).")


@app.command()
def main(
    config: str = typer.Option(..., help="path of the run's config.json (in its run directory)"),
    backend: str = typer.Option("reference", help="training backend: 'reference' (CPU / one GPU) or 'skyrl'"),
    fresh: bool = typer.Option(False, help="discard this run's checkpoints and start from step 0"),
) -> None:
    if backend == "skyrl":
        from hyperpod_rl.train.skyrl_backend import main as run_skyrl

        run_skyrl(config, fresh=fresh)
        return
    if backend != "reference":
        raise typer.BadParameter(f"unknown backend {backend!r}: use 'reference' or 'skyrl'", param_hint="--backend")
    from hyperpod_rl.train.reference import main as run

    run(config, fresh=fresh)


if __name__ == "__main__":
    app()
