"""Promotion gate: an adapter is promoted only if its held-out evaluation beats the base model.

The decision is the evaluation's own (:func:`hyperpod_rl.eval.compare`: the paired-bootstrap
interval of the primary metric's difference must lie on the better side of 0, and no guard
metric may get significantly worse). This module does not re-decide it; it checks that the
comparison is about *this* adapter and is not stale, that the adapter passes preflight, and
records the decision in the run record:

- ``<run dir>/promotion.json`` (always, promoted or not);
- ``manifest.json`` under ``promotion`` (when the run has a manifest);
- the run ledger (:mod:`hyperpod_rl.ledger`): a ``finding`` note, and a ``promoted_adapter``
  artifact when promoted (best effort; ``HYPERPOD_RL_LEDGER=off`` turns it off).

``hyperpod_rl.serve`` sits beside ``hyperpod_rl.eval`` in the import layers (neither imports the
other), so :func:`promote` takes the comparison object (or its saved JSON) from the caller:

    >>> from hyperpod_rl.eval import EvalResult, compare  # doctest: +SKIP
    >>> cmp = compare(EvalResult.load(rdir / "eval/base.json"), EvalResult.load(rdir / "eval/adapter.json"))  # doctest: +SKIP
    >>> cmp.save(rdir / "eval/comparison.json")  # doctest: +SKIP
    >>> promote(rdir / "adapter", comparison=cmp)  # doctest: +SKIP

``hyperpod-rl serve promote RUN_ID`` does exactly that.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hyperpod_rl.errors import ServeError

__all__ = ["COMPARISON_FILE", "PROMOTION_FILE", "PromotionDecision", "PromotionRefused", "promote"]

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


class PromotionRefused(ServeError):
    """The gate refused the adapter; ``decision`` holds the recorded decision."""

    def __init__(self, decision: PromotionDecision) -> None:
        super().__init__(f"adapter {decision.adapter} not promoted: {decision.reason}")
        self.decision = decision


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
        if not path.is_file():
            return (
                None,
                f"no held-out comparison for this run ({path} is missing): evaluate the base model and the adapter on the same held-out mazes and save hyperpod_rl.eval.compare(base, adapter) there (hyperpod-rl serve promote does)",
            )
        try:
            data = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as err:
            return None, f"{path} is unreadable ({err.__class__.__name__}): compare again"
    elif hasattr(comparison, "to_json"):
        data = comparison.to_json()
    elif isinstance(comparison, dict):
        data = comparison
    else:
        return None, f"comparison must be a hyperpod_rl.eval.Comparison or its JSON dict, got {type(comparison).__name__}"
    missing = [k for k in _COMPARISON_KEYS if k not in data]
    if missing:
        return None, f"the comparison lacks {missing}: pass the result of hyperpod_rl.eval.compare(base, adapter)"
    return data, None


def _eval_problem(run_dir: Path, data: dict[str, Any], adapter: Path) -> str | None:
    """Why the comparison is not about this adapter vs the base model, or is stale (None: fine)."""
    base_file = run_dir / "eval" / f"{data['base_label']}.json"
    cand_file = run_dir / "eval" / f"{data['candidate_label']}.json"
    for f in (base_file, cand_file):
        if not f.is_file():
            return f"the evaluation {f} behind the comparison is missing: evaluate and save it under the run's eval/ directory"
    base, cand = json.loads(base_file.read_text()), json.loads(cand_file.read_text())
    if base.get("adapter_path") is not None:
        return f"the comparison's reference {data['base_label']!r} was evaluated with adapter {base['adapter_path']}, not the base model: compare against the base model's evaluation"
    if not cand.get("adapter_path") or Path(cand["adapter_path"]).resolve() != adapter.resolve():
        return f"the comparison's candidate {data['candidate_label']!r} evaluated {cand.get('adapter_path')}, not {adapter}: evaluate this adapter"
    weights = adapter / "adapter_model.safetensors"
    if weights.is_file() and weights.stat().st_mtime > cand_file.stat().st_mtime:
        return f"the adapter was written after its evaluation ({cand_file}): evaluate it again"
    return None


def _record(run_dir: Path, decision: PromotionDecision) -> None:
    """promotion.json, the manifest's ``promotion`` key, and the ledger (best effort)."""
    path = run_dir / PROMOTION_FILE
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(decision.to_json(), indent=1))
    os.replace(tmp, path)
    if (run_dir / "manifest.json").is_file():
        from hyperpod_rl.train.manifest import update_manifest

        entry = {k: v for k, v in decision.to_json().items() if k != "comparison"}

        def change(current: dict[str, Any] | None) -> dict[str, Any]:
            out = dict(current or {})
            out["promotion"] = entry
            return out

        update_manifest(run_dir, change)
    if os.environ.get("HYPERPOD_RL_LEDGER", "").lower() == "off":
        return
    import sqlite3

    from hyperpod_rl.errors import ConfigError
    from hyperpod_rl.ledger import Ledger

    verdict = "promoted" if decision.promoted else "not promoted"
    try:
        with Ledger(timeout_s=10.0) as ledger:
            ledger.add_note(f"adapter {verdict}: {decision.reason}", run_id=decision.run_id, kind="finding")
            if decision.promoted:
                ledger.add_artifact(decision.run_id, "promoted_adapter", decision.adapter, decision.adapter_sha256)
    except (sqlite3.Error, OSError, ConfigError) as err:
        warnings.warn(f"run ledger unavailable ({type(err).__name__}: {err}); the decision is in {path}", stacklevel=3)


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
    manifest_file = rdir / "manifest.json"
    run_id = rdir.name
    if manifest_file.is_file():
        run_id = json.loads(manifest_file.read_text()).get("run_id", run_id)
    decision = PromotionDecision(
        run_id=run_id, adapter=str(adir), adapter_sha256=_sha256(adir / "adapter_model.safetensors"), promoted=False, reason=""
    )

    def refuse(reason: str) -> PromotionRefused:
        decision.promoted, decision.reason = False, reason
        _record(rdir, decision)
        return PromotionRefused(decision)

    model_path = base_model
    if model_path is None and (rdir / "config.json").is_file():
        model_path = json.loads((rdir / "config.json").read_text()).get("model", {}).get("path")
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
