"""The backward walk: from an expert kernel, remove one feature at a time under the gate.

Each step asks the brain for single-feature removals, tries them in the order policy
(dependents before prerequisites), and accepts the first that compiles, stays correct and
passes the audit (exactly that feature gone, in source and compiled output). Slower is allowed:
the step's effect is measured with the paired comparison. Every refused proposal is kept with
its verdict and reason. Every decision is an event in the run's log; a resumed walk replays
the log and continues from the last accepted state without gating anything twice.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from klineage.editors import EditContext, Editor, Proposal
from klineage.errors import KlineageError
from klineage.gate.session import GateSession
from klineage.lineage._audit import audit_removal
from klineage.lineage._feedback import trim
from klineage.lineage.model import (
    Lineage,
    ProposalRejected,
    Rejection,
    SiteRecord,
    StepAccepted,
    Transition,
    WalkStopped,
)
from klineage.runs import RunDir
from klineage.source import CATALOGUE, DEPENDS_ON, present
from klineage.source.tunables import tunables_of
from klineage.workload import KernelState, Workload

__all__ = ["WalkLimits", "backward_walk"]

SayFn = Callable[[str], None]


@dataclass(frozen=True)
class WalkLimits:
    max_steps: int = 30
    max_rejections: int = 40


class _Walk:
    def __init__(self, workload: Workload, brain: Editor, gate: GateSession, run: RunDir, say: SayFn):
        self.workload, self.brain, self.gate, self.run, self.say = workload, brain, gate, run, say
        self.nested: list[str] = []  # features the last audited proposal removed along with its own

    def replay(self, expert: KernelState) -> tuple[KernelState, Lineage]:
        """The lineage so far, rebuilt from the event log (empty for a new run)."""
        lineage = Lineage(workload=self.workload.name, op=self.workload.op, language=expert.language,
                          platform=self.gate.check(expert).platform, expert=expert.fingerprint,
                          states=[expert.fingerprint])
        current = expert
        for event in self.run.events(StepAccepted, ProposalRejected):
            if isinstance(event, StepAccepted):
                transition = event.transition
                lineage.transitions.append(transition)
                lineage.states.append(transition.simpler_state)
                current = KernelState.load(self.run.state_dir(transition.simpler_state), self.workload)
            else:
                lineage.rejections.append(event.rejection)
        return current, lineage

    def context(self, current: KernelState, features: set[str], lineage: Lineage) -> EditContext:
        """What the brain may know: the kernel's features, and what was refused on it already."""
        refused = [r for r in lineage.rejections if r.state == current.fingerprint]
        feedback = "\n".join(f"- {r.feature or '(unusable answer)'}: {r.verdict}: {trim(r.reason)}"
                             for r in refused)
        return EditContext(workload=self.workload, features=tuple(sorted(features)), feedback=feedback,
                           extra={"tried": sorted({r.feature for r in refused if r.feature})})

    def reject(self, lineage: Lineage, rejection: Rejection) -> None:
        self.run.log(ProposalRejected(rejection=rejection))
        lineage.rejections.append(rejection)

    def try_proposal(self, step: int, current: KernelState, proposal: Proposal) -> Rejection | None:
        candidate, feature = proposal.state, proposal.feature or "?"
        self.say(f"step {step}: trying to remove {feature}")
        report = self.gate.check(candidate)
        diff = proposal.edit.diff if proposal.edit else ""
        if not report.accepted:
            return Rejection(step=step, state=current.fingerprint, feature=feature,
                             verdict=report.verdict.value, reason=report.reason, diff=diff)
        problem, self.nested = audit_removal(self.gate, current, candidate, feature)
        if problem:
            return Rejection(step=step, state=current.fingerprint, feature=feature,
                             verdict="audit_failed", reason=problem, diff=diff)
        return None

    def accept(self, step: int, current: KernelState, proposal: Proposal) -> Transition:
        simpler, feature = proposal.state, proposal.feature or "?"
        self.say(f"step {step}: measuring {feature} (paired)")
        comparison = self.gate.compare(simpler, current)  # ratio = time(faster)/time(simpler)
        edit = proposal.edit
        return Transition(
            id=f"{self.workload.name}:{current.fingerprint[:8]}:{feature}",
            step=step, feature=feature, category=CATALOGUE[feature].category,
            faster_state=current.fingerprint, simpler_state=simpler.fingerprint,
            removal_diff=edit.diff if edit else "",
            sites=[SiteRecord(start_line=s.start_line, end_line=s.end_line, text=s.text,
                              scope=s.scope) for s in (edit.sites if edit else ())],
            tunables=tunables_of(feature, edit.params) if edit else {},
            faster_ms=_ms(comparison.candidate_median_s), simpler_ms=_ms(comparison.baseline_median_s),
            speedup=1 / comparison.ratio, speedup_ci=(1 / comparison.ci_high, 1 / comparison.ci_low),
            features_before=sorted(present(current.source, current.language)),
            nested=list(self.nested),
        )


def _ms(seconds: float | None) -> float | None:
    return seconds * 1e3 if seconds is not None else None


def _blocked(feature: str, features: set[str]) -> bool:
    """A prerequisite stays while a feature that depends on it is present."""
    return any(feature in DEPENDS_ON.get(other, ()) for other in features if other != feature)


def backward_walk(workload: Workload, expert: KernelState, brain: Editor, gate: GateSession,
                  run: RunDir, limits: WalkLimits = WalkLimits(),
                  say: SayFn | None = None) -> Lineage:
    """Walk (or finish walking) ``expert`` backward; returns the lineage, also in the log."""
    walk = _Walk(workload, brain, gate, run, say or (lambda _: None))
    expert_report = gate.check(expert)
    if not expert_report.accepted:
        raise KlineageError(f"the expert kernel does not pass the gate: "
                            f"{expert_report.verdict.value}: {expert_report.reason}")
    current, lineage = walk.replay(expert)
    stopped = [e for e in run.events(WalkStopped) if not e.budget]
    if stopped:
        return _finish(lineage, current, stopped[-1].reason)
    tried = {(r.state, r.feature) for r in lineage.rejections}
    while True:
        step = len(lineage.transitions) + 1
        features = present(current.source, current.language)
        if step > limits.max_steps:
            return _stop(run, lineage, current, f"step cap ({limits.max_steps}) reached")
        if len(lineage.rejections) >= limits.max_rejections:
            return _stop(run, lineage, current, f"rejection cap ({limits.max_rejections}) reached")
        if not features:
            return _stop(run, lineage, current, _why_stuck(features))
        if gate.meter is not None and gate.meter.exhausted():
            return _stop(run, lineage, current, gate.meter.exhausted() or "", budget=True)
        answer = brain.simplify(current, walk.context(current, features, lineage))
        proposals = [p for p in answer.proposals if (current.fingerprint, p.feature) not in tried
                     and not _blocked(p.feature or "", features)]
        if not proposals and not answer.failures:
            if getattr(brain, "exhaustive", False) or not answer.proposals:
                return _stop(run, lineage, current, _why_stuck(features))
            repeated = ", ".join(sorted({p.feature or "?" for p in answer.proposals}))
            answer.failures.append(f"proposed {repeated} again, or before what depends on it")
        for failure in answer.failures:  # an unusable answer is a refused proposal, never a crash
            walk.reject(lineage, Rejection(step=step, state=current.fingerprint, feature=None,
                                           verdict="unusable_answer", reason=failure))
        gate.gate_ahead([p.state for p in proposals])
        for proposal in proposals:
            if proposal is not proposals[0] and gate.meter is not None and gate.meter.exhausted():
                break  # the first is paid for; the rest wait for a resumed run
            rejection = walk.try_proposal(step, current, proposal)
            tried.add((current.fingerprint, proposal.feature))
            if rejection is None:
                transition = walk.accept(step, current, proposal)
                run.log(StepAccepted(transition=transition))
                lineage.transitions.append(transition)
                lineage.states.append(transition.simpler_state)
                current = proposal.state
                break
            walk.reject(lineage, rejection)
            if len(lineage.rejections) >= limits.max_rejections:
                break


def _why_stuck(features: set[str]) -> str:
    removable = sorted(f for f in features if CATALOGUE[f].removable)
    if not features:
        return "naive: the detector finds no optimization left"
    if not removable:
        return (f"no removal pass for what is left ({', '.join(sorted(features))}): "
                f"removing it needs an LLM brain")
    return f"no proposal passed the gate and the audit (left: {', '.join(removable)})"


def _stop(run: RunDir, lineage: Lineage, current: KernelState, reason: str,
          budget: bool = False) -> Lineage:
    """``budget``: a stop a resumed run with more budget continues from."""
    run.log(WalkStopped(reason=reason, budget=budget))
    return _finish(lineage, current, reason)


def _finish(lineage: Lineage, current: KernelState, reason: str) -> Lineage:
    features = present(current.source, current.language)
    lineage.stop_reason = reason
    lineage.remaining_features = sorted(features)
    lineage.naive_reached = not features
    if lineage.transitions:
        lineage.expert_ms = lineage.transitions[0].faster_ms
        lineage.final_ms = lineage.transitions[-1].simpler_ms
    return lineage
