"""Retrieval: which skill cards to try on a kernel, and in which order (DESIGN.md §1 step 6).

A card is a candidate when, in this order of checks:
1. it is admitted (unless ``include_unadmitted``);
2. its scope covers the kernel's language and the gate's platform (glob patterns, ``*`` allowed);
3. its scope covers the workload's op family, *or* a held-out trial already reproduced it on a
   context that did not produce it (admission proved the card transfers beyond its ops);
4. it may be tried on the kernel (``admission.applicable``: its feature is absent, its
   ``requires`` are present, its ``conflicts`` absent) and none of its ``provides`` is present.

Candidates are ranked by ``score = bottleneck + effect + similarity - risk``:
- bottleneck: how well the card's category fits what limits the kernel by speed of light
  (memory- or compute-bound; 0.5 when the kernel was not profiled);
- effect: log2 of the geometric mean of the card's measured speedups (clamped to [-1, 2]);
- similarity: half for naming the op in the card's scope, half for the overlap (Jaccard) between
  the features the card was seen next to and the features the kernel has;
- risk: half the share of the card's trials that failed (optimize runs write failures back).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from klineage.gate.report import GateReport
from klineage.skills.admission import applicable
from klineage.skills.card import WILDCARD, SkillCard
from klineage.skills.library import Library
from klineage.source import present
from klineage.workload import KernelState, Workload

__all__ = ["BOTTLENECK_FIT", "Choice", "retrieve"]

BOTTLENECK_FIT: dict[str, dict[str, float]] = {
    "memory": {"memory": 1.0, "parallelism": 1.0, "layout": 0.75, "pipeline": 0.75,
               "compute": 0.5, "tuning": 0.25},
    "compute": {"compute": 1.0, "parallelism": 1.0, "tuning": 0.75, "pipeline": 0.75,
                "layout": 0.5, "memory": 0.5},
}
"""How much a card of each category helps a kernel limited by memory or by compute."""
_UNPROFILED = 0.5


@dataclass(frozen=True)
class Choice:
    """One card's verdict from retrieval: chosen (with its rank and score parts) or skipped (why)."""

    card: SkillCard
    chosen: bool
    reason: str
    rank: int | None = None
    score: float = 0.0
    bottleneck: float = 0.0
    effect: float | None = None
    """Geometric mean of the card's measured speedups."""
    similarity: float = 0.0
    risk: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"id": self.card.id, "name": self.card.name, "feature": self.card.feature,
                "chosen": self.chosen, "reason": self.reason, "rank": self.rank,
                "score": round(self.score, 4), "bottleneck": self.bottleneck,
                "effect": self.effect, "similarity": round(self.similarity, 4),
                "risk": round(self.risk, 4)}


def retrieve(library: Library | list[SkillCard], state: KernelState, workload: Workload,
             profile: GateReport | None = None, include_unadmitted: bool = False) -> list[Choice]:
    """Every card of the library with its verdict: chosen ones first, best first, then skipped."""
    cards = library if isinstance(library, list) else library.cards()
    features = present(state.source, state.language)
    chosen, skipped = [], []
    for card in cards:
        why_not = _skip_reason(card, state, workload, profile, features, include_unadmitted)
        if why_not is not None:
            skipped.append(Choice(card=card, chosen=False, reason=why_not))
        else:
            chosen.append(_scored(card, workload, profile, features))
    chosen.sort(key=lambda c: (-c.score, c.card.name, c.card.id))
    ranked = [_with_rank(c, i + 1) for i, c in enumerate(chosen)]
    return ranked + sorted(skipped, key=lambda c: (c.card.name, c.card.id))


def _skip_reason(card: SkillCard, state: KernelState, workload: Workload,
                 profile: GateReport | None, features: set[str],
                 include_unadmitted: bool) -> str | None:
    if not card.admitted and not include_unadmitted:
        return "not admitted: no held-out round trip has reproduced it yet"
    if not card.scope.covers(language=state.language):
        return f"language {state.language} is outside scope {card.scope.languages}"
    if profile is not None and not card.scope.covers(platform=profile.platform):
        return f"platform {profile.platform} is outside scope {card.scope.platforms}"
    if not card.scope.covers(op=workload.op) and not _transferred(card):
        return (f"op {workload.op} is outside scope {card.scope.ops} and no held-out trial "
                "has shown it transfers")
    problem = applicable(card, state)
    if problem is not None:
        return problem
    already = [f for f in card.provides if f in features]
    return f"provides {', '.join(already)}, already present" if already else None


def _transferred(card: SkillCard) -> bool:
    return any(t.held_out and t.passed for t in card.verification)


def _scored(card: SkillCard, workload: Workload, profile: GateReport | None,
            features: set[str]) -> Choice:
    limiter = profile.sol.limiter if profile is not None and profile.sol is not None else None
    bottleneck = BOTTLENECK_FIT[limiter].get(card.category, 0.0) if limiter in BOTTLENECK_FIT \
        else _UNPROFILED
    effect = card.geomean_ratio()
    effect_term = min(2.0, max(-1.0, math.log2(effect))) if effect else 0.0
    similarity = 0.5 * _names_op(card, workload.op) + 0.5 * _jaccard(set(card.scope.prior_features),
                                                                      features)
    trials = card.verification
    risk = 0.5 * sum(not t.passed for t in trials) / len(trials) if trials else 0.0
    score = bottleneck + effect_term + similarity - risk
    parts = (f"bottleneck {bottleneck:.2f} ({limiter or 'not profiled'}, {card.category}), "
             f"effect {effect or 1.0:.2f}x, similarity {similarity:.2f}, risk {risk:.2f}")
    scope_note = "" if card.scope.covers(op=workload.op) else "; op outside scope but transferred"
    return Choice(card=card, chosen=True, reason=parts + scope_note, score=score,
                  bottleneck=bottleneck, effect=effect, similarity=similarity, risk=risk)


def _names_op(card: SkillCard, op: str) -> float:
    named = [p for p in card.scope.ops if p != WILDCARD]
    return 1.0 if any(p.lower() == op.lower() for p in named) else 0.0


def _jaccard(left: set[str], right: set[str]) -> float:
    if not left and not right:
        return 1.0
    return len(left & right) / len(left | right)


def _with_rank(choice: Choice, rank: int) -> Choice:
    return Choice(card=choice.card, chosen=True, reason=f"#{rank}: {choice.reason}", rank=rank,
                  score=choice.score, bottleneck=choice.bottleneck, effect=choice.effect,
                  similarity=choice.similarity, risk=choice.risk)
