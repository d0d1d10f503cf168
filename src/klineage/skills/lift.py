"""Lift: reproduced transitions become skill cards, every field grounded in a record.

Preconditions come only from what was checked or seen: the dtypes and platform the effect was
measured on, the features the step needed in place (the dependency table), the build flags the
step added, the launch guard a re-derived fast path selects itself with, the workload's
tolerance for numerics-changing features, and sizes where a trial or re-derivation failed
(turned into the divisibility the passing sizes share and the failing one lacks). Risks are the
refused proposals and failed attempts that touched the feature.
"""

from __future__ import annotations

import re

from klineage.editors import Editor
from klineage.lineage.model import Lineage, Transition
from klineage.skills.card import (
    Carrier,
    Effect,
    Evidence,
    Precondition,
    Rewrite,
    Risk,
    Scope,
    SkillCard,
    skill_id,
)
from klineage.source import CATALOGUE, DEPENDS_ON, FAST_PATH_FEATURES
from klineage.workload import Workload

__all__ = ["MIN_LIFT_SPEEDUP", "anchor_signature", "divisibility_precondition", "lift_lineage"]

MIN_LIFT_SPEEDUP = 1.02
"""A reproduced step below this paired speedup has no measurable effect and yields no card."""

_NUMERICS = {"fast_math_intrinsics", "omp_simd", "simd_intrinsics"}  # may reorder or round


def anchor_signature(transition: Transition) -> str:
    """What kind of code the step acts on, without names or numbers: merges equal skills."""
    first = transition.sites[0].text.strip().splitlines()[0] if transition.sites else ""
    return re.sub(r"\s+", " ", re.sub(r"[0-9]+", "N", first.lower()))[:80]


def lift_lineage(lineage: Lineage, workload: Workload, brain: Editor) -> tuple[list[SkillCard], list[str]]:
    """Cards for every reproduced step with an effect, and a note for every step without one."""
    cards, notes = [], []
    for transition in lineage.transitions:
        redo = transition.rederivation
        if redo is None or not redo.reproduced:
            notes.append(f"{transition.feature}: not reproduced ({redo.note if redo else 'not tried'})")
            continue
        if (redo.speedup_over_simpler or 0) < MIN_LIFT_SPEEDUP:
            notes.append(f"{transition.feature}: reproduced, but no measurable effect "
                         f"({redo.speedup_over_simpler or 0:.3f}x): no card")
            continue
        cards.append(_card(lineage, workload, transition, brain))
    return cards, notes


def _card(lineage: Lineage, workload: Workload, transition: Transition, brain: Editor) -> SkillCard:
    info = CATALOGUE[transition.feature]
    redo = transition.rederivation
    facts = {"feature": transition.feature, "op": workload.op, "tunables": transition.tunables,
             "scope_function": transition.sites[0].scope if transition.sites else "",
             "anchor_text": transition.sites[0].text if transition.sites else ""}
    text, _ = brain.lift(facts)
    prior = sorted(set(transition.features_before) - {transition.feature})
    return SkillCard(
        id=skill_id(transition.feature, anchor_signature(transition), lineage.language),
        name=text["name"], intent=text["intent"], category=info.category,
        feature=transition.feature, anchor=text["anchor"],
        carrier=Carrier(summary=text["summary"], before=_side(redo.diff, "-"),
                        after=_side(redo.diff, "+"), diff=redo.diff, tunables=transition.tunables),
        preconditions=_preconditions(lineage, workload, transition),
        effect=[Effect(workload=workload.name, shape=dict(workload.axes), platform=lineage.platform,
                       before_ms=redo.simpler_ms, after_ms=redo.rederived_ms,
                       ratio=redo.speedup_over_simpler,
                       ci_low=redo.speedup_ci_over_simpler[0] if redo.speedup_ci_over_simpler else None,
                       ci_high=redo.speedup_ci_over_simpler[1] if redo.speedup_ci_over_simpler else None)]
        if redo.simpler_ms and redo.rederived_ms else [],
        evidence=Evidence(transitions=[transition.id],
                          gate_reports=[s for s in (transition.faster_state, transition.simpler_state,
                                                    redo.state) if s]),
        risk=_risks(lineage, transition),
        scope=Scope(ops=[workload.op], languages=[lineage.language], platforms=[lineage.platform],
                    prior_features=prior),
        requires=[f for f in DEPENDS_ON.get(transition.feature, ()) if f in prior],
        provides=[transition.feature, *transition.nested], conflicts=[],
        rewrite=Rewrite(pass_name=f"insert_{transition.feature}", feature=transition.feature,
                        params=transition.tunables) if info.insertable else None,
    )


def _side(diff: str, sign: str) -> str:
    lines = [ln[1:] for ln in diff.splitlines() if ln.startswith(sign) and not ln.startswith(sign * 3)]
    return "\n".join(lines[:12])


def _preconditions(lineage: Lineage, workload: Workload, transition: Transition) -> list[Precondition]:
    dtypes = sorted({t.dtype for t in (*workload.inputs, *workload.outputs)})
    found = [
        Precondition(category="dtype", condition=f"tensors are {', '.join(dtypes)}",
                     reason="the effect was measured, and correctness checked, only on these dtypes",
                     check=None, source=f"workload:{workload.name}"),
        Precondition(category="hardware", condition=f"platform {lineage.platform}",
                     reason="the speedup was measured on this platform", check=None, source="gate"),
    ]
    for needed in DEPENDS_ON.get(transition.feature, ()):
        if needed in transition.features_before:
            found.append(Precondition(category="pipeline", condition=f"the kernel already has {needed}",
                                      reason=f"{transition.feature} builds on {needed}",
                                      check=f"requires:{needed}", source="check"))
    if "-fopenmp" in transition.removal_diff or transition.feature.startswith("omp_"):
        found.append(Precondition(category="pipeline", condition="the build enables OpenMP (-fopenmp)",
                                  reason="the pragma is ignored without it", check="flag:-fopenmp",
                                  source="check"))
    guard = _launch_guard(transition.rederivation.diff if transition.rederivation else "")
    if transition.feature in FAST_PATH_FEATURES and guard:
        found.append(Precondition(
            category="shape", condition=f"the fast path runs only where {guard}",
            reason="it moves whole, aligned chunks; every other size or address takes the general "
                   "kernel, and the gate checked both on the workload's check shapes",
            check=None, source="check"))
    if transition.feature in _NUMERICS:
        rtol = max(workload.tolerance_for(o)[0] for o in workload.outputs)
        found.append(Precondition(category="numerics", condition=f"outputs tolerate rtol {rtol:g}",
                                  reason="the step may reorder or round floating-point operations; "
                                         "it was accepted at this tolerance",
                                  check=None, source=f"workload:{workload.name}"))
    return found


def _launch_guard(diff: str) -> str:
    """The condition of the 'const bool <guard> = ...;' a re-derived fast path added ('' if none)."""
    added = " ".join(ln[1:].strip() for ln in diff.splitlines()
                     if ln.startswith("+") and not ln.startswith("+++"))
    match = re.search(r"const bool \w+ = (.+?);", added)
    return match.group(1) if match else ""


def _risks(lineage: Lineage, transition: Transition) -> list[Risk]:
    risks = [Risk(what=f"removing it was refused: {r.verdict}: {r.reason[:300]}",
                  evidence=f"{lineage.workload}:step{r.step}:{r.state[:8]}")
             for r in lineage.rejections if r.feature == transition.feature]
    redo = transition.rederivation
    if redo and redo.note and redo.note != "reproduced":
        risks.append(Risk(what=f"re-derivation attempts: {redo.note[:300]}", evidence=transition.id))
    return risks


def divisibility_precondition(axis: str, passing: list[int], failing: int) -> Precondition | None:
    """A divisibility the passing sizes of ``axis`` share and the failing size lacks, or None.

    The condition is the smallest power of two that does not divide the failing size (and
    divides every passing one): the weakest divisibility that explains the evidence.
    """
    shared = 1
    while shared < 1 << 12 and all(size % (shared * 2) == 0 for size in passing):
        shared *= 2
    if not passing or failing % shared == 0:
        return None
    divisor = 2
    while failing % divisor == 0:
        divisor *= 2
    return Precondition(category="shape", condition=f"{axis} is a multiple of {divisor}",
                        reason=f"it failed at {axis}={failing} and held at {axis} in {sorted(passing)}",
                        check=f"{axis} % {divisor} == 0", source="failure")
