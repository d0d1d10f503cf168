"""``bench.json``: the record one bench writes, owned here, read by the report.

Readers keep fields they do not know; every field written is declared, so
``BenchRecord.model_json_schema()`` documents the file.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from klineage.optimize.records import CurvePoint

__all__ = ["BenchRecord", "BenchRow", "BenchSummary"]


class _Record(BaseModel):
    model_config = ConfigDict(extra="allow")


class BenchRow(_Record):
    """One method on one workload, one repeat."""

    method: str
    workload: str
    repeat: int = 0
    seed: int | None = None
    status: Literal["ok", "failed"] = "ok"
    reason: str = ""
    start_ms: float | None = None
    best_ms: float | None = None
    expert_ms: float | None = None
    speedup_vs_start: float | None = None
    """Judged after every method of the repeat ran: the start against each distinct best kernel,
    side by side in one gate session (the same kernel, the same number)."""
    run_speedup: float | None = None
    """The run's own final paired comparison, minutes apart from the other methods'."""
    speedup_vs_expert: float | None = None
    sol_fraction: float | None = None
    correct_candidates: int | None = None
    failed_candidates: int | None = None
    budget_to_90pct: dict[str, float | None] | None = None
    curve: list[CurvePoint] = Field(default_factory=list)
    optimize_run: str | None = None
    best_state: str | None = None
    """Fingerprint of the best kernel: methods that reached the same kernel differ by timing only."""


class BenchSummary(_Record):
    method: str
    runs: int | None = None
    geomean_speedup_vs_start: float | None = None
    geomean_speedup_vs_expert: float | None = None
    mean_sol_fraction: float | None = None
    failures: list[Any] = Field(default_factory=list)


class BenchRecord(_Record):
    suite: str = ""
    methods: list[str] = Field(default_factory=list)
    budget: dict[str, Any] | str | None = None
    repeats: int | None = None
    machine: dict[str, Any] | str | None = None
    date: str = ""
    brain: str | None = None
    seed: int | None = None
    results: list[BenchRow] = Field(default_factory=list)
    summary: list[BenchSummary] = Field(default_factory=list)

    def workloads(self) -> list[str]:
        return list(dict.fromkeys(r.workload for r in self.results))

    def method_names(self) -> list[str]:
        seen = [*self.methods, *(r.method for r in self.results)]
        return list(dict.fromkeys(seen))
