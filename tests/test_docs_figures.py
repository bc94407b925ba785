"""README.md and docs/ say what the committed result files say.

Every quoted figure sits in a marked passage (``<!-- fig:NAME -->``) that ``benchmarks/figures.py``
renders from ``benchmarks/results/``; after a benchmark is rerun, ``python -m benchmarks.figures``
rewrites the passages (``benchmarks/quickstart.py`` does it for the README by itself). Outside them,
a number with a unit or a ratio fails unless marked ``measured`` (checked against its result files)
or ``quoted`` (with its source): ``benchmarks.figures.unrendered``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from benchmarks.figures import PASSAGES, README_GPU_MFU, README_GPU_TRL, check, documents, unrendered

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name", list(PASSAGES))
def test_passage_says_what_its_result_files_say(name: str) -> None:
    for result in PASSAGES[name].results:
        assert (REPO / "benchmarks" / "results" / f"{result}.json").is_file(), f"{name} quotes {result}.json, which is not committed"
    assert check([name]) == []


def test_every_marked_passage_is_registered() -> None:
    """A passage nobody renders would never be checked."""
    for doc in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        for name in re.findall(r"<!-- fig:([\w.-]+) -->", doc.read_text()):
            assert name in PASSAGES and PASSAGES[name].doc == str(doc.relative_to(REPO)), f"{doc.name}: unregistered passage {name}"


def _readme_passage(name: str) -> str:
    (body,) = re.findall(rf"<!-- fig:{name} -->(.*?)<!-- /fig:{name} -->", (REPO / "README.md").read_text(), re.S)
    return body


def test_readme_quotes_the_committed_quickstart_result() -> None:
    """Read straight from quickstart.json (not through the renderer): every number the README gives is the file's."""
    result = json.loads((REPO / "benchmarks" / "results" / "quickstart.json").read_text())["results"]
    timing, figures = _readme_passage("quickstart-time"), _readme_passage("quickstart-eval")
    assert f"{result['wall_s_total']:.0f} s" in timing
    phases = result["wall_s_phases"]  # training: each stage's job, both named (not GRPO's alone)
    assert (
        f"training {phases['sft'] + phases['train']:.0f} s (SFT warm start {phases['sft']:.0f} s, GRPO {phases['train']:.0f} s)" in timing
    )
    assert f"{result['heldout_mazes']} held-out mazes" in figures
    # with the SFT stage: base -> SFT -> GRPO and the paired GRPO - SFT difference; before it: base, adapter, difference
    sft = "sft" in result["figures"]["solve_rate"]
    parts = (("base", "{:.3f}"), ("sft", "{:.3f}"), ("adapter", "{:.3f}"), ("grpo_vs_sft", "{:+.3f}")) if sft else (
        ("base", "{:.3f}"), ("adapter", "{:.3f}"), ("diff", "{:+.3f}"))  # fmt: skip
    for metric in ("optimal_move_rate", "solve_rate"):
        f = result["figures"][metric]
        for part, fmt in parts:
            iv = f[part]
            quoted = f"{fmt.format(iv['value'])} [{fmt.format(iv['low'])}, {fmt.format(iv['high'])}]"
            assert quoted in figures, f"README lacks {metric} {part} {quoted}"
    quoted_numbers = re.findall(r"[+-]?\d+\.\d{3}", figures)
    assert len(quoted_numbers) == 2 * 3 * len(parts), "the README quotes a number the check above does not cover"


@pytest.mark.parametrize("doc", documents())
def test_no_figure_is_typed_by_hand(doc: str) -> None:
    """Every number with a unit or a ratio is rendered, or marked measured (checked against its result files) or quoted (with a source)."""
    assert unrendered(doc) == []


@pytest.mark.parametrize(
    "text",
    [
        "decoding 12.3 s of a step",
        "47 % MFU on the update",
        "1.87× its samples/s",
        "took up to 3.4x as long",
        "peak 43 GiB",
        "at 5,692 tokens/s",
        "backs off 10×",
        "a 24 GB A10G",
        "<!-- fig:nope -->1 s<!-- /fig:other --> and 2 s",
    ],
)
def test_the_check_fails_a_figure_typed_by_hand(text: str) -> None:
    problems = unrendered("docs/x.md", f"intro\n{text}\n")
    assert problems and all(p.startswith("docs/x.md:2: ") and "typed by hand" in p for p in problems), problems


@pytest.mark.parametrize(
    "text",
    [
        "a 16 x 807 batch and 320 × 224 px, patch 16 × merge 2",
        "the 8B shape, 64 vision tokens, 16,384 characters",
        "`--timeout 600 s` and\n```text\n12.3 s\n```",
        "a 95 % paired bootstrap interval",
        "<!-- fig:a -->12.3 s<!-- /fig:a -->",
        "<!-- quoted: NVIDIA H200 datasheet -->989 TFLOP/s<!-- /quoted -->",
        "<!-- quoted: https://example.org/x -->1.35–1.73× faster<!-- /quoted -->",
        "<!-- quoted: hyperpod_rl/plan/hardware.py -->80 GB<!-- /quoted -->",
        "<!-- measured: benchmarks/results/h200_grpo_e2e_decode_8b.json -->1.65× at 25.1 vs 27.2 GiB<!-- /measured -->",
    ],
)
def test_the_check_passes_what_is_not_typed_by_hand(text: str) -> None:
    assert unrendered("docs/x.md", text) == []


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("<!-- quoted:  -->12 s<!-- /quoted -->", "names no source"),
        ("<!-- quoted: hyperpod_rl/nope.py -->12 s<!-- /quoted -->", "not a file of this repository"),
        ("<!-- measured: benchmarks/results/nope.json -->12 s<!-- /measured -->", "must name committed result files"),
        (
            "<!-- measured: benchmarks/results/h200_grpo_e2e_decode_8b.json -->1.66× at 25.1 GiB<!-- /measured -->",
            "'1.66×' is not a number",
        ),
        ("<!-- measured: benchmarks/results/quickstart.json -->98765.4 s<!-- /measured -->", "'98765.4 s' is not a number"),
    ],
)
def test_a_marker_must_hold_what_it_claims(text: str, why: str) -> None:
    problems = unrendered("docs/x.md", text)
    assert problems and why in problems[0], problems


def test_the_readme_gpu_sentence_is_rendered_from_the_named_results() -> None:
    """Issue 30 item 6: the README's GPU figures come from the files benchmarks/figures.py names (re-pointed when new results land)."""
    body = _readme_passage("readme-gpu")
    for shape, name in README_GPU_TRL.items():
        res = json.loads((REPO / "benchmarks" / "results" / f"{name}.json").read_text())["results"]
        ratio = next(c for c in res["comparisons"] if "throughput_ratio_ours_over_trl" in c)["throughput_ratio_ours_over_trl"]
        assert f"{ratio:.2f}×" in body and f"at {shape}" in body
    name, config, variant = README_GPU_MFU
    rec = next(
        r for r in json.loads((REPO / "benchmarks" / "results" / f"{name}.json").read_text())["results"] if r["config"]["name"] == config
    )
    assert f"{100 * rec['variant_mfu'][variant]:.0f} % MFU" in body


def test_a_marker_shown_as_code_is_not_a_marker() -> None:
    text = "write `<!-- measured: FILE -->` then\n12.3 s here <!-- /measured -->"
    assert [p.split(": ", 1)[0] for p in unrendered("docs/x.md", text)] == ["docs/x.md:2"]


@pytest.mark.parametrize(
    "breakage",
    ["no resume line", "a retrained step", "another GPU", "another workload", "reference first"],
)
def test_the_skyrl_passages_refuse_records_that_are_not_one_sittings_stop_and_resume(breakage: str, tmp_path: Path, monkeypatch) -> None:
    """The SkyRL passages say the run resumed (SkyRL's own log line, each step once), on one GPU and commit, with the
    reference on the same workload after it: records that do not show one of these are refused, not rendered."""
    from benchmarks import figures

    names = (*figures.SKYRL_E2E, figures.SKYRL_REFERENCE)
    records = {n: json.loads((REPO / "benchmarks" / "results" / f"{n}.json").read_text()) for n in names}
    stop, resume, ref = (records[n] for n in names)
    phase = resume["results"]["phases"]["resume"]
    if breakage == "no resume line":
        phase["skyrl_lines"] = [x for x in phase["skyrl_lines"] if "Resuming from" not in x]
    elif breakage == "a retrained step":
        phase["metrics"].insert(0, dict(phase["metrics"][0]))
        phase["metric_steps"] = [1, *phase["metric_steps"]]
    elif breakage == "another GPU":
        ref["machine"]["gpus"] = ["NVIDIA H200, 143771 MiB, 580"]
    elif breakage == "another workload":
        ref["params"]["group"] = 4
    else:
        ref["date"] = "2026-12-06T00:00:00Z"
    for name, rec in records.items():
        (tmp_path / f"{name}.json").write_text(json.dumps(rec))
    monkeypatch.setenv("HPRL_RESULTS_DIR", str(tmp_path))
    for render in (figures.gpu_skyrl, figures.gpu_skyrl_reference, figures.skyrl_summary):
        with pytest.raises(ValueError, match="not one sitting's stop, resume and reference"):
            render()
