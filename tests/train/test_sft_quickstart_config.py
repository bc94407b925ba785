"""The quickstart's SFT warm start configs and ``job submit --from-run`` (issue 29 items 2-3), without a cluster."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from hyperpod_rl.cli import app
from hyperpod_rl.quickstart import QuickstartOptions, make_run_config, sft_run_id


def test_sft_and_grpo_configs_of_the_quickstart(tiny_setup, tmp_path):
    opts = QuickstartOptions.build(**{**tiny_setup["opts"].model_dump(), "sft_steps": 7, "sft_lr": 1e-3, "sft_rows_per_step": 5})
    args = {"model_path": tiny_setup["model_dir"], "revision": tiny_setup["revision"], "data": tiny_setup["data"]}
    sft = make_run_config(opts, run_id=sft_run_id("qsx"), stage="sft", **args)
    assert (sft.run_id, sft.stage, sft.trainer.steps, sft.sft.lr, sft.sft.rows_per_step) == ("qsx-sft", "sft", 7, 1e-3, 5)
    grpo = make_run_config(opts, run_id="qsx", **args)
    assert grpo.stage == "grpo" and grpo.model.init_adapter is None and grpo.trainer.steps == opts.steps
    # a GRPO config without the SFT fields hashes as before they existed
    legacy = grpo.model_dump(mode="json", exclude={"stage": True, "sft": True, "model": {"init_adapter"}})
    assert "stage" not in legacy and grpo.config_hash() == type(grpo).build(legacy).config_hash()
    assert sft.config_hash() != make_run_config(opts, run_id="qsx-sft", **args).config_hash()


def test_sft_run_ids_fit_the_run_id_rule():
    from hyperpod_rl.runs import check_run_id

    check_run_id(sft_run_id("a" * 63))
    assert sft_run_id("quickstart-20261201-101010") == "quickstart-20261201-101010-sft"


def test_from_run_needs_a_finished_run(tmp_path, monkeypatch):
    monkeypatch.setenv("HYPERPOD_RL_STORAGE", str(tmp_path))
    cfg = tmp_path / "run.json"
    cfg.write_text(json.dumps({"run_id": "grpo-x", "data": {"train_path": "a", "heldout_path": "b"}}))
    (tmp_path / "runs" / "sft-x").mkdir(parents=True)  # a run that has not finished (an unknown one: tests/cli/test_unknown_run.py)
    result = CliRunner().invoke(app, ["job", "submit", str(cfg), "--from-run", "sft-x"])
    assert result.exit_code == 2
    assert "--from-run sft-x" in result.output and "holds no finished adapter" in result.output and "job status sft-x" in result.output


def test_the_tiny_models_sizes_are_options_and_a_bad_size_says_what_to_fix(tiny_setup, tmp_path):
    import pytest

    from hyperpod_rl.errors import ConfigError
    from hyperpod_rl.quickstart import prepare_base_model
    from hyperpod_rl.tasks.maze import read_rows

    with pytest.raises(ConfigError, match=r"tiny_hidden_size(.|\n)*multiple of 32"):
        QuickstartOptions.build(tiny_hidden_size=100)
    with pytest.raises(ConfigError, match="cell_px is the maze's cell size"):
        QuickstartOptions.build(task="doc_read", cell_px=40)
    sizes = {"tiny_hidden_size": 64, "tiny_layers": 1, "tiny_vision_hidden_size": 32, "tiny_vision_depth": 3}
    opts = QuickstartOptions.build(**{**tiny_setup["opts"].model_dump(), **sizes})
    model_dir, revision = prepare_base_model(opts, tmp_path, read_rows(tiny_setup["data"].train))
    config = json.loads((model_dir / "config.json").read_text())
    text, vision = config["text_config"], config["vision_config"]
    assert (text["hidden_size"], text["num_hidden_layers"], vision["hidden_size"], vision["depth"]) == (64, 1, 32, 3)
    assert revision != tiny_setup["revision"]  # the default sizes (128, 2) are another base model
    assert "--tiny-hidden-size" in CliRunner().invoke(app, ["quickstart", "--help"], terminal_width=200).output


def test_the_mazes_cell_size_is_an_option_of_the_quickstarts_data(tmp_path):
    from hyperpod_rl.quickstart import prepare_dataset
    from hyperpod_rl.tasks.maze import read_rows

    sizes = {}
    for px in (30, 48):
        data = prepare_dataset(QuickstartOptions.build(train_rows=8, heldout_rows=4, cell_px=px), tmp_path)
        sizes[px] = {json.loads(row["render_style"])["cell_px"] for row in read_rows(data.train)}
    assert sizes == {30: {30}, 48: {48}}  # two datasets, one per cell size


def test_infinite_or_nan_numbers_are_refused_in_quickstart_options_and_run_configs(tiny_setup):
    """Reported: ``--lr inf`` was accepted and the job then crashed inside torch."""
    import pytest

    from hyperpod_rl.config.run import RunConfig
    from hyperpod_rl.errors import ConfigError

    for field in ("lr", "sft_lr", "entropy_coef", "gamma"):
        with pytest.raises(ConfigError, match=rf"{field}: give a finite number, not inf or nan"):
            QuickstartOptions.build(**{field: float("inf")})
    args = {"model_path": tiny_setup["model_dir"], "revision": tiny_setup["revision"], "data": tiny_setup["data"]}
    raw = make_run_config(tiny_setup["opts"], run_id="qsinf", **args).model_dump(mode="json")
    for section, field in (("grpo", "lr"), ("grpo", "entropy_coef"), ("sft", "lr")):
        bad = {**raw, section: {**raw[section], field: float("inf")}}
        with pytest.raises(ConfigError, match=rf"{section}\.{field}: give a finite number"):
            RunConfig.build(bad)
