"""The plan as HTML (notebook ``_repr_html_``) and as table rows: every memory part, every verdict, escaped."""

from __future__ import annotations

import html

from hyperpod_rl.plan import PlanInput, plan
from hyperpod_rl.plan.report import MEMORY_PARTS, memory_parts, plan_html, plan_summary, plan_tables


def test_html_has_every_memory_part_number_and_verdict() -> None:
    p = plan(PlanInput(micro_train_batch_size_per_gpu=8, mini_batch_size=64))
    text = p._repr_html_()
    assert text == plan_html(p)
    for field, label in memory_parts(p).items():
        assert html.escape(label) in text, field
        assert f">{getattr(p.memory, field):.2f}<" in text, field
    assert set(MEMORY_PARTS) == set(type(p.memory).model_fields)  # no part of the breakdown left out
    assert f">{p.memory.peak_gib:.2f}<" in text and f">{p.gpu_memory_gib:.2f}<" in text
    assert f">{p.kv_cache.tokens:,}<" in text and f">{p.kv_cache.concurrent_sequences:,}<" in text
    assert f">{p.step.generate_s:.1f}<" in text and f">{p.step.train_s:.1f}<" in text and f">{p.step.sync_s:.1f}<" in text
    for verdict in p.verdicts:
        assert html.escape(verdict) in text
    assert p.fits and "hprl-blocker" not in text and "fits" in plan_summary(p)


def test_blockers_are_marked_and_text_is_escaped() -> None:
    # three blockers: the micro batch does not fit, no KV cache left, and the batch sizes do not divide
    p = plan(PlanInput(micro_train_batch_size_per_gpu=256, mini_batch_size=64, gpu_memory_utilization=0.2, gpu="H100"))
    assert not p.fits and len(p.blockers) == 3 and set(p.blockers) < set(p.verdicts)
    text = plan_html(p)
    assert text.count("class='hprl-blocker'") == len(p.blockers)
    assert "does NOT fit" in text
    hostile = p.model_copy(update={"verdicts": [*p.verdicts, "<script>alert(1)</script> & more"]})
    shown = plan_html(hostile)
    assert "<script>" not in shown and "&lt;script&gt;alert(1)&lt;/script&gt; &amp; more" in shown


def test_tables_are_the_plans_numbers() -> None:
    p = plan(PlanInput(gpus_per_node=2, image_px=(896, 896)))
    memory, kv, step = plan_tables(p)
    rows = {r[0]: r[1] for r in memory.rows}
    parts = memory_parts(p)
    assert [rows[label] for label in parts.values()] == [f"{getattr(p.memory, f):.2f}" for f in parts]
    assert parts["weights_gib"] == "weights (bf16, sharded over 2 GPUs)"
    assert rows["peak"] == f"{p.memory.peak_gib:.2f}"
    assert dict(kv.rows)["tokens"] == f"{p.kv_cache.tokens:,}"
    assert dict(step.rows)["total"] == f"{p.step.total_s:.1f}"
    assert (
        f"{p.seq_len:,}-token sequences (128 prompt text + 1 image x {p.image_tokens + 2} + 1 turn x 512; {p.image_tokens} tokens per image)"
        in plan_summary(p)
    )
    assert p.seq_len == 128 + p.image_tokens + 2 + 512


def test_memory_rows_are_labelled_by_what_runs() -> None:
    """Reported: one-GPU plans said "sharded" and "FSDP2 buffers (root unit ...)" though nothing is sharded at world size 1."""
    one = plan(PlanInput(gpus_per_node=1, mini_batch_size=8))
    labels = [r[0] for r in plan_tables(one)[0].rows]
    assert "weights (bf16, whole model on 1 GPU)" in labels and "FSDP2 buffers (gathered layers)" in labels
    assert not any("sharded" in label or "root unit" in label for label in labels)
    assert not any("FSDP2 communication" in r[0] for r in plan_tables(one)[2].rows)
    plain = plan(PlanInput(gpus_per_node=1, mini_batch_size=8, fsdp=False))  # one plain process, as the reference backend runs
    labels = [r[0] for r in plan_tables(plain)[0].rows]
    assert "weights (bf16, whole model, no FSDP2)" in labels and not any("FSDP2" in label and "no FSDP2" not in label for label in labels)
    eight = plan(PlanInput(gpus_per_node=8))
    assert memory_parts(eight) == {**MEMORY_PARTS, "weights_gib": "weights (bf16, sharded over 8 GPUs)"}
    assert any("FSDP2 communication" in r[0] for r in plan_tables(eight)[2].rows)
