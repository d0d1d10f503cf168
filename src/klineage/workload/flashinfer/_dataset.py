"""Reading a FlashInfer-Bench dataset folder: ``definitions/**/*.json``,
``workloads/**/*.jsonl`` (one Workload record a line), ``solutions/**/*.json``. Traces are not
read: they are results, not problems. Every file that does not parse is kept as a one-line
problem, never skipped silently."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from klineage.errors import ConfigError
from klineage.workload.flashinfer._format import Definition, Solution, WorkloadRecord

__all__ = ["Dataset", "read_dataset"]


@dataclass
class Dataset:
    definitions: dict[str, tuple[Path, Definition]] = field(default_factory=dict)
    broken: list[tuple[Path, str]] = field(default_factory=list)
    """Definition files that do not parse: (file, why)."""
    workloads: dict[str, list[WorkloadRecord]] = field(default_factory=dict)
    workload_problems: dict[str, list[str]] = field(default_factory=dict)
    """Per definition name (the file's stem when the line names none): lines that do not parse."""
    solutions: dict[str, list[tuple[Path, Solution]]] = field(default_factory=dict)
    broken_solutions: list[tuple[Path, str]] = field(default_factory=list)


def _why(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "top level"
        return f"{where}: {first['msg']}"
    return f"{type(exc).__name__}: {exc}".splitlines()[0]


def read_dataset(root: Path) -> Dataset:
    if not (root / "definitions").is_dir():
        raise ConfigError(f"{root}: no definitions/ folder (a FlashInfer-Bench dataset holds "
                          f"definitions/, workloads/ and solutions/)")
    data = Dataset()
    for path in sorted((root / "definitions").rglob("*.json")):
        try:
            definition = Definition.model_validate_json(path.read_text())
        except (ValidationError, ValueError, OSError) as exc:
            data.broken.append((path, _why(exc)))
            continue
        if definition.name in data.definitions:
            data.broken.append((path, f"a second definition named {definition.name!r} "
                                      f"(the first is {data.definitions[definition.name][0]})"))
            continue
        data.definitions[definition.name] = (path, definition)
    for path in sorted((root / "workloads").rglob("*.jsonl")) if (root / "workloads").is_dir() else []:
        _read_workloads(path, data)
    for path in sorted((root / "solutions").rglob("*.json")) if (root / "solutions").is_dir() else []:
        try:
            solution = Solution.model_validate_json(path.read_text())
        except (ValidationError, ValueError, OSError) as exc:
            data.broken_solutions.append((path, _why(exc)))
            continue
        data.solutions.setdefault(solution.definition, []).append((path, solution))
    return data


def _read_workloads(path: Path, data: Dataset) -> None:
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = WorkloadRecord.model_validate(json.loads(line))
        except (ValidationError, ValueError) as exc:
            data.workload_problems.setdefault(path.stem, []).append(f"{path.name} line {number}: {_why(exc)}")
            continue
        data.workloads.setdefault(record.definition, []).append(record)
