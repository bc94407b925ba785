"""Data parallelism for the reference backend: the collectives one worker of a ``TorchTrainer`` needs.

``trainer.workers = N > 1`` runs N copies of :class:`~hyperpod_rl.train.reference.ReferenceTrainer`
in the processes of a Ray Train ``TorchTrainer`` (:mod:`hyperpod_rl.train.workers`), one per GPU
(or CPU process), joined by ``torch.distributed`` (NCCL on CUDA, Gloo on CPU). Each worker holds
the whole policy (DDP, not FSDP2: every worker samples its rollouts with ``generate`` from the full
model, and the reference backend targets models that fit one GPU). Per step:

1. every worker draws the same global batch of ``data.prompts_per_step`` rows from the same sampler
   and rolls out its contiguous share of them (:meth:`DataParallel.share`): whole GRPO groups, so
   group-relative advantages never need another worker's returns;
2. the loss of every micro batch is divided by the global number of loss tokens (an all-reduce),
   so the summed gradients are those of one process over the whole batch;
3. gradients are summed by ``torch.nn.parallel.DistributedDataParallel`` (:meth:`DataParallel.wrap`,
   with a summing communication hook), once per update: all micro batches but the last run under
   ``no_sync()``;
4. episode summaries are gathered to every worker (``all_gather_object``) so rank 0 writes the
   same metrics one process would compute over the whole batch.

Rank 0 alone writes the run directory (metrics, checkpoints, the adapter, the provenance record).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import torch
import torch.distributed as dist

__all__ = ["DataParallel", "ScoringModule"]

T = TypeVar("T")


class ScoringModule(torch.nn.Module):
    """The policy's scoring pass (:meth:`MazePolicy.score`) as a module's ``forward``, for DDP.

    DDP reduces gradients only of passes that go through its ``forward``; the policy computes
    log-probs from the base model's hidden states and output head, never through the peft model's
    ``forward``, so this module makes the scoring pass the forward. Its parameters are the peft
    model's (``self.model``). Generation and the reference pass (``disable_adapter``) use the
    unwrapped peft model directly.

    ``forward`` returns ``(logprobs, entropy, loss_mask)`` (tensors, so DDP finds them) and the
    sample indices.
    """

    def __init__(self, model: torch.nn.Module, policy: Any) -> None:
        super().__init__()
        self.model = model
        self._policy = policy

    def forward(self, *args: Any, **kwargs: Any) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, list[int]]:
        batch = self._policy.score(*args, **kwargs)
        return batch.logprobs, batch.entropy, batch.loss_mask, list(batch.indices)


def _sum_hook(state, bucket):  # type: ignore[no-untyped-def]
    """DDP communication hook: all-reduce SUM (DDP's default divides by the world size).

    Not annotated: DDP compares the annotations, unevaluated here (``from __future__ import annotations``),
    with ``dist.GradBucket`` and refuses anything else.

    The loss of every worker is already divided by the global token count, so the sum over
    workers is the gradient of the whole batch.
    """
    work = dist.all_reduce(bucket.buffer(), op=dist.ReduceOp.SUM, group=state, async_op=True)
    return work.get_future().then(lambda fut: fut.value()[0])


@dataclass(frozen=True)
class DataParallel:
    """This worker's place in the data-parallel group (``torch.distributed`` already initialised).

    Attributes:
        rank: this worker's rank, 0 .. ``world_size - 1``; rank 0 writes the run directory.
        world_size: the number of workers (``trainer.workers``).
        device: the torch device of this worker (its GPU, or the CPU).
    """

    rank: int
    world_size: int
    device: torch.device

    @classmethod
    def current(cls, device: torch.device | None = None) -> DataParallel:
        """The group ``torch.distributed`` was initialised with (by Ray Train's ``TorchConfig``).

        Raises:
            RuntimeError: ``torch.distributed`` is not initialised.
        """
        if not dist.is_initialized():
            raise RuntimeError("torch.distributed is not initialised: run inside a Ray Train TorchTrainer worker")
        return cls(rank=dist.get_rank(), world_size=dist.get_world_size(), device=device or torch.device("cpu"))

    @property
    def is_writer(self) -> bool:
        """Rank 0: the one worker that writes metrics, checkpoints, the adapter and the provenance."""
        return self.rank == 0

    def share(self, items: Sequence[T]) -> list[T]:
        """This worker's contiguous share of ``items`` (``len(items)`` must split evenly).

        Raises:
            ValueError: ``len(items)`` is not a multiple of the world size.
        """
        if len(items) % self.world_size:
            raise ValueError(f"{len(items)} items do not split evenly over {self.world_size} workers")
        k = len(items) // self.world_size
        return list(items[self.rank * k : (self.rank + 1) * k])

    def _reduce_device(self) -> torch.device:
        return self.device if dist.get_backend() == "nccl" else torch.device("cpu")

    def sum(self, values: Sequence[float]) -> list[float]:
        """Element-wise sum of ``values`` over all workers (float64 all-reduce)."""
        t = torch.tensor([float(v) for v in values], dtype=torch.float64, device=self._reduce_device())
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
        return [float(v) for v in t.cpu().tolist()]

    def gather(self, obj: T) -> list[T]:
        """``obj`` of every worker, in rank order (``all_gather_object``: picklable objects)."""
        out: list[Any] = [None] * self.world_size
        dist.all_gather_object(out, obj)
        return out

    def broadcast(self, obj: T) -> T:
        """Rank 0's ``obj`` on every worker."""
        box: list[Any] = [obj]
        dist.broadcast_object_list(box, src=0)
        return box[0]

    def wrap(self, model: torch.nn.Module, policy: Any) -> torch.nn.parallel.DistributedDataParallel:
        """DDP over the policy's scoring pass (:class:`ScoringModule`), gradients summed over workers.

        Before wrapping, every worker checks that its trainable (LoRA) weights are bitwise those of
        rank 0 (same seed, same init); then only they are broadcast from rank 0. The frozen base
        weights are read from the same files by every worker and are not broadcast (``init_sync``
        off: DDP would otherwise send every base weight from rank 0).

        Raises:
            RuntimeError: a worker's initial LoRA weights differ from rank 0's.
        """
        trainable = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
        digest = hashlib.sha256()
        for name, p in trainable:
            digest.update(name.encode())
            digest.update(p.detach().float().cpu().numpy().tobytes())
        digests = self.gather(digest.hexdigest())
        if len(set(digests)) != 1:
            raise RuntimeError(
                f"the workers' initial LoRA weights differ (sha256 per rank: {digests}): every worker must build the policy "
                "with the same trainer.seed"
            )
        with torch.no_grad():
            for _, p in trainable:
                dist.broadcast(p.data, src=0)
        scoring = ScoringModule(model, policy)
        ddp = torch.nn.parallel.DistributedDataParallel(
            scoring,
            device_ids=None,  # the policy moves its own inputs; DDP leaves them as they are
            init_sync=False,  # no broadcast of every base weight: only the LoRA weights above
            broadcast_buffers=False,  # rotary tables etc. are computed identically on every worker (torch 2.11's name)
            # A LoRA module the scoring pass never reaches (e.g. on lm_head, whose weight the
            # chunked log-prob path reads directly) gets no gradient; DDP must not wait for it.
            find_unused_parameters=True,
        )
        ddp.register_comm_hook(None, _sum_hook)
        return ddp
