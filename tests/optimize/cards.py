"""Hand-built CPU skill cards whose rewrites the rules brain can materialize (test inputs)."""

from __future__ import annotations

from typing import Any

from klineage.skills import Carrier, Effect, Rewrite, Scope, SkillCard, Trial, skill_id

PLATFORM = "cpu-x86_64-*"


def card(feature: str, category: str = "compute", ratio: float = 2.0, admitted: bool = True,
         params: dict[str, Any] | None = None, anchor: str = "the innermost loop",
         workload: str = "rmsnorm", **changes: Any) -> SkillCard:
    """An admitted card adding ``feature`` with one measured effect on ``workload``."""
    fields: dict[str, Any] = {
        "id": skill_id(feature, anchor, "c"),
        "name": f"{feature}-{anchor.split()[-1]}",
        "intent": f"add {feature}",
        "category": category,
        "feature": feature,
        "anchor": anchor,
        "carrier": Carrier(summary=f"insert {feature}"),
        "effect": [Effect(workload=workload, shape={"N": 1000}, platform="cpu-x86_64-avx512",
                          before_ms=ratio, after_ms=1.0)],
        "scope": Scope(ops=["*"], languages=["c"], platforms=[PLATFORM]),
        "provides": [feature],
        "rewrite": Rewrite(pass_name=f"insert_{feature}", feature=feature, params=params or {}),
        "verification": [Trial(target="softmax/naive", held_out=True, verdict="accepted",
                               effect_observed=ratio)] if admitted else [],
        "admitted": admitted,
    }
    return SkillCard(**{**fields, **changes})
