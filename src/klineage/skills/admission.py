"""Admission: a card is a hypothesis until a brain, given only the card, reproduces its effect
under the gate on a context that did not produce it.

A context is a kernel of another workload (or another kernel of the same one) where the card's
feature is absent and its ``requires`` are present. The brain materializes the card; the result
must pass the gate and be faster than the context kernel by the paired comparison. Every trial,
passed or failed, is recorded on the card; a failure at a particular size also becomes a
grounded shape precondition.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from klineage.editors import EditContext, Editor
from klineage.executors import current
from klineage.gate.session import GateSession, device_of, gate_ahead
from klineage.lineage._feedback import report_feedback
from klineage.skills.card import SkillCard, Trial
from klineage.skills.lift import divisibility_precondition
from klineage.source import present
from klineage.workload import KernelState, Workload

__all__ = ["HELD_OUT_PASSES", "MAX_ATTEMPTS", "Context", "admit", "applicable"]

HELD_OUT_PASSES = 2
"""Held-out reproductions sought before the trials stop. One admits the card; a second keeps it
admitted when a bench leaves the first context's workload out (its trials go with it), so a card
is not lost on exactly the workload it was shown to work on."""

MAX_ATTEMPTS = 2
"""Materializations per context for a non-exhaustive (LLM) brain; the retry carries the gate's
feedback. The rules brain is asked once: asking again gives the same kernel."""


@dataclass(frozen=True)
class Context:
    """A held-out place to try a card."""

    workload: Workload
    state: KernelState
    label: str
    gate: GateSession


def applicable(card: SkillCard, state: KernelState) -> str | None:
    """None when the card may be tried on ``state``; else why not."""
    features = present(state.source, state.language)
    if not card.scope.covers(language=state.language):
        return f"language {state.language} is outside the card's scope"
    if card.feature in features:
        return f"{card.feature} is already present"
    missing = [f for f in card.requires if f not in features]
    if missing:
        return f"requires {', '.join(missing)}"
    clashing = [f for f in card.conflicts if f in features]
    return f"conflicts with {', '.join(clashing)}" if clashing else None


def admit(card: SkillCard, contexts: list[Context], brain: Editor, max_trials: int = 3,
          say: Callable[[str], None] | None = None) -> SkillCard:
    """Try the card on held-out contexts until ``HELD_OUT_PASSES`` of other workloads reproduce its
    effect (or trials run out); one reproduction admits it."""
    say = say or (lambda _: None)
    sources = {e.workload for e in card.effect}
    _gate_trials_ahead(card, contexts, brain, max_trials)
    tried = 0
    for context in contexts:
        reproduced = {t.target.split("/")[0] for t in card.verification if t.held_out and t.passed}
        if tried >= max_trials or len(reproduced) >= HELD_OUT_PASSES:
            break
        if context.workload.name in reproduced:
            continue  # a second kernel of a workload already reproduced adds no new context
        if applicable(card, context.state) is not None:
            continue
        held_out = context.workload.name not in sources
        tried += 1
        say(f"admitting {card.name} on {context.label}")
        card = _trial(card, context, brain, held_out)
    return card


def _gate_trials_ahead(card: SkillCard, contexts: list[Context], brain: Editor,
                       max_trials: int) -> None:
    """With the rules brain (same card, same kernel: same proposal, at no cost), the trials'
    kernels are made now and gated side by side where the executor has several timing slots;
    each trial still takes its report in turn (``gate_ahead``: charged then, or never)."""
    if not getattr(brain, "exhaustive", False) or not contexts:
        return
    first = contexts[0]
    if current().slots(device_of(first.gate.backend_for(first.state))) < 2:
        return  # one slot: nothing to gate ahead, so no kernel made early
    ahead, workloads = [], set()
    for context in contexts:  # one kernel a workload: a second is tried only if the first fails
        if len(workloads) == max_trials:
            break
        if context.workload.name in workloads or applicable(card, context.state) is not None:
            continue
        workloads.add(context.workload.name)
        answer = brain.materialize(context.state, card, EditContext(workload=context.workload))
        ahead += [(context.gate, answer.proposals[0].state)] if answer.proposals else []
    gate_ahead(ahead)


def _trial(card: SkillCard, context: Context, brain: Editor, held_out: bool) -> SkillCard:
    attempts = 1 if getattr(brain, "exhaustive", False) else MAX_ATTEMPTS
    feedback = ""
    for attempt in range(1, attempts + 1):  # an LLM brain is asked again with the gate's feedback
        answer = brain.materialize(context.state, card, EditContext(workload=context.workload,
                                                                    feedback=feedback))
        if not answer.proposals:
            reason = "; ".join(answer.failures) or "the brain proposed nothing"
            if attempt < attempts and answer.failures:
                feedback = reason
                continue
            return card.with_trial(Trial(target=context.label, held_out=held_out,
                                         verdict="no_proposal", effect_observed=None, reason=reason))
        proposal = answer.proposals[0]
        report = context.gate.check(proposal.state)
        if report.accepted:
            break
        if attempt == attempts:
            card = card.with_trial(Trial(target=context.label, held_out=held_out,
                                         verdict=report.verdict.value, effect_observed=None,
                                         reason=report.reason))
            return _learn_from_failure(card, context.workload, report.reason)
        feedback = report_feedback(report)
    comparison = context.gate.compare(context.state, proposal.state)
    faster = comparison.decision == "faster"
    card = card.with_trial(Trial(
        target=context.label, held_out=held_out, verdict="accepted" if faster else "slower",
        effect_observed=1 / comparison.ratio,
        reason=f"paired time ratio {comparison.ratio:.3f} (95% CI {comparison.ci_low:.3f}–"
               f"{comparison.ci_high:.3f}): {comparison.decision}"))
    if faster and held_out:
        card = card.model_copy(update={"admitted": True})
    return card


def _learn_from_failure(card: SkillCard, workload: Workload, reason: str) -> SkillCard:
    """A failure naming a size becomes a divisibility precondition where the evidence allows."""
    match = re.match(r"at ((?:\w+=\d+ ?)+),", reason)
    if not match:
        return card
    failing = dict(pair.split("=") for pair in match.group(1).split())
    shapes = workload.shapes()
    passed = shapes[: next((i for i, s in enumerate(shapes)
                            if all(str(s[k]) == v for k, v in failing.items())), len(shapes))]
    found = [divisibility_precondition(axis, [s[axis] for s in passed], int(value))
             for axis, value in failing.items()]
    extra = [p for p in found if p is not None]
    return card.model_copy(update={"preconditions": [*card.preconditions, *extra]}) if extra else card
