"""Promotion gate: an adapter is promoted only if its held-out evaluation beats the base model.

The decision is the evaluation's own (:func:`hyperpod_rl.eval.compare`: the paired-bootstrap
interval of the primary metric's difference must lie on the better side of 0, and no guard
metric may get significantly worse). This module does not re-decide it; it checks that the
comparison is about *this* adapter and is not stale, that the adapter passes preflight, and
records the decision in the run directory through :func:`hyperpod_rl.runs.record_promotion`:
``promotion.json`` (always, promoted or not) and the provenance record's ``promotion`` key. The
run ledger imports it from there (``hyperpod-rl runs sync``): a ``finding`` note, and a
``promoted_adapter`` artifact when promoted.

:func:`promote_run` compares a run's saved base and adapter evaluations and promotes:

    >>> decision = promote_run("my-run")  # doctest: +SKIP

``hyperpod-rl serve promote RUN_ID`` calls it.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hyperpod_rl.base import listed
from hyperpod_rl.errors import CheckpointError, PromotionRefused, ServeError
from hyperpod_rl.runs import RunPaths, read_config, read_eval, read_provenance, record_eval, record_promotion, run_paths

__all__ = ["COMPARISON_FILE", "PROMOTION_FILE", "PromotionDecision", "PromotionRefused", "promote", "promote_run"]

#: Where :meth:`hyperpod_rl.eval.Comparison.save` output is looked for by default.
COMPARISON_FILE = "eval/comparison.json"
#: The decision record in the run directory.
PROMOTION_FILE = "promotion.json"
_COMPARISON_KEYS = ("base_label", "candidate_label", "promote", "reason", "primary", "num_mazes")


@dataclass
class PromotionDecision:
    """One promotion decision.

    Attributes:
        run_id: the run (from the manifest, else the run directory name).
        adapter: the adapter directory.
        adapter_sha256: sha256 of ``adapter_model.safetensors`` at decision time.
        promoted: the decision.
        reason: one sentence: the evaluation's reason, or why the gate refused before it.
        primary: the metric that had to improve (e.g. ``solve_rate``).
        num_mazes: held-out mazes compared.
        comparison: the comparison's JSON form (empty when none was usable).
        decided_at: UTC time, ISO 8601.
    """

    run_id: str
    adapter: str
    adapter_sha256: str | None
    promoted: bool
    reason: str
    primary: str | None = None
    num_mazes: int | None = None
    comparison: dict[str, Any] = field(default_factory=dict)
    decided_at: str = field(default_factory=lambda: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _sha256(path: Path) -> str | None:
    if not path.is_file():
        return None
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _comparison_json(comparison: Any, run_dir: Path) -> tuple[dict[str, Any] | None, str | None]:
    """(comparison JSON, problem) from an object with ``to_json()``, a dict, or the saved file."""
    if comparison is None:
        path = run_dir / COMPARISON_FILE
        try:
            saved = read_eval(RunPaths(run_dir), "comparison")
        except CheckpointError as err:
            return None, f"{err}; compare again"
        if saved is None:
            return (
                None,
                f"no held-out comparison for this run ({path} is missing): evaluate the base model and the adapter on the same held-out mazes and save hyperpod_rl.eval.compare(base, adapter) there (hyperpod-rl serve promote does)",
            )
        data = saved
    elif hasattr(comparison, "to_json"):
        data = comparison.to_json()
    elif isinstance(comparison, dict):
        data = comparison
    else:
        return None, f"comparison must be a hyperpod_rl.eval.Comparison or its JSON dict, got {type(comparison).__name__}"
    missing = [k for k in _COMPARISON_KEYS if k not in data]
    if missing:
        return None, f"the comparison lacks {listed(missing)}: pass the result of hyperpod_rl.eval.compare(base, adapter)"
    return data, None


def _eval_problem(run_dir: Path, data: dict[str, Any], adapter: Path) -> str | None:
    """Why the comparison is not about this adapter vs the base model, or is stale (None: fine)."""
    paths = RunPaths(run_dir)
    cand_file = paths.eval_file(str(data["candidate_label"]))
    base, cand = read_eval(paths, str(data["base_label"])), read_eval(paths, str(data["candidate_label"]))
    for label, ev in ((data["base_label"], base), (data["candidate_label"], cand)):
        if ev is None:
            return f"the evaluation {paths.eval_file(str(label))} behind the comparison is missing: evaluate and save it under the run's eval/ directory"
    assert base is not None and cand is not None  # narrowed above
    if base.get("adapter_path") is not None:
        return f"the comparison's reference {data['base_label']!r} was evaluated with adapter {base['adapter_path']}, not the base model: compare against the base model's evaluation"
    if not cand.get("adapter_path") or Path(cand["adapter_path"]).resolve() != adapter.resolve():
        return f"the comparison's candidate {data['candidate_label']!r} evaluated {cand.get('adapter_path')}, not {adapter}: evaluate this adapter"
    weights = adapter / "adapter_model.safetensors"
    if weights.is_file() and weights.stat().st_mtime > cand_file.stat().st_mtime:
        return f"the adapter was written after its evaluation ({cand_file}): evaluate it again"
    return None


def _record(run_dir: Path, decision: PromotionDecision) -> None:
    """``promotion.json`` and the provenance record's ``promotion`` key (:func:`hyperpod_rl.runs.record_promotion`).

    The run ledger picks the decision up from the run directory (``hyperpod-rl runs sync``).
    """
    record_promotion(RunPaths(run_dir), decision.to_json())


def promote(
    adapter: str | Path, *, comparison: Any = None, run_dir: str | Path | None = None, base_model: str | Path | None = None
) -> PromotionDecision:
    """Promote an adapter if its held-out evaluation beats the base model; record the decision.

    Args:
        adapter: the adapter directory (``<run dir>/adapter``).
        comparison: :class:`hyperpod_rl.eval.Comparison` of the base model (reference) and this
            adapter (candidate) on the same held-out mazes, or its JSON dict; default: the file
            :data:`COMPARISON_FILE` in the run directory.
        run_dir: the run directory (default: the adapter's parent).
        base_model: base model directory for the preflight (default: the run's
            ``config.json`` ``model.path``; no preflight when neither exists).

    Returns:
        The :class:`PromotionDecision` (``promoted`` is True).

    Raises:
        PromotionRefused: no usable comparison, a comparison about another adapter or a stale
            one, a failed preflight, or the evaluation's decision was not to promote. The
            decision is recorded before raising.
        ServeError: the adapter directory does not exist.
    """
    from hyperpod_rl.serve.preflight import LOCAL_SERVER, BaseModelRef, preflight

    adir = Path(adapter).expanduser()
    if not adir.is_dir():
        raise ServeError(f"adapter {adir} is not a directory: pass the run's adapter/ directory")
    rdir = Path(run_dir) if run_dir is not None else adir.parent
    run_id = str((read_provenance(rdir) or {}).get("run_id") or rdir.name)
    decision = PromotionDecision(
        run_id=run_id, adapter=str(adir), adapter_sha256=_sha256(adir / "adapter_model.safetensors"), promoted=False, reason=""
    )

    def refuse(reason: str) -> PromotionRefused:
        decision.promoted, decision.reason = False, reason
        _record(rdir, decision)
        return PromotionRefused(decision)

    model_path = base_model
    if model_path is None and RunPaths(rdir).config.is_file():
        from hyperpod_rl.model.loading import resolve_base_model

        model_path = resolve_base_model(read_config(RunPaths(rdir)).model, rdir)
    if model_path is not None:
        report = preflight(adir, BaseModelRef.from_dir(model_path), LOCAL_SERVER)
        if not report.ok:
            raise refuse("it fails preflight: " + "; ".join(f.message for f in report.errors))
    data, problem = _comparison_json(comparison, rdir)
    if data is None:
        raise refuse(problem or "no comparison")
    decision.comparison, decision.primary, decision.num_mazes = data, data["primary"], data["num_mazes"]
    problem = _eval_problem(rdir, data, adir)
    if problem:
        raise refuse(problem)
    if not data["promote"]:
        raise refuse(str(data["reason"]))
    decision.promoted, decision.reason = True, str(data["reason"])
    _record(rdir, decision)
    return decision


def promote_run(
    run: str | Path, *, base_label: str = "base", adapter_label: str = "adapter", primary: str | None = None
) -> PromotionDecision:
    """Compare a run's saved evaluations, save the comparison, and promote its adapter if it wins.

    Args:
        run: run id or run directory.
        base_label: the saved evaluation ``eval/<base_label>.json`` of the base model.
        adapter_label: the saved evaluation ``eval/<adapter_label>.json`` of the adapter.
        primary: the metric that must improve significantly (default: the task's primary metric,
            ``solve_rate`` for the maze).

    Returns:
        The :class:`PromotionDecision` (promoted).

    Raises:
        CheckpointError: the run has no adapter, or an evaluation is missing.
        PromotionRefused: see :func:`promote` (the refusal carries the decision and the comparison).
    """
    from hyperpod_rl.eval import EvalResult, compare

    paths = run_paths(run)
    if not paths.adapter.is_dir():
        raise CheckpointError(
            f"run {paths.run_id!r} has no adapter under {paths.root}: check the run id (hyperpod-rl runs list) or train it first"
        )
    results = []
    for label in (base_label, adapter_label):
        data = read_eval(paths, label)
        if data is None:
            raise CheckpointError(
                f"{paths.eval_file(label)} is missing: evaluate the base model and the adapter on the held-out mazes first (hyperpod-rl quickstart does)"
            )
        results.append(EvalResult.from_json(data))
    comparison = compare(results[0], results[1], primary=primary)
    record_eval(paths, "comparison", comparison.to_json())
    return promote(paths.adapter, comparison=comparison, run_dir=paths.root)
