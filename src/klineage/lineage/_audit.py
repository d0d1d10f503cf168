"""The walk's audit of a removal: exactly the targeted feature went, in source and compiled code."""

from __future__ import annotations

from klineage.gate.session import GateSession
from klineage.source import CATALOGUE, compiled_evidence, detect, feature_region, present
from klineage.workload import KernelState

__all__ = ["audit_removal"]


def audit_removal(gate: GateSession, before: KernelState, after: KernelState,
                  feature: str) -> tuple[str | None, list[str]]:
    """(problem, nested): problem is None when exactly ``feature`` went away, in source and in
    compiled output. Features whose every site lay inside the removed feature's sites go with
    it (a vector path's unrolled loop, an MMA's fragment loads) and are listed as nested."""
    had, has = present(before.source, before.language), present(after.source, after.language)
    if feature in has:
        return f"{feature} is still detected in the source", []
    lost = had - has - {feature}
    nested = sorted(f for f in lost if _inside(before, f, feature))
    stray = sorted(lost - set(nested))
    if stray:
        return f"removing {feature} also removed {', '.join(stray)} from the source", nested
    gained = sorted(has - had)
    if gained:
        return f"removing {feature} introduced {', '.join(gained)}", nested
    old, new = _evidence(gate, before), _evidence(gate, after)
    if old.get(feature) and new.get(feature) and CATALOGUE[feature].compiled_signature:
        return (f"the compiled output still shows {feature} "
                f"({CATALOGUE[feature].compiled_signature}): the compiler re-created it"), nested
    gone = (had - {feature}) - set(nested)
    vanished = sorted(f for f in gone if old.get(f) and not new.get(f))
    if vanished:
        return (f"removing {feature} also removed {', '.join(vanished)} from the compiled "
                f"output"), nested
    return None, nested


def _evidence(gate: GateSession, state: KernelState) -> dict[str, bool]:
    artifact = gate.artifact(state)
    return compiled_evidence(artifact, state.language) if artifact is not None else {}


def _inside(state: KernelState, inner: str, outer: str) -> bool:
    """Every site of ``inner`` lies within the code a removal of ``outer`` takes away (for a
    fast-path feature: the whole fast path, so a register tile of the vector kernel goes with it)."""
    spans = feature_region(state.source, state.language, outer)
    return all(any(lo <= h.site.start_byte and h.site.end_byte <= hi for lo, hi in spans)
               for h in detect(state.source, state.language) if h.feature == inner)
