"""``klineage demo``: the whole pipeline, offline, on the bundled CPU workloads.

1. mine two CPU experts (softmax, transpose) with the rules brain into a fresh skill library;
   their cards are admitted on the other examples, never on the target below
2. build the memory baseline's own memory: forward runs from the same two workloads' naive
   kernels with the budget each mine spent (``optimize.memory``)
3. optimize the naive kernel of a workload that contributed no lineage (rmsnorm) with that library
4. bench klineage against the ``none`` and ``memory`` baselines on it, same gate and budget
5. write the report of the whole demo run

Everything runs at the workloads' ``[quick_axes]`` with a shorter timing schedule, so the demo
takes about 8 minutes on two quiet cores (README); the gate's checks are the full ones. Every step is a
child run inside the demo's own run folder, so the report (and ``--resume`` of a child) works as
for any run.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from klineage.bench import bench, resume_bench
from klineage.errors import ConfigError, RunStopped
from klineage.gate import GateOptions, free_threads, others_load
from klineage.gate.session import PATIENCE_S
from klineage.mine import MineOptions, mine
from klineage.optimize import OptimizeOptions, optimize
from klineage.optimize.memory import build_memory, mine_spent
from klineage.report import write_report
from klineage.runs import Budget, Event, Run, RunDir, RunMeta, check_resume
from klineage.skills.library import Library
from klineage.workload import load_kernel, load_workload

__all__ = ["DEMO_STEPS", "DemoResult", "default_examples", "run_demo"]

MINED = ("softmax", "transpose")
TARGET = "rmsnorm"
METHODS = ["klineage", "none", "memory"]
BUDGET = "gate_runs=4"
DEMO_STEPS = len(MINED) + 4
"""Progress units: one per mined expert, the memory, optimize, bench, report."""

# Full checks; a shorter timing schedule than the CLI default (trials=5, compare 2 s).
GATE = GateOptions(trials=3, compare_s=0.5)
ADMISSION_TRIALS = 3

SayFn = Callable[[str], None]
StepFn = Callable[[str], None]


def default_examples() -> Path:
    """examples/workloads/cpu of the source checkout klineage runs from."""
    return Path(__file__).resolve().parents[2] / "examples" / "workloads" / "cpu"


class DemoMeta(RunMeta):
    kind: Literal["demo"] = "demo"
    examples: str
    backend: str | None = None
    threads: int | None = None
    """CPU threads every kernel is timed with: the cores other processes left when it started."""
    patience_s: float = PATIENCE_S
    children: list[str] = Field(default_factory=list)
    """The runs the demo made, relative to its folder, as each finishes."""
    results: dict[str, Any] = Field(default_factory=dict)
    """Each finished step's result, by step: a resumed demo starts after the last of them."""


class DemoFinished(Event):
    event: Literal["demo_finished"] = "demo_finished"
    result: dict[str, Any]
    """What ``klineage demo --json`` prints."""


@dataclass
class DemoResult:
    run: Path
    target: str = TARGET
    threads: int | None = None
    mined: list[dict[str, Any]] = field(default_factory=list)
    optimized: dict[str, Any] = field(default_factory=dict)
    benched: dict[str, Any] = field(default_factory=dict)
    report: str = ""
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"run": str(self.run), "threads": self.threads, "mined": self.mined,
                "optimize": self.optimized, "bench": self.benched, "report": self.report,
                "seconds": round(self.seconds, 1)}


def run_demo(examples: Path | None = None, runs_root: Path = Path("runs"),
             say: SayFn | None = None, step: StepFn | None = None,
             backend: str | None = None, patience_s: float | None = None,
             resume: Path | None = None) -> DemoResult:
    """Run the demo, or continue the stopped one at ``resume``; ``say`` gets progress lines,
    ``step`` is called as each stage starts. ``backend``: every gate on this backend (``null``:
    the whole demo without a compiler). ``patience_s``: how long a timing the load made
    unmeasurable waits for a quieter machine before the demo stops (default ``PATIENCE_S``)."""
    say, step = say or (lambda _: None), step or (lambda _: None)
    started = time.monotonic()
    if resume is not None:
        meta = check_resume(resume, DemoMeta, finished=DemoFinished)
        run = Run.resume(resume, meta, None, say)
        folder = Path(meta.examples)
    else:
        folder = examples or default_examples()
        missing = [n for n in (*MINED, TARGET) if not (folder / n / "workload.toml").is_file()]
        if missing:
            raise ConfigError(f"{folder}: example workloads {', '.join(missing)} not found (run from a "
                              f"source checkout, or pass --examples)")
        threads = None if backend == "null" else _timing_threads(say)
        run = Run.create(runs_root, DemoMeta(name="cpu", sizing="quick", examples=str(folder),
                                             backend=backend, threads=threads,
                                             patience_s=PATIENCE_S if patience_s is None else patience_s,
                                             budget=Budget.parse(BUDGET)))
    with run.stoppable(f"klineage demo --resume {run.path}"):
        try:
            result = _steps(run, folder, say, step)
        except RunStopped as exc:  # a child's Ctrl-C: the demo stops, and says how to resume the demo
            raise KeyboardInterrupt from exc
    result.seconds = time.monotonic() - started
    run.log(DemoFinished(result=result.to_json()))
    return result


def _timing_threads(say: SayFn) -> int:
    """The cores other processes leave, measured over a second: every kernel (and both sides of
    every comparison) is timed on that many, never on cores another process holds."""
    load = others_load(1.0)
    threads = free_threads(load)
    cores = len(os.sched_getaffinity(0))
    if threads < cores:
        say(f"other processes use {load:.1f} of the machine's {cores} cores: every kernel is timed "
            f"with {threads} thread(s)")
    return threads


def _steps(run: Run, folder: Path, say: SayFn, step: StepFn) -> DemoResult:
    meta = run.record
    assert isinstance(meta, DemoMeta)
    gate = replace(GATE, backend=meta.backend, threads=meta.threads, patience_s=meta.patience_s)
    result = DemoResult(run=run.path, threads=meta.threads)
    library_path = run.path / "library"
    children = run.path / "runs"

    def finish(name: str, value: Any, paths: list[Path]) -> Any:
        record = run.record
        assert isinstance(record, DemoMeta)
        run.update_record(children=[*record.children, *(str(p.relative_to(run.path)) for p in paths)],
                          results={**record.results, name: value})
        return value

    def stopped(kind: str, name: str) -> Path | None:
        """The child run of this step a stop left unfinished, if any."""
        record = run.record
        assert isinstance(record, DemoMeta)
        for path in sorted(children.glob("*/run.json")) if children.is_dir() else ():
            child = RunDir.open(path.parent)
            if (str(path.parent.relative_to(run.path)) not in record.children
                    and child.meta.get("kind") == kind and child.meta.get("name") == name
                    and f"{kind}_finished" not in child.event_kinds()):
                return path.parent
        return None

    held_out = tuple(p for p in sorted(folder.iterdir())
                     if (p / "kernels" / "naive").is_dir() and p.name != TARGET)
    mine_runs = []
    for name in MINED:
        step(f"mining {name}")
        done = meta.results.get(f"mine {name}")
        if done is None:
            workload = load_workload(folder / name, quick=True)
            contexts = tuple(p for p in held_out if p.name != name)
            options = MineOptions(gate=gate, max_trials=ADMISSION_TRIALS, admit_on=contexts)
            resumed = stopped("mine", name)
            mined = mine(workload, None if resumed else load_kernel(workload, "expert"), children,
                         library_path, options, resume=resumed,
                         say=lambda line, n=name: say(f"mine {n}: {line}"))
            done = finish(f"mine {name}", mined.summary(), [mined.run.path])
        result.mined.append(done)
        mine_runs.append(Path(done["run"]))

    step("building the memory baseline's memory")
    memory_path = run.path / "memory"
    if "memory" not in meta.results:
        store = build_memory([mine_spent(p) for p in mine_runs], OptimizeOptions(gate=gate),
                             children, memory_path, say=lambda line: say(f"memory: {line}"))
        finish("memory", store.runs, [Path(p) for p in store.runs])

    library = Library.open(library_path, create=True)
    target = load_workload(folder / TARGET, quick=True)
    options = OptimizeOptions(budget=Budget.parse(BUDGET), gate=gate, memory=memory_path)
    step(f"optimizing {TARGET}/naive")
    result.optimized = meta.results.get("optimize") or {}
    if not result.optimized:
        resumed = stopped("optimize", target.name)
        optimized = optimize(target, None if resumed else load_kernel(target, "naive"), library, options,
                             runs_root=children, resume=resumed,
                             say=lambda line: say(f"optimize {TARGET}: {line}"))
        result.optimized = finish("optimize", {"run": str(optimized.run.path),
                                               "best_speedup": optimized.best_speedup,
                                               "stop_reason": optimized.stop_reason}, [optimized.run.path])

    step(f"bench {', '.join(METHODS)} on {TARGET}")
    result.benched = meta.results.get("bench") or {}
    if not result.benched:
        resumed = stopped("bench", TARGET)
        benched = (resume_bench(resumed, library, options, say=lambda line: say(f"bench: {line}"))
                   if resumed else
                   bench(folder / TARGET, library, METHODS, options, runs_root=children, quick=True,
                         say=lambda line: say(f"bench: {line}")))
        result.benched = finish("bench", {
            "run": str(benched.run.path), "summary": benched.record["summary"],
            "best_states": {r["method"]: r.get("best_state") for r in benched.record["results"]}},
            [benched.run.path])

    step("writing the report")
    paths = write_report(run.path, say=lambda line: say(f"report: {line}"))
    result.report = str(paths.html)
    return result
