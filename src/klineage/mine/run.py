"""``klineage mine``: backward walk → re-derivation → lift → admission → library.

The one place where the lineage and skills stages meet.

Every phase logs its decisions in the run's event log, and each phase reads the log first, so
``--resume`` continues a killed run from where it stopped without redoing accepted work.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from klineage.config import Config
from klineage.editors import MeteredEditor, get_editor, keep_exchanges
from klineage.errors import ConfigError
from klineage.gate import GateOptions
from klineage.gate.session import GateSession
from klineage.lineage.model import Lineage
from klineage.lineage.rederive import rederive_lineage
from klineage.lineage.walk import WalkLimits, backward_walk
from klineage.runs import Budget, Event, Run, RunDir, RunMeta, Spent, check_resume, resume_command
from klineage.skills.admission import Context, admit
from klineage.skills.card import SkillCard
from klineage.skills.findings import findings_of
from klineage.skills.library import Library
from klineage.skills.lift import lift_lineage
from klineage.workload import KernelSpec, KernelState, Workload, load_kernel, load_workload

__all__ = ["MineMeta", "MineOptions", "MineResult", "default_admission_workloads", "mine"]

SayFn = Callable[[str], None]


class MineMeta(RunMeta):
    kind: Literal["mine"] = "mine"
    expert: str
    expert_state: str
    """The fingerprint of the expert's state (the walk starts from it)."""


class CardAdmitted(Event):
    """A card's admission trials are done (admitted or not: the card says)."""

    event: Literal["card_admission"] = "card_admission"
    card: SkillCard


class MineFinished(Event):
    event: Literal["mine_finished"] = "mine_finished"
    summary: dict[str, Any]
    """``MineResult.summary()``, also written to summary.json."""


@dataclass(frozen=True)
class MineOptions:
    brain: str = "rules"
    limits: WalkLimits = field(default_factory=WalkLimits)
    gate: GateOptions = field(default_factory=lambda: GateOptions(trials=5, compare_s=2.0))
    admit_on: tuple[Path, ...] | None = None
    """Workload folders whose naive kernels are admission contexts (None: the siblings)."""
    max_trials: int = 3
    budget: Budget | None = None
    """None: unlimited for a new run; on resume, the budget the run was started with."""
    config: Config | None = None
    """Brain settings (None: ``load_config()``)."""
    record: Path | None = None
    """Append every LLM exchange to this cassette."""
    replay: Path | None = None
    """Answer every LLM request from this cassette instead of the network."""


@dataclass
class MineResult:
    run: Run
    lineage: Lineage
    cards: list[SkillCard]
    notes: list[str]
    speedup: float | None
    """Paired: time(final simpler state) / time(expert)."""
    library: Path | None
    spent: Spent = field(default_factory=Spent)
    budget_reached: str | None = None

    def summary(self) -> dict[str, Any]:
        lineage = self.lineage
        return {
            "run": str(self.run.path), "workload": lineage.workload,
            "steps_accepted": len(lineage.transitions), "steps_rejected": len(lineage.rejections),
            "stop_reason": lineage.stop_reason, "naive_reached": lineage.naive_reached,
            "remaining_features": lineage.remaining_features,
            "features_removed": [t.feature for t in lineage.transitions],
            "lineage_speedup": self.speedup,
            "cards_lifted": len(self.cards), "cards_admitted": sum(c.admitted for c in self.cards),
            "cards": [{"id": c.id, "name": c.name, "feature": c.feature, "admitted": c.admitted,
                       "effect": c.geomean_ratio()} for c in self.cards],
            "notes": self.notes, "library": str(self.library) if self.library else None,
            "spent": asdict(self.spent), "budget_reached": self.budget_reached,
        }


def default_admission_workloads(workload: Workload) -> tuple[Path, ...]:
    """Sibling workload folders (same parent) with a naive kernel: held-out contexts."""
    parent = workload.root.parent
    return tuple(sorted(p for p in parent.iterdir()
                        if p != workload.root and (p / "workload.toml").is_file()
                        and (p / "kernels" / "naive").is_dir()))


def mine(workload: Workload, expert: KernelSpec | None, runs_root: Path, library: Path | None,
         options: MineOptions = MineOptions(), resume: Path | None = None,
         say: SayFn | None = None) -> MineResult:
    resumed = check_resume(resume, MineMeta, workload, brain=options.brain,
                           library=library, gate=options.gate) if resume else None
    if resume is not None and resumed is not None:
        _refuse_finished(resume, resumed, options.budget)
    editor = get_editor(options.brain, options.config, record=options.record, replay=options.replay)
    if resume is not None and resumed is not None:
        run = Run.resume(resume, resumed, options.budget, say)
        library = library or (Path(resumed.library) if resumed.library else None)
        expert_state = KernelState.load(run.state_dir(resumed.expert_state), workload)
    else:
        if expert is None:
            raise ConfigError("mine: a new run needs an expert kernel")
        expert_state = KernelState.from_spec(expert)
        run = Run.create(runs_root, MineMeta(
            **MineMeta.about(workload), expert=expert.name, brain=options.brain,
            expert_state=expert_state.fingerprint, library=str(library) if library else None,
            budget=options.budget or Budget(), gate=options.gate.sizing()), say=say)
    keep_exchanges(editor, run.path)
    brain = MeteredEditor(editor, run.meter)
    with run.stoppable(resume_command("mine", run.path, str(workload.root), workload.quick,
                                      run.record.gate)):
        return _mine(workload, expert_state, run, library, options, brain)


def _refuse_finished(path: Path, meta: MineMeta, budget: Budget | None) -> None:
    """A finished mine is never measured again or overwritten; one its budget stopped goes on
    with a new budget (its walk, re-derivations and lift continue where they were)."""
    finished = RunDir.open(path).events(MineFinished)
    if not finished:
        return
    if finished[-1].summary.get("budget_reached"):
        if budget is not None and budget != meta.budget:
            return
        raise ConfigError(f"{path}: this mine run stopped at its budget ({meta.budget.describe()}); "
                          f"give a new --budget to continue it")
    raise ConfigError(f"{path}: this mine run is finished, and its results stay as they are "
                      f"(klineage report {path} shows them); start a new run to measure again")


def _mine(workload: Workload, expert_state: KernelState, run: Run, library: Path | None,
          options: MineOptions, brain: MeteredEditor) -> MineResult:
    gate = run.gate(workload, options.gate)
    lineage = backward_walk(workload, expert_state, brain, gate, run, options.limits, run.say)
    lineage = rederive_lineage(workload, lineage, brain, gate, run, run.say)
    speedup = _lineage_speedup(gate, run, workload, lineage, expert_state)
    run.write_json("lineage.json", lineage.model_dump(mode="json"))
    cards, notes = lift_lineage(lineage, workload, brain)
    cards = _admit_all(run, cards, _contexts(run, workload, options), brain, options, run.say)
    findings = findings_of(lineage, workload)
    run_library = Library.open(run.path, create=True)  # runs/<id>/skills/<card id>/
    for card in cards:
        run_library.add(card)
    run_library.add_findings(findings)
    if library is not None:
        shared = Library.open(library, create=True)
        cards = [shared.add(card) for card in cards]
        shared.add_findings(findings)
    result = MineResult(run, lineage, cards, notes, speedup, library, run.meter.spent,
                        run.meter.exhausted())
    run.write_json("summary.json", result.summary())
    run.log(MineFinished(summary=result.summary()))
    return result


def _lineage_speedup(gate: GateSession, run: Run, workload: Workload, lineage: Lineage,
                     expert: KernelState) -> float | None:
    """Paired, the simplest state reached against the expert; the lineage's two end times come
    from the same comparison, so the report's naive → expert speedup is their ratio."""
    if not lineage.transitions:
        return None
    final = KernelState.load(run.state_dir(lineage.states[-1]), workload)
    comparison = gate.compare(final, expert)
    if comparison.baseline_median_s and comparison.candidate_median_s:
        lineage.final_ms = comparison.baseline_median_s * 1e3
        lineage.expert_ms = comparison.candidate_median_s * 1e3
    return 1 / comparison.ratio


def _contexts(run: Run, workload: Workload, options: MineOptions) -> list[Context]:
    folders = options.admit_on if options.admit_on is not None else default_admission_workloads(workload)
    contexts = []
    for folder in folders:
        other = load_workload(folder, quick=workload.quick)  # held-out contexts at the same sizing
        naive = KernelState.from_spec(load_kernel(other, "naive"))
        contexts.append(Context(workload=other, state=naive, label=f"{other.name}/naive",
                                gate=run.gate(other, options.gate, progress=lambda s, d: None)))
    return contexts


def _admit_all(run: Run, cards: list[SkillCard], contexts: list[Context], brain: MeteredEditor,
               options: MineOptions, say: SayFn) -> list[SkillCard]:
    done = {e.card.id: e.card for e in run.events(CardAdmitted)}
    result = []
    for card in cards:
        if card.id not in done and brain.meter.exhausted():
            result.append(card)  # not tried: a resumed run with more budget admits it
            continue
        if card.id not in done:
            done[card.id] = admit(card, contexts, brain, options.max_trials, say)
            run.log(CardAdmitted(card=done[card.id]))
        result.append(done[card.id])
    return result
