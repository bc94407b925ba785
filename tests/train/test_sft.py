"""The SFT stage on the reference backend (issue 29 items 1-2): same rollout format as GRPO, learning,
metrics, exact resume, provenance, and GRPO from the SFT adapter with its base revision checked."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from hyperpod_rl.config.run import RunConfig
from hyperpod_rl.errors import ConfigError
from hyperpod_rl.metrics import read_metrics
from hyperpod_rl.model.rollout import play_episodes
from hyperpod_rl.quickstart import make_run_config
from hyperpod_rl.train.reference import ReferenceTrainer
from hyperpod_rl.train.sft import SFTTrainer, demo_action, demonstration_episode

SFT_NAMES = {"sft/loss", "sft/target_prob", "sft/grad_norm", "sft/lr", "sft/num_tokens", "sft/tokens_per_second", "timing/step"}


def _config(setup, run_id: str, *, stage: str = "sft", steps: int = 3, **model):
    cfg = make_run_config(setup["opts"], run_id=run_id, model_path=setup["model_dir"], revision=setup["revision"], data=setup["data"])
    data = cfg.model_dump(mode="json")
    data.update(stage=stage)
    data["model"].update(model)
    data["trainer"].update(steps=steps, eval_rows=4)
    data["checkpoint"].update(interval=1, keep=3)
    if stage == "sft":
        data["sft"] = {"rows_per_step": 4}
    return type(cfg).build(data)


@pytest.fixture(scope="module")
def sft_run(tiny_setup, tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("sft") / "runs" / "sft-a"
    cfg = _config(tiny_setup, "sft-a")
    adapter = SFTTrainer(cfg, run_dir).train()
    return cfg, run_dir, adapter


def test_the_job_entrypoint_trains_an_sft_run_with_the_sft_trainer(tiny_setup, tmp_path):
    """Reported: the job's entrypoint (``python -m hyperpod_rl.train`` -> ``train.workers.main``) trained
    every reference run with GRPO, so a ``stage: sft`` job wrote GRPO metrics at ``grpo.lr``."""
    from hyperpod_rl.train.workers import main

    cfg = _config(tiny_setup, "sft-entry", steps=1)
    run_dir = tmp_path / "runs" / "sft-entry"
    run_dir.mkdir(parents=True)
    (run_dir / "config.json").write_text(cfg.model_dump_json())
    main(str(run_dir / "config.json"))
    (record,) = read_metrics(run_dir / "metrics.jsonl")
    assert SFT_NAMES <= set(record.values) and record.values["sft/lr"] == cfg.sft.lr, sorted(record.values)
    assert not any(k.startswith(("reward/", "policy/")) for k in record.values), sorted(record.values)


def test_demonstration_turns_are_grpo_rollout_turns(sft_run):
    """A demonstration is played by the GRPO rollout code: same first context, same response tokens and loss mask as act()."""
    cfg, run_dir, _ = sft_run
    trainer = SFTTrainer(cfg, run_dir)
    trainer._build()
    row = next(r for i, r in enumerate(trainer.rows) if trainer._demo(i) is not None)
    episode = demonstration_episode(trainer.policy, trainer.task, row, max_turns=cfg.rollout.max_turns)
    assert episode is not None and episode.turns and episode.turns[-1].metadata["solved"]
    (rollout,) = play_episodes(trainer.policy, [row], greedy=True, max_turns=1)
    assert episode.turns[0].context == rollout.turns[0].context  # system + the row's first image, as GRPO sees it
    acted = rollout.turns[0].action
    demo = demo_action(trainer.policy, acted.text)
    assert (demo.response_ids, demo.loss_mask, demo.text) == (acted.response_ids, acted.loss_mask, acted.text)
    for t in episode.turns[1:]:  # later observations come from the env: a new image each turn
        assert t.context != episode.turns[0].context


def test_sft_metrics_checkpoints_and_provenance(sft_run, tiny_setup):
    cfg, run_dir, adapter = sft_run
    records = list(read_metrics(run_dir / "metrics.jsonl"))
    assert [r.step for r in records] == [1, 2, 3]
    assert all(SFT_NAMES <= set(r.values) for r in records)
    assert all(r.values["sft/num_tokens"] >= cfg.sft.rows_per_step for r in records)  # every turn of every row
    assert sorted(p.name for p in (run_dir / "checkpoints").iterdir()) == ["step_000001", "step_000002"]
    prov = json.loads((adapter / "provenance.json").read_text())
    assert prov["stage"] == "sft" and prov["init_adapter"] is None
    assert [e["stage"] for e in prov["lineage"]] == ["base", "sft"]
    assert prov["lineage"][0]["revision"] == tiny_setup["revision"]
    assert prov["lineage"][1]["adapter_sha256"] == prov["adapter_sha256"]
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["stage"] == "sft" and manifest["status"] == "succeeded"


def test_an_sft_step_lowers_the_loss_of_its_batch(sft_run):
    """Learning, not only running: one SFT step gives the demonstrations it trained on a lower NLL."""
    cfg, run_dir, _ = sft_run
    trainer = SFTTrainer(cfg, run_dir)
    trainer._build()
    state = trainer.sampler.state()
    episodes, _ = trainer._draw()
    trainer.sampler.load(state)  # _step draws the same rows again
    turns = [t for ep in episodes for t in ep.turns]
    ctx, resp, masks = [t.context for t in turns], [t.action.response_ids for t in turns], [t.action.loss_mask for t in turns]

    def nll() -> float:
        with torch.no_grad():
            scored = trainer.policy.score(ctx, resp, masks, [[i] for i in range(len(turns))])
            return float(-(scored.logprobs * scored.loss_mask).sum() / scored.loss_mask.sum())

    before = nll()
    record = trainer._step()
    assert record.values["sft/loss"] == pytest.approx(before, rel=1e-4)  # the metric is the batch's NLL before the update
    assert nll() < before - 0.01


def test_sft_resumes_exactly(sft_run, tmp_path):
    cfg, run_dir, _ = sft_run
    again = tmp_path / "runs" / "sft-a"
    shutil.copytree(run_dir, again)
    shutil.rmtree(again / "adapter")
    shutil.rmtree(again / "checkpoints" / "step_000002")
    SFTTrainer(cfg, again).train()  # resumes from step 1
    first = [r.values for r in read_metrics(run_dir / "metrics.jsonl")]
    second = [r.values for r in read_metrics(again / "metrics.jsonl")]
    for a, b in zip(first, second, strict=True):
        assert {k: v for k, v in a.items() if "second" not in k and "timing" not in k} == pytest.approx(
            {k: v for k, v in b.items() if "second" not in k and "timing" not in k}
        )


def test_grpo_starts_from_the_sft_adapter_and_records_the_chain(sft_run, tiny_setup, tmp_path):
    from peft import get_peft_model_state_dict
    from safetensors.torch import load_file

    _, _, sft_adapter = sft_run
    cfg = _config(tiny_setup, "grpo-from-sft", stage="grpo", steps=1, init_adapter=str(sft_adapter))
    trainer = ReferenceTrainer(cfg, tmp_path / "runs" / "grpo-from-sft")
    trainer._build()
    start = get_peft_model_state_dict(trainer.model)
    saved = load_file(str(sft_adapter / "adapter_model.safetensors"))
    assert set(start) == set(saved) and all(torch.equal(start[k], saved[k]) for k in saved)
    adapter = ReferenceTrainer(cfg, tmp_path / "runs" / "grpo-from-sft").train()
    prov = json.loads((adapter / "provenance.json").read_text())
    assert [e["stage"] for e in prov["lineage"]] == ["base", "sft", "grpo"]
    assert [e.get("run_id") for e in prov["lineage"][1:]] == ["sft-a", "grpo-from-sft"]
    assert prov["init_adapter"]["run_id"] == "sft-a" and prov["init_adapter"]["stage"] == "sft"


def test_an_adapter_of_another_base_revision_is_refused_with_the_fix(sft_run, tiny_setup):
    from hyperpod_rl.config.sections import LoRAConfig
    from hyperpod_rl.train.init_adapter import check_init_adapter

    _, _, sft_adapter = sft_run
    with pytest.raises(ConfigError, match=r"trained on base model revision .*, but model.revision is 0000: start from an adapter trained"):
        _config(tiny_setup, "grpo-wrong", stage="grpo", init_adapter=str(sft_adapter), revision="0000")
    with pytest.raises(ConfigError, match=r"this run's base model is revision ffff: set model.path to that adapter's base model"):
        check_init_adapter(sft_adapter, base_revision="ffff", lora=LoRAConfig(rank=tiny_setup["opts"].lora_rank))
    with pytest.raises(ConfigError, match=r"has LoRA rank 16, but lora.rank is 8: set lora.rank=16"):
        check_init_adapter(sft_adapter, base_revision=tiny_setup["revision"], lora=LoRAConfig(rank=8))
    with pytest.raises(ConfigError, match="is not an adapter directory"):
        _config(tiny_setup, "grpo-none", stage="grpo", init_adapter=str(sft_adapter.parent / "nowhere"))


def test_grpo_from_the_sft_adapter_takes_its_own_validation_chosen_defaults(sft_run, tiny_setup):
    from hyperpod_rl.quickstart import QuickstartOptions, make_run_config

    _, _, sft_adapter = sft_run
    args = {"model_path": tiny_setup["model_dir"], "revision": tiny_setup["revision"], "data": tiny_setup["data"]}
    opts = tiny_setup["opts"]
    base = make_run_config(opts, run_id="qsb", **args).grpo
    warm = make_run_config(opts, run_id="qsw", init_adapter=sft_adapter, **args).grpo
    assert (base.lr, base.entropy_coef, warm.lr, warm.entropy_coef) == (5e-4, 0.01, 1e-4, 0.0)
    mine = QuickstartOptions.build(**{**opts.model_dump(), "lr": 3e-4, "entropy_coef": 0.02})
    chosen = make_run_config(mine, run_id="qsw", init_adapter=sft_adapter, **args).grpo
    assert (chosen.lr, chosen.entropy_coef) == (3e-4, 0.02)  # a user's setting wins over both defaults


def _full(setup, run_id: str, *, steps: int = 2, **over):
    data = _config(setup, run_id, steps=steps).model_dump(mode="json")
    data["sft"].update(parameters="full", lr=1e-3)
    for key, value in over.items():
        section, _, name = key.partition(".")
        data[section][name] = value
    return RunConfig.build(data)


def test_full_parameter_sft_trains_every_base_weight_and_exports_a_model_directory(tiny_setup, tmp_path):
    """``sft.parameters='full'``: every base weight moves (not only an adapter), checkpoints hold the
    weights as ``model.safetensors``, and the result is a model directory that loads as a base model."""
    from safetensors.torch import load_file

    from hyperpod_rl.model.loading import load_base_model, revision_of

    cfg = _full(tiny_setup, "sft-full")
    trainer = SFTTrainer(cfg, tmp_path / "runs" / "sft-full")
    out = trainer.train()
    assert out == tmp_path / "runs" / "sft-full" / "model" and not (out.parent / "adapter").exists()
    (ckpt,) = sorted((out.parent / "checkpoints").glob("step_*"))
    saved = load_file(str(ckpt / "model.safetensors"))
    assert saved and not any("lora_" in k for k in saved), sorted(saved)[:5]
    base, _, _ = load_base_model(tiny_setup["model_dir"])
    tuned, processor, _ = load_base_model(out)
    moved = [n for n, p in tuned.state_dict().items() if not torch.equal(p, base.state_dict()[n])]
    assert len(moved) == len(base.state_dict()), f"{len(moved)} of {len(base.state_dict())} weights moved"
    assert processor.tokenizer.get_vocab() == load_base_model(tiny_setup["model_dir"])[1].tokenizer.get_vocab()
    prov = json.loads((out / "provenance.json").read_text())
    assert prov["parameters"] == "full" and prov["steps"] == 2 and prov["base_model_revision"] == tiny_setup["revision"]
    record = json.loads((out.parent / "manifest.json").read_text())["adapter"]
    assert record == {"path": "model", "revision": revision_of(out), "steps": 2}, record
    assert SFTTrainer(cfg, out.parent).train() == out  # a finished run is not trained again


def test_full_parameter_sft_pauses_and_resumes_exactly(tiny_setup, tmp_path):
    """``train_until``'s hook pauses a run after a step (a checkpoint written there); resuming gives the
    weights of the run that never paused."""
    from safetensors.torch import load_file

    straight = SFTTrainer(_full(tiny_setup, "sft-full-a", **{"checkpoint.interval": 0}), tmp_path / "a").train()
    seen: list[int] = []
    paused = SFTTrainer(_full(tiny_setup, "sft-full-b", **{"checkpoint.interval": 0}), tmp_path / "b")
    assert paused.train_until(lambda t: seen.append(t.step) or True) is None
    assert seen == [1] and [p.name for p in (tmp_path / "b" / "checkpoints").iterdir()] == ["step_000001"]
    resumed = SFTTrainer(_full(tiny_setup, "sft-full-b", **{"checkpoint.interval": 0}), tmp_path / "b").train()

    def weights(d):
        return {k: v for f in sorted(d.glob("*.safetensors")) for k, v in load_file(str(f)).items()}

    a, b = weights(straight), weights(resumed)
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize(
    ("over", "says"),
    [
        ({"trainer.dtype": "bfloat16"}, "trainer.dtype='float32'"),
        ({"backend": "skyrl"}, "reference backend only"),
    ],
)
def test_full_parameter_sft_refuses_what_it_cannot_train(tiny_setup, over, says):
    data = _config(tiny_setup, "sft-full-bad").model_dump(mode="json")
    data["sft"]["parameters"] = "full"
    for key, value in over.items():
        section, _, name = key.partition(".")
        if name:
            data[section][name] = value
        else:
            data[section] = value
    with pytest.raises(ConfigError, match=says):
        RunConfig.build(data)


def test_full_parameter_sft_refuses_a_starting_adapter(sft_run, tiny_setup):
    _, _, adapter = sft_run
    data = _config(tiny_setup, "sft-full-init", init_adapter=str(adapter)).model_dump(mode="json")
    data["sft"]["parameters"] = "full"
    with pytest.raises(ConfigError, match="leave model.init_adapter unset"):
        RunConfig.build(data)
