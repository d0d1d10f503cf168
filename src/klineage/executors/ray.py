"""A Ray cluster (DESIGN.md §10): builds are Ray tasks on any node's cores; jobs run in timing
actors, one per GPU (``num_gpus=1``: Ray gives it that device alone) and one per node for the CPU
backend (pinned to its node), each running one job at a time. The caller keeps the queue: a job
whose actor or node died goes back to its front and runs on another actor (a new one on the same
node while that node lives), so nothing is lost, and since the job's result is only charged and
logged by the caller when it arrives, nothing is charged twice. Ray is imported only here."""

from __future__ import annotations

import contextlib
import socket
from collections import Counter, deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from klineage.backends import Backend
from klineage.errors import ConfigError, KlineageError, WorkerError
from klineage.executors.base import Item, Result
from klineage.workload import KernelSpec

__all__ = ["RayExecutor"]

_LOST = (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError,
         ray.exceptions.NodeDiedError, ray.exceptions.ObjectLostError)
"""What a dead actor, worker or node looks like to the caller: the job runs again."""


@ray.remote
class _TimingActor:
    """Holds one timing slot; Ray runs its calls one at a time."""

    def node(self) -> str:
        return ray.get_runtime_context().get_node_id()

    def run(self, job: Callable[[Any], Any], item: Any) -> Any:
        return job(item)


def _check_reachable(address: str) -> None:
    """Fail in seconds, not after Ray's minutes of retries, when nothing listens at the head."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        return  # 'auto' and the like: Ray resolves them
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except OSError as exc:
        raise ConfigError(f"--executor ray:{address}: no Ray cluster answers there ({exc}); start "
                          f"one with `ray start --head` (docs/scale.md)") from exc


@ray.remote(num_cpus=1)
def _build(backend: Backend, kernel: KernelSpec) -> None:
    with contextlib.suppress(KlineageError):  # a failed build is cached; its gate run reports it
        backend.build(kernel)


@dataclass
class _Slot:
    device: str
    node: str
    actor: Any


class RayExecutor:
    name = "ray"

    def __init__(self, address: str | None = None, max_attempts: int = 3, **init: Any):
        """Join the cluster at ``address`` (None: ``RAY_ADDRESS``, else a fresh local one);
        ``init`` goes to ``ray.init`` when this process has not joined one yet."""
        if address:
            _check_reachable(address)
        if not ray.is_initialized():
            try:
                ray.init(address=address, include_dashboard=False, log_to_driver=False, **init)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise ConfigError(f"--executor ray: cannot reach a Ray cluster at "
                                  f"{address or 'RAY_ADDRESS or a new local one'}: {exc}") from exc
        self.max_attempts = max_attempts
        self._slots: dict[str, list[_Slot]] = {}

    def prebuild(self, backend: Backend, kernels: Sequence[KernelSpec]) -> None:
        ray.get([_build.remote(backend, kernel) for kernel in kernels])

    def slots(self, device: str) -> int:
        return len(self._timing_slots(device))

    def ahead(self, job: Callable[[Item], Result], items: Sequence[Item], device: str = "cpu") -> None:
        return None  # jobs run when ``map`` asks for them

    def remote(self, device: str) -> bool:
        return True

    def map(self, job: Callable[[Item], Result], items: Sequence[Item],
            device: str = "cpu") -> Iterator[tuple[int, Result]]:
        idle = list(self._timing_slots(device))
        pending, tries = deque(range(len(items))), Counter[int]()
        running: dict[Any, tuple[int, _Slot]] = {}
        try:
            while pending or running:
                while pending and idle:
                    slot, index = idle.pop(), pending.popleft()
                    running[self._dispatch(slot, job, items[index])] = (index, slot)
                if not running:
                    raise WorkerError(f"the Ray cluster has no {device} timing slot left (a GPU job "
                                      f"needs a node with a GPU; a dead node's slots are gone)")
                [done], _ = ray.wait(list(running), num_returns=1)
                index, slot = running.pop(done)
                try:
                    result = ray.get(done)
                except _LOST as exc:
                    tries[index] += 1
                    if tries[index] >= self.max_attempts:
                        raise WorkerError(f"job {index} lost its Ray worker {tries[index]} times: "
                                          f"{exc}") from exc
                    pending.appendleft(index)
                    idle.extend(self._replace(slot))
                    continue
                except ray.exceptions.RayTaskError as exc:
                    if isinstance(exc.cause, KlineageError):  # the job's own error, as here
                        raise exc.cause from None
                    raise
                idle.append(slot)
                yield index, result
        finally:
            for ref in running:  # the caller stopped early: nothing more is wanted of these
                with contextlib.suppress(ray.exceptions.RayError):
                    ray.cancel(ref)

    def _dispatch(self, slot: _Slot, job: Callable[[Any], Any], item: Any) -> Any:
        return slot.actor.run.remote(job, item)

    def _timing_slots(self, device: str) -> list[_Slot]:
        if device not in self._slots:
            if device == "cuda":
                count = int(ray.cluster_resources().get("GPU", 0))
                self._slots[device] = [self._start(device, None) for _ in range(count)]
            else:
                self._slots[device] = [self._start(device, node["NodeID"]) for node in ray.nodes()
                                       if node["Alive"] and node["Resources"].get("CPU", 0) >= 1]
        return self._slots[device]

    def _start(self, device: str, node: str | None) -> _Slot:
        options: dict[str, Any] = {"num_cpus": 1, "max_restarts": 0}
        if device == "cuda":
            options["num_gpus"] = 1
        if node is not None:
            options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(node, soft=False)
        actor = _TimingActor.options(**options).remote()
        return _Slot(device, ray.get(actor.node.remote()), actor)

    def _replace(self, dead: _Slot) -> list[_Slot]:
        """A new actor for a dead one's slot while its node lives (none once the node is gone)."""
        slots = self._slots[dead.device]
        slots.remove(dead)
        if not any(n["NodeID"] == dead.node and n["Alive"] for n in ray.nodes()):
            return []
        fresh = self._start(dead.device, dead.node)
        slots.append(fresh)
        return [fresh]
