"""``klineage bench``: every method × workload × repeat through the same loop, gate and budget.

Per workload, the start kernel and the expert are compared once (paired) for the expert's time.
Per run, the method sees only what leave-one-out allows (``_fairness``) and a fresh seed; the
klineage method writes its trials into a private copy of the filtered library, so runs stay
independent. A run whose start kernel fails the gate, or that raises a klineage error, is
``failed`` and scores the start kernel (1.0×) in every geometric mean.
"""

from __future__ import annotations

import math
import os
import platform
import secrets
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from klineage.backends import backend_for
from klineage.bench._fairness import leave_one_out, suite_workloads
from klineage.bench.records import BenchRecord
from klineage.errors import ConfigError, KlineageError, MachineLoadedError
from klineage.gate import GateOptions
from klineage.optimize import DEFAULT_BUDGET, METHODS, OptimizeOptions, optimize
from klineage.optimize.memory import MemoryStore
from klineage.optimize.records import CORRECT, NO_KERNEL
from klineage.runs import Event, Run, RunMeta
from klineage.skills.library import Library
from klineage.workload import KernelState, Workload, load_kernel, load_workload

__all__ = ["BenchMeta", "BenchResult", "bench", "budget_to_fraction", "summarize"]

SayFn = Callable[[str], None]
FAILED_SCORE = 1.0


class BenchMeta(RunMeta):
    kind: Literal["bench"] = "bench"
    suite: str
    methods: list[str]
    repeats: int
    seed: int


class BenchRowDone(Event):
    """One (method, workload, repeat) of the bench done: its row of bench.json."""

    event: Literal["bench_result"] = "bench_result"
    result: dict[str, Any]


class BenchFinished(Event):
    event: Literal["bench_finished"] = "bench_finished"


@dataclass
class BenchResult:
    run: Run
    record: dict[str, Any]
    """The content of bench.json."""


@dataclass(frozen=True)
class _Expert:
    start_ms: float | None = None
    expert_ms: float | None = None

    @property
    def start_over_expert(self) -> float | None:
        """time(expert) / time(start): a kernel's speedup over the start, times this, is its
        speedup over the expert."""
        return self.expert_ms / self.start_ms if self.start_ms and self.expert_ms else None


def bench(suite: Path, library: Library | None, methods: list[str],
          options: OptimizeOptions | None = None, repeats: int = 1, runs_root: Path = Path("runs"),
          start: str = "naive", expert: str = "expert", seed: int | None = None,
          say: SayFn | None = None, quick: bool = False) -> BenchResult:
    """Run the whole grid and write ``bench.json``; returns its content.

    ``options`` is every run's budget, brain and gate (its method and seed are the grid's);
    ``quick`` benchmarks every workload at its ``[quick_axes]`` (the demo uses it)."""
    unknown = [m for m in methods if m not in METHODS]
    if unknown or not methods:
        raise ConfigError(f"--methods: unknown {', '.join(unknown) or '(none given)'} "
                          f"(choose from {', '.join(METHODS)})")
    options = options or OptimizeOptions()
    if "memory" in methods and options.memory is None:
        raise ConfigError("--methods memory needs the memory's own store: --memory DIR (build it "
                          "with `klineage memory build --like MINE_RUN ...`)")
    memory = MemoryStore.load(options.memory) if options.memory else None
    say = say or (lambda _: None)
    folders = suite_workloads(suite)
    full_only = [f.name for f in folders if quick and not load_workload(f, quick=True).quick]
    if full_only:
        raise ConfigError(f"--quick: {', '.join(full_only)} declare no [quick_axes]; bench without "
                          f"--quick")
    budget, brain = options.budget or DEFAULT_BUDGET, options.brain
    options = replace(options, budget=budget)
    base_seed = seed if seed is not None else secrets.randbits(20)
    run = Run.create(runs_root, BenchMeta(
        name=suite.name, suite=str(suite), methods=methods, budget=budget, brain=brain,
        repeats=repeats, seed=base_seed, sizing="quick" if quick else "full",
        library=str(library.root) if library else None), say=say)
    cards = library.cards() if library is not None else []
    findings = library.findings() if library is not None else []
    results = []
    for folder in folders:
        workload = load_workload(folder, quick=quick)
        start_spec = load_kernel(workload, start)
        reference = _expert_times(run, workload, start_spec, expert, options.gate, say)
        inputs = leave_one_out(cards, workload, folders, memory, findings)
        for repeat in range(repeats):
            run_seed = base_seed + repeat
            rows = []
            for method in methods:
                say(f"{workload.name} · {method} · repeat {repeat + 1}/{repeats}")
                private = _private_library(run, workload.name, method, repeat, inputs.cards)
                try:
                    outcome = optimize(workload, start_spec, private,
                                       replace(options, method=method, seed=run_seed),
                                       runs_root=run.path / "runs", say=say, inputs=inputs)
                    row = _row(outcome.record, str(outcome.run.path), reference)
                except MachineLoadedError:
                    raise  # noise is no failure of the method: the bench stops instead
                except KlineageError as exc:
                    row = _failed_row(str(exc), reference)
                row.update(method=method, workload=workload.name, repeat=repeat, seed=run_seed)
                rows.append(row)
            _judge_side_by_side(run, workload, start_spec, rows, reference, options.gate, say)
            for row in rows:
                run.log(BenchRowDone(result=row))
            results.extend(rows)
    record = {"suite": str(suite), "methods": methods, "budget": budget.describe(),
              "repeats": repeats, "machine": _machine(folders), "date": datetime.now(UTC).isoformat(
                  timespec="seconds"), "brain": brain, "seed": base_seed,
              "results": results, "summary": summarize(results, methods)}
    record = BenchRecord.model_validate(record).model_dump(mode="json")
    run.write_json("bench.json", record)
    run.log(BenchFinished())
    return BenchResult(run, record)


def _expert_times(run: Run, workload: Workload, start_spec: Any, expert: str,
                  options: GateOptions, say: SayFn) -> _Expert:
    if not (workload.root / "kernels" / expert).is_dir():
        return _Expert()
    say(f"{workload.name}: timing the expert against the start kernel (paired)")
    gate = run.gate(workload, options, progress=lambda s, d: None)
    start_state = KernelState.from_spec(start_spec)
    comparison = gate.compare(start_state, KernelState.from_spec(load_kernel(workload, expert)))
    if comparison.baseline_median_s is None or comparison.candidate_median_s is None:
        return _Expert()
    return _Expert(comparison.baseline_median_s * 1e3, comparison.candidate_median_s * 1e3)


def _judge_side_by_side(run: Run, workload: Workload, start_spec: Any, rows: list[dict[str, Any]],
                        reference: _Expert, options: GateOptions, say: SayFn) -> None:
    """Every distinct best kernel of one repeat against the start, one after another in one gate
    session: the number a row reports. Each run's own final comparison came minutes apart from
    the others', and on 2 shared cores one kernel measured 1.66x in one and 3.23x in another;
    judged here, methods that reached the same kernel get the same number, and the others are
    measured in the same minutes. The run's own number stays in ``run_speedup``."""
    start = KernelState.from_spec(start_spec)
    best = {}
    for row in rows:
        if row["status"] == "ok" and row.get("best_state") not in (None, start.fingerprint):
            best.setdefault(row["best_state"], Path(row["optimize_run"]) / "best")
    judged = {start.fingerprint: 1.0}
    if best:
        say(f"{workload.name}: judging {len(best)} best kernel(s) against the start, side by side")
        gate = run.gate(workload, options, progress=lambda s, d: None)
        for fingerprint, folder in best.items():
            try:
                judged[fingerprint] = 1 / gate.compare(start, KernelState.load(folder, workload)).ratio
            except MachineLoadedError:
                raise
            except KlineageError as exc:  # the row keeps its run's number, and says why
                judged[fingerprint] = None
                for row in rows:
                    if row.get("best_state") == fingerprint:
                        row["reason"] += f" (not judged side by side: {exc})"
    factor = reference.start_over_expert
    for row in rows:
        if row["status"] != "ok":
            continue
        row["run_speedup"] = row["speedup_vs_start"]
        speedup = judged[row["best_state"]] or row["run_speedup"]
        row.update(speedup_vs_start=speedup, speedup_vs_expert=speedup * factor if factor else None,
                   best_ms=row["start_ms"] / speedup if row["start_ms"] else None)


def _private_library(run: Run, workload: str, method: str, repeat: int,
                     cards: list[Any]) -> Library | None:
    if method != "klineage":
        return None
    library = Library.open(run.path / "libraries" / f"{workload}-r{repeat}", create=True)
    for card in cards:
        library.add(card)
    return library


def _row(record: dict[str, Any], optimize_run: str, reference: _Expert) -> dict[str, Any]:
    if record["status"] != "ok":
        return {**_failed_row(record["stop_reason"], reference), "optimize_run": optimize_run}
    speedup = record["best_speedup"]
    start_ms = reference.start_ms or record["start_ms"]
    factor = reference.start_over_expert
    steps = record["steps"]
    return {
        "status": "ok", "reason": record["stop_reason"], "start_ms": start_ms,
        "best_ms": start_ms / speedup if start_ms else None, "expert_ms": reference.expert_ms,
        "speedup_vs_start": speedup, "speedup_vs_expert": speedup * factor if factor else None,
        "sol_fraction": record["sol_fraction"],
        "correct_candidates": sum(s["verdict"] in CORRECT for s in steps),
        "failed_candidates": sum(s["verdict"] not in (*CORRECT, *NO_KERNEL) for s in steps),
        "budget_to_90pct": budget_to_fraction(record["curve"]), "curve": record["curve"],
        "optimize_run": optimize_run, "best_state": record["best_state"]}


def _failed_row(reason: str, reference: _Expert) -> dict[str, Any]:
    factor = reference.start_over_expert
    return {"status": "failed", "reason": reason, "start_ms": reference.start_ms,
            "best_ms": reference.start_ms, "expert_ms": reference.expert_ms,
            "speedup_vs_start": FAILED_SCORE,
            "speedup_vs_expert": FAILED_SCORE * factor if factor else None, "sol_fraction": None,
            "correct_candidates": 0, "failed_candidates": 0,
            "budget_to_90pct": None, "curve": [], "optimize_run": None}


def budget_to_fraction(curve: list[dict[str, Any]], fraction: float = 0.9) -> dict[str, Any] | None:
    """The spend at which the best-so-far first reached ``fraction`` of the final gain (in log
    space: 90% of a 4× gain is 4**0.9×); the first point when there was no gain."""
    if not curve:
        return None
    final = curve[-1]["best_speedup"]
    target = math.exp(fraction * math.log(final)) if final > 1 else 0.0
    point = next(p for p in curve if p["best_speedup"] >= target - 1e-12)
    return {key: point.get(key) for key in ("gate_runs", "wall_s", "calls", "tokens")}


def summarize(results: list[dict[str, Any]], methods: list[str]) -> list[dict[str, Any]]:
    """Per method: geometric means (a failed run counts as the start kernel) and the failures."""
    summary = []
    for method in methods:
        rows = [r for r in results if r["method"] == method]
        vs_expert = [r["speedup_vs_expert"] for r in rows if r["speedup_vs_expert"]]
        sols = [r["sol_fraction"] for r in rows if r["sol_fraction"] is not None]
        summary.append({
            "method": method, "runs": len(rows),
            "geomean_speedup_vs_start": _geomean([r["speedup_vs_start"] for r in rows]),
            "geomean_speedup_vs_expert": _geomean(vs_expert),
            "mean_sol_fraction": sum(sols) / len(sols) if sols else None,
            "failures": [{"workload": r["workload"], "repeat": r["repeat"], "reason": r["reason"]}
                         for r in rows if r["status"] != "ok"]})
    return summary


def _geomean(values: list[float]) -> float | None:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def _machine(folders: list[Path]) -> str:
    try:
        language = load_kernel(load_workload(folders[0]), "naive").language
        where = backend_for(language).platform()
    except KlineageError:
        where = platform.machine()
    return f"{where} ({platform.node()}, {os.cpu_count()} cores)"
