"""The skill card (DESIGN.md §6): one verified, reusable optimization lifted from lineage steps.

A card is stored twice: ``skill.json`` (this model, the machine record) and ``SKILL.md`` (see
``klineage.skills.render``). Every field carries a description so ``SkillCard.model_json_schema()``
documents the format.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable, Hashable, Iterable
from datetime import UTC, datetime
from fnmatch import fnmatchcase
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "Carrier",
    "Effect",
    "Evidence",
    "Precondition",
    "Rewrite",
    "Risk",
    "Scope",
    "SkillCard",
    "Trial",
    "skill_id",
]

SCHEMA_VERSION = 1
ID_LENGTH = 12
WILDCARD = "*"

SkillCategory = Literal["parallelism", "memory", "compute", "pipeline", "layout", "tuning"]
"""The feature categories of DESIGN.md §5 (``klineage.source.model.CATEGORIES``)."""

PreconditionCategory = Literal[
    "dtype", "layout", "storage", "alignment", "shape", "pipeline", "hardware", "numerics"
]

_T = TypeVar("_T")


def utc_now() -> str:
    """The current time as an ISO 8601 string in UTC, to the second."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def skill_id(feature: str, anchor_signature: str, language: str) -> str:
    """A short, stable id for the skill "add ``feature`` at this kind of anchor in ``language``".

    Case and runs of whitespace are ignored, so the same step lifted from two lineages (or on two
    machines) lands on the same id and the library merges the cards instead of duplicating them.
    """
    parts = (" ".join(text.lower().split()) for text in (feature, anchor_signature, language))
    digest = hashlib.sha256("\0".join(["klineage-skill-v1", *parts]).encode())
    return digest.hexdigest()[:ID_LENGTH]


class Precondition(BaseModel):
    """A condition that made the optimization valid where it was observed."""

    model_config = ConfigDict(extra="forbid")

    category: PreconditionCategory = Field(description="What kind of fact the condition is about.")
    condition: str = Field(description="The condition in words, e.g. 'rows are 16-byte aligned'.")
    reason: str = Field(description="Why the optimization needs it (what goes wrong without it).")
    check: str | None = Field(
        default=None,
        description="A machine check where one exists: an expression over axes such as "
        "'N % 16 == 0', or a feature requirement such as 'requires:shared_memory_tiling'.",
    )
    source: str = Field(
        description="What grounded it: 'check', 'failure:<transition id>', 'workload', 'lift', ...",
    )

    def key(self) -> tuple[str, str]:
        """Two preconditions with the same category and wording are the same precondition."""
        return self.category, " ".join(self.condition.lower().split())


class Effect(BaseModel):
    """One measured speedup of the step on one workload, size and platform."""

    model_config = ConfigDict(extra="forbid")

    workload: str = Field(description="Workload name.")
    shape: dict[str, int] = Field(description="The axis values it was timed at.")
    platform: str = Field(description="Gate platform, e.g. 'nvidia-sm90-cuda13.0'.")
    before_ms: float = Field(gt=0, description="Median time without the step, in milliseconds.")
    after_ms: float = Field(gt=0, description="Median time with the step, in milliseconds.")
    ratio: float = Field(
        gt=0, description="Speedup before_ms / after_ms (> 1 is faster); filled in when omitted."
    )
    sol_before: float | None = Field(default=None, description="Share of speed of light before.")
    sol_after: float | None = Field(default=None, description="Share of speed of light after.")
    ci_low: float | None = Field(
        default=None, description="Lower bound of the speedup's confidence interval (paired timing)."
    )
    ci_high: float | None = Field(
        default=None, description="Upper bound of the speedup's confidence interval (paired timing)."
    )

    @model_validator(mode="before")
    @classmethod
    def _fill_ratio(cls, data: Any) -> Any:
        # The speedup is derivable; accept it omitted so callers cannot get it backwards.
        if isinstance(data, dict) and data.get("ratio") is None:
            before, after = data.get("before_ms"), data.get("after_ms")
            if isinstance(before, int | float) and isinstance(after, int | float) and after > 0:
                data = {**data, "ratio": before / after}
        return data


class Risk(BaseModel):
    """A failure the card's assumptions avoid, seen in a rejected proposal or a failed trial."""

    model_config = ConfigDict(extra="forbid")

    what: str = Field(description="What went wrong, e.g. 'misaligned float4 load crashed at N=1000'.")
    evidence: str = Field(description="Where it was seen: a transition id, gate report id or trial.")


class Trial(BaseModel):
    """One attempt to apply the card with only the card in hand, judged by the gate."""

    model_config = ConfigDict(extra="forbid")

    target: str = Field(description="The context it was applied to: 'workload/kernel'.")
    held_out: bool = Field(description="True when the target did not produce the card.")
    verdict: str = Field(description="The gate verdict ('accepted', 'incorrect', 'slower', ...).")
    effect_observed: float | None = Field(
        default=None, description="Speedup observed on the target, when it was timed."
    )
    reason: str = Field(default="", description="The gate's reason line, or why the trial stopped.")
    at: str = Field(default_factory=utc_now, description="When the trial ran (ISO 8601, UTC).")

    @property
    def passed(self) -> bool:
        return self.verdict == "accepted"


class Carrier(BaseModel):
    """How to do it: the edit itself, small enough to read."""

    model_config = ConfigDict(extra="forbid")

    summary: str = Field(description="The edit in one or two sentences.")
    before: str = Field(default="", description="A snippet of the anchor before the edit.")
    after: str = Field(default="", description="The same snippet after the edit.")
    diff: str = Field(default="", description="A unified diff sketch of the edit.")
    tunables: dict[str, Any] = Field(
        default_factory=dict, description="Tunable parameters with the values that worked."
    )


class Scope(BaseModel):
    """Where the card may be tried. Entries are glob patterns ('*' matches anything); an empty
    list names nowhere, so it matches no value that is asked about."""

    model_config = ConfigDict(extra="forbid")

    ops: list[str] = Field(default_factory=list, description="Op families, e.g. 'rmsnorm'.")
    languages: list[str] = Field(default_factory=list, description="'c', 'cpp', 'cuda', 'triton'.")
    platforms: list[str] = Field(default_factory=list, description="Gate platforms, e.g. 'cpu-*'.")
    prior_features: list[str] = Field(
        default_factory=list, description="Features present in the kernels the step was seen in."
    )

    def covers(self, op: str | None = None, language: str | None = None,
               platform: str | None = None) -> bool:
        """True when every value given matches one of the patterns of its list (case-insensitive)."""
        asked = ((self.ops, op), (self.languages, language), (self.platforms, platform))
        return all(value is None or any(fnmatchcase(value.lower(), pattern.lower())
                                        for pattern in patterns)
                   for patterns, value in asked)

    def widen(self, other: Scope) -> Scope:
        """The union of both scopes; a wildcard absorbs every other entry of its list."""
        return Scope(**{name: _widen(getattr(self, name), getattr(other, name))
                        for name in Scope.model_fields})


class Rewrite(BaseModel):
    """The mechanical insertion pass the rules brain runs to materialize the card."""

    model_config = ConfigDict(extra="forbid")

    pass_name: str = Field(description="Name of the insertion pass in klineage.source.")
    feature: str = Field(description="The feature the pass inserts.")
    params: dict[str, Any] = Field(default_factory=dict, description="Pass parameters that worked.")


class Evidence(BaseModel):
    """The records the card was lifted from."""

    model_config = ConfigDict(extra="forbid")

    transitions: list[str] = Field(default_factory=list, description="Lineage transition ids.")
    gate_reports: list[str] = Field(default_factory=list, description="Gate report fingerprints.")


class SkillCard(BaseModel):
    """A reusable optimization: what, where, how, when it is valid, what it gained, how it failed."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = Field(default=SCHEMA_VERSION, description="Version of this record format.")
    id: str = Field(
        pattern=rf"^[0-9a-f]{{{ID_LENGTH}}}$", description="Stable hash from skill_id()."
    )
    name: str = Field(description="A short title, e.g. 'Vectorize row loads with float4'.")
    intent: str = Field(description="What the optimization achieves, in one line.")
    category: SkillCategory = Field(description="The feature's category.")
    feature: str = Field(description="The feature the step adds (a klineage.source feature name).")
    anchor: str = Field(
        description="The code surface it acts on, e.g. 'the innermost load loop of a row reduction'."
    )
    carrier: Carrier = Field(description="How to do it.")
    preconditions: list[Precondition] = Field(
        default_factory=list, description="Conditions that made the step valid."
    )
    effect: list[Effect] = Field(default_factory=list, description="Measured speedups.")
    evidence: Evidence = Field(default_factory=Evidence, description="Records it was lifted from.")
    risk: list[Risk] = Field(default_factory=list, description="Failures its assumptions avoid.")
    scope: Scope = Field(default_factory=Scope, description="Where it may be tried.")
    requires: list[str] = Field(
        default_factory=list, description="Features the kernel must already have."
    )
    provides: list[str] = Field(default_factory=list, description="Features the kernel has after.")
    conflicts: list[str] = Field(
        default_factory=list, description="Features it must not be combined with."
    )
    rewrite: Rewrite | None = Field(default=None, description="The insertion pass, when mechanical.")
    verification: list[Trial] = Field(
        default_factory=list, description="Round-trip trials, oldest first."
    )
    admitted: bool = Field(
        default=False, description="True once a trial on a held-out context reproduced the effect."
    )
    created_at: str = Field(default_factory=utc_now, description="When first lifted (ISO 8601).")
    version: int = Field(
        default=1, ge=1, description="Revision: bumped when a merge adds something or a trial is logged."
    )

    def best_effect(self) -> Effect | None:
        """The measurement with the largest speedup, or None when there is none."""
        return max(self.effect, key=lambda e: e.ratio, default=None)

    def geomean_ratio(self) -> float | None:
        """Geometric mean speedup over all measurements, or None when there is none."""
        if not self.effect:
            return None
        return math.exp(sum(math.log(e.ratio) for e in self.effect) / len(self.effect))

    def summary(self) -> dict[str, Any]:
        """The card in brief: one entry of the library's index.json."""
        return {
            "id": self.id,
            "name": self.name,
            "feature": self.feature,
            "category": self.category,
            "ops": list(self.scope.ops),
            "languages": list(self.scope.languages),
            "platforms": list(self.scope.platforms),
            "admitted": self.admitted,
            "geomean_ratio": self.geomean_ratio(),
        }

    def merge(self, other: SkillCard) -> SkillCard:
        """This card and ``other`` (the same skill, lifted again) as one card.

        Lists become deduplicated unions, the scope widens, and the card is admitted when either
        was. The prose (name, intent, anchor, carrier) comes from ``self``, unless only ``other``
        is admitted: then its proven wording wins.
        """
        if other.id != self.id:
            raise ValueError(f"cannot merge skill {other.id} into {self.id}: different skills")
        text = other if other.admitted and not self.admitted else self
        rest = self if text is other else other
        carrier = text.carrier.model_copy(
            update={"tunables": {**rest.carrier.tunables, **text.carrier.tunables}}
        )
        merged = text.model_copy(update={
            "carrier": carrier,
            "preconditions": _union(text.preconditions, rest.preconditions, key=Precondition.key),
            "effect": _union(self.effect, other.effect, key=_json_key),
            "evidence": Evidence(
                transitions=_union(self.evidence.transitions, other.evidence.transitions),
                gate_reports=_union(self.evidence.gate_reports, other.evidence.gate_reports),
            ),
            "risk": _union(self.risk, other.risk, key=_same_failure),
            "scope": self.scope.widen(other.scope),
            # Requirements stay a union: merging must never make a card less careful.
            "requires": _union(self.requires, other.requires),
            "provides": _union(self.provides, other.provides),
            "conflicts": _union(self.conflicts, other.conflicts),
            "rewrite": text.rewrite or rest.rewrite,
            "verification": _union(self.verification, other.verification, key=_json_key),
            "admitted": self.admitted or other.admitted,
            "created_at": min(self.created_at, other.created_at),
            "version": max(self.version, other.version),
        })
        if _same_content(merged, self):
            return self
        return merged.model_copy(update={"version": merged.version + 1})

    def with_trial(self, trial: Trial) -> SkillCard:
        """The card with ``trial`` logged; a failed trial also becomes risk evidence."""
        risks = self.risk
        if not trial.passed:
            what = f"{trial.verdict} on {trial.target}" + (f": {trial.reason}" if trial.reason else "")
            risks = _union(risks, [Risk(what=what, evidence=f"trial {trial.target} at {trial.at}")],
                           key=_same_failure)
        return self.model_copy(update={
            "verification": [*self.verification, trial],
            "risk": risks,
            "version": self.version + 1,
        })


def _same_failure(risk: Risk) -> str:
    """Two risks are one when they say the same failure: the measurements in it (ratios,
    intervals, times: numbers with a decimal point) differ from one sighting to the next, and
    where it was seen always does; sizes (integers) tell failures apart. Three runs that met
    the same failure used to write three risk entries."""
    return re.sub(r"\d+\.\d+", "#", risk.what)


def _json_key(model: BaseModel) -> str:
    return model.model_dump_json()


def _union(first: Iterable[_T], second: Iterable[_T],
           key: Callable[[_T], Hashable] | None = None) -> list[_T]:
    """Items of both, in order, keeping the first of any that share a key."""
    seen: set[Hashable] = set()
    result = []
    for item in [*first, *second]:
        marker = key(item) if key else item
        if marker not in seen:
            seen.add(marker)
            result.append(item)
    return result


def _widen(first: list[str], second: list[str]) -> list[str]:
    if WILDCARD in first or WILDCARD in second:
        return [WILDCARD]
    return _union(first, second)


def _same_content(left: SkillCard, right: SkillCard) -> bool:
    ignore = {"version"}
    return left.model_dump(exclude=ignore) == right.model_dump(exclude=ignore)
