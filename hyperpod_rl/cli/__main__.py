"""``python -m hyperpod_rl.cli`` = ``hyperpod-rl``."""

from hyperpod_rl.cli import app

app()
