"""What the expert-source baseline may know: raw expert sources of other workloads.

Plain data gathered before a run, so a bench can filter it (leave-one-out) and a run records
exactly what it was shown (the memory baseline's knowledge is ``optimize.memory``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from klineage.errors import WorkloadError
from klineage.source import present

__all__ = ["ExpertSource", "expert_sources"]


@dataclass(frozen=True)
class ExpertSource:
    """The raw source of another workload's expert kernel."""

    workload: str
    language: str
    source: str

    def features(self) -> set[str]:
        return present(self.source, self.language)


def expert_sources(folders: list[Path], exclude_workload: str | None = None,
                   variant: str = "expert", skip: Callable[[str], None] | None = None) -> list[ExpertSource]:
    """The expert kernel sources of the given workload folders (skipping ``exclude_workload``).
    ``skip``: a folder that does not load is told to it and left out (folders the user did not
    name: a broken one beside theirs must not stop their run); without it, it is an error."""
    from klineage.workload import load_kernel, load_workload

    found = []
    for folder in folders:
        if not (folder / "kernels" / variant).is_dir():
            continue
        try:
            workload = load_workload(folder)
            if workload.name == exclude_workload:
                continue
            spec = load_kernel(workload, variant)
        except WorkloadError as exc:
            if skip is None:
                raise
            skip(f"skipped {folder} (its expert is not readable: {exc})")
            continue
        found.append(ExpertSource(workload.name, spec.language, spec.source.read_text()))
    return found
