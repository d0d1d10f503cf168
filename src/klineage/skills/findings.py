"""Findings: what inserting one feature measured on one workload, kept whether or not it lifted a card.

A mine re-derives every step of its lineage. A step with an effect becomes a card; one that was
correct but brought nothing (or was slower), or whose re-derived kernel failed the gate, lifts no
card — and used to leave no trace outside the mine's own notes. Yet "restrict brought nothing on
softmax and transpose" is exactly what an optimizer with a small budget should know. The library
keeps these records in ``findings.json``, one per (feature, workload, language, platform), the
latest mine winning, and the klineage method orders its own improvements by them once its cards
are spent (``optimize.methods``). A bench removes the target's findings like its cards.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from klineage.lineage.model import Lineage, Transition
from klineage.workload import Workload

__all__ = ["Finding", "FindingsFile", "findings_of", "rank_features"]

NO_EFFECT_BAND = 0.02
"""Within 2% of no change a paired speedup counts as no effect (the lift's MIN_LIFT_SPEEDUP)."""

Outcome = Literal["faster", "no_effect", "slower", "failed"]


class Finding(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    feature: str
    workload: str
    op: str
    language: str
    platform: str
    outcome: Outcome
    speedup: float | None = None
    """time(kernel without the feature) / time(with it), paired; None when it failed the gate."""
    note: str = ""
    context: list[str] = []
    """The features of the kernel the feature was inserted into (the walk's simpler state).
    Empty in libraries mined before it was kept: such a finding counts on every kernel."""

    def key(self) -> tuple[str, str, str, str]:
        return self.feature, self.workload, self.language, self.platform


class FindingsFile(BaseModel):
    """``findings.json`` of a library."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = 1
    findings: list[Finding]


def findings_of(lineage: Lineage, workload: Workload) -> list[Finding]:
    """One finding per re-derived step that was measured or failed the gate (a step with no
    insertion pass, or none tried, measured nothing and yields none)."""
    found = []
    for transition in lineage.transitions:
        outcome, speedup = _outcome(transition)
        if outcome is not None:
            context = sorted(set(transition.features_before) - {transition.feature})
            found.append(Finding(feature=transition.feature, workload=workload.name, op=workload.op,
                                 language=lineage.language, platform=lineage.platform,
                                 outcome=outcome, speedup=speedup,
                                 note=transition.rederivation.note[:300], context=context))
    return found


def _outcome(transition: Transition) -> tuple[Outcome | None, float | None]:
    redo = transition.rederivation
    if redo is None:
        return None, None
    speedup = redo.speedup_over_simpler
    if speedup is not None:
        if speedup >= 1 + NO_EFFECT_BAND:
            return "faster", speedup
        return ("no_effect" if speedup > 1 - NO_EFFECT_BAND else "slower"), speedup
    if "re-derived kernel" in redo.note:  # the inserted feature broke the kernel at the gate
        return "failed", None
    return None, None


def rank_features(findings: list[Finding],
                  present: set[str] | None = None) -> dict[str, tuple[int, float]]:
    """feature -> (tier, -best speedup), smaller first: measured faster somewhere (the larger the
    gain, the earlier), then never measured (absent from the result), then no effect, slower,
    only failures.

    With ``present`` (the features of the kernel at hand), a finding that the feature brought
    nothing, was slower or failed counts only where its kernel's features are all present too.
    Such an outcome depends on what else the kernel did: restrict measured 1.000x inserted into
    the add_rmsnorm expert, whose vectorized loads already go through the read-only path, and
    1.045x on the naive kernel (H200, 2026-12-02). A gain measured anywhere stays a lead."""
    tiers = {"faster": 0, "no_effect": 2, "slower": 3, "failed": 4}
    ranked: dict[str, tuple[int, float]] = {}
    for finding in findings:
        if finding.outcome != "faster" and present is not None and not set(finding.context) <= present:
            continue
        rank = (tiers[finding.outcome], -(finding.speedup or 0.0))
        ranked[finding.feature] = min(ranked.get(finding.feature, rank), rank)
    return ranked
