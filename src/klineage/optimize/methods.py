"""The methods the forward loop compares: where the next candidate comes from.

klineage       retrieval order over the library; the brain materializes one card at a time
none           the brain improves from gate feedback only (rules brain: insertion passes in a
               seeded random order)
memory         the brain improves with summarised past slow→fast pairs as free text, no
               preconditions (rules brain: ranked by past success counts per feature)
expert-source  the brain improves with raw expert sources as context (rules brain: ranked by how
               many expert sources show the feature)

A method hands out one candidate at a time and never the same key twice (a card id, or a
feature for the improve-based baselines); the loop gates it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from klineage.editors import EditContext, Editor, Proposal
from klineage.errors import ConfigError
from klineage.gate.report import GateReport
from klineage.optimize._context import ExpertSource, MemoryPair, memory_text, success_counts
from klineage.skills.card import SkillCard
from klineage.skills.retrieval import Choice, retrieve
from klineage.workload import KernelState, Workload

__all__ = ["METHODS", "Candidate", "Method", "MethodInputs", "make_method"]

METHODS = ("klineage", "none", "memory", "expert-source")


@dataclass(frozen=True)
class Candidate:
    key: str
    """What the method will not hand out again: 'skill:<id>' or 'feature:<name>'."""
    feature: str | None
    skill: str | None = None
    proposal: Proposal | None = None
    note: str = ""
    """Why there is no proposal (the brain's failures), when there is none."""


@dataclass
class MethodInputs:
    """What a method may see; a bench filters these per workload (leave-one-out)."""

    cards: list[SkillCard] = field(default_factory=list)
    memory: list[MemoryPair] = field(default_factory=list)
    experts: list[ExpertSource] = field(default_factory=list)


class Method:
    """Base: hands out candidates for the current best state, each key once."""

    name = "method"

    def __init__(self, brain: Editor, workload: Workload, inputs: MethodInputs, seed: int):
        self.brain, self.workload, self.inputs = brain, workload, inputs
        self.seed = seed

    def next(self, state: KernelState, profile: GateReport | None, feedback: str,
             tried: set[str]) -> Candidate | None:
        raise NotImplementedError

    def context_json(self) -> dict[str, Any]:
        """What the method was shown, for the run record."""
        return {}


class KlineageMethod(Method):
    name = "klineage"

    def choices(self, state: KernelState, profile: GateReport | None) -> list[Choice]:
        return retrieve(self.inputs.cards, state, self.workload, profile)

    def next(self, state, profile, feedback, tried):
        for choice in self.choices(state, profile):
            key = f"skill:{choice.card.id}"
            if not choice.chosen or key in tried:
                continue
            ctx = EditContext(workload=self.workload, feedback=feedback)
            answer = self.brain.materialize(state, choice.card, ctx)
            proposal = answer.proposals[0] if answer.proposals else None
            return Candidate(key, choice.card.feature, choice.card.id, proposal,
                             "; ".join(answer.failures) or ("" if proposal else "no proposal"))
        return None

    def context_json(self):
        return {"cards": [c.id for c in self.inputs.cards]}


class _ImproveMethod(Method):
    """Baselines: one ``improve`` call per state; the rules brain's proposals are ordered here."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._answers: dict[str, list[Proposal]] = {}

    def extra(self) -> dict[str, Any]:
        return {}

    def order(self, proposals: list[Proposal]) -> list[Proposal]:
        """Seeded shuffle: ties of the subclasses' rankings are broken at random too."""
        shuffled = list(proposals)
        random.Random(self.seed).shuffle(shuffled)
        return shuffled

    def next(self, state, profile, feedback, tried):
        if state.fingerprint not in self._answers:
            from klineage.source import present

            ctx = EditContext(workload=self.workload, feedback=feedback, extra=self.extra(),
                              features=tuple(sorted(present(state.source, state.language))))
            answer = self.brain.improve(state, ctx)
            proposals = answer.proposals
            self._answers[state.fingerprint] = (self.order(proposals) if self.brain.name == "rules"
                                                else list(proposals))
        for proposal in self._answers[state.fingerprint]:
            key = f"feature:{proposal.feature or proposal.state.fingerprint}"
            if key not in tried:
                return Candidate(key, proposal.feature, None, proposal)
        return None


class NoneMethod(_ImproveMethod):
    name = "none"


class MemoryMethod(_ImproveMethod):
    name = "memory"

    def extra(self):
        return {"memory": memory_text(self.inputs.memory)}

    def order(self, proposals):
        counts = success_counts(self.inputs.memory)
        return sorted(super().order(proposals), key=lambda p: -counts.get(p.feature or "", 0))

    def context_json(self):
        return {"memory": [p.to_json() for p in self.inputs.memory]}


class ExpertSourceMethod(_ImproveMethod):
    name = "expert-source"

    def extra(self):
        return {"expert_source": "\n\n".join(f"/* expert kernel of {e.workload} */\n{e.source}"
                                             for e in self.inputs.experts)}

    def order(self, proposals):
        shown = [e.features() for e in self.inputs.experts]
        return sorted(super().order(proposals),
                      key=lambda p: -sum(p.feature in features for features in shown))

    def context_json(self):
        return {"experts": [e.workload for e in self.inputs.experts]}


_CLASSES: dict[str, type[Method]] = {"klineage": KlineageMethod, "none": NoneMethod,
                                     "memory": MemoryMethod, "expert-source": ExpertSourceMethod}


def make_method(name: str, brain: Editor, workload: Workload, inputs: MethodInputs,
                seed: int) -> Method:
    """``brain`` is metered by the caller (``editors.MeteredEditor``)."""
    if name not in _CLASSES:
        raise ConfigError(f"--method: unknown method {name!r} (one of {', '.join(METHODS)})")
    return _CLASSES[name](brain, workload, inputs, seed)
