"""``klineage demo``: the whole pipeline, offline, on the bundled CPU workloads.

1. mine two CPU experts (softmax, transpose) with the rules brain into a fresh skill library;
   their cards are admitted on the other examples, never on the target below
2. build the memory baseline's own memory: forward runs from the same two workloads' naive
   kernels with the budget each mine spent (``optimize.memory``)
3. optimize the naive kernel of a workload that contributed no lineage (rmsnorm) with that library
4. bench klineage against the ``none`` and ``memory`` baselines on it, same gate and budget
5. write the report of the whole demo run

Everything runs at the workloads' ``[quick_axes]`` with a shorter timing schedule, so the demo
fits in about five minutes on two cores; the gate's checks are the full ones. Every step is a
child run inside the demo's own run folder, so the report (and ``--resume`` of a child) works as
for any run.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from klineage.bench import bench
from klineage.errors import ConfigError
from klineage.gate import GateOptions
from klineage.mine import MineOptions, mine
from klineage.optimize import OptimizeOptions, optimize
from klineage.optimize.memory import build_memory, mine_spent
from klineage.report import write_report
from klineage.runs import Budget, Event, Run, RunMeta
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
    children: list[str] = Field(default_factory=list)
    """The runs the demo made, relative to its folder, as each finishes."""


class DemoFinished(Event):
    event: Literal["demo_finished"] = "demo_finished"
    result: dict[str, Any]
    """What ``klineage demo --json`` prints."""


@dataclass
class DemoResult:
    run: Path
    target: str = TARGET
    mined: list[dict[str, Any]] = field(default_factory=list)
    optimized: dict[str, Any] = field(default_factory=dict)
    benched: dict[str, Any] = field(default_factory=dict)
    report: str = ""
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"run": str(self.run), "mined": self.mined, "optimize": self.optimized,
                "bench": self.benched, "report": self.report, "seconds": round(self.seconds, 1)}


def run_demo(examples: Path | None = None, runs_root: Path = Path("runs"),
             say: SayFn | None = None, step: StepFn | None = None,
             backend: str | None = None) -> DemoResult:
    """Run the demo; ``say`` gets progress lines, ``step`` is called as each stage starts.
    ``backend``: every gate on this backend (``null``: the whole demo without a compiler)."""
    folder = examples or default_examples()
    missing = [n for n in (*MINED, TARGET) if not (folder / n / "workload.toml").is_file()]
    if missing:
        raise ConfigError(f"{folder}: example workloads {', '.join(missing)} not found (run from a "
                          f"source checkout, or pass --examples)")
    say, step = say or (lambda _: None), step or (lambda _: None)
    started = time.monotonic()
    gate = replace(GATE, backend=backend)
    run = Run.create(runs_root, DemoMeta(name="cpu", sizing="quick", examples=str(folder),
                                         backend=backend, budget=Budget.parse(BUDGET)))
    result = DemoResult(run=run.path)
    library_path = run.path / "library"

    def child_done(path: Path) -> None:
        run.update_record(children=[*run.record.children, str(path.relative_to(run.path))])

    held_out = tuple(p for p in sorted(folder.iterdir())
                     if (p / "kernels" / "naive").is_dir() and p.name != TARGET)
    mine_runs = []
    for name in MINED:
        step(f"mining {name}")
        workload = load_workload(folder / name, quick=True)
        contexts = tuple(p for p in held_out if p.name != name)
        options = MineOptions(gate=gate, max_trials=ADMISSION_TRIALS, admit_on=contexts)
        mined = mine(workload, load_kernel(workload, "expert"), run.path / "runs", library_path,
                     options, say=lambda line, n=name: say(f"mine {n}: {line}"))
        result.mined.append(mined.summary())
        child_done(mined.run.path)
        mine_runs.append(mined.run.path)

    step("building the memory baseline's memory")
    memory_path = run.path / "memory"
    store = build_memory([mine_spent(p) for p in mine_runs], OptimizeOptions(gate=gate),
                         run.path / "runs", memory_path, say=lambda line: say(f"memory: {line}"))
    for path in store.runs:
        child_done(Path(path))

    library = Library.open(library_path, create=True)
    target = load_workload(folder / TARGET, quick=True)
    step(f"optimizing {TARGET}/naive")
    options = OptimizeOptions(budget=Budget.parse(BUDGET), gate=gate, memory=memory_path)
    optimized = optimize(target, load_kernel(target, "naive"), library, options,
                         runs_root=run.path / "runs", say=lambda line: say(f"optimize {TARGET}: {line}"))
    result.optimized = {"run": str(optimized.run.path), "best_speedup": optimized.best_speedup,
                        "stop_reason": optimized.stop_reason}
    child_done(optimized.run.path)

    step(f"bench {', '.join(METHODS)} on {TARGET}")
    benched = bench(folder / TARGET, library, METHODS, options, runs_root=run.path / "runs", quick=True,
                    say=lambda line: say(f"bench: {line}"))
    result.benched = {"run": str(benched.run.path), "summary": benched.record["summary"],
                      "best_states": {r["method"]: r.get("best_state") for r in benched.record["results"]}}
    child_done(benched.run.path)

    step("writing the report")
    paths = write_report(run.path, say=lambda line: say(f"report: {line}"))
    result.report = str(paths.html)
    result.seconds = time.monotonic() - started
    run.log(DemoFinished(result=result.to_json()))
    return result
