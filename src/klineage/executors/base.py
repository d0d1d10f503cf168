"""The Executor seam: where gate work runs (DESIGN.md §10).

Two kinds of work. Builds run anywhere there is a core (``prebuild``), in parallel. Jobs
(``map``) each take one *timing slot* — a device held exclusively for the job's whole length:
one per GPU, one per machine for the CPU backend — so no two timed runs ever share a device (the
gate's per-device lock stays as the backstop across processes). A job is a module-level function
of one picklable item. What the run records of it — budget charges, events, cached reports — the
caller writes from the job's result, once per finished job, so a job run twice (its worker died)
is recorded once; files a job writes itself (a bench group's own optimize runs) need the run
folder at the same path wherever it runs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Protocol, TypeVar

from klineage.backends import Backend
from klineage.workload import KernelSpec

__all__ = ["Executor", "Item", "Result"]

Item = TypeVar("Item")
Result = TypeVar("Result")


class Executor(Protocol):
    name: str
    """'local' or 'ray' (what reports say the work ran on)."""

    def prebuild(self, backend: Backend, kernels: Sequence[KernelSpec]) -> None:
        """Compile every kernel into the build cache ahead of gating (failures are cached too and
        reported by the gate run that needs them)."""

    def slots(self, device: str) -> int:
        """How many jobs on ``device`` ('cpu' or 'cuda') run at once."""

    def remote(self, device: str) -> bool:
        """Whether jobs on ``device`` run outside this process (their items are pickled, and
        callbacks such as progress cannot go with them)."""

    def ahead(self, job: Callable[[Item], Result], items: Sequence[Item], device: str = "cpu") -> None:
        """Jobs whose results a later ``map`` will ask for: an executor that queues work elsewhere
        (a spool) places them now, so they run in the same round as the jobs asked for first;
        the others do nothing (their ``map`` runs them when asked)."""

    def map(self, job: Callable[[Item], Result], items: Sequence[Item],
            device: str = "cpu") -> Iterator[tuple[int, Result]]:
        """Run ``job(item)`` for every item, each in a timing slot of ``device``; yield
        ``(index, result)`` as each finishes, each index exactly once. A job whose worker or
        machine died runs again in another slot; a klineage error the job raised is raised here."""
