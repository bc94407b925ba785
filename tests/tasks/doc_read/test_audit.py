"""The reward audit: >= 40 adversarial cases, passed by the reward, failed by plausible wrong rewards."""

from __future__ import annotations

from hyperpod_rl.tasks import get_task
from hyperpod_rl.tasks import run_audit as run_generic_audit
from hyperpod_rl.tasks.doc_read import AUDIT_CASES, REWARD_VERSION, Question, parse_envelope, run_audit


def test_the_reward_passes_every_audit_case() -> None:
    report = run_audit()
    assert report.total == len(AUDIT_CASES) >= 40
    assert report.passed, [(d.case.case_id, d.got) for d in report.disagreements]
    assert report.reward_version == REWARD_VERSION


def test_case_ids_are_unique_and_every_reward_level_is_covered() -> None:
    assert len({c.case_id for c in AUDIT_CASES}) == len(AUDIT_CASES)
    assert {c.expected for c in AUDIT_CASES} == {1.0, 0.0, -0.1}


def test_plain_string_match_fails_the_audit() -> None:
    """Exact match without normalisation is what the audit exists to catch."""

    def naive(completion: str, question: Question) -> float:
        env = parse_envelope(completion)
        if env.content is None:
            return -0.1
        return 1.0 if env.content.strip() == question.expected else 0.0

    report = run_audit(naive)
    assert not report.passed
    assert {"money-code", "date-mdy", "yes"} <= {d.case.case_id for d in report.disagreements}


def test_substring_match_fails_on_hedged_answers() -> None:
    def lenient(completion: str, question: Question) -> float:
        return 1.0 if question.expected.lower() in completion.lower() else 0.0

    ids = {d.case.case_id for d in run_audit(lenient).disagreements}
    assert {"two-answers", "text-extra", "yes-both"} <= ids


def test_a_raising_reward_is_reported_not_raised() -> None:
    def broken(completion: str, question: Question) -> float:
        raise RuntimeError("boom")

    report = run_audit(broken)
    assert len(report.disagreements) == report.total
    assert report.disagreements[0].error == "RuntimeError: boom"


def test_the_generic_audit_runs_the_plugin_cases() -> None:
    report = run_generic_audit(get_task("doc_read"))
    assert report.passed and report.total == len(AUDIT_CASES)
