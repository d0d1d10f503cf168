"""Lineage records: the accepted backward steps, the rejected proposals, and the forward
re-derivations, as JSON-ready models."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from klineage.runs.events import Event

__all__ = ["Lineage", "ProposalRejected", "Rederivation", "Rederived", "Rejection", "SiteRecord",
           "StepAccepted", "Transition", "WalkStopped"]


class SiteRecord(BaseModel):
    start_line: int
    end_line: int
    text: str
    scope: str = ""


class Rejection(BaseModel):
    """A proposal the gate or the audit refused: evidence of what breaks."""

    step: int
    state: str = Field(description="Fingerprint of the kernel the proposal edited")
    feature: str | None
    verdict: str = Field(description="Gate verdict, or 'audit_failed'")
    reason: str
    diff: str = ""


class Rederivation(BaseModel):
    """The forward edit produced again from the simpler kernel, and how it measured."""

    reproduced: bool
    note: str
    state: str | None = None
    diff: str = ""
    ratio_vs_faster: float | None = Field(default=None, description="time(rederived)/time(faster)")
    ci_high_vs_faster: float | None = None
    speedup_over_simpler: float | None = None
    speedup_ci_over_simpler: tuple[float, float] | None = Field(
        default=None, description="95% interval of speedup_over_simpler (paired)")
    simpler_ms: float | None = None
    rederived_ms: float | None = None


class Transition(BaseModel):
    """One accepted backward step, read forward: simpler → faster by adding ``feature``."""

    id: str
    step: int
    feature: str
    category: str
    faster_state: str
    simpler_state: str
    removal_diff: str
    sites: list[SiteRecord] = Field(default_factory=list)
    tunables: dict[str, Any] = Field(default_factory=dict)
    faster_ms: float | None = None
    simpler_ms: float | None = None
    speedup: float | None = Field(default=None, description="time(simpler)/time(faster), paired")
    speedup_ci: tuple[float, float] | None = None
    features_before: list[str] = Field(default_factory=list)
    nested: list[str] = Field(default_factory=list,
                              description="Features that lived only inside this one's sites and went with it")
    rederivation: Rederivation | None = None


class Lineage(BaseModel):
    """Expert → … → simplest kernel, with everything the walk refused along the way."""

    workload: str
    op: str
    language: str
    platform: str
    expert: str
    states: list[str] = Field(description="Fingerprints, expert first")
    transitions: list[Transition] = Field(default_factory=list)
    rejections: list[Rejection] = Field(default_factory=list)
    stop_reason: str = ""
    remaining_features: list[str] = Field(default_factory=list)
    naive_reached: bool = False
    expert_ms: float | None = None
    final_ms: float | None = None


class StepAccepted(Event):
    """The walk took one step back."""

    event: Literal["step_accepted"] = "step_accepted"
    transition: Transition


class ProposalRejected(Event):
    """A proposed simplification failed the gate or the audit, or the answer was unusable."""

    event: Literal["proposal_rejected"] = "proposal_rejected"
    rejection: Rejection


class WalkStopped(Event):
    event: Literal["walk_stopped"] = "walk_stopped"
    reason: str
    budget: bool = False
    """Stopped by the budget: a resumed run with more budget walks on."""


class Rederived(Event):
    """One transition re-derived forward (or found not to be)."""

    event: Literal["rederived"] = "rederived"
    transition: str
    """The transition's id."""
    rederivation: Rederivation

