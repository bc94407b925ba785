"""README.md and docs/ say what the committed result files say.

Every quoted figure sits in a marked passage (``<!-- fig:NAME -->``) that ``benchmarks/figures.py``
renders from ``benchmarks/results/``; after a benchmark is rerun, ``python -m benchmarks.figures``
rewrites the passages (``benchmarks/quickstart.py`` does it for the README by itself).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from benchmarks.figures import PASSAGES, check

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
    assert f"training {result['wall_s_phases']['train']:.0f} s" in timing
    assert f"{result['heldout_mazes']} held-out mazes" in figures
    for metric in ("optimal_move_rate", "solve_rate"):
        f = result["figures"][metric]
        for part, fmt in (("base", "{:.3f}"), ("adapter", "{:.3f}"), ("diff", "{:+.3f}")):
            iv = f[part]
            quoted = f"{fmt.format(iv['value'])} [{fmt.format(iv['low'])}, {fmt.format(iv['high'])}]"
            assert quoted in figures, f"README lacks {metric} {part} {quoted}"
    quoted_numbers = re.findall(r"[+-]?\d+\.\d{3}", figures)
    assert len(quoted_numbers) == 2 * 9, "the README quotes a number the check above does not cover"
