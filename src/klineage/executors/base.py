"""The Executor seam: where gate work runs. Builds may run in parallel; timed runs on one device
never overlap (the gate takes a per-device lock around every timed run, across processes)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from klineage.backends import Backend
from klineage.workload import KernelSpec

__all__ = ["Executor"]


class Executor(Protocol):
    def prebuild(self, backend: Backend, kernels: Sequence[KernelSpec]) -> None:
        """Compile every kernel into the build cache ahead of gating (failures are cached too and
        reported by the gate run that needs them)."""
