"""``klineage bench``: every method × workload × repeat through the same loop, gate and budget.

Per workload, the start kernel and the expert are compared once (paired) for the expert's time.
Per run, the method sees only what leave-one-out allows (``_fairness``) and a fresh seed; the
klineage method writes its trials into a private copy of the filtered library, so runs stay
independent. A run whose start kernel fails the gate, or that raises a klineage error, is
``failed`` and scores the start kernel (1.0×) in every geometric mean.

A bench stopped before its end (Ctrl-C, a kill, a machine too loaded to time on, a brain that
cannot go on, gate jobs left waiting in a spool) is kept: ``resume_bench`` continues it. The
rows of every (workload, repeat) whose methods were all run and judged are in the log and are
kept; in a (workload, repeat) it stopped in, each method's optimize run that finished is kept and
one that stopped is resumed (its brain is not asked again, nothing is charged twice), and then
the methods are judged side by side, together. That group is also the unit the executor spreads
over its timing slots (``executors``).
"""

from __future__ import annotations

import json
import math
import os
import platform
import secrets
import shutil
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from klineage.backends import backend_for
from klineage.bench._fairness import leave_one_out, suite_workloads
from klineage.bench.kernelbench_out import kernelbench_results
from klineage.bench.records import BenchRecord
from klineage.errors import (
    BrainError,
    ConfigError,
    GateWaiting,
    KlineageError,
    MachineLoadedError,
    RunStopped,
    WorkerError,
)
from klineage.executors import current
from klineage.gate import GateOptions
from klineage.gate.session import device_of
from klineage.optimize import DEFAULT_BUDGET, METHODS, OptimizeOptions, optimize
from klineage.optimize.loop import RESULT_FILE
from klineage.optimize.memory import MemoryStore
from klineage.optimize.records import CORRECT, NO_KERNEL
from klineage.runs import Event, Run, RunDir, RunMeta, check_resume, resume_command
from klineage.skills.library import Library
from klineage.workload import KernelState, Workload, load_kernel, load_workload

__all__ = ["BenchMeta", "BenchResult", "bench", "budget_to_fraction", "resume_bench", "summarize"]

SayFn = Callable[[str], None]
FAILED_SCORE = 1.0


class BenchMeta(RunMeta):
    kind: Literal["bench"] = "bench"
    suite: str
    methods: list[str]
    repeats: int
    seed: int
    start: str = "naive"
    expert: str = "expert"
    memory: str | None = None
    """The memory method's store, so a resume reads the same one."""


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
    folders = suite_workloads(suite)
    full_only = [f.name for f in folders if quick and not load_workload(f, quick=True).quick]
    if full_only:
        raise ConfigError(f"--quick: {', '.join(full_only)} declare no [quick_axes]; bench without "
                          f"--quick")
    memory = MemoryStore.load(options.memory) if options.memory else None
    options = replace(options, budget=options.budget or DEFAULT_BUDGET)
    run = Run.create(runs_root, BenchMeta(
        name=suite.name, suite=str(suite), methods=methods, budget=options.budget, brain=options.brain,
        repeats=repeats, seed=seed if seed is not None else secrets.randbits(20),
        sizing="quick" if quick else "full", library=str(library.root) if library else None,
        start=start, expert=expert, memory=str(options.memory) if options.memory else None,
        gate=options.gate.sizing()), say=say)
    return _run_grid(run, folders, library, options, memory, done=[])


def resume_bench(path: Path, library: Library | None = None, options: OptimizeOptions | None = None,
                 say: SayFn | None = None) -> BenchResult:
    """Continue a stopped bench with its own suite, methods, repeats, seed, sizing, start and
    expert variants, library and memory. ``options`` gives the gate and, if set, a new budget for
    the runs still to come (logged); ``library``, if given, must be the run's own."""
    options = options or OptimizeOptions()
    meta = check_resume(path, BenchMeta, brain=options.brain, gate=options.gate,
                        library=library.root if library else None)
    if library is None and meta.library:
        library = Library.open(Path(meta.library))
    memory_path = options.memory or (Path(meta.memory) if meta.memory else None)
    if "memory" in meta.methods and memory_path is None:
        raise ConfigError(f"{path}: this bench runs the memory method and recorded no store; resume "
                          f"it with --memory DIR")
    memory = MemoryStore.load(memory_path) if memory_path else None
    run = Run.resume(path, meta, options.budget, say)
    options = replace(options, budget=run.record.budget, memory=memory_path)
    done = [event.result for event in run.events(BenchRowDone)]
    if run.events(BenchFinished):
        raise ConfigError(f"{path}: this bench finished; its table is in {path / 'bench.json'}")
    return _run_grid(run, suite_workloads(Path(meta.suite)), library, options, memory, done)


def _run_grid(run: Run, folders: list[Path], library: Library | None, options: OptimizeOptions,
              memory: MemoryStore | None, done: list[dict[str, Any]]) -> BenchResult:
    """Every (workload, repeat) group not done yet is a job of the command's executor: on Ray,
    groups run side by side, one per timing slot; each finished group's rows are logged here."""
    meta, say = run.record, run.say
    assert isinstance(meta, BenchMeta)
    quick = meta.sizing == "quick"
    cards = library.cards() if library is not None else []
    findings = library.findings() if library is not None else []
    groups_done: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for row in done:
        groups_done.setdefault((row["workload"], row["repeat"]), []).append(row)
    # A group stopped part-way is run again from its start: its methods are judged together.
    kept = {key for key, rows in groups_done.items() if len(rows) == len(meta.methods)}
    results = [row for key in kept for row in groups_done[key]]
    loaded = [load_workload(folder, quick=quick) for folder in folders]
    executor = current()
    with run.stoppable(resume_command("bench", run.path, gate=meta.gate)):
        todo = []
        for folder, workload in zip(folders, loaded, strict=True):
            if all((workload.name, r) in kept for r in range(meta.repeats)):
                say(f"{workload.name}: every run done before the stop, kept")
            else:
                todo.append((folder, workload))
        device = device_of(options.gate.backend_for(
            load_kernel(todo[0][1], meta.start).language)) if todo else "cpu"
        here = None if executor.remote(device) else say  # a remote job's lines are not shown
        experts = [_Job(run.path, meta, folder, options, say=here) for folder, _ in todo]
        references = dict(executor.map(_expert_job, experts, device))
        groups = [_Job(run.path, meta, folder, options, references[i], repeat,
                       leave_one_out(cards, workload, folders, memory, findings), here)
                  for i, (folder, workload) in enumerate(todo)
                  for repeat in range(meta.repeats) if (workload.name, repeat) not in kept]
        say(f"{len(groups)} (workload, repeat) group(s) on {executor.slots(device)} "
            f"{device} timing slot(s) ({executor.name})")
        for _, rows in executor.map(_group_job, groups, device):
            for row in rows:
                run.log(BenchRowDone(result=row))
            say(f"{rows[0]['workload']} · repeat {rows[0]['repeat'] + 1}/{meta.repeats} done")
            results.extend(rows)
    order = {workload.name: i for i, workload in enumerate(loaded)}
    results.sort(key=lambda r: (order[r["workload"]], r["repeat"], meta.methods.index(r["method"])))
    record = {"suite": meta.suite, "methods": meta.methods, "budget": options.budget.describe(),
              "repeats": meta.repeats, "machine": _machine(folders), "date": datetime.now(UTC).isoformat(
                  timespec="seconds"), "brain": meta.brain, "seed": meta.seed,
              "results": results, "summary": summarize(results, meta.methods)}
    record = BenchRecord.model_validate(record).model_dump(mode="json")
    run.write_json("bench.json", record)
    run.write_json("kernelbench.json", kernelbench_results(results, folders, quick, meta.start))
    run.log(BenchFinished())
    return BenchResult(run, record)


@dataclass(frozen=True)
class _Job:
    """A workload's expert timing, or one (workload, repeat) group, as an executor's job: plain
    data, so a Ray worker can reopen the run folder and do it there."""

    run: Path
    meta: BenchMeta
    folder: Path
    options: OptimizeOptions
    reference: _Expert = _Expert()
    repeat: int = 0
    inputs: Any = None
    say: SayFn | None = None

    def open(self) -> tuple[Run, Workload, Any]:
        run = Run(self.run, self.meta, self.meta.budget, self.say)  # it logs nothing: rows go back
        workload = load_workload(self.folder, quick=self.meta.sizing == "quick")
        return run, workload, load_kernel(workload, self.meta.start)


def _expert_job(job: _Job) -> _Expert:
    run, workload, start_spec = job.open()
    return _expert_times(run, workload, start_spec, job.meta.expert, job.options.gate, run.say)


def _group_job(job: _Job) -> list[dict[str, Any]]:
    run, workload, start_spec = job.open()
    return _repeat(run, workload, start_spec, job.options, job.inputs, job.reference, job.repeat)


def _repeat(run: Run, workload: Workload, start_spec: Any, options: OptimizeOptions, inputs: Any,
            reference: _Expert, repeat: int) -> list[dict[str, Any]]:
    """Every method once on one workload, then their best kernels judged side by side."""
    meta = run.record
    assert isinstance(meta, BenchMeta)
    run_seed, rows = meta.seed + repeat, []
    for method in meta.methods:
        run.say(f"{workload.name} · {method} · repeat {repeat + 1}/{meta.repeats}")
        earlier = _earlier_run(run, workload.name, method, run_seed)
        if earlier is not None and (earlier / RESULT_FILE).is_file():  # finished before the stop
            record = json.loads((earlier / RESULT_FILE).read_text())
            rows.append({**_row(record, str(earlier), reference), "method": method,
                         "workload": workload.name, "repeat": repeat, "seed": run_seed})
            continue
        private = _private_library(run, workload.name, method, repeat, inputs.cards,
                                   fresh=earlier is None)
        try:
            outcome = optimize(workload, start_spec if earlier is None else None, private,
                               replace(options, method=method, seed=run_seed),
                               runs_root=run.path / "runs", say=run.say, inputs=inputs, resume=earlier)
            row = _row(outcome.record, str(outcome.run.path), reference)
        except RunStopped as exc:  # Ctrl-C: the bench stops, and says how to resume the bench
            raise KeyboardInterrupt from exc
        except (MachineLoadedError, BrainError, GateWaiting, WorkerError):
            raise  # noise, a brain gone, a spool not drained, a gate broken: the bench stops
        except KlineageError as exc:
            row = _failed_row(str(exc), reference)
        row.update(method=method, workload=workload.name, repeat=repeat, seed=run_seed)
        rows.append(row)
    _judge_side_by_side(run, workload, start_spec, rows, reference, options.gate, run.say)
    return rows


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
        for folder in best.values():  # through a spool: every comparison in one round
            gate.compare_ahead(start, KernelState.load(folder, workload))
        for fingerprint, folder in best.items():
            try:
                judged[fingerprint] = 1 / gate.compare(start, KernelState.load(folder, workload)).ratio
            except (MachineLoadedError, GateWaiting, WorkerError):
                raise  # the bench stops, resumable: no number of the row's
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
        note = disagreement(speedup, row["run_speedup"])
        if note:
            row["reason"] += f" ({note})"
            say(f"{workload.name}, {row['method']}: {note}")
        best_ms = row["start_ms"] / speedup if row["start_ms"] else None
        row.update(speedup_vs_start=speedup, speedup_vs_expert=speedup * factor if factor else None,
                   best_ms=best_ms, sol_fraction=sol_at(row["sol_fraction"], row["best_ms"], best_ms))


DISAGREEMENT = 2.0
"""How far apart (a factor) a kernel's judged number and its run's own may be before the row says
so: on 2 shared cores they were 1.66x and 3.23x for one kernel (ordinary noise, under it), and
1.28x against 4.22x for a threaded kernel judged while another process compiled (over it)."""


def disagreement(judged: float | None, run: float | None) -> str | None:
    """What a row says when its side-by-side number and its run's own are more than
    ``DISAGREEMENT`` apart: the gate's load checks did not trip, but one of the two numbers was
    measured on a machine doing something else."""
    if not judged or not run or max(judged / run, run / judged) <= DISAGREEMENT:
        return None
    return (f"judged {judged:.2f}x side by side but {run:.2f}x in its own run, more than "
            f"{DISAGREEMENT:g}x apart: another process may have shared the machine; re-run this workload")


def sol_at(fraction: float | None, measured_ms: float | None, shown_ms: float | None) -> float | None:
    """A share of speed of light (bound / median), computed at ``measured_ms``, as the share at
    the time a row shows, ``shown_ms``: the bound is the kernel's, so the share scales with the
    time. A row's best time is its start time over its judged speedup, not the optimize run's
    median, and a share printed beside it must be that time's (a demo's rmsnorm row showed 37%
    beside a best time of 3.096 ms, at which the share was 46%)."""
    if fraction is None or not measured_ms or not shown_ms:
        return fraction
    return fraction * measured_ms / shown_ms


def _earlier_run(run: Run, workload: str, method: str, seed: int) -> Path | None:
    """This method's optimize run on this workload and seed from before the bench stopped, if
    it finished or stopped cleanly (it logged its stop: Ctrl-C, a brain gone, a loaded machine,
    a spool not drained). One killed mid-way (a Ray actor lost with its group) is not resumed:
    the group's retry starts that method afresh, as it always did."""
    found = None
    for record in sorted((run.path / "runs").glob("*/run.json")):  # by start time: the last wins
        meta = json.loads(record.read_text())
        if (meta.get("kind"), meta.get("name"), meta.get("method"), meta.get("seed")) != (
                "optimize", workload, method, seed):
            continue
        kinds = RunDir.open(record.parent).event_kinds()
        found = record.parent if (record.parent / RESULT_FILE).is_file() or (
            kinds and kinds[-1] == "run_interrupted") else None
    return found


def _private_library(run: Run, workload: str, method: str, repeat: int,
                     cards: list[Any], fresh: bool = True) -> Library | None:
    """The klineage method's own copy of the cards; ``fresh=False``: a resumed run's, with the
    trials it wrote before the stop."""
    if method != "klineage":
        return None
    folder = run.path / "libraries" / f"{workload}-r{repeat}"
    if not fresh and folder.is_dir():
        return Library.open(folder)
    shutil.rmtree(folder, ignore_errors=True)  # a stopped repeat's trials: this one starts afresh
    library = Library.open(folder, create=True)
    for card in cards:
        library.add(card)
    return library


def _row(record: dict[str, Any], optimize_run: str, reference: _Expert) -> dict[str, Any]:
    if record["status"] != "ok":
        return {**_failed_row(record["stop_reason"], reference), "optimize_run": optimize_run}
    speedup = record["best_speedup"]
    start_ms = reference.start_ms or record["start_ms"]
    best_ms = start_ms / speedup if start_ms else None
    factor = reference.start_over_expert
    steps = record["steps"]
    return {
        "status": "ok", "reason": record["stop_reason"], "start_ms": start_ms,
        "best_ms": best_ms, "expert_ms": reference.expert_ms,
        "speedup_vs_start": speedup, "speedup_vs_expert": speedup * factor if factor else None,
        "sol_fraction": sol_at(record["sol_fraction"], record.get("best_ms"), best_ms),
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
