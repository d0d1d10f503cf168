"""Inside the worker: the correctness checks and the timing loops, on any Device.

Every check here answers a way a gate has been fooled (see REFERENCES.md):
outputs are poisoned before every call, including every timed call, so a kernel that writes
nothing, or skips work when its output looks done, fails; inputs are snapshotted and compared
after each call; each size runs three calls (first seed in new buffers, a second seed written
into the same buffers, the secret seed in freshly allocated buffers) so caching by pointer or by
first call fails; the reference is computed after the kernel ran, so its answer is never
lying in memory the kernel could find; timed calls rotate input sets and a few of them, picked
with the secret seed, are checked against the reference too.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from klineage.backends.base import Device
from klineage.gate._compare import output_mismatch
from klineage.gate.stats import summarize_trials
from klineage.workload import (
    allocate_outputs,
    load_reference,
    load_workload,
    poison_value,
    run_reference,
)
from klineage.workload.dtypes import dtype_info

__all__ = ["Session"]

Failure = tuple[str, str]
"""(outcome, reason): outcome is 'incorrect', 'crashed' or 'rejected_cheat'."""

_TIMED_CHECKS = 3


class _Buffers:
    """One set of device buffers for one size, with the seed its inputs came from."""

    def __init__(self, session: Session, axes: dict[str, int], seed: int):
        self.axes, self.seed = axes, seed
        self.inputs = session.draw_inputs(axes, seed)
        self.output_layout = [(a.shape, a.dtype)
                              for a in allocate_outputs(session.workload, axes).values()]
        self.outputs = [session.device.empty(*layout) for layout in self.output_layout]
        self.nbytes = sum(math.prod(s.dims(axes)) * dtype_info(s.dtype).numpy.itemsize
                          for s in (*session.workload.inputs, *session.workload.outputs))

    def twin(self, device: Device) -> _Buffers:
        """The same input buffers with outputs of its own (for a second kernel)."""
        other = _Buffers.__new__(_Buffers)
        other.__dict__.update(self.__dict__)
        other.outputs = [device.empty(*layout) for layout in self.output_layout]
        return other


class Session:
    def __init__(self, job: dict[str, Any], device: Device, progress: Callable[[str, str], None]):
        self.job, self.device, self.progress = job, device, progress
        self.workload = load_workload(job["workload"], quick=job.get("quick", False))
        self.reference = load_reference(self.workload)
        self.seeds: list[int] = job["seeds"]
        self.checks_done = 0
        self._round = 0

    # -- plumbing ---------------------------------------------------------------------------
    def load(self, artifact: str, entry: str) -> Callable[..., Callable[[], int]]:
        return self.device.load(Path(artifact), entry)

    def draw_inputs(self, axes: dict[str, int], seed: int) -> list[Any]:
        """Seeded inputs on the device; drawing again with the same seed gives the same bytes."""
        return [self.device.random(spec, spec.dims(axes), seed, index)
                for index, spec in enumerate(self.workload.inputs)]

    def bind(self, kernel: Callable[..., Callable[[], int]], bufs: _Buffers) -> Callable[[], int]:
        ptr = self.device.pointer
        axes = [bufs.axes[a] for a in self.workload.axes]
        return kernel([ptr(b) for b in bufs.inputs], [ptr(b) for b in bufs.outputs], axes,
                      list(self.workload.params.values()))

    def poison(self, bufs: _Buffers) -> None:
        self._round += 1
        for spec, buffer in zip(self.workload.outputs, bufs.outputs, strict=True):
            value = poison_value(spec.dtype, self._round)
            self.device.fill(buffer, value, bytewise=spec.dtype == "bool")

    def verify(self, bufs: _Buffers) -> str | None:
        """Check one completed call: inputs untouched, every output right. None when fine."""
        device = self.device
        device.synchronize()
        expected = self.draw_inputs(bufs.axes, bufs.seed)  # the inputs as they were handed over
        for spec, now, before in zip(self.workload.inputs, bufs.inputs, expected, strict=True):
            changed = device.bytes_differ(now, before)
            if changed:
                return f"input {spec.name!r} was modified by the kernel ({changed} bytes changed)"
        # The reference runs only now, after the kernel: its answer was never in memory before.
        given = {s.name: device.reference_input(b, self.workload.framework)
                 for s, b in zip(self.workload.inputs, expected, strict=True)}
        want = run_reference(self.workload, self.reference, given, bufs.axes,
                             torch_device=device.torch_device)
        self.checks_done += 1
        for spec, buffer in zip(self.workload.outputs, bufs.outputs, strict=True):
            rtol, atol = self.workload.tolerance_for(spec)
            kind = "bool" if spec.dtype == "bool" else "float" if dtype_info(spec.dtype).is_float else "int"
            problem = output_mismatch(spec.name, device.native(buffer, spec.dtype),
                                      device.native(want[spec.name], spec.dtype), rtol, atol, kind)
            if problem:
                return problem
        return None

    def call_and_verify(self, kernel: Any, bufs: _Buffers, what: str) -> Failure | None:
        self.progress("correctness", what)
        self.poison(bufs)
        rc = self.bind(kernel, bufs)()
        self.device.synchronize()
        if rc != 0:
            return "crashed", f"{what}: kl_launch returned {rc}"
        problem = self.verify(bufs)
        return ("incorrect", f"{what}: {problem}") if problem else None

    # -- correctness ------------------------------------------------------------------------
    def check_correctness(self, kernel: Any) -> Failure | None:
        first, second, secret = self.seeds[0], self.seeds[1], self.seeds[-1]
        for axes in self.workload.shapes():
            label = " ".join(f"{k}={v}" for k, v in axes.items())
            bufs = _Buffers(self, axes, first)
            failure = self.call_and_verify(kernel, bufs, f"at {label}, seed {first}")
            if failure:
                return failure
            # New values into the same buffers: a kernel caching by pointer or by first call fails.
            bufs.seed = second
            for buffer, fresh in zip(bufs.inputs, self.draw_inputs(axes, second), strict=True):
                self.device.write(buffer, fresh)
            failure = self.call_and_verify(
                kernel, bufs, f"at {label}, seed {second} (new values in the same buffers)")
            if failure:
                return failure
            # Fresh buffers while the old ones still live, so every address differs.
            fresh = _Buffers(self, axes, secret)
            failure = self.call_and_verify(
                kernel, fresh, f"at {label}, secret seed (freshly allocated buffers)")
            del bufs, fresh
            if failure:
                return failure
        return None

    # -- timing ------------------------------------------------------------------------------
    def timing_sets(self, timing: dict[str, Any]) -> list[_Buffers]:
        axes = dict(self.workload.axes)
        base = self.seeds[-1] + 1000
        sets = [_Buffers(self, axes, base)]
        per_set = max(sets[0].nbytes, 1)
        wanted = math.ceil(2 * timing["cache_bytes"] / per_set) if timing["cache_bytes"] else 1
        count = max(timing["min_sets"], min(wanted, timing["max_sets"],
                                            timing["max_footprint_bytes"] // per_set))
        sets += [_Buffers(self, axes, base + k) for k in range(1, max(count, 1))]
        for bufs in sets:
            self.poison(bufs)
        return sets

    def timed(self, call: Callable[[], int], bufs: _Buffers, flush: bool) -> tuple[float, float]:
        """One timed sample; the set's outputs are poisoned again right after, untimed."""
        if flush:
            self.device.flush_cache()
        device_s, wall_s, rc = self.device.time_call(call)
        if rc != 0:
            raise _KernelFailed("crashed", f"timed call: kl_launch returned {rc}")
        return device_s, wall_s

    def profile(self, kernel: Any, timing: dict[str, Any]) -> dict[str, Any] | Failure:
        self.progress("profile", "allocating rotated input sets")
        sets = self.timing_sets(timing)
        calls = [self.bind(kernel, b) for b in sets]
        try:
            estimate = self._warm_up(calls, sets, timing)
            reps = int(min(timing["max_reps"], max(1, round(timing["target_trial_s"] / estimate))))
            total = reps * timing["trials"]
            rng = np.random.default_rng(self.seeds[-1])
            checked = set(rng.choice(total, size=min(_TIMED_CHECKS, total), replace=False).tolist())
            trials: list[list[float]] = []
            walls: list[float] = []
            for trial in range(timing["trials"]):
                self.progress("profile", f"trial {trial + 1}/{timing['trials']} x {reps} calls")
                samples = []
                for rep in range(reps):
                    index = trial * reps + rep
                    bufs = sets[index % len(sets)]
                    device_s, wall_s = self.timed(calls[index % len(sets)], bufs, timing["flush"])
                    samples.append(device_s)
                    walls.append(wall_s)
                    if index in checked:
                        problem = self.verify(bufs)
                        if problem:
                            return "incorrect", f"timed call {index}: {problem}"
                    self.poison(bufs)
                trials.append(samples)
        except _KernelFailed as exc:
            return exc.outcome, exc.reason
        median, spread, medians = summarize_trials(trials)
        return {"median_s": median, "spread": spread, "trial_medians_s": medians,
                "reps_per_trial": reps, "samples": total, "min_s": min(min(t) for t in trials),
                "wall_median_s": float(np.median(walls)), "input_sets": len(sets),
                "footprint_bytes": sum(b.nbytes for b in sets),
                "threads": self.job.get("threads")}

    def _warm_up(self, calls: list[Callable[[], int]], sets: list[_Buffers],
                 timing: dict[str, Any]) -> float:
        self.progress("profile", "warm-up")
        spent, times = 0.0, []
        while len(times) < 2 or (spent < timing["warmup_s"] and len(times) < 50):
            index = len(times) % len(sets)
            device_s, wall_s = self.timed(calls[index], sets[index], timing["flush"])
            self.poison(sets[index])
            times.append(device_s)
            spent += wall_s
        return max(float(np.median(times)), 1e-9)

    def paired_times(self, a: Any, b: Any, timing: dict[str, Any]) -> Any:
        """Interleaved A/B samples on shared inputs (ABBA order), each kernel its own outputs."""
        self.progress("compare", "allocating rotated input sets")
        sets_a = self.timing_sets(timing)
        sets_b = [bufs.twin(self.device) for bufs in sets_a]
        for twin in sets_b:
            self.poison(twin)
        calls_a = [self.bind(a, s) for s in sets_a]
        calls_b = [self.bind(b, s) for s in sets_b]
        try:
            each = self._warm_up(calls_a, sets_a, timing) + self._warm_up(calls_b, sets_b, timing)
            pairs = int(min(timing["max_pairs"], max(timing["min_pairs"],
                                                     timing["compare_s"] / each)))
            times_a, times_b = [], []
            for index in range(pairs):
                if index % 10 == 0:
                    self.progress("compare", f"pair {index + 1}/{pairs}")
                k = index % len(sets_a)
                order = (("baseline", calls_a[k], sets_a[k], times_a),
                         ("candidate", calls_b[k], sets_b[k], times_b))
                for role, call, bufs, sink in order if index % 2 == 0 else order[::-1]:
                    sink.append(self.timed(call, bufs, timing["flush"])[0])
                    if index == pairs - 1:
                        problem = self.verify(bufs)
                        if problem:
                            return "incorrect", f"the {role} kernel, timed: {problem}"
                    self.poison(bufs)
        except _KernelFailed as exc:
            return exc.outcome, exc.reason
        return times_a, times_b


class _KernelFailed(Exception):
    def __init__(self, outcome: str, reason: str):
        super().__init__(reason)
        self.outcome, self.reason = outcome, reason
