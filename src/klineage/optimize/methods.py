"""The methods the forward loop compares: where the next candidate comes from.

klineage         retrieval order over the library; the brain materializes one card at a time
                 (rules brain: then its insertion passes, ordered by the library's findings on
                 a kernel like this one: measured faster elsewhere first, no evidence next (in
                 the decision table's order), then the tunable sweep, no effect and slower last)
klineage-nowhen  the ablation of the "when": the same cards with preconditions, risk, scope and
                 verification removed (intent, anchor, carrier only), so retrieval can no longer
                 tell where a card is sound
none             the brain improves from gate feedback only (rules brain: insertion passes in a
                 seeded random order)
memory           the brain improves with the memory its own forward runs on the training
                 workloads built (``optimize.memory``): slow→fast pairs and failures as free text,
                 no preconditions (rules brain: ranked by remembered success counts per feature)
rules-table      the brain improves with a fixed expert-written decision table (``_table``):
                 bottleneck and present features → allowed and forbidden techniques (rules brain:
                 allowed ones first in table order, forbidden ones never)
expert-source    the brain improves with raw expert sources as context (rules brain: ranked by how
                 many expert sources show the feature)

A method hands out one candidate at a time and never the same key twice. With the rules brain
each method's order is deterministic and it ends when nothing is left. With an LLM brain a method
spends whatever budget is left: klineage, after its single cards, asks for the retrieved cards
together, then keeps improving from the best kernel with those cards as context; a failed card
is retried once with the gate's feedback; the baselines keep improving from the gate's feedback.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

from klineage.editors import EditContext, Editor, Proposal
from klineage.errors import ConfigError
from klineage.gate.report import GateReport
from klineage.lineage._feedback import trim_lines
from klineage.optimize._context import ExpertSource
from klineage.optimize._table import table_for, table_text
from klineage.optimize.memory import Observation, memory_text, success_counts
from klineage.skills.card import Scope, SkillCard
from klineage.skills.findings import Finding, rank_features
from klineage.skills.retrieval import Choice, retrieve
from klineage.source import present, removal_edits
from klineage.source.tunables import TUNABLES, drawn, neighbours
from klineage.workload import KernelState, Workload

__all__ = ["METHODS", "Candidate", "Method", "MethodInputs", "make_method", "without_when"]

METHODS = ("klineage", "klineage-nowhen", "none", "memory", "rules-table", "expert-source")


@dataclass(frozen=True)
class Candidate:
    key: str
    """What the method will not hand out again: 'skill:<id>', 'joint:<state>', 'retry:<key>',
    'improve:<state>:<n>', 'feature:<name>' or 'tune:<id>:<params>'."""
    feature: str | None
    skill: str | None = None
    proposal: Proposal | None = None
    note: str = ""
    """Why there is no proposal (the brain's failures), when there is none."""


@dataclass
class MethodInputs:
    """What a method may see; a bench filters these per workload (leave-one-out)."""

    cards: list[SkillCard] = field(default_factory=list)
    memory: list[Observation] = field(default_factory=list)
    experts: list[ExpertSource] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    """What the mines measured for each step, card or not (klineage only)."""


def describe(key: str, feature: str | None) -> str:
    """How a candidate was made, for the brain's feedback and the logs."""
    kind, _, rest = key.partition(":")
    if kind == "retry":
        return f"retry of {describe(rest, feature)}"
    named = f" ({feature})" if feature else ""
    if kind == "tune":
        card, _, params = rest.partition(":")
        return f"card {card[:12]}{named} with {params}"
    return {"skill": f"card {rest[:12]}{named}", "joint": "the cards together" + named,
            "improve": "improvement" + named,
            "again": f"{feature or rest} again, on a new best kernel"}.get(kind, feature or key)


class Method:
    """Base: hands out candidates for the current best state, each key once."""

    name = "method"

    def __init__(self, brain: Editor, workload: Workload, inputs: MethodInputs, seed: int):
        self.brain, self.workload, self.inputs = brain, workload, inputs
        self.seed = seed
        self.learning = brain.name != "rules"
        """An LLM (or agent) brain: the method keeps asking until the budget ends."""
        self._answers: dict[str, list[Proposal]] = {}
        self._refused: dict[str, list[str]] = {}

    def next(self, state: KernelState, profile: GateReport | None, feedback: str,
             tried: set[str]) -> Candidate | None:
        raise NotImplementedError

    def retry(self, state: KernelState, profile: GateReport | None, failed: Candidate,
              feedback: str, tried: set[str]) -> Candidate | None:
        """Another go at a failed candidate with the gate's feedback (None: not this method's)."""
        return None

    def why_none(self, state: KernelState) -> str:
        """Why the insertion passes made no candidate for ``state`` ('' when none was asked)."""
        return "; ".join(trim_lines(reason, 1, 160) for reason in self._refused.get(state.fingerprint, []))

    def knowledge(self, state: KernelState, profile: GateReport | None) -> str:
        """What the method gives the brain beyond the workload, the kernel and the feedback."""
        return "Nothing beyond the workload, the kernel and the gate's feedback."

    def context_json(self) -> dict[str, Any]:
        """What the method was shown, for the run record."""
        return {}

    def order(self, proposals: list[Proposal], state: KernelState,
              profile: GateReport | None) -> list[Proposal]:
        """Seeded shuffle: ties of the subclasses' rankings are broken at random too."""
        shuffled = list(proposals)
        random.Random(self.seed).shuffle(shuffled)
        return shuffled

    def _next_insertion(self, state: KernelState, profile: GateReport | None, feedback: str,
                        tried: set[str], skip: set[str] = frozenset(),
                        only: set[str] | None = None, again: bool = False) -> Candidate | None:
        """The rules brain's insertion passes on this state, one ``improve`` call per state, in
        ``order``; features in ``skip`` (tried here already another way), and those not in
        ``only`` where it is given, are left out. ``again``: a pass tried before in the run is
        tried once more on this state, unless it (or a card of it) was tried on this state or
        its kernel here was gated already."""
        if state.fingerprint not in self._answers:
            answer = self.brain.improve(state, self._context(state, profile, feedback))
            self._answers[state.fingerprint] = self.order(answer.proposals, state, profile)
            self._refused[state.fingerprint] = answer.failures
        for proposal in self._answers[state.fingerprint]:
            name = proposal.feature or proposal.state.fingerprint
            key = f"again:{name}@{state.fingerprint}" if again else f"feature:{name}"
            wanted = only is None or proposal.feature in only
            gated = again and (f"state:{proposal.state.fingerprint}" in tried
                               or f"on:{proposal.feature}@{state.fingerprint}" in tried)
            if key not in tried and proposal.feature not in skip and wanted and not gated:
                return Candidate(key, proposal.feature, None, proposal)
        return None

    def _improve(self, state: KernelState, profile: GateReport | None, feedback: str,
                 tried: set[str]) -> Candidate:
        """One improve call from the current best: an LLM brain asks again each time."""
        prefix = f"improve:{state.fingerprint}:"
        number = sum(k.startswith(prefix) for k in tried) + 1
        answer = self.brain.improve(state, self._context(state, profile, feedback))
        proposal = answer.proposals[0] if answer.proposals else None
        return Candidate(f"{prefix}{number}", proposal.feature if proposal else None, None, proposal,
                         "; ".join(answer.failures) or ("" if proposal else "no proposal"))

    def _context(self, state: KernelState, profile: GateReport | None, feedback: str) -> EditContext:
        return EditContext(workload=self.workload, feedback=feedback,
                           extra={"knowledge": self.knowledge(state, profile),
                                  "tunables": self.tunables(state)},
                           features=tuple(sorted(present(state.source, state.language))))

    def tunables(self, state: KernelState) -> dict[str, dict[str, Any]]:
        """The parameters the rules brain's passes take on ``state`` (none: their defaults)."""
        return {}


def _limiter(profile: GateReport | None) -> str | None:
    return profile.sol.limiter if profile is not None and profile.sol is not None else None


class KlineageMethod(Method):
    name = "klineage"

    def choices(self, state: KernelState, profile: GateReport | None) -> list[Choice]:
        return retrieve(self.inputs.cards, state, self.workload, profile)

    def next(self, state, profile, feedback, tried):
        chosen = [c.card for c in self.choices(state, profile) if c.chosen]
        for card in chosen:
            if f"skill:{card.id}" not in tried:
                return self._materialize(state, card, feedback, f"skill:{card.id}")
        if not self.learning:
            # The cards are spent. Then, in order: the passes the mines measured faster
            # elsewhere; the same passes and the cards' once more, if this best kernel is a new
            # one (a result holds for the kernel it was measured on: on sgemm `omp simd` was
            # slower before packing and 4.5x faster after it); those with no evidence against
            # them on a kernel like this one; the values next to a card's (the expert chose the
            # card's value, so a neighbour is a refinement expected to gain less: on the H200 each
            # of 3 such retunings was slower, and the run it took was the one restrict needed);
            # last, the passes measured to bring nothing here.
            skip = {c.feature for c in chosen}
            ranked = rank_features(self.inputs.findings, present(state.source, state.language))
            measured = {f for f, (tier, _) in ranked.items() if tier == 0}
            doubtful = {f for f, (tier, _) in ranked.items() if tier > 1}
            return (self._next_insertion(state, profile, feedback, tried, skip=skip, only=measured)
                    or self._next_insertion(state, profile, feedback, tried, only=measured | skip,
                                            again=True)
                    or self._next_insertion(state, profile, feedback, tried, skip=skip | doubtful)
                    or self._sweep(state, feedback, tried)
                    or self._next_insertion(state, profile, feedback, tried, skip=skip))
        if len(chosen) >= 2 and f"joint:{state.fingerprint}" not in tried:
            return self._materialize(state, chosen, feedback, f"joint:{state.fingerprint}")
        return self._improve(state, profile, feedback, tried)

    def retry(self, state, profile, failed, feedback, tried):
        key = f"retry:{failed.key}"
        if not self.learning or key in tried or not failed.key.startswith(("skill:", "joint:")):
            return None
        chosen = [c.card for c in self.choices(state, profile) if c.chosen]
        cards = ([c for c in self.inputs.cards if c.id == failed.skill] if failed.skill else chosen)
        if not cards:
            return None
        return self._materialize(state, cards[0] if failed.skill else cards, feedback, key)

    def _sweep(self, state: KernelState, feedback: str, tried: set[str]) -> Candidate | None:
        """The second stage of the tuner: for each card tried, its pass with one tunable moved
        one step from the expert's value, on the best kernel without the card's feature (the
        loop keeps it only if it beats the best). Derived from ``tried`` and the state alone, so
        a resumed run sweeps as an uninterrupted one would."""
        for card in self.inputs.cards:
            if card.rewrite is None or f"skill:{card.id}" not in tried:
                continue
            for params in neighbours(card.feature, card.rewrite.params):
                key = f"tune:{card.id}:{json.dumps(params, sort_keys=True, default=str)}"
                if key in tried:
                    continue
                base = _without(state, card.feature)
                if base is None:
                    return Candidate(key, card.feature, None, None,
                                     f"{card.feature} cannot be removed from the best kernel to retune it")
                tuned = card.model_copy(update={"rewrite": card.rewrite.model_copy(
                    update={"params": params})})
                found = self._materialize(base, tuned, feedback, key)
                return Candidate(key, card.feature, None, found.proposal, found.note)
        return None

    def order(self, proposals, state, profile):
        """By the findings on a kernel like this one; where they say nothing, by the decision
        table's order for the kernel's limiter (the field's prior, which rules-table follows)."""
        features = present(state.source, state.language)
        ranked = rank_features(self.inputs.findings, features)
        allowed, forbidden, _ = table_for(_limiter(profile), features, state.language)
        prior = {name: i for i, name in enumerate(allowed)}
        never = (1, 0.0)
        return sorted(super().order(proposals, state, profile),
                      key=lambda p: (*ranked.get(p.feature or "", never),
                                     p.feature in forbidden, prior.get(p.feature or "", len(prior))))

    def knowledge(self, state, profile):
        cards = [c.card for c in self.choices(state, profile) if c.chosen]
        if not cards:
            return "No skill card applies to this kernel as it is now."
        return ("Verified skill cards that apply to this kernel (each complete; apply one or more "
                "where their preconditions hold):\n" + cards_text(cards))

    def _materialize(self, state: KernelState, card: SkillCard | list[SkillCard], feedback: str,
                     key: str) -> Candidate:
        answer = self.brain.materialize(state, card, EditContext(workload=self.workload,
                                                                 feedback=feedback))
        proposal = answer.proposals[0] if answer.proposals else None
        single = card if isinstance(card, SkillCard) else None
        feature = single.feature if single else (proposal.feature if proposal else None)
        return Candidate(key, feature, single.id if single else None, proposal,
                         "; ".join(answer.failures) or ("" if proposal else "no proposal"))

    def context_json(self):
        return {"cards": [c.id for c in self.inputs.cards],
                "findings": [f.model_dump(mode="json") for f in self.inputs.findings]}


def _without(state: KernelState, feature: str) -> KernelState | None:
    """``state`` without ``feature`` (itself when absent; None when no removal pass takes it)."""
    if feature not in present(state.source, state.language):
        return state
    edit = next((e for e in removal_edits(state.source, state.language, state.flags)
                 if e.feature == feature), None)
    return None if edit is None else state.with_source(edit.new_source, edit.flags_removed,
                                                       edit.flags_added)


def cards_text(cards: list[SkillCard]) -> str:
    """Every field of each card (the carrier verbatim), as the prompts show them."""
    return "\n\n".join(f"```json\n{c.model_dump_json(indent=1, exclude={'created_at'})}\n```"
                       for c in cards)


def without_when(card: SkillCard) -> SkillCard:
    """The card as klineage-nowhen sees it: what and how (intent, anchor, carrier, its pass), no
    when (preconditions, risk, scope, requirements, conflicts, effects, trials)."""
    return card.model_copy(update={
        "preconditions": [], "risk": [], "effect": [], "verification": [], "requires": [],
        "conflicts": [], "admitted": True,
        "scope": Scope(ops=["*"], languages=["*"], platforms=["*"], prior_features=[])})


class NowhenMethod(KlineageMethod):
    name = "klineage-nowhen"

    def __init__(self, brain: Editor, workload: Workload, inputs: MethodInputs, seed: int):
        stripped = [without_when(c) for c in inputs.cards]
        random.Random(seed).shuffle(stripped)  # no effect is left to rank by: ties at random
        # No findings either: what each step measured is the "when" too.
        super().__init__(brain, workload, MethodInputs(stripped, inputs.memory, inputs.experts), seed)


class _ImproveMethod(Method):
    """Baselines: with the rules brain one ``improve`` call per state, its proposals in the
    subclass's ``order``; with an LLM brain a new call from the best kernel each time, with the
    gate's feedback."""

    def next(self, state, profile, feedback, tried):
        if self.learning:
            return self._improve(state, profile, feedback, tried)
        return self._next_insertion(state, profile, feedback, tried)


class NoneMethod(_ImproveMethod):
    name = "none"

    def tunables(self, state):
        """Each pass's parameters drawn at random (seeded per run and kernel): no knowledge."""
        return {feature: drawn(feature, random.Random(f"{self.seed}:{state.fingerprint}:{feature}"))
                for feature in TUNABLES}


class MemoryMethod(_ImproveMethod):
    name = "memory"

    def knowledge(self, state, profile):
        return memory_text(self.inputs.memory)

    def order(self, proposals, state, profile):
        counts = success_counts(self.inputs.memory)
        return sorted(super().order(proposals, state, profile), key=lambda p: -counts.get(p.feature or "", 0))

    def context_json(self):
        return {"memory": [o.model_dump() for o in self.inputs.memory]}


class RulesTableMethod(_ImproveMethod):
    name = "rules-table"

    def knowledge(self, state, profile):
        return table_text(_limiter(profile), present(state.source, state.language), state.language)

    def order(self, proposals, state, profile):
        allowed, forbidden, _ = table_for(_limiter(profile), present(state.source, state.language),
                                          state.language)
        rank = {name: i for i, name in enumerate(allowed)}
        kept = [p for p in super().order(proposals, state, profile) if p.feature not in forbidden]
        return sorted(kept, key=lambda p: rank.get(p.feature or "", len(rank)))


class ExpertSourceMethod(_ImproveMethod):
    name = "expert-source"

    def knowledge(self, state, profile):
        return "\n\n".join(f"An expert kernel for a related problem ({e.workload}):\n```\n"
                           f"{e.source}\n```" for e in self.inputs.experts)

    def order(self, proposals, state, profile):
        shown = [e.features() for e in self.inputs.experts]
        return sorted(super().order(proposals, state, profile),
                      key=lambda p: -sum(p.feature in features for features in shown))

    def context_json(self):
        return {"experts": [e.workload for e in self.inputs.experts]}


_CLASSES: dict[str, type[Method]] = {
    "klineage": KlineageMethod, "klineage-nowhen": NowhenMethod, "none": NoneMethod,
    "memory": MemoryMethod, "rules-table": RulesTableMethod, "expert-source": ExpertSourceMethod}


def make_method(name: str, brain: Editor, workload: Workload, inputs: MethodInputs,
                seed: int) -> Method:
    """``brain`` is metered by the caller (``editors.MeteredEditor``)."""
    if name not in _CLASSES:
        raise ConfigError(f"--method: unknown method {name!r} (one of {', '.join(METHODS)})")
    return _CLASSES[name](brain, workload, inputs, seed)
