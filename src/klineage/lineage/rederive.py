"""Re-derivation: produce each forward step again from the simpler kernel, and gate it.

The brain gets the simpler kernel, the feature's name and the tunables that worked, never the
diff to reverse. A step counts as reproduced when the re-derived kernel passes the gate and runs
at least 0.99x as fast as the faster state by the paired comparison (not shown slower, and the
median ratio within 1%), or is the faster state itself, rebuilt exactly (same fingerprint: no
timing of a kernel against itself decides anything). A step that cannot be reproduced yields no
skill and says why.
"""

from __future__ import annotations

from collections.abc import Callable

from klineage.editors import EditContext, Editor, Proposal
from klineage.gate.session import GateSession
from klineage.lineage._feedback import report_feedback
from klineage.lineage.model import Lineage, Rederivation, Rederived, Transition
from klineage.runs import RunDir
from klineage.workload import KernelState, Workload

__all__ = ["MAX_ATTEMPTS", "SPEED_FLOOR", "rederive_lineage"]

MAX_ATTEMPTS = 3
"""Brain calls per step: a non-exhaustive brain (an LLM) is asked again with the gate's feedback."""

SPEED_FLOOR = 0.99
"""The re-derived kernel must reach this fraction of the faster state's speed."""


def rederive_lineage(workload: Workload, lineage: Lineage, brain: Editor, gate: GateSession,
                     run: RunDir, say: Callable[[str], None] | None = None) -> Lineage:
    say = say or (lambda _: None)
    done = {e.transition: e.rederivation for e in run.events(Rederived)}
    for transition in lineage.transitions:
        if transition.id not in done and gate.meter is not None and gate.meter.exhausted():
            continue  # left for a resumed run with more budget; lift says "not tried"
        if transition.id not in done:
            say(f"re-deriving {transition.feature} (step {transition.step})")
            done[transition.id] = _rederive(workload, transition, brain, gate, run)
            run.log(Rederived(transition=transition.id, rederivation=done[transition.id]))
        transition.rederivation = done[transition.id]
    return lineage


def _rederive(workload: Workload, transition: Transition, brain: Editor, gate: GateSession,
              run: RunDir, attempts: int = MAX_ATTEMPTS) -> Rederivation:
    simpler = KernelState.load(run.state_dir(transition.simpler_state), workload)
    faster = KernelState.load(run.state_dir(transition.faster_state), workload)
    notes: list[str] = []
    seen: set[str] = set()
    feedback = ""
    measured: Rederivation | None = None  # the last correct attempt's numbers: a finding
    for _ in range(attempts):
        answer = brain.rederive(simpler, transition.feature, EditContext(workload=workload,
                                feedback=feedback), transition.tunables)
        notes.extend(answer.failures)
        fresh = [p for p in answer.proposals if p.state.fingerprint not in seen]
        for proposal in fresh:
            seen.add(proposal.state.fingerprint)
            report = gate.check(proposal.state)
            if not report.accepted:
                notes.append(f"re-derived kernel {report.verdict.value}: {report.reason}")
                feedback = report_feedback(report)
                continue
            result = measured = _measured(gate, simpler, faster, proposal)
            if result.reproduced:
                return result
            notes.append(result.note)
            feedback = f"correct, but {result.note}"
        if getattr(brain, "exhaustive", False) or (not fresh and not answer.failures) or (
                gate.meter is not None and gate.meter.exhausted()):
            break
        feedback = feedback or "; ".join(answer.failures)
    note = "; ".join(notes) or "no proposal"
    if measured is not None:
        return measured.model_copy(update={"note": note})
    return Rederivation(reproduced=False, note=note)


def _measured(gate: GateSession, simpler: KernelState, faster: KernelState,
              proposal: Proposal) -> Rederivation:
    versus_simpler = gate.compare(simpler, proposal.state)
    if proposal.state.fingerprint == faster.fingerprint:
        # The faster state rebuilt exactly (same sources, flags and toolchain): the same kernel,
        # so as fast by identity. Timing it against itself measures only noise; on the H200 a
        # 0.5 s comparison once called the add_rmsnorm expert 0.9% slower than itself.
        as_fast, ratio, ci_high, note = True, 1.0, 1.0, "reproduced: the faster state itself, rebuilt exactly"
    else:
        versus_faster = gate.compare(faster, proposal.state)
        as_fast = versus_faster.decision != "slower" and versus_faster.ratio <= 1 / SPEED_FLOOR
        ratio, ci_high = versus_faster.ratio, versus_faster.ci_high
        note = ("reproduced" if as_fast else f"correct but slower than the faster state (time ratio "
                f"{ratio:.3f}, 95% CI up to {ci_high:.3f})")
    return Rederivation(
        reproduced=as_fast, state=proposal.state.fingerprint,
        diff=proposal.edit.diff if proposal.edit else "",
        ratio_vs_faster=ratio, ci_high_vs_faster=ci_high,
        speedup_over_simpler=1 / versus_simpler.ratio,
        speedup_ci_over_simpler=(1 / versus_simpler.ci_high, 1 / versus_simpler.ci_low),
        simpler_ms=_ms(versus_simpler.baseline_median_s),
        rederived_ms=_ms(versus_simpler.candidate_median_s), note=note,
    )


def _ms(seconds: float | None) -> float | None:
    return seconds * 1e3 if seconds is not None else None
