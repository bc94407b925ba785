"""What a :class:`~hyperpod_rl.plan.Plan` shows people: its tables as rows of text, and as HTML.

One place for labels, units and number formats, so ``hyperpod-rl plan`` (rich tables), a
notebook cell (``Plan._repr_html_``) and the RunPanel's Plan section say the same thing.
Pure: standard library only (the HTML is escaped with :func:`html.escape`).

>>> from hyperpod_rl.plan import PlanInput, plan
>>> from hyperpod_rl.plan.report import plan_tables
>>> [t.title for t in plan_tables(plan(PlanInput()))]  # doctest: +NORMALIZE_WHITESPACE
['Policy update memory per GPU (GiB)', 'vLLM KV cache per engine', 'Step time estimate (one GRPO step)']
"""

from __future__ import annotations

import html
from typing import NamedTuple, Protocol

from hyperpod_rl.plan.inputs import PlanInput
from hyperpod_rl.plan.memory import KVCache, MemoryBreakdown, RolloutMemory
from hyperpod_rl.plan.throughput import StepTime

__all__ = ["MEMORY_PARTS", "PlanTable", "memory_parts", "plan_html", "plan_summary", "plan_tables", "sequence_breakdown"]


class Plan(Protocol):
    """What the report reads of a plan: the fields of :class:`hyperpod_rl.plan.planner.Plan`.

    A protocol, so that the planner's model may draw itself (``Plan._repr_html_``) with this
    module while this module imports nothing from the planner: imports point one way.
    """

    @property
    def input(self) -> PlanInput: ...
    @property
    def seq_len(self) -> int: ...
    @property
    def image_tokens(self) -> int: ...
    @property
    def memory(self) -> MemoryBreakdown: ...
    @property
    def gpu_memory_gib(self) -> float: ...
    @property
    def kv_cache(self) -> KVCache: ...
    @property
    def rollout(self) -> RolloutMemory | None: ...
    @property
    def step(self) -> StepTime: ...
    @property
    def fits(self) -> bool: ...
    @property
    def verdicts(self) -> list[str]: ...
    @property
    def blockers(self) -> list[str]: ...


#: ``MemoryBreakdown`` field -> row label of a sharded (FSDP2, more than one GPU) policy, in the
#: order the tables show them; :func:`memory_parts` gives the labels of a given plan.
MEMORY_PARTS: dict[str, str] = {
    "weights_gib": "weights (bf16, sharded)",
    "fsdp_buffers_gib": "FSDP2 buffers (root unit + gathered layers)",
    "reference_gib": "reference model",
    "lora_gib": "LoRA (fp32 master, gradient, AdamW)",
    "activations_gib": "activations",
    "logits_gib": "logits (log-prob path)",
    "overhead_gib": "overhead (CUDA workspaces, allocator)",
}


def memory_parts(plan: Plan) -> dict[str, str]:
    """``MemoryBreakdown`` field -> row label for ``plan``, labelled by what runs.

    FSDP2 over several GPUs: :data:`MEMORY_PARTS`. FSDP2 at world size 1: nothing is sharded, so
    the weights are the whole model and the FSDP2 row holds only its gathered-layer copies. No
    FSDP2 (``PlanInput.fsdp=False``: a plain process per GPU, as the reference backend runs): the
    FSDP2 row is left out.
    """
    inp = plan.input
    parts = dict(MEMORY_PARTS)
    if not inp.fsdp:
        parts["weights_gib"] = "weights (bf16, whole model, no FSDP2)"
        del parts["fsdp_buffers_gib"]
    elif inp.world_size == 1:
        parts["weights_gib"] = "weights (bf16, whole model on 1 GPU)"
        parts["fsdp_buffers_gib"] = "FSDP2 buffers (gathered layers)"
    else:
        parts["weights_gib"] = f"weights (bf16, sharded over {inp.world_size} GPUs)"
    return parts


def sequence_breakdown(plan: Plan) -> str:
    """How the planned sequence length adds up, e.g. ``"256 prompt text + 6 images x 198 + 6 turns x 160"``."""
    inp = plan.input
    parts = [f"{inp.max_prompt_tokens:,} prompt text"]
    if inp.images_per_prompt:
        n = inp.images_per_prompt
        parts.append(f"{n} image{'s' if n != 1 else ''} x {inp.image_tokens_per_image + 2}")
    parts.append(f"{inp.turns} turn{'s' if inp.turns != 1 else ''} x {inp.max_response_tokens}")
    return " + ".join(parts)


class PlanTable(NamedTuple):
    """One table of a plan: a title, column names and rows of formatted cells (first column a label)."""

    title: str
    columns: tuple[str, ...]
    rows: list[tuple[str, ...]]


def gib(value: float) -> str:
    """GiB with two decimals (``"16.34"``)."""
    return f"{value:.2f}"


def seconds(value: float) -> str:
    """Seconds with one decimal (``"11.6"``)."""
    return f"{value:.1f}"


def plan_summary(plan: Plan) -> str:
    """One line: model, GPUs, sequence and micro batch, and whether the run fits.

    E.g. ``"Qwen/Qwen3-VL-8B-Instruct on 8 x NVIDIA H200 (1 node, colocated): 2,404-token sequences
    (256 prompt text + 6 images x 198 + 6 turns x 160; 196 tokens per image), micro batch 8 per GPU: fits"``.
    """
    inp = plan.input
    nodes = f"{inp.nodes} node{'s' if inp.nodes > 1 else ''}"
    verdict = "fits" if plan.fits else f"does NOT fit ({len(plan.blockers)} blocker{'s' if len(plan.blockers) != 1 else ''})"
    return (
        f"{inp.shape().name} on {inp.world_size} x {inp.gpu_spec().name} "
        f"({nodes}, {inp.placement if inp.rollout_engine == 'vllm' else 'rollouts in the training process'}): "
        f"{plan.seq_len:,}-token sequences ({sequence_breakdown(plan)}; {plan.image_tokens} tokens per image), "
        f"micro batch {inp.micro_train_batch_size_per_gpu} per GPU: {verdict}"
    )


def plan_tables(plan: Plan) -> list[PlanTable]:
    """The memory, KV-cache and step-time tables of ``plan`` (numbers formatted, units in the labels)."""
    mem = plan.memory
    peak = mem.peak_gib
    memory_rows: list[tuple[str, ...]] = [
        (label, gib(getattr(mem, field)), f"{getattr(mem, field) / peak:.0%}") for field, label in memory_parts(plan).items()
    ]
    memory_rows.append(("peak", gib(peak), "100%"))
    memory_rows.append(("GPU memory", gib(plan.gpu_memory_gib), f"peak uses {peak / plan.gpu_memory_gib:.0%}"))
    kv = plan.kv_cache
    kv_rows: list[tuple[str, ...]] = [
        ("bytes per token (K and V, all layers)", f"{kv.bytes_per_token:,}"),
        ("KV-cache room (GiB)", gib(kv.capacity_gib)),
        ("tokens", f"{kv.tokens:,}"),
        (f"concurrent {plan.seq_len:,}-token sequences", f"{kv.concurrent_sequences:,}"),
    ]
    step = plan.step
    vllm = plan.input.rollout_engine == "vllm"
    generate_label = "generate (vLLM, estimate)" if vllm else "generate (compiled decoding, fitted)"
    sync_label = "sync (weights to vLLM, offload)" if vllm else "sync (none: adapter in-process)"
    step_rows: list[tuple[str, ...]] = [
        (generate_label, seconds(step.generate_s)),
        ("train (policy update)", seconds(step.train_s)),
        ("  of which compute", seconds(step.train_compute_s)),
        *(
            [("  of which exposed FSDP2 communication", seconds(step.train_comm_exposed_s))]
            if plan.input.fsdp and plan.input.world_size > 1
            else []
        ),
        (sync_label, seconds(step.sync_s)),
        ("total", seconds(step.total_s)),
        ("train tokens/s per GPU", f"{step.train_tokens_per_s_per_gpu:,.0f}"),
    ]
    return [
        PlanTable("Policy update memory per GPU (GiB)", ("part", "GiB", "share"), memory_rows),
        *([PlanTable("vLLM KV cache per engine", ("", "value"), kv_rows)] if vllm else []),
        *([_rollout_table(plan.rollout)] if plan.rollout is not None else []),
        PlanTable("Step time estimate (one GRPO step)", ("phase", "seconds"), step_rows),
    ]


def _rollout_table(r: RolloutMemory) -> PlanTable:
    """Compiled decoding's memory at the last turn (reference backend)."""
    rows: list[tuple[str, ...]] = [
        ("whole model (bf16)", gib(r.weights_gib)),
        ("LoRA (fp32 weights, AdamW state)", gib(r.lora_gib)),
        (f"static KV cache ({r.rows} rows x {r.tokens_per_row:,} tokens)", gib(r.kv_cache_gib)),
        ("overhead", gib(r.overhead_gib)),
        ("peak", gib(r.peak_gib)),
    ]
    return PlanTable("Rollout memory per GPU (compiled decoding, last turn)", ("part", "GiB"), rows)


_TABLE = "border-collapse:collapse;margin:4px 12px 4px 0;vertical-align:top"
_CELL = "padding:1px 8px;border-bottom:1px solid #ddd"


def _html_table(table: PlanTable) -> str:
    head = "".join(
        f"<th style='{_CELL};text-align:{'left' if i == 0 else 'right'}'>{html.escape(c)}</th>" for i, c in enumerate(table.columns)
    )
    body = []
    for row in table.rows:
        bold = row[0] in ("peak", "total")
        cells = "".join(
            f"<td style='{_CELL};text-align:{'left' if i == 0 else 'right'}{';font-weight:bold' if bold else ''}'>{html.escape(c)}</td>"
            for i, c in enumerate(row)
        )
        body.append(f"<tr>{cells}</tr>")
    caption = f"<caption style='text-align:left;font-weight:bold'>{html.escape(table.title)}</caption>"
    return f"<table class='hprl-plan-table' style='{_TABLE};display:inline-table'>{caption}<tr>{head}</tr>{''.join(body)}</table>"


def plan_html(plan: Plan) -> str:
    """``plan`` as HTML: the summary line, the three tables side by side and the verdicts, blockers in red.

    Every text is escaped, so a model name or verdict cannot inject markup.
    """
    colour = "#2ca02c" if plan.fits else "#d62728"
    summary = f"<div style='color:{colour};font-weight:bold'>{html.escape(plan_summary(plan))}</div>"
    tables = "<div>" + "".join(_html_table(t) for t in plan_tables(plan)) + "</div>"
    blockers = set(plan.blockers)
    items = []
    for verdict in plan.verdicts:
        if verdict in blockers:
            items.append(f"<li class='hprl-blocker' style='color:#d62728'><b>blocker:</b> {html.escape(verdict)}</li>")
        else:
            items.append(f"<li>{html.escape(verdict)}</li>")
    verdicts = f"<b>Verdicts</b><ul style='margin:2px 0'>{''.join(items)}</ul>"
    return f"<div class='hprl-plan'>{summary}{tables}{verdicts}</div>"
