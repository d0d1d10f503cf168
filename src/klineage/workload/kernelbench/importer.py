"""``import_kernelbench``: KernelBench problem files to workload folders.

Each problem is surveyed by ``_probe`` in its own Python process with a timeout (a problem
file is code: it may hang, crash or print); a problem that fails is an outcome with a one-line
reason, and the others go on. A written workload is loaded back with ``load_workload`` before it
counts, so the importer can never leave a folder the rest of klineage would refuse.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import NamedTuple

from pydantic import BaseModel, Field

from klineage.errors import ConfigError, WorkloadError
from klineage.workload._importing import install, run_module, staging_folder
from klineage.workload.kernelbench._write import workload_files
from klineage.workload.loader import load_workload

__all__ = ["ImportOutcome", "import_kernelbench", "problem_files"]


class ImportOutcome(BaseModel):
    """What importing one problem file gave: a workload folder, or the reason it could not."""

    problem: str = Field(description="The problem file.")
    name: str = Field(description="The workload's name (its folder name).")
    workload: str | None = Field(default=None, description="The folder written; None on failure.")
    error: str | None = Field(default=None, description="Why the problem was not imported.")
    axes: dict[str, int] = Field(default_factory=dict)
    params: dict[str, float] = Field(default_factory=dict)
    weights: list[str] = Field(default_factory=list, description="Weight inputs, in order.")
    check_shapes: int = Field(default=0, description="How many [[check_shapes]] were written.")
    notes: list[str] = Field(default_factory=list, description="What the user should know.")

    @property
    def ok(self) -> bool:
        return self.error is None


def problem_files(paths: Iterable[Path]) -> list[Path]:
    """The .py files named, and those under named folders (recursively, sorted)."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found += sorted(p for p in path.rglob("*.py")
                            if not p.name.startswith(("_", ".")) and "__pycache__" not in p.parts)
        elif path.is_file():
            found.append(path)
        else:
            raise ConfigError(f"{path}: no such file or folder")
    if not found:
        raise ConfigError(f"no .py problem files under {', '.join(str(p) for p in paths)}")
    return found


class _Limits(NamedTuple):
    timeout_s: float
    memory_bytes: int


def import_kernelbench(paths: Iterable[Path], out: Path, timeout_s: float = 300.0,
                       memory_bytes: int = 8 << 30, force: bool = False,
                       on_problem: Callable[[Path, int, int], None] | None = None) -> list[ImportOutcome]:
    """Import every problem under ``paths`` into ``out/<name>/``; one outcome per problem.

    Each problem's processes get ``timeout_s`` seconds and ``memory_bytes`` of address space.
    ``on_problem(problem, done, total)`` is called before each problem.
    """
    problems = problem_files(paths)
    names = _names(problems)
    limits = _Limits(timeout_s, memory_bytes)
    outcomes = []
    for done, problem in enumerate(problems):
        if on_problem is not None:
            on_problem(problem, done, len(problems))
        outcomes.append(_import_one(problem, out / names[problem], limits, force))
    return outcomes


def _names(problems: list[Path]) -> dict[Path, str]:
    """Folder names from file stems; a stem two folders share gets its parent folder's name."""
    def clean(text: str) -> str:
        return re.sub(r"\W+", "_", text).strip("_").lower() or "problem"
    stems = [clean(p.stem) for p in problems]
    return {p: clean(f"{p.parent.name}_{p.stem}") if stems.count(s) > 1 else s
            for p, s in zip(problems, stems, strict=True)}


def _import_one(problem: Path, folder: Path, limits: _Limits, force: bool) -> ImportOutcome:
    outcome = ImportOutcome(problem=str(problem), name=folder.name)
    if folder.exists() and not force:
        outcome.error = f"{folder} exists (use --force to replace it)"
        return outcome
    survey = _subprocess("_probe", problem, limits)
    if "error" in survey:
        outcome.error = survey["error"]
        return outcome
    staging = staging_folder(folder)
    error = _write_and_verify(staging, problem, survey, limits)
    if error:
        shutil.rmtree(staging.parent)
        outcome.error = error
        return outcome
    install(staging, folder)
    return _described(outcome, folder, survey)


def _write_and_verify(staging: Path, problem: Path, survey: dict, limits: _Limits) -> str | None:
    """Write the workload, load it, run it as the gate will; check shapes whose reference fails
    on the declared inits are dropped (and listed). None, or why the problem is not imported."""
    try:
        workload_files(staging, problem, survey)
        load_workload(staging)  # the loader is the judge of what a workload is
    except WorkloadError as exc:
        return f"the written workload does not load: {exc}"
    verdict = _subprocess("_verify", staging, limits)
    if "error" in verdict:
        return verdict["error"]
    failed = {int(i): why for i, why in verdict["failed"].items()}
    if failed:
        shapes = survey["check_shapes"]
        survey["check_notes"] += [_shape_note(shapes[i], f"the reference on the declared inits: {why}")
                                  for i, why in failed.items()]
        survey["check_shapes"] = [s for i, s in enumerate(shapes) if i not in failed]
        shutil.rmtree(staging)
        workload_files(staging, problem, survey)
        load_workload(staging)
    return None


def _shape_note(shape: dict[str, int], why: str) -> str:
    return " ".join(f"{k}={v}" for k, v in shape.items()) + f": {why}"


def _subprocess(module: str, target: Path, limits: _Limits) -> dict:
    """Run a helper (``_probe`` here, or the shared ``_import_verify``) on TARGET in a fresh
    interpreter under the import's limits; {"error": ...} when it fails."""
    qualified = "klineage.workload._import_verify" if module == "_verify" else \
        f"klineage.workload.kernelbench.{module}"
    return run_module(qualified, target, limits.timeout_s, limits.memory_bytes)


def _described(outcome: ImportOutcome, folder: Path, survey: dict) -> ImportOutcome:
    outcome.workload = str(folder)
    outcome.axes = {a: survey["constants"][a] for a in survey["axes"]}
    outcome.params = {p["name"]: float(p["value"]) for p in survey["params"]}
    outcome.weights = [survey["names"]["weights"][k] for k in survey["used_weights"]]
    outcome.check_shapes = len(survey["check_shapes"])
    first_refusal = survey["check_notes"][0] if survey["check_notes"] else "none tried"
    if not survey["check_shapes"]:
        outcome.notes.append(f"no check shapes: the module ran at no other size ({first_refusal})")
    elif not any(v % 2 and v > 1 for shape in survey["check_shapes"] for v in shape.values()):
        outcome.notes.append(f"no odd check shapes: the module ran at none ({first_refusal})")
    stuck = survey["stuck"]
    free = {k: v for k, v in survey["fixed"].items() if k not in stuck}
    if free:
        outcome.notes.append("kept fixed (drive no input dimension): "
                             + ", ".join(f"{k}={v}" for k, v in free.items()))
    if stuck:
        outcome.notes.append("kept fixed (the Model ran at no other value of them): "
                             + ", ".join(f"{k}={survey['fixed'][k]}" for k in stuck))
    unused = [k for k in survey["names"]["weights"] if k not in survey["used_weights"]]
    if unused:
        outcome.notes.append("not inputs (the forward does not read them): " + ", ".join(unused))
    return outcome
