"""Field report (new-user trial): transformers' progress bars ("Loading weights ...") leaked into
the CLI's and the jobs' output. Loading a base model prints no progress bar."""

from __future__ import annotations


def test_loading_a_base_model_prints_no_progress_bar(tiny_setup, capfd):
    from hyperpod_rl.model.loading import load_base_model

    capfd.readouterr()
    model, _, _ = load_base_model(tiny_setup["model_dir"])
    out, err = capfd.readouterr()
    assert model is not None
    assert "Loading weights" not in out + err and "it/s]" not in out + err, (out + err)[-2000:]
