"""The ``memory`` baseline's own knowledge, acquired its own way (as AccelOpt and KernelBlaster
build theirs): forward optimize runs from the naive kernel of each training workload, with no
skill cards, keeping what they observed — slow→fast pairs and failures — as free text with no
preconditions.

Fair against klineage by construction: ``klineage memory build --like MINE_RUN`` gives each
training workload the budget its mine run spent (gate runs and brain calls), with the same brain,
so both methods spend the same offline effort on the same workloads. The store is one file,
``memory.json``; a bench filters out what was observed on the workload it optimizes.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from klineage.errors import ConfigError
from klineage.lineage._feedback import trim_lines
from klineage.optimize.records import CORRECT, NO_KERNEL
from klineage.runs import Budget
from klineage.workload import load_kernel, load_workload

__all__ = ["MEMORY_FILE", "MemoryStore", "Observation", "build_memory", "mine_spent"]

MEMORY_FILE = "memory.json"
SCHEMA_VERSION = 1
_SHOWN_PAIRS, _SHOWN_FAILURES, _DIFF_LINES = 12, 10, 24


class Observation(BaseModel):
    """One candidate the memory's own runs gated: what was changed and what came of it."""

    workload: str
    feature: str | None = Field(description="The feature the candidate named (None: unnamed)")
    verdict: str
    speedup: float | None = Field(
        default=None, description="time(before) / time(candidate), when it was compared")
    reason: str = Field(default="", description="The gate's reason line, trimmed")
    diff: str = Field(default="", description="The candidate against the kernel it was tried on, "
                      "trimmed")


class MemoryStore(BaseModel):
    schema_version: int = SCHEMA_VERSION
    brain: str
    workloads: list[str]
    budgets: dict[str, str] = Field(description="Per training workload, the budget its run had")
    spent: dict[str, dict[str, Any]] = Field(description="Per training workload, what it spent")
    runs: list[str] = Field(default_factory=list, description="The optimize runs it came from")
    observations: list[Observation] = Field(default_factory=list)

    @classmethod
    def load(cls, folder: Path) -> MemoryStore:
        path = folder / MEMORY_FILE if folder.is_dir() else folder
        try:
            return cls.model_validate_json(path.read_text())
        except FileNotFoundError:
            raise ConfigError(f"--memory: no {MEMORY_FILE} at {folder} (build one with "
                              "`klineage memory build`)") from None
        except (OSError, ValidationError) as exc:
            raise ConfigError(f"--memory: {path} is not a memory store: {exc}") from exc

    def without(self, workload: str) -> list[Observation]:
        return [o for o in self.observations if o.workload != workload]


def success_counts(observations: list[Observation]) -> Counter[str]:
    """Per feature, how many remembered candidates made a kernel faster."""
    return Counter(o.feature for o in observations
                   if o.feature and o.verdict == "accepted" and (o.speedup or 0) > 1)


def memory_text(observations: list[Observation]) -> str:
    """The free-text memory a brain is shown: the best slow→fast pairs with their diffs, then
    the failures, each one line."""
    pairs = sorted((o for o in observations if o.verdict == "accepted" and (o.speedup or 0) > 1),
                   key=lambda o: -(o.speedup or 0))[:_SHOWN_PAIRS]
    failures = [o for o in observations if o.verdict not in CORRECT][:_SHOWN_FAILURES]
    if not pairs and not failures:
        return "No past optimizations are remembered."
    parts = ["What my own earlier optimization runs on other kernels observed (no conditions "
             "were recorded):"]
    for o in pairs:
        parts.append(f"- {o.workload}: {o.feature or 'a change'} made it {o.speedup:.2f}x faster"
                     + (f"\n```diff\n{trim_lines(o.diff, _DIFF_LINES, 200)}\n```" if o.diff else ""))
    parts += [f"- {o.workload}: {o.feature or 'a change'} failed: {o.verdict}: "
              f"{trim_lines(o.reason, 1, 200)}" for o in failures]
    return "\n".join(parts)


def mine_spent(mine_run: Path) -> tuple[Path, Budget, bool]:
    """The training workload of a mine run, the budget it spent (its gate runs and calls), and
    whether it ran at the workload's quick sizes."""
    try:
        meta = json.loads((mine_run / "run.json").read_text())
        summary = json.loads((mine_run / "summary.json").read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError(f"--like: {mine_run} is not a finished mine run: {exc}") from exc
    if meta.get("kind") != "mine":
        raise ConfigError(f"--like: {mine_run} is a {meta.get('kind')} run, not a mine run")
    spent = summary.get("spent") or {}
    gate_runs, calls = int(spent.get("gate_runs") or 0), int(spent.get("calls") or 0)
    if gate_runs <= 0:
        raise ConfigError(f"--like: {mine_run} records no gate runs spent")
    return (Path(meta["workload"]), Budget(gate_runs=gate_runs, calls=calls or None),
            meta.get("sizing") == "quick")


SayFn = Callable[[str], None]


def build_memory(training: list[tuple[Path, Budget, bool]], options: Any, runs_root: Path,
                 out: Path, say: SayFn | None = None, start: str = "naive") -> MemoryStore:
    """Run the memory's own forward optimize on each training workload (``options``: an
    ``OptimizeOptions``, whose method and budget are set here) and write ``out/memory.json``."""
    from klineage.optimize.loop import optimize
    from klineage.optimize.methods import MethodInputs

    if not training:
        raise ConfigError("memory build: no training workloads")
    say = say or (lambda _: None)
    store = MemoryStore(brain=options.brain, workloads=[], budgets={}, spent={})
    for folder, budget, quick in training:
        workload = load_workload(folder, quick=quick)
        say(f"memory: optimizing {workload.name}/{start} with {budget.describe()}")
        result = optimize(workload, load_kernel(workload, start), None,
                          replace(options, method="none", budget=budget), runs_root=runs_root,
                          say=say, inputs=MethodInputs())
        store.workloads.append(workload.name)
        store.budgets[workload.name] = budget.describe()
        store.spent[workload.name] = result.record["spent"]
        store.runs.append(str(result.run.path))
        store.observations += [
            Observation(workload=workload.name, feature=step["feature"], verdict=step["verdict"],
                        speedup=1 / step["ratio"] if step["ratio"] else None,
                        reason=trim_lines(step["reason"], 3), diff=trim_lines(step["diff"], 60, 200))
            for step in result.record["steps"] if step["verdict"] not in NO_KERNEL]
    out.mkdir(parents=True, exist_ok=True)
    (out / MEMORY_FILE).write_text(store.model_dump_json(indent=1))
    return store
