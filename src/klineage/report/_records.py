"""The optimize and bench records a report reads (``optimize.json``, ``bench.json``).

The producers own these formats; the models here accept every field the report shows, keep
unknown fields (a newer producer may add some), and turn a malformed file into one clear error.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from klineage.errors import ConfigError
from klineage.runs.budget import Spent  # the producer's own record, validated as a dataclass

__all__ = ["BenchRecord", "BenchResult", "CurvePoint", "OptimizeRecord", "OptimizeStep", "read_record"]

_M = TypeVar("_M", bound=BaseModel)


class _Record(BaseModel):
    model_config = ConfigDict(extra="allow")


class CurvePoint(_Record):
    """Best-so-far speedup after this many gate runs (and seconds of wall time)."""

    gate_runs: int = Field(ge=0)
    wall_s: float | None = None
    best_speedup: float


class OptimizeStep(_Record):
    """One candidate the optimizer gated."""

    candidate: str = ""
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
    best_state: str | None = None
    best_speedup: float | None = None
    sol_fraction: float | None = None
    stop_reason: str = ""
    steps: list[OptimizeStep] = Field(default_factory=list)
    curve: list[CurvePoint] = Field(default_factory=list)


class BenchResult(_Record):
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
    speedup_vs_expert: float | None = None
    sol_fraction: float | None = None
    correct_candidates: int | None = None
    failed_candidates: int | None = None
    budget_to_90pct: dict[str, float | None] | None = None
    curve: list[CurvePoint] = Field(default_factory=list)
    optimize_run: str | None = None


class BenchSummary(_Record):
    method: str
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
    results: list[BenchResult] = Field(default_factory=list)
    summary: list[BenchSummary] = Field(default_factory=list)

    def workloads(self) -> list[str]:
        return list(dict.fromkeys(r.workload for r in self.results))

    def method_names(self) -> list[str]:
        seen = [*self.methods, *(r.method for r in self.results)]
        return list(dict.fromkeys(seen))


def read_record(path: Path, model: type[_M]) -> _M:
    """``path`` parsed as ``model``; a missing or malformed file is one ConfigError line."""
    if not path.is_file():
        raise ConfigError(f"{path.parent}: the run has no {path.name}")
    try:
        return model.model_validate(json.loads(path.read_text()))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not JSON ({exc})") from exc
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(top level)"
        raise ConfigError(f"{path}: {where}: {first['msg']}") from exc
