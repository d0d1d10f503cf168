"""This machine: compile in parallel threads (each compile is its own compiler process)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from klineage.backends import Backend
from klineage.errors import KlineageError
from klineage.workload import KernelSpec

__all__ = ["LocalExecutor"]


class LocalExecutor:
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
