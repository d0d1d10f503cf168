"""This machine: compile in parallel threads (each compile is its own compiler process); jobs run
in this process, one at a time (the CPU is one timing slot; a GPU job sees the first visible GPU)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

from klineage.backends import Backend
from klineage.errors import KlineageError
from klineage.executors.base import Item, Result
from klineage.workload import KernelSpec

__all__ = ["LocalExecutor"]


class LocalExecutor:
    name = "local"

    def __init__(self, build_workers: int | None = None):
        self.build_workers = build_workers or os.cpu_count() or 1

    def prebuild(self, backend: Backend, kernels: Sequence[KernelSpec]) -> None:
        if len(kernels) < 2:
            return  # nothing to overlap: the gate builds it when it needs it
        with ThreadPoolExecutor(max_workers=min(self.build_workers, len(kernels))) as pool:
            for future in [pool.submit(backend.build, kernel) for kernel in kernels]:
                # A failed build is cached; the gate run of that kernel reports it properly.
                with contextlib.suppress(KlineageError):
                    future.result()

    def slots(self, device: str) -> int:
        return 1

    def map(self, job: Callable[[Item], Result], items: Sequence[Item],
            device: str = "cpu") -> Iterator[tuple[int, Result]]:
        for index, item in enumerate(items):
            yield index, job(item)
