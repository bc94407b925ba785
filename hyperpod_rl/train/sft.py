"""The SFT stage on the reference backend: LoRA cross-entropy on the task's own demonstrations.

``RunConfig.stage='sft'`` dispatches here (:func:`hyperpod_rl.train.reference.main`). An SFT run
is a reference run in every other respect: the same run directory, lock, base benchmark,
checkpoints (LoRA weights, AdamW state, RNG and sampler states, metrics offset; exact resume),
provenance and adapter export, inherited from :class:`~hyperpod_rl.train.reference.ReferenceTrainer`.
Only the step differs.

One step:

1. draw ``sft.rows_per_step`` train rows with a demonstration that reaches success (rows whose
   demonstration does not, e.g. a path longer than ``rollout.max_turns``, are skipped and counted);
2. replay each row's demonstration (:func:`hyperpod_rl.tasks.demonstrations.demonstration_of`)
   through :func:`~hyperpod_rl.model.rollout.play_episodes`, the GRPO rollout itself, with a
   scripted policy that answers the demonstration's completions: every SFT example is a
   (context, response) pair exactly as a GRPO rollout turn is (chat format, the env's image after
   each move, the answer envelope tokenized as the policy's ``act`` does);
3. loss = mean negative log-likelihood of the response's sampled tokens (the loss mask GRPO uses)
   under :meth:`~hyperpod_rl.model.policy.MazePolicy.score` at temperature 1: with
   ``rollout.action_constraint='directions'`` that is the softmax over the task's answer words,
   the distribution constrained decoding samples from; with ``'none'`` the whole vocabulary
   without vision tokens; then gradient clipping and AdamW at ``sft.lr``.

Why this loop and not TRL's ``SFTTrainer``: the loss must be taken over the same tokens and the
same (constrained) vocabulary the GRPO rollouts sample from, on conversations built by the same
env, or the warm start would teach a different distribution than GRPO continues; the scoring
path already does exactly that, with the device, dtype, checkpoint and provenance handling every
run shares. TRL would add a dependency (it is none now) and its own collation of Qwen-VL chats,
and would not know the constrained answer vocabulary.

Metrics (``metrics.jsonl``): ``sft/loss`` (nats per target token), ``sft/target_prob`` (mean
probability of the target tokens), ``sft/grad_norm``, ``sft/lr``, ``sft/num_examples`` (turns),
``sft/num_tokens`` (target tokens), ``sft/tokens_per_second`` (prompt + response tokens
processed per second, SkyRL's ``train/tokens_per_second``), ``sft/skipped_rows``, ``timing/step``,
``trainer/tokens_per_second`` and ``trainer/epoch``.
"""

from __future__ import annotations

import re
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from hyperpod_rl.base import listed
from hyperpod_rl.errors import ConfigError, TaskError
from hyperpod_rl.metrics.schema import MetricRecord
from hyperpod_rl.model.loading import revision_of
from hyperpod_rl.model.policy import Action, MazePolicy
from hyperpod_rl.model.rollout import Episode, play_episodes
from hyperpod_rl.runs.files import file_sha256, write_dir_atomically, write_json_atomic
from hyperpod_rl.tasks.demonstrations import demonstration_of
from hyperpod_rl.tasks.metrics import metric_spec
from hyperpod_rl.train.reference import ReferenceTrainer

__all__ = ["FULL_SHARD_SIZE", "ScriptedPolicy", "SFTTrainer", "demo_action", "demonstration_episode"]

#: Largest safetensors shard of a full-parameter SFT model (``save_pretrained``'s ``max_shard_size``):
#: small enough that each file passes a 16 MiB-a-file transfer.
FULL_SHARD_SIZE = "15MB"

_ANSWER_WORD = re.compile(r"^<answer>(\S+)</answer>$")


def demo_action(policy: MazePolicy, text: str) -> Action:
    """The :class:`Action` the policy would have produced had it answered ``text``.

    With ``action_constraint='directions'`` the response is ``<answer>`` + the word's token +
    ``</answer>`` + end-of-turn, only the word sampled (as :meth:`MazePolicy.act` builds it); with
    ``'none'`` the text's tokens plus end-of-turn, all sampled.

    Raises:
        TaskError: under ``'directions'`` the text is not ``<answer>WORD</answer>`` with WORD one of
            the policy's answer words.
    """
    if policy.action_constraint == "directions":
        match = _ANSWER_WORD.match(text.strip())
        words = [w.lower() for w in policy.answer_words]
        if match is None or match.group(1).lower() not in words:
            raise TaskError(
                f"demonstration completion {text[:80]!r} is not <answer>WORD</answer> with WORD one of {listed(policy.answer_words)}: "
                "constrained decoding (rollout.action_constraint='directions') can only learn those; use 'none'"
            )
        c = words.index(match.group(1).lower())
        prefix, suffix = list(policy.prefix_ids), list(policy.suffix_ids)
        ids = [*prefix, int(policy.allowed_ids[c]), *suffix]
        mask = [False] * len(prefix) + [True] + [False] * len(suffix)
        return Action(text=f"<answer>{policy.answer_words[c]}</answer>", response_ids=ids, loss_mask=mask, logprob=0.0)
    ids = [*policy.tokenizer.encode(text, add_special_tokens=False), policy.eos_id]
    return Action(text=text, response_ids=ids, loss_mask=[True] * len(ids), logprob=0.0)


class ScriptedPolicy:
    """A stand-in for :class:`MazePolicy` in :func:`play_episodes` that answers one episode's
    demonstration, completion by completion (one episode at a time: ``rows=[row]``, ``group_size=1``).

    Raises (from :meth:`act`):
        TaskError: the env asks for more turns than the demonstration has.
    """

    def __init__(self, policy: MazePolicy | None, completions: Sequence[str]) -> None:
        self.policy = policy
        # policy None: text-only actions (no token ids), for datasets another trainer tokenizes (SkyRL's SFT)
        self.actions = [
            demo_action(policy, t) if policy is not None else Action(text=t, response_ids=[], loss_mask=[], logprob=0.0)
            for t in completions
        ]
        self.turn = 0

    def act(self, prompts: Sequence[Any], **_: Any) -> list[Action]:
        if len(prompts) != 1:
            raise TaskError(f"a scripted demonstration plays one episode at a time, got {len(prompts)} observations")
        if self.turn >= len(self.actions):
            raise TaskError(f"the env asked for turn {self.turn + 1}, the demonstration has {len(self.actions)} completions")
        self.turn += 1
        return [self.actions[self.turn - 1]]


def demonstration_episode(policy: MazePolicy | None, task: Any, row: dict[str, Any], *, max_turns: int | None) -> Episode | None:
    """The row's demonstration replayed through the task's env as a rollout :class:`Episode`, or
    None when the task has none for the row or the replay does not reach success (the task's
    primary metric at its best, 1) within ``max_turns``. With ``policy=None`` the turns' actions
    hold the completion text only (no token ids)."""
    completions = demonstration_of(task, row)
    if completions is None:
        return None
    try:
        episode = play_episodes(ScriptedPolicy(policy, completions), [row], group_size=1, greedy=True, max_turns=max_turns)[0]  # type: ignore[arg-type]
    except TaskError:
        return None
    primary = metric_spec(task).primary
    if task.aggregate_metrics([episode.metrics]).get(primary, 0.0) < 1.0:
        return None
    return episode


class SFTTrainer(ReferenceTrainer):
    """Train one ``stage='sft'`` run (arguments and errors: :class:`ReferenceTrainer`).

    ``sft.parameters='full'`` trains every weight of the base model instead of a LoRA adapter:
    the base is loaded in float32 (whatever ``trainer.dtype`` says; no bf16 autocast), the LoRA
    layers stay in place but frozen at their initialisation (B = 0: they add exactly nothing),
    checkpoints hold all the base weights (``model.safetensors``) and their AdamW state, and the
    result is a whole model directory, ``<run dir>/model`` (:attr:`export_dir`): the base model's
    own files (config, tokenizer, processor) with the trained weights, loadable wherever the base
    model is (:func:`~hyperpod_rl.model.loading.load_base_model`, vLLM), in safetensors shards of at
    most :data:`FULL_SHARD_SIZE`, with a ``provenance.json``.
    """

    @property
    def full(self) -> bool:
        """Whether this run trains every base weight (``sft.parameters='full'``)."""
        return self.config.sft.parameters == "full"

    @property
    def weights_file(self) -> str:  # type: ignore[override]
        return "model.safetensors" if self.full else "adapter_model.safetensors"

    @property
    def export_dir(self) -> Path:
        return self.run_dir / "model" if self.full else self.paths.adapter

    def _load_base(self, model_dir: Path, dtype: torch.dtype) -> tuple[Any, Any, str, str]:
        self._base_dir = model_dir
        return super()._load_base(model_dir, torch.float32 if self.full else dtype)

    def _trained_weights(self) -> dict[str, torch.Tensor]:
        if not self.full:
            return super()._trained_weights()
        return {name: p for name, p in self.model.named_parameters() if "lora_" not in name}

    def _load_trained_weights(self, weights: dict[str, torch.Tensor]) -> None:
        if not self.full:
            return super()._load_trained_weights(weights)
        params = dict(self.model.named_parameters())
        with torch.no_grad():
            for name, value in weights.items():
                params[name].copy_(value)

    def _build(self) -> None:
        super()._build()
        cfg = self.config
        if self.full:  # every base weight trains; the LoRA layers (B = 0) stay frozen and add nothing
            for name, p in self.model.named_parameters():
                p.requires_grad_("lora_" not in name)
        # what trains, kept: peft's disable_adapter() (the base benchmark) turns the LoRA layers' gradients back on
        params = self._trained_params = [p for p in self.model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(params, lr=cfg.sft.lr, weight_decay=cfg.sft.weight_decay, fused=self.device.type == "cuda")
        self._demos: dict[int, Episode | None] = {}

    def _demo(self, index: int) -> Episode | None:
        if index not in self._demos:
            self._demos[index] = demonstration_episode(self.policy, self.task, self.rows[index], max_turns=self.config.rollout.max_turns)
        return self._demos[index]

    def _draw(self) -> tuple[list[Episode], int]:
        """``sft.rows_per_step`` demonstration episodes and the number of rows skipped on the way.

        Raises:
            ConfigError: a whole pass over the train rows found no usable demonstration.
        """
        want, skipped, misses = self.config.sft.rows_per_step, 0, 0
        episodes: list[Episode] = []
        while len(episodes) < want:
            (index,) = self.sampler.take(1)
            episode = self._demo(index)
            if episode is None:
                skipped, misses = skipped + 1, misses + 1
                if misses >= len(self.rows):
                    raise ConfigError(
                        f"none of the {len(self.rows)} train rows has a demonstration of task {self.task.name!r} that succeeds within "
                        f"rollout.max_turns={self.config.rollout.max_turns}: raise rollout.max_turns or use smaller instances"
                    )
                continue
            misses = 0
            episodes.append(episode)
        return episodes, skipped

    def _export_record(self, path: Path) -> dict[str, Any]:
        if not self.full:
            return super()._export_record(path)
        return {"path": "model", "revision": revision_of(path), "steps": self.step}

    def export_adapter(self) -> Path:
        """Write the run's result atomically: the adapter (:meth:`ReferenceTrainer.export_adapter`)
        or, with ``sft.parameters='full'``, the whole model directory :attr:`export_dir`."""
        if not self.full:
            return super().export_adapter()
        cfg = self.config
        base = self.model.get_base_model()  # the transformers model, the (frozen, zero) LoRA layers inside

        def write(tmp: Path) -> None:
            for f in Path(self._base_dir).iterdir():  # config, tokenizer, processor, markers: the base model's own
                if f.is_file() and not f.name.endswith(".safetensors") and f.name not in ("model.safetensors.index.json", "checksums.json"):
                    shutil.copy2(f, tmp / f.name)
            state = {
                name.replace(".base_layer.", "."): p.detach().contiguous() for name, p in base.state_dict().items() if "lora_" not in name
            }
            base.save_pretrained(tmp, state_dict=state, max_shard_size=FULL_SHARD_SIZE)
            write_json_atomic(
                tmp / "provenance.json",
                {
                    "run_id": cfg.run_id,
                    "stage": "sft",
                    "parameters": "full",
                    "base_model_id": self.base_model_id,
                    "base_model_revision": self.base_model_revision,
                    "config_hash": cfg.config_hash(),
                    "dataset_hashes": {"train": file_sha256(cfg.data.train_path)},
                    "seeds": {"trainer": cfg.trainer.seed},
                    "steps": self.step,
                },
            )

        return write_dir_atomically(self.export_dir, write)

    def _step(self) -> MetricRecord:
        cfg = self.config
        t0 = time.perf_counter()
        episodes, skipped = self._draw()
        turns = [t for ep in episodes for t in ep.turns]
        contexts = [t.context for t in turns]
        responses = [t.action.response_ids for t in turns]
        masks = [t.action.loss_mask for t in turns]
        num_tokens = sum(sum(m) for m in masks)
        seq_tokens = sum(self.policy.prompt_tokens(c) for c in contexts) + sum(len(r) for r in responses)
        groups = [[i] for i in range(len(turns))]  # one forward per example (identical states would share one)
        self.model.train()
        self.model.zero_grad(set_to_none=True)
        total_nll, prob = 0.0, 0.0
        mb = cfg.trainer.micro_batch_size
        for start in range(0, len(groups), mb):
            scored = self.policy.score(contexts, responses, masks, groups[start : start + mb], temperature=1.0)
            nll = -(scored.logprobs * scored.loss_mask).sum()
            (nll / num_tokens).backward()
            total_nll += float(nll.detach())
            prob += float((scored.logprobs.detach().exp() * scored.loss_mask).sum())
        grad_norm = torch.nn.utils.clip_grad_norm_(self._trained_params, cfg.sft.max_grad_norm)
        self.optimizer.step()
        self.model.eval()
        self.step += 1
        step_s = time.perf_counter() - t0
        values = {
            "sft/loss": total_nll / max(num_tokens, 1),
            "sft/target_prob": prob / max(num_tokens, 1),
            "sft/grad_norm": float(grad_norm),
            "sft/lr": cfg.sft.lr,
            "sft/num_examples": float(len(turns)),
            "sft/num_tokens": float(num_tokens),
            "sft/tokens_per_second": seq_tokens / step_s,
            "sft/skipped_rows": float(skipped),
            "timing/step": step_s,
            "trainer/tokens_per_second": seq_tokens / step_s,
            "trainer/epoch": float(self.sampler.epoch),
        }
        return MetricRecord(run_id=cfg.run_id, step=self.step, total_steps=cfg.trainer.steps, time_s=time.time(), values=values)
