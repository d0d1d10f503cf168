"""This machine: compile in parallel threads (each compile is its own compiler process); jobs
run one per timing slot. The CPU is one slot, and so is a single GPU: those jobs run in this
process. With several visible GPUs each is a slot with its own worker process, started once and
pinned to its device by ``CUDA_VISIBLE_DEVICES`` (what the gate's device lock keys on)."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, ThreadPoolExecutor, wait

from klineage.backends import Backend
from klineage.errors import KlineageError
from klineage.executors.base import Item, Result
from klineage.workload import KernelSpec

__all__ = ["LocalExecutor"]


class LocalExecutor:
    name = "local"

    def __init__(self, build_workers: int | None = None, gpus: Sequence[str] | None = None):
        """``gpus``: the device ids to time on (default: every GPU visible to torch)."""
        self.build_workers = build_workers or os.cpu_count() or 1
        self._gpus = list(gpus) if gpus is not None else None
        self._pools: list[ProcessPoolExecutor] = []

    def prebuild(self, backend: Backend, kernels: Sequence[KernelSpec]) -> None:
        if len(kernels) < 2:
            return  # nothing to overlap: the gate builds it when it needs it
        with ThreadPoolExecutor(max_workers=min(self.build_workers, len(kernels))) as pool:
            for future in [pool.submit(backend.build, kernel) for kernel in kernels]:
                # A failed build is cached; the gate run of that kernel reports it properly.
                with contextlib.suppress(KlineageError):
                    future.result()

    def slots(self, device: str) -> int:
        return max(1, len(self._visible())) if device == "cuda" else 1

    def ahead(self, job: Callable[[Item], Result], items: Sequence[Item], device: str = "cpu") -> None:
        return None  # jobs run when ``map`` asks for them

    def remote(self, device: str) -> bool:
        return self.slots(device) > 1

    def map(self, job: Callable[[Item], Result], items: Sequence[Item],
            device: str = "cpu") -> Iterator[tuple[int, Result]]:
        if not self.remote(device):
            for index, item in enumerate(items):
                yield index, job(item)
            return
        idle, pending = list(self._gpu_pools()), deque(range(len(items)))
        running: dict[Future[Result], tuple[int, ProcessPoolExecutor]] = {}
        try:
            while pending or running:
                while pending and idle:
                    pool, index = idle.pop(), pending.popleft()
                    running[pool.submit(job, items[index])] = (index, pool)
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in finished:
                    index, pool = running.pop(future)
                    idle.append(pool)
                    yield index, future.result()
        finally:
            for future in running:  # the caller stopped early: nothing more is wanted of these
                future.cancel()

    def _visible(self) -> list[str]:
        if self._gpus is None:
            self._gpus = _visible_gpus()
        return self._gpus

    def _gpu_pools(self) -> list[ProcessPoolExecutor]:
        if not self._pools:
            spawn = multiprocessing.get_context("spawn")  # a fresh process: no CUDA state inherited
            self._pools = [ProcessPoolExecutor(1, mp_context=spawn, initializer=_pin, initargs=(gpu,))
                           for gpu in self._visible()]
        return self._pools


def _pin(gpu: str) -> None:
    os.environ["CUDA_VISIBLE_DEVICES"] = gpu


def _visible_gpus() -> list[str]:
    try:
        import torch
    except ImportError:
        return []
    count = torch.cuda.device_count()
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    return (visible.split(",") if visible else [str(i) for i in range(count)])[:count]
