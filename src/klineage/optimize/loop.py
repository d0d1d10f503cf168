"""The forward loop: gate the start kernel, then gate one candidate at a time from a method and keep
it only when it is correct and faster than the current best by the paired comparison.

Stops, in this order of checks before each candidate: the budget (``Meter.exhausted``), the
speed-of-light target (the best kernel reached ``sol_target`` of its bound), an LLM brain that
gave no new kernel ``MAX_IDLE`` times in a row, and nothing left to try (the rules brain). Every
stop is stated in ``stop_reason``.

With an LLM brain the brain is told, each time, the gate's result on the best kernel and every
attempt on it (``_feedback.History``), and a failed card is retried once with that feedback
(``Method.retry``). Every candidate is one ``candidate`` event in the run's log; ``resume``
replays them, feedback included, so a killed run continues without re-gating (gate reports are
also cached per fingerprint).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from klineage.config import Config
from klineage.editors import Editor, MeteredEditor, Proposal, get_editor, keep_exchanges
from klineage.errors import ConfigError
from klineage.executors import current
from klineage.gate import GateOptions, GateReport
from klineage.gate.session import device_of
from klineage.lineage._feedback import report_feedback
from klineage.optimize._context import expert_sources
from klineage.optimize._feedback import Attempt, History
from klineage.optimize.memory import MemoryStore
from klineage.optimize.methods import (
    METHODS,
    Candidate,
    KlineageMethod,
    Method,
    MethodInputs,
    describe,
    make_method,
)
from klineage.optimize.records import NO_KERNEL, OptimizeRecord
from klineage.runs import Budget, Event, Run, RunMeta, check_resume, resume_command
from klineage.skills.card import Trial
from klineage.skills.library import Library
from klineage.skills.retrieval import Choice
from klineage.source import unified_diff
from klineage.workload import KernelSpec, KernelState, Workload

__all__ = ["CandidateGated", "CandidateTaken", "OptimizeFinished", "OptimizeMeta", "OptimizeOptions",
           "OptimizeResult", "StartGated", "default_inputs", "optimize"]

SayFn = Callable[[str], None]
ExplainFn = Callable[[str, list[dict[str, Any]]], None]
RESULT_FILE = "optimize.json"
DEFAULT_BUDGET = Budget(gate_runs=8)
MAX_IDLE = 3
"""An LLM brain whose answers gave no new kernel this many times in a row stops the run (a
budget of gate runs alone would otherwise never end)."""


class OptimizeMeta(RunMeta):
    kind: Literal["optimize"] = "optimize"
    start: str
    start_state: str
    method: str
    seed: int
    sol_target: float
    memory: str | None = None
    """The memory method's store, so a resume reads the same one."""


class StartGated(Event):
    """The start kernel was gated: the first point of the curve."""

    event: Literal["start_gated"] = "start_gated"
    gate_runs: int
    wall_s: float
    calls: int = 0
    tokens: int = 0
    best_speedup: float


class CandidateGated(Event):
    """One candidate tried: its verdict against the best so far, and what the run had spent."""

    event: Literal["candidate"] = "candidate"
    key: str
    """What was tried (a card, a retry, a baseline's proposal): never tried twice."""
    best_speedup: float
    """Over the start kernel, after this step."""
    step: int
    candidate: str | None
    """The candidate state's fingerprint (None: no kernel came of it)."""
    skill: str | None
    feature: str | None
    verdict: str
    reason: str
    ratio: float | None
    """Paired time(candidate) / time(best), when it was compared."""
    kept: bool
    spent: dict[str, Any]
    diff: str
    feedback: str = ""
    """What the brain is told of a gated failure (verdict, first compiler errors, mismatch)."""


class CandidateTaken(Event):
    """A candidate about to be gated: a run stopped before its step was logged (gate jobs left
    waiting in a spool, a kill) finishes this candidate first on resume, without asking the
    method again, and without charging its gate run twice."""

    event: Literal["candidate_taken"] = "candidate_taken"
    key: str
    candidate: str
    """The candidate state's fingerprint (its source is in the run's states/)."""
    skill: str | None
    feature: str | None


class OptimizeFinished(Event):
    event: Literal["optimize_finished"] = "optimize_finished"
    stop_reason: str
    best_state: str
    best_speedup: float | None


@dataclass
class OptimizeResult:
    run: Run
    record: dict[str, Any]
    """The content of optimize.json."""
    best: KernelState
    choices: list[Choice] = field(default_factory=list)
    """Retrieval on the start kernel (klineage method), for --explain."""

    @property
    def best_speedup(self) -> float | None:
        return self.record["best_speedup"]

    @property
    def stop_reason(self) -> str:
        return self.record["stop_reason"]


def default_inputs(workload: Workload, library: Library | None, memory: MemoryStore | None = None,
                   method: str = "expert-source", say: SayFn | None = None) -> MethodInputs:
    """What ``method`` may see: the library's cards and findings, the memory store (less what
    it saw on this workload), and for the expert-source baseline only, the experts of the
    workload folders beside this one (one that does not load is skipped, and ``say`` told)."""
    cards = library.cards() if library is not None else []
    experts = []
    if method == "expert-source":
        siblings = sorted(p for p in workload.root.parent.iterdir() if (p / "workload.toml").is_file())
        experts = expert_sources(siblings, exclude_workload=workload.name, skip=say or (lambda _: None))
    return MethodInputs(cards=cards, memory=memory.without(workload.name) if memory else [],
                        experts=experts, findings=library.findings() if library is not None else [])


@dataclass(frozen=True)
class OptimizeOptions:
    """How one optimization runs (resolved: every default filled in)."""

    method: str = "klineage"
    """One of ``METHODS``."""
    brain: str = "rules"
    budget: Budget | None = None
    """None: ``DEFAULT_BUDGET`` for a new run; on resume, the budget the run was started with."""
    seed: int = 0
    """Seed of the baselines' random order."""
    sol_target: float = 0.9
    """Stop once the best kernel reaches this share of speed of light."""
    gate: GateOptions = field(default_factory=lambda: GateOptions(trials=5, compare_s=2.0))
    config: Config | None = None
    record: Path | None = None
    """Append every LLM exchange to this cassette."""
    replay: Path | None = None
    """Answer every LLM request from this cassette, offline."""
    memory: Path | None = None
    """The memory method's store (``klineage memory build``); required by that method."""


def optimize(workload: Workload, start: KernelSpec | None, library: Library | None,
             options: OptimizeOptions | None = None, runs_root: Path = Path("runs"),
             say: SayFn | None = None, resume: Path | None = None,
             inputs: MethodInputs | None = None, explain: ExplainFn | None = None) -> OptimizeResult:
    """Run (or resume) one optimization; returns the record written to ``optimize.json``.
    A resumed run keeps its method, seed, speed-of-light target and (unless ``library`` is
    given, which must then be the same) its library. ``explain`` gets the method and the
    retrieval on the start kernel (``Choice.to_json`` rows) before the first candidate."""
    options = options or OptimizeOptions()
    say = say or (lambda _: None)
    resumed = check_resume(resume, OptimizeMeta, workload, brain=options.brain, gate=options.gate,
                           library=library.root if library else None) if resume else None
    editor = get_editor(options.brain, options.config, record=options.record, replay=options.replay)
    if resumed is not None:
        recorded = Path(resumed.memory) if resumed.memory else None
        options = replace(options, method=resumed.method, seed=resumed.seed,
                          sol_target=resumed.sol_target, memory=options.memory or recorded)
        if library is None and resumed.library:
            library = Library.open(resumed.library)
    elif options.method not in METHODS:
        raise ConfigError(f"--method: unknown method {options.method!r} (one of {', '.join(METHODS)})")
    elif start is None:
        raise ConfigError("optimize: a new run needs a start kernel")
    if inputs is None:  # before any folder is made: a refused start leaves nothing behind
        if options.method == "memory" and options.memory is None:
            raise ConfigError("--method memory needs its memory: --memory DIR (build it with "
                              "`klineage memory build --like MINE_RUN ...`)")
        inputs = default_inputs(workload, library,
                                MemoryStore.load(options.memory) if options.memory else None,
                                options.method, say)
    if resume is not None and resumed is not None:
        run = Run.resume(resume, resumed, options.budget, say)
        start_state = KernelState.load(run.state_dir(resumed.start_state), workload)
    else:
        assert start is not None
        start_state = KernelState.from_spec(start)
        run = Run.create(runs_root, OptimizeMeta(
            **OptimizeMeta.about(workload), start=start.name, start_state=start_state.fingerprint,
            method=options.method, brain=options.brain, budget=options.budget or DEFAULT_BUDGET,
            seed=options.seed, sol_target=options.sol_target,
            library=str(library.root) if library else None,
            memory=str(options.memory) if options.memory else None,
            gate=options.gate.sizing()), say=say)
        start_state.materialize(run.state_dir(start_state.fingerprint), workload)
    keep_exchanges(editor, run.path)
    loop = _Loop(run, workload, start_state, library, options, editor, inputs)
    loop.explain = explain or (lambda _method, _rows: None)
    with run.stoppable(resume_command("optimize", run.path, str(workload.root), workload.quick,
                                      run.record.gate)):
        return loop.run_to_end()


class _Loop:
    def __init__(self, run: Run, workload: Workload, start: KernelState, library: Library | None,
                 options: OptimizeOptions, editor: Editor, inputs: MethodInputs):
        self.run, self.workload, self.start, self.library = run, workload, start, library
        self.sol_target, self.say = options.sol_target, run.say
        self.meter = run.meter
        self.gate = run.gate(workload, options.gate)
        self.brain = MeteredEditor(editor, self.meter)
        self.method: Method = make_method(options.method, self.brain, workload, inputs, options.seed)
        meta = run.record
        self.meta = {"workload": workload.name, "start": meta.start, "method": meta.method,
                     "brain": meta.brain, "budget": meta.budget.describe(), "seed": meta.seed}
        self._replay()

    def _replay(self) -> None:
        self.steps: list[dict[str, Any]] = []
        self.curve: list[dict[str, Any]] = [
            e.model_dump(exclude={"t", "event"}) for e in self.run.events(StartGated)[-1:]]
        self.best, self.chain = self.start, 1.0
        self.history = History()
        self.failed: Candidate | None = None
        """The last candidate, when it failed: ``Method.retry`` may have another go at it."""
        gated = self.run.events(CandidateGated)
        tried_on = set()
        for event in gated:
            self.steps.append(event.model_dump(exclude={"t", "event", "key", "best_speedup", "feedback"}))
            if event.feature:
                tried_on.add(f"on:{event.feature}@{self.best.fingerprint}")
            if event.kept and event.candidate:
                self.best = KernelState.load(self.run.state_dir(event.candidate), self.workload)
                self.chain = event.best_speedup
            if event.verdict not in NO_KERNEL:
                self.curve.append(self._point(event.spent, self.chain))
            self._remember(event.key, event.feature, event.skill, event.verdict,
                           event.feedback or event.reason, event.ratio, event.kept, event.diff)
        self.tried_states = {s["candidate"] for s in self.steps if s["candidate"]}
        self.in_flight = self._in_flight()
        self.tried = {e.key for e in gated} | {f"state:{s}" for s in self.tried_states} | tried_on
        """Keys of what was tried; ``state:<fingerprint>`` of every kernel gated, and
        ``on:<feature>@<best kernel's fingerprint>`` of every feature tried on a best kernel (a
        card or a pass): a method that proposes a pass again leaves out those."""

    def _in_flight(self) -> Candidate | None:
        """The candidate taken last, if the run stopped before its step was logged (a logged
        step's state is among those tried)."""
        taken = self.run.events(CandidateTaken)
        if not taken or taken[-1].candidate in self.tried_states:
            return None
        last = taken[-1]
        state = KernelState.load(self.run.state_dir(last.candidate), self.workload)
        return Candidate(last.key, last.feature, last.skill,
                         Proposal(state, last.feature, "improve", "taken before the run stopped"))

    def _remember(self, key: str, feature: str | None, skill: str | None, verdict: str,
                  reason: str, ratio: float | None, kept: bool, diff: str) -> None:
        """Feed one gated candidate into what the brain is told next."""
        attempt = Attempt(describe(key, feature), verdict, reason, ratio if verdict == "slower" else None,
                          diff)
        if kept:
            self.history.kept(attempt)
        else:  # a duplicate too: the brain should know it proposed a kernel already gated
            self.history.add(attempt)
        self.failed = None if kept or verdict == "duplicate" else Candidate(key, feature, skill)

    @staticmethod
    def _point(spent: dict[str, Any], best: float) -> dict[str, Any]:
        return {"gate_runs": spent["gate_runs"], "wall_s": round(spent["wall_s"], 3),
                "calls": spent["calls"], "tokens": spent["input_tokens"] + spent["output_tokens"],
                "best_speedup": best}

    def run_to_end(self) -> OptimizeResult:
        start_report = self.gate.check(self.start, profile=True)
        if not self.curve:
            point = self._point(self._spent(), 1.0)
            self.run.log(StartGated(**point))
            self.curve.append(point)
        choices = (self.method.choices(self.start, start_report)
                   if isinstance(self.method, KlineageMethod) else [])
        self.explain(self.run.record.method, [c.to_json() for c in choices])
        if not start_report.accepted:
            stop = f"the start kernel failed the gate: {start_report.verdict.value}: {start_report.reason}"
            return self._finish(stop, start_report, choices, failed=True)
        best_report = self.gate.check(self.best, profile=True)
        if self.in_flight is not None:  # gated (and charged) before the stop: its step comes first
            report = self._try(self.in_flight, best_report)
            best_report = report or best_report
        while (stop := self._stop_reason(best_report)) is None:
            feedback = self.history.text(best_report, self.chain, start_report.timing.median_s
                                         if start_report.timing else None)
            candidate = None
            if self.failed is not None:
                candidate = self.method.retry(self.best, best_report, self.failed, feedback, self.tried)
            candidate = candidate or self.method.next(self.best, best_report, feedback, self.tried)
            if candidate is not None:
                self._gate_ahead(candidate, best_report, feedback)
            if candidate is None:
                why = self.method.why_none(self.best)
                stop = "no candidate left to the best kernel" + (
                    f"; the insertion passes made none: {why}" if why else "")
                break
            report = self._try(candidate, best_report)
            if report is not None:
                best_report = report
        return self._finish(stop, best_report, choices)

    def _gate_ahead(self, first: Candidate, best_report: GateReport, feedback: str) -> None:
        """Where the executor has several timing slots and the brain does not learn (its next
        candidates follow from the best kernel and what was tried, and cost nothing), the
        candidates after this one are asked for now and gated side by side; the loop still takes
        them one at a time, charging each when its turn comes (``GateSession.gate_ahead``)."""
        if self.method.learning:
            return
        tried, ahead = {*self.tried, first.key}, [first]
        while len(ahead) < current().slots(device_of(self.gate.backend_for(self.best))):
            following = self.method.next(self.best, best_report, feedback, tried)
            if following is None:
                break
            tried.add(following.key)
            ahead.append(following)
        states = {c.proposal.state.fingerprint: c.proposal.state for c in ahead
                  if c.proposal is not None and c.proposal.state.fingerprint not in self.tried_states}
        self.gate.gate_ahead(list(states.values()), profile=True)

    def _stop_reason(self, best_report: GateReport) -> str | None:
        exhausted = self.meter.exhausted()
        if exhausted:
            return exhausted
        fraction = best_report.sol.fraction if best_report.sol else None
        if fraction is not None and fraction >= self.sol_target:
            return f"reached {fraction:.0%} of speed of light (target {self.sol_target:.0%})"
        idle = self.steps[-MAX_IDLE:]
        if len(idle) == MAX_IDLE and all(s["verdict"] in NO_KERNEL for s in idle):
            return f"the brain gave no new kernel in {MAX_IDLE} answers in a row"
        return None

    def _spent(self) -> dict[str, Any]:
        return dict(self.meter.spent.__dict__)

    def _try(self, candidate: Candidate, best_report: GateReport) -> GateReport | None:
        """Gate one candidate; returns the new best's report if it was kept."""
        self.tried.add(candidate.key)
        if candidate.feature:
            self.tried.add(f"on:{candidate.feature}@{self.best.fingerprint}")
        proposal = candidate.proposal
        if proposal is None:
            self._log(candidate, None, "no_proposal", candidate.note, None, False)
            return None
        state = proposal.state
        if state.fingerprint in self.tried_states:
            self._log(candidate, state, "duplicate", "the same kernel was already gated", None, False)
            return None
        self.tried_states.add(state.fingerprint)
        self.tried.add(f"state:{state.fingerprint}")
        self.gate.spec(state)  # its source in the run's states/ before the event names it
        self.run.log(CandidateTaken(key=candidate.key, candidate=state.fingerprint,
                                    skill=candidate.skill, feature=candidate.feature))
        self.say(f"gating {describe(candidate.key, candidate.feature)}")
        self.gate.compare_ahead(self.best, state)
        report = self.gate.check(state, profile=True)
        if not report.accepted:
            self._log(candidate, state, report.verdict.value, report.reason, None, False,
                      report_feedback(report))
            self._write_back(candidate, report.verdict.value, report.reason, None)
            return None
        comparison = self.gate.compare(self.best, state)
        kept = comparison.decision == "faster"
        reason = (f"paired time ratio {comparison.ratio:.3f} (95% CI {comparison.ci_low:.3f}–"
                  f"{comparison.ci_high:.3f}) vs the best: {comparison.decision}")
        if kept:
            self.chain /= comparison.ratio
        # Correct but not faster is "slower", here as in the library: a step that was not kept
        # was shown as "accepted", with the green badge of a kept one.
        verdict = "accepted" if kept else "slower"
        self._log(candidate, state, verdict, reason, comparison.ratio, kept)
        self._write_back(candidate, verdict, reason, 1 / comparison.ratio)
        if kept:
            self.best = state
            return report
        return None

    def _log(self, candidate: Candidate, state: KernelState | None, verdict: str, reason: str,
             ratio: float | None, kept: bool, feedback: str = "") -> None:
        spent = self._spent()
        diff = unified_diff(self.best.source, state.source) if state is not None else ""
        step = {"step": len(self.steps) + 1, "candidate": state.fingerprint if state else None,
                "skill": candidate.skill, "feature": candidate.feature, "verdict": verdict,
                "reason": reason, "ratio": ratio, "kept": kept, "spent": spent, "diff": diff}
        self.run.log(CandidateGated(key=candidate.key, best_speedup=self.chain, feedback=feedback,
                                    **step))
        self.steps.append(step)
        if verdict not in NO_KERNEL:
            self.curve.append(self._point(spent, self.chain))
        self._remember(candidate.key, candidate.feature, candidate.skill, verdict, feedback or reason,
                       ratio, kept, diff)
        self.say(f"{describe(candidate.key, candidate.feature)}: {verdict}"
                 f"{' (kept)' if kept else ''} — {reason.splitlines()[0] if reason else ''}")

    def _write_back(self, candidate: Candidate, verdict: str, reason: str,
                    effect: float | None) -> None:
        """klineage feeds every trial of a card back into the library (failures become risk)."""
        if candidate.skill is None or self.library is None:
            return
        card = next((c for c in self.method.inputs.cards if c.id == candidate.skill), None)
        held_out = card is None or self.workload.name not in {e.workload for e in card.effect}
        trial = Trial(target=f"{self.workload.name}/{self.run.record.start}", held_out=held_out,
                      verdict=verdict, effect_observed=effect, reason=reason)
        self.library.record_trial(candidate.skill, trial)

    def _finish(self, stop: str, best_report: GateReport, choices: list[Choice],
                failed: bool = False) -> OptimizeResult:
        speedup = None if failed else self._final_speedup()
        folder = self.run.path / "best"
        self.best.materialize(folder, self.workload)
        sol = best_report.sol.fraction if best_report.sol else None
        record = {**self.meta, "status": "failed" if failed else "ok",
                  "best_state": self.best.fingerprint, "best_kernel": str(folder / self.best.file_name),
                  "best_speedup": speedup, "sol_fraction": sol,
                  "sol_limiter": best_report.sol.limiter if best_report.sol else None,
                  "start_ms": _ms(self.gate.check(self.start, profile=True)),
                  "best_ms": _ms(best_report), "stop_reason": stop, "spent": self._spent(),
                  "context": self.method.context_json(), "steps": self.steps, "curve": self.curve,
                  "retrieval": [c.to_json() for c in choices]}
        record = OptimizeRecord.model_validate(record).model_dump(mode="json")
        self.run.write_json(RESULT_FILE, record)
        self.run.log(OptimizeFinished(stop_reason=stop, best_state=self.best.fingerprint,
                                      best_speedup=speedup))
        return OptimizeResult(self.run, record, self.best, choices)

    def _final_speedup(self) -> float:
        """Paired: time(start) / time(best), measured once more at the end (not charged)."""
        if self.best.fingerprint == self.start.fingerprint:
            return 1.0
        return 1 / self.gate.compare(self.start, self.best).ratio


def _ms(report: GateReport) -> float | None:
    return report.timing.median_s * 1e3 if report.timing else None

