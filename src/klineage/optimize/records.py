"""``optimize.json``: the record one optimization writes, owned here, read by the report and bench.

Readers keep fields they do not know (a newer producer may add some); every field written is
declared, so ``OptimizeRecord.model_json_schema()`` documents the file.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from klineage.runs.budget import Spent

__all__ = ["CORRECT", "NO_KERNEL", "CurvePoint", "OptimizeRecord", "OptimizeStep"]

CORRECT = ("accepted", "slower")
"""Verdicts of a step whose candidate passed the gate and was compared (kept, or not faster)."""
NO_KERNEL = ("no_proposal", "duplicate")
"""Verdicts of a step that gated nothing: the brain gave no kernel, or one already gated."""


class _Record(BaseModel):
    model_config = ConfigDict(extra="allow")


class CurvePoint(_Record):
    """Best-so-far speedup after this many gate runs (and seconds of wall time)."""

    gate_runs: int = Field(ge=0)
    wall_s: float | None = None
    calls: int | None = Field(default=None, description="Brain calls spent by then")
    tokens: int | None = Field(default=None, description="Input + output tokens spent by then")
    best_speedup: float


class OptimizeStep(_Record):
    """One candidate the optimizer gated (or could not make)."""

    step: int = 0
    candidate: str | None = Field(default=None, description="The candidate state's fingerprint")
    skill: str | None = None
    feature: str | None = None
    verdict: str
    reason: str = ""
    ratio: float | None = Field(default=None, description="time(candidate)/time(best so far)")
    kept: bool = False
    spent: Spent = Field(default_factory=Spent)
    diff: str = ""


class OptimizeRecord(_Record):
    workload: str
    start: str = ""
    method: str = ""
    brain: str = ""
    budget: dict[str, Any] | str | None = None
    seed: int | None = None
    status: Literal["ok", "failed"] = "ok"
    best_state: str | None = None
    best_kernel: str | None = Field(default=None, description="The best kernel's source file")
    best_speedup: float | None = Field(default=None, description="Paired, over the start kernel")
    sol_fraction: float | None = None
    sol_limiter: str | None = None
    start_ms: float | None = None
    best_ms: float | None = None
    stop_reason: str = ""
    spent: Spent = Field(default_factory=Spent)
    context: dict[str, Any] = Field(default_factory=dict, description="What the method was given")
    steps: list[OptimizeStep] = Field(default_factory=list)
    curve: list[CurvePoint] = Field(default_factory=list)
    retrieval: list[dict[str, Any]] = Field(default_factory=list)
