"""``import_flashinfer_bench``: a FlashInfer-Bench dataset folder to workload folders, one per
Definition, each Solution klineage can run a kernel variant of it.

A Definition that cannot be imported is an outcome with a one-line reason and the others go on.
A written workload is loaded back with ``load_workload`` and its reference run at the quick
sizes and at every Workload (``klineage.workload._import_verify``, in its own process with a
timeout: the reference is the dataset's code) before it counts; a Workload whose reference
fails refuses the Definition, naming it, since every Workload must be checked.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, Field

from klineage.errors import WorkloadError
from klineage.workload._importing import install, run_module, staging_folder
from klineage.workload.flashinfer._dataset import Dataset, read_dataset
from klineage.workload.flashinfer._plan import Plan, PlanError, plan, workload_name
from klineage.workload.flashinfer._solution import NotRunnable, kernel_files
from klineage.workload.flashinfer._write import record_solutions, workload_files
from klineage.workload.loader import load_workload

__all__ = ["DefinitionOutcome", "import_flashinfer_bench"]


class DefinitionOutcome(BaseModel):
    """What importing one Definition (or a file that should have been one) gave."""

    definition: str = Field(description="The Definition's name (the file's stem if it does not parse).")
    source: str = Field(description="The Definition file.")
    name: str = Field(description="The workload's name (its folder name).")
    workload: str | None = Field(default=None, description="The folder written; None on failure.")
    error: str | None = Field(default=None, description="Why the Definition was not imported.")
    axes: dict[str, int] = Field(default_factory=dict, description="The benchmark (timed) sizes.")
    timed: str | None = Field(default=None, description="uuid of the timed Workload (the first).")
    check_shapes: int = Field(default=0, description="Workloads written as [[check_shapes]] (all).")
    params: dict[str, float] = Field(default_factory=dict, description="Scalar inputs.")
    kernels: dict[str, str] = Field(default_factory=dict, description="variant -> Solution name.")
    not_runnable: dict[str, str] = Field(default_factory=dict, description="Solution -> why not.")

    @property
    def ok(self) -> bool:
        return self.error is None


def import_flashinfer_bench(dataset: Path, out: Path, timeout_s: float = 300.0, force: bool = False,
                            on_definition: Callable[[str], None] | None = None) -> list[DefinitionOutcome]:
    """Import every Definition under ``dataset/definitions`` into ``out/<name>/``."""
    data = read_dataset(dataset)
    outcomes = [DefinitionOutcome(definition=path.stem, source=str(path), name=workload_name(path.stem),
                                  error=f"does not parse: {why}") for path, why in data.broken]
    for name, (path, _definition) in data.definitions.items():
        if on_definition is not None:
            on_definition(name)
        outcome = DefinitionOutcome(definition=name, source=str(path), name=workload_name(name))
        outcomes.append(_import_one(outcome, data, out / outcome.name, timeout_s, force))
    for name, solutions in data.solutions.items():
        if name not in data.definitions:
            for path, solution in solutions:
                outcomes.append(DefinitionOutcome(
                    definition=name, source=str(path), name=workload_name(name),
                    error=f"solution {solution.name!r} names definition {name!r}, which the dataset "
                          f"does not have"))
    for path, why in data.broken_solutions:  # solutions/<author>/<op_type>/<definition>/<name>.json
        outcomes.append(DefinitionOutcome(definition=path.parent.name, source=str(path), name=path.stem,
                                          error=f"solution file {path.name} does not parse: {why}"))
    for stem, problems in data.workload_problems.items():
        if stem not in data.definitions:
            outcomes.append(DefinitionOutcome(definition=stem, source=str(dataset / "workloads"),
                                              name=workload_name(stem),
                                              error=f"workloads do not parse: {problems[0]}"))
    return outcomes


def _import_one(outcome: DefinitionOutcome, data: Dataset, folder: Path, timeout_s: float,
                force: bool) -> DefinitionOutcome:
    source, definition = data.definitions[outcome.definition]
    problems = data.workload_problems.get(outcome.definition, [])
    if problems:
        outcome.error = f"workloads do not parse: {problems[0]}"
        return outcome
    if folder.exists() and not force:
        outcome.error = f"{folder} exists (use --force to replace it)"
        return outcome
    records = data.workloads.get(outcome.definition, [])
    try:
        layout = plan(definition, records)
    except PlanError as exc:
        outcome.error = str(exc)
        return outcome
    staging = staging_folder(folder)
    workload_files(staging, source, definition, records, layout)
    for _, solution in data.solutions.get(outcome.definition, []):
        try:
            outcome.kernels[kernel_files(solution, layout, staging / "kernels")] = solution.name
        except NotRunnable as exc:
            outcome.not_runnable[solution.name] = str(exc)
    record_solutions(staging, outcome.kernels, outcome.not_runnable)
    error = _verify(staging, layout, timeout_s)
    if error:
        shutil.rmtree(staging.parent)
        outcome.error = error
        return outcome
    install(staging, folder)
    outcome.workload, outcome.axes, outcome.timed = str(folder), layout.axes, layout.timed
    outcome.check_shapes = len(layout.check_shapes)
    outcome.params = {n: v for n, (v, _) in layout.params.items()}
    return outcome


def _verify(staging: Path, layout: Plan, timeout_s: float) -> str | None:
    try:
        load_workload(staging)  # the loader is the judge of what a workload is
    except WorkloadError as exc:
        return f"the written workload does not load: {exc}"
    verdict = run_module("klineage.workload._import_verify", staging, timeout_s)
    if "error" in verdict:
        return verdict["error"]
    for index, why in verdict["failed"].items():
        shape = layout.check_shapes[int(index)]
        sizes = " ".join(f"{k}={v}" for k, v in shape.items())
        return f"the reference fails at workload {index} ({sizes}): {why}"
    return None
