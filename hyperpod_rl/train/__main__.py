"""Job entrypoint: ``python -m hyperpod_rl.train --config <run dir>/config.json [--backend reference]``."""

from __future__ import annotations

import typer

app = typer.Typer(add_completion=False, help="Train one run (the Ray Job entrypoint).")


@app.command()
def main(
    config: str = typer.Option(..., help="path of the run's config.json (in its run directory)"),
    backend: str = typer.Option("reference", help="training backend: 'reference' (CPU / one GPU) or 'skyrl'"),
    fresh: bool = typer.Option(False, help="discard this run's checkpoints and start from step 0"),
) -> None:
    if backend != "reference":
        raise typer.BadParameter(f"backend {backend!r} is not available in this build: use 'reference'", param_hint="--backend")
    from hyperpod_rl.train.reference import main as run

    run(config, fresh=fresh)


if __name__ == "__main__":
    app()
