"""The rules brain: deterministic, offline, free. It proposes what the source passes can do.

simplify   every applicable single-feature removal pass, in the walk's order
rederive   the feature's insertion pass on the simpler kernel, with the tunables that worked
lift       card text from the feature catalogue and the transition's facts
materialize the card's insertion pass (``card.rewrite``) on the new kernel
improve    every insertion pass that applies to the kernel (the caller orders them; its
           ``ctx.extra["tunables"]`` may set a pass's parameters), and why each other pass made
           no edit

Features without an insertion pass (SIMD intrinsics, tensor cores, ...) cannot be re-derived or
materialized by this brain: those steps yield no skill with it, and say so.
"""

from __future__ import annotations

from typing import Any

from klineage.editors.base import Answer, EditContext, Proposal, Usage
from klineage.source import CATALOGUE, Refused, insertion, removal_edits, removal_order
from klineage.workload import KernelState

__all__ = ["RulesEditor"]


class RulesEditor:
    name = "rules"
    exhaustive = True
    """Every call returns every proposal it can make: nothing new comes from asking again."""

    def simplify(self, state: KernelState, ctx: EditContext) -> Answer:
        edits = removal_edits(state.source, state.language, state.flags)
        order = {name: rank for rank, name in enumerate(removal_order([e.feature for e in edits]))}
        edits.sort(key=lambda e: order.get(e.feature, len(order)))
        return Answer([self._proposal(state, e, "remove") for e in edits])

    def rederive(self, simpler: KernelState, feature: str, ctx: EditContext,
                 tunables: dict[str, Any]) -> Answer:
        info = CATALOGUE.get(feature)
        if info is None or not info.insertable:
            return Answer([], failures=[f"the rules brain has no insertion pass for {feature}"])
        edit = insertion(simpler.source, simpler.language, feature, dict(tunables))
        if isinstance(edit, Refused):
            return Answer([], failures=[f"the {feature} insertion pass found no site: {edit.reason}"])
        return Answer([self._proposal(simpler, edit, "insert")])

    def lift(self, facts: dict[str, Any]) -> tuple[dict[str, str], Usage]:
        feature = facts["feature"]
        info = CATALOGUE[feature]
        scope = facts.get("scope_function") or "the kernel"
        where = facts.get("anchor_text", "").strip().splitlines()
        anchor = f"{info.category} feature at {where[0]!r} in {scope}" if where else f"in {scope}"
        return {
            "name": f"{feature.replace('_', '-')}-{facts.get('op', 'kernel')}",
            "intent": info.description,
            "anchor": anchor,
            "summary": f"apply {feature} ({info.description.rstrip('.')}) at the anchor; "
                       f"tunables: {facts.get('tunables') or 'none'}",
        }, Usage()

    def materialize(self, state: KernelState, card: Any, ctx: EditContext) -> Answer:
        rewrite = getattr(card, "rewrite", None)
        if rewrite is None:
            return Answer([], failures=["the card has no mechanical rewrite for the rules brain"])
        return self.rederive(state, rewrite.feature, ctx, rewrite.params)

    def improve(self, state: KernelState, ctx: EditContext) -> Answer:
        present_now = set(ctx.features)
        proposals, refusals = [], []
        for name, info in CATALOGUE.items():
            if not info.insertable or name in present_now or state.language not in info.languages:
                continue
            params = {**ctx.extra.get("tunables", {}).get(name, {}), "flags": list(state.flags)}
            edit = insertion(state.source, state.language, name, params)
            if isinstance(edit, Refused):
                refusals.append(f"{name}: {edit.reason}")
            else:
                proposals.append(self._proposal(state, edit, "improve"))
        return Answer(proposals, failures=refusals)

    @staticmethod
    def _proposal(state: KernelState, edit: Any, direction: str) -> Proposal:
        new_state = state.with_source(edit.new_source, edit.flags_removed, edit.flags_added)
        where = ", ".join(f"line {s.start_line}" for s in edit.sites[:4])
        return Proposal(state=new_state, feature=edit.feature, direction=direction,
                        rationale=f"{edit.pass_name} at {where}", edit=edit)
