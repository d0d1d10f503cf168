"""Leave-one-out: what each method may see when the bench optimizes workload W.

Nobody sees W's own expert or anything measured on W:
- klineage gets each card as it would be had W never been mined: W's effects, transitions, gate
  reports, trials and op are removed; a card left with no effect is dropped, and a card stays
  admitted only when a passing held-out trial on another workload remains; of the library's
  findings it gets those measured on other workloads;
- memory gets only what its store observed on other workloads (the store is built before the
  bench and never written during it, so repeats and methods cannot learn from each other);
- klineage-nowhen gets klineage's cards, stripped of their "when" by the method itself;
- expert-source gets the expert sources of the suite's other workloads.
"""

from __future__ import annotations

from pathlib import Path

from klineage.errors import ConfigError
from klineage.optimize import MethodInputs
from klineage.optimize._context import expert_sources
from klineage.optimize.memory import MemoryStore
from klineage.skills.card import Evidence, SkillCard
from klineage.skills.findings import Finding
from klineage.workload import Workload

__all__ = ["leave_one_out", "suite_workloads", "without_workload"]


def suite_workloads(suite: Path) -> list[Path]:
    """A folder of workload folders, or one workload folder."""
    if (suite / "workload.toml").is_file():
        return [suite]
    found = sorted(p for p in suite.iterdir() if (p / "workload.toml").is_file()) if suite.is_dir() else []
    if not found:
        raise ConfigError(f"{suite}: not a workload folder and holds no workload folders")
    return found


def without_workload(card: SkillCard, workload: str, op: str | None = None) -> SkillCard | None:
    """The card with every trace of ``workload`` (and its ``op`` in the scope) removed, or None
    when nothing else grounds it."""
    effects = [e for e in card.effect if e.workload != workload]
    if not effects:
        return None
    prefix = f"{workload}:"
    trials = [t for t in card.verification if t.target.split("/")[0] != workload]
    kept_reports = set(card.evidence.gate_reports) if len(effects) == len(card.effect) else set()
    evidence = Evidence(transitions=[t for t in card.evidence.transitions if not t.startswith(prefix)],
                        gate_reports=[r for r in card.evidence.gate_reports if r in kept_reports])
    ops = [o for o in card.scope.ops if o not in (workload, op)]
    return card.model_copy(update={
        "effect": effects, "verification": trials, "evidence": evidence,
        "scope": card.scope.model_copy(update={"ops": ops}),
        "admitted": card.admitted and any(t.held_out and t.passed for t in trials)})


def leave_one_out(cards: list[SkillCard], workload: Workload, suite: list[Path],
                  memory: MemoryStore | None = None,
                  findings: list[Finding] = ()) -> MethodInputs:
    """What the methods may see when optimizing ``workload``."""
    name = workload.name
    filtered = [c for c in (without_workload(card, name, workload.op) for card in cards)
                if c is not None]
    return MethodInputs(cards=filtered,
                        memory=memory.without(name) if memory else [],
                        experts=expert_sources(suite, exclude_workload=name),
                        findings=[f for f in findings if f.workload != name])
