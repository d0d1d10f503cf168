"""Runners in the test's own process, speaking ``gate.sandbox.Candidate``'s interface, for what
the trusted session decides about neighbours: which memory each runner is given and how a
comparison treats a baseline that behaves differently beside its successor.

A real runner maps the CPU input arena read-only; these write wherever they like, as a CUDA
runner can in the device memory it is handed. Each computes the axpy fixture's result (y =
alpha * x + z, from its own input arena into its own output arena) and answers with the time
its ``seconds`` gives, its clock always believable: what is judged is the comparison, not the
clock.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from klineage.gate.sandbox import CallResult

ROUND_TRIP_S = 5e-5
"""What our clock sees beyond the runner's own, the same for every runner here."""
MARK = np.frombuffer(b"NEIGHBR!", dtype=np.uint8)


def slack(arena: Any) -> slice:
    """The arena's last 8 bytes: past every input set (the arena is a whole number of pages)."""
    return slice(arena.nbytes - MARK.size, arena.nbytes)


class Runner:
    """One candidate's runner: correct outputs, and the time ``seconds(self)`` says."""

    def __init__(self, inputs: Any, outputs: Any, seconds: Callable[[Runner], float]) -> None:
        self.inputs, self.outputs, self.seconds = inputs, outputs, seconds
        self.calls = 0
        self.closed = False

    def call(self, in_offsets: list[int], out_offsets: list[int], axes: list[int],
             params: list[float], step: str) -> CallResult:
        n = axes[0]
        x, z = (self.inputs.view(offset, (n,), np.float32) for offset in in_offsets)
        y = self.outputs.view(out_offsets[0], (n,), np.float32)
        y[...] = (params[0] * x.astype(np.float64) + z).astype(np.float32)
        seconds = self.seconds(self)
        self.calls += 1
        return CallResult(rc=0, reported_s=seconds, wall_s=seconds + ROUND_TRIP_S, cpu_s=0.0)

    def protect(self, offset: int, length: int, accessible: bool) -> None:
        pass

    def close(self) -> None:
        self.closed = True

    def log_tail(self, limit: int = 1000) -> str:
        return ""

    def cpu_seconds(self) -> float:
        return 0.0


class Spin(Runner):
    """Our calibration kernel's part: its outputs zeroed, as long as it is asked to take."""

    def call(self, in_offsets: list[int], out_offsets: list[int], axes: list[int],
             params: list[float], step: str) -> CallResult:
        for offset, size in zip(out_offsets, axes[2 + axes[0]:], strict=True):
            self.outputs.region(offset, offset + size)[...] = 0
        self.calls += 1
        return CallResult(rc=0, reported_s=params[0], wall_s=params[0] + ROUND_TRIP_S, cpu_s=0.0)


def successor(inputs: Any, outputs: Any) -> Runner:
    """Plain work, 1 ms a call, and a mark in the slack of the input arena it is given: the
    signal a baseline listened for through a shared arena."""
    def seconds(runner: Runner) -> float:
        runner.inputs.base[slack(runner.inputs)] = MARK
        return 1e-3
    return Runner(inputs, outputs, seconds)


def listening_baseline(inputs: Any, outputs: Any) -> Runner:
    """The same work, 1 ms a call, but 3 ms whenever the mark is in its input arena."""
    def seconds(runner: Runner) -> float:
        heard = bool(np.array_equal(runner.inputs.base[slack(runner.inputs)], MARK))
        runner.heard = getattr(runner, "heard", 0) + heard
        return 3e-3 if heard else 1e-3
    return Runner(inputs, outputs, seconds)


def counting_baseline(slow_from: int, slow_calls: int) -> Callable[[Any, Any], Runner]:
    """A baseline that hears nothing and counts its calls instead: 3 ms for ``slow_calls``
    calls from its call ``slow_from`` (where it reckons the pairs are), 1 ms otherwise."""
    def make(inputs: Any, outputs: Any) -> Runner:
        return Runner(inputs, outputs,
                      lambda r: 3e-3 if slow_from <= r.calls < slow_from + slow_calls else 1e-3)
    return make


def plain(inputs: Any, outputs: Any) -> Runner:
    return Runner(inputs, outputs, lambda runner: 1e-3)
