"""The trusted side of the gate: checks and timing of kernels that run in sandboxed runners.

Runs in a process that never loads candidate code. It draws every input (seeds never leave
it), writes them into shared memory the candidate can only read, poisons the outputs, tells
the runner to call, then reads the outputs back and compares them with the reference itself.

Each check answers a way a gate has been fooled (REFERENCES.md):
- outputs are poisoned (NaN / sentinels) before every call, and canary bytes and guard pages
  surround them, so unwritten elements and writes past an output fail;
- correctness runs every size with three seeds: new buffers, new values in the same buffers,
  the secret seed in freshly allocated buffers (caching by pointer or by first call fails);
- every timed call gets fresh input values (a random 1/64 of each input's blocks redrawn),
  so a result cache is never right; every timed call's outputs are copied aside at the same
  cost, into a reservoir that keeps a uniformly random few, chosen by randomness the candidate
  never sees; those are verified after timing (a comparison verifies its pairs the same way);
- the candidate's own clock is believed only within the measured overhead of ours, its CPU
  time per call is bounded by its declared threads, and CPU it burns after a call returns
  (work left running) is a cheat.
"""

from __future__ import annotations

import gc
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from klineage.backends._arenas import PAGE
from klineage.backends.base import Backend, Device
from klineage.gate._compare import output_mismatch
from klineage.gate.sandbox import Arena, CallResult, Candidate, CandidateFailed
from klineage.gate.stats import summarize_trials
from klineage.workload import load_reference, poison_value, run_reference
from klineage.workload.dtypes import dtype_info
from klineage.workload.model import Workload

__all__ = ["TrustedSession", "run_sandboxed"]

Failure = tuple[str, str]
_KEPT_TIMED_CALLS = 8
_FRESH_BLOCK = 64
"""Elements per redrawn block; 1 block in ``_FRESH_SHARE`` is redrawn before each timed call."""
_FRESH_SHARE = 64
_CALIBRATION_CALLS = 21
_FORGED_CLOCK = 0.25
"""A clock reading under this share of what ours allows is a cheat. Between it and 1 our clock
times the calls instead: two multithreaded runners taking turns on 2 cores once read half of
ours honestly, so a bar at one half accused honest kernels; a forged clock reads near zero."""
_CANARY = 0xC5
_GUARD = 16 * PAGE
"""Inaccessible bytes before and after every output (on CPU; canaries are checked on both)."""


@dataclass
class _Output:
    offset: int
    nbytes: int
    span: int
    """Bytes from offset to the guard page: the tail past nbytes holds canary bytes."""


@dataclass
class _Set:
    """Inputs for one size (in the shared input arena) and the output layout for it."""

    axes: dict[str, int]
    inputs: list[np.ndarray]
    in_offsets: list[int]
    outputs: list[_Output]
    seed: int
    fresh: list[tuple[Any, Any] | None] = field(default_factory=list)
    """Per input, the blocks redrawn for the last call and their original values."""
    mirror: list[Any] = field(default_factory=list)
    """Where the runner could write inputs (GPU memory): our own copy, compared after each call."""


class _Reservoir:
    """Keeps ``size`` of the calls offered, uniformly at random, at the same cost per call."""

    def __init__(self, size: int, rng: np.random.Generator):
        self.size, self.rng, self.seen = size, rng, 0
        self.kept: list[Any] = [None] * size

    def slot(self) -> int | None:
        index = self.seen
        self.seen += 1
        if index < self.size:
            return index
        pick = int(self.rng.integers(0, index + 1))
        return pick if pick < self.size else None


class TrustedSession:
    """Checks and times candidates, each a ``Candidate`` in its own runner process."""

    def __init__(self, workload: Workload, device: Device, seeds: list[int], threads: int,
                 progress: Callable[[str, str], None], timing: dict[str, Any],
                 make_spin: Callable[[Arena, Arena], Candidate]):
        self.workload, self.seeds, self.threads, self.progress = workload, seeds, threads, progress
        self.device = device
        self.reference = load_reference(workload)
        self.checks_done = 0
        self._rng = np.random.default_rng([seeds[-1], 0x5EC2E7])  # never leaves this process
        self._round = 0
        in_bytes, out_bytes = arena_sizes(workload, timing)
        self.inputs = device.arena(in_bytes, "inputs")
        self._out_bytes = out_bytes
        self._next_out = _GUARD  # the arena starts with a guard region
        self.candidates: list[tuple[Candidate, Arena]] = []
        self._make_spin = make_spin
        self._spin: Candidate | None = None

    def load(self, make: Callable[[Arena, Arena], Candidate]) -> Candidate:
        outputs = self.device.arena(self._out_bytes, "outputs")
        candidate = make(self.inputs, outputs)
        self.candidates.append((candidate, outputs))
        return candidate

    def close(self) -> None:
        for candidate, outputs in self.candidates:
            candidate.close()
            outputs.close()
        if self._spin is not None:
            self._spin.close()
            self._spin_outputs.close()
        self.inputs.close()

    # -- layout -----------------------------------------------------------------------------
    def _reset(self) -> None:
        self.inputs.reset()
        self._next_out = _GUARD
        for candidate, outputs in self.candidates:
            candidate.protect(0, outputs.nbytes, accessible=True)
            candidate.protect(0, _GUARD, accessible=False)

    def _new_set(self, axes: dict[str, int], seed: int) -> _Set:
        inputs, offsets = [], []
        for index, spec in enumerate(self.workload.inputs):
            dims = spec.dims(axes)
            offset = self.inputs.take(max(_nbytes(spec, axes), 1))
            view = self.inputs.view(offset, dims, dtype_info(spec.dtype).numpy)
            self.device.put(view, self.device.random(spec, dims, seed, index))
            inputs.append(view)
            offsets.append(offset)
        outputs = []
        for spec in self.workload.outputs:
            nbytes = math.prod(spec.dims(axes)) * dtype_info(spec.dtype).numpy.itemsize
            span = -(-max(nbytes, 1) // PAGE) * PAGE
            offset = self._next_out
            self._next_out += span + _GUARD
            if self._next_out > self._out_bytes:
                raise RuntimeError("internal: output arena too small")
            outputs.append(_Output(offset, nbytes, span))
            for candidate, arena in self.candidates:
                self.device.fill(arena.region(offset + nbytes, offset + span), _CANARY, bytewise=True)
                candidate.protect(offset + span, _GUARD, accessible=False)
        mirror = [] if self.device.inputs_protected else [self.device.clone(v) for v in inputs]
        return _Set(axes, inputs, offsets, outputs, seed, [None] * len(inputs), mirror)

    def _write_seed(self, bufs: _Set, seed: int) -> None:
        for index, (spec, view) in enumerate(zip(self.workload.inputs, bufs.inputs, strict=True)):
            values = self.device.random(spec, spec.dims(bufs.axes), seed, index)
            self.device.put(view, values)
            if bufs.mirror:
                self.device.put(bufs.mirror[index], values)
        bufs.seed = seed

    def _output_views(self, bufs: _Set, arena: Arena) -> list[Any]:
        return [arena.view(o.offset, spec.dims(bufs.axes), dtype_info(spec.dtype).numpy)
                for o, spec in zip(bufs.outputs, self.workload.outputs, strict=True)]

    # -- one call ---------------------------------------------------------------------------
    def _poison(self, bufs: _Set, arena: Arena) -> None:
        self._round += 1
        for spec, view in zip(self.workload.outputs, self._output_views(bufs, arena), strict=True):
            self.device.fill(view, poison_value(spec.dtype, self._round), bytewise=spec.dtype == "bool")

    def _call(self, candidate: Candidate, bufs: _Set, stage: str, detail: str) -> CallResult:
        arena = self._arena_of(candidate)
        self._poison(bufs, arena)
        self.progress(stage, detail)
        self.device.flush_cache()
        self.device.synchronize()  # our writes land before the runner reads
        try:
            result = candidate.call(bufs.in_offsets, [o.offset for o in bufs.outputs],
                                    [bufs.axes[a] for a in self.workload.axes],
                                    list(self.workload.params.values()), f"{stage}: {detail}")
        except CandidateFailed as exc:
            name = self._input_at(bufs, exc.input_offset)
            if name:
                raise CandidateFailed("incorrect", f"{detail}: input {name!r} was modified by the "
                                      f"kernel (inputs are read-only: its first write stopped "
                                      f"it)") from exc
            raise
        if result.rc != 0:
            raise CandidateFailed("crashed", f"{detail}: kl_launch returned {result.rc}")
        problem = (self._canaries(bufs, arena) or self._inputs_intact(bufs)
                   or self._accounting(result))
        if problem:
            raise CandidateFailed(problem[0], f"{detail}: {problem[1]}")
        return result

    def _input_at(self, bufs: _Set, offset: int | None) -> str | None:
        for spec, start, view in zip(self.workload.inputs, bufs.in_offsets, bufs.inputs, strict=True):
            if offset is not None and start <= offset < start + max(view.nbytes, 1):
                return spec.name
        return None

    def _arena_of(self, candidate: Candidate) -> Arena:
        return next(arena for c, arena in self.candidates if c is candidate)

    def _inputs_intact(self, bufs: _Set) -> Failure | None:
        for spec, view, mine in zip(self.workload.inputs, bufs.inputs, bufs.mirror, strict=False):
            changed = self.device.bytes_differ(view, mine)
            if changed:
                return "incorrect", (f"input {spec.name!r} was modified by the kernel ({changed} "
                                     f"bytes changed)")
        return None

    def _canaries(self, bufs: _Set, arena: Arena) -> Failure | None:
        for spec, out in zip(self.workload.outputs, bufs.outputs, strict=True):
            tail = arena.region(out.offset + out.nbytes, out.offset + out.span)
            if tail.size and bool((tail != _CANARY).any()):
                return "incorrect", (f"output {spec.name!r}: the kernel wrote past its end "
                                     f"({int((tail != _CANARY).sum())} bytes beyond it changed)")
        return None

    def _accounting(self, result: CallResult) -> Failure | None:
        if result.reported_s > result.wall_s + 5e-6:
            return "rejected_cheat", (f"the candidate's clock said {result.reported_s * 1e3:.3f} ms "
                                      f"but the whole round trip took {result.wall_s * 1e3:.3f} ms "
                                      f"(its timer was tampered with)")
        allowed = self.threads * result.wall_s * 1.05 + 1e-3
        if result.cpu_s > allowed:
            return "rejected_cheat", (f"the call used {result.cpu_s * 1e3:.1f} ms of CPU in "
                                      f"{result.wall_s * 1e3:.1f} ms: more than its {self.threads} "
                                      f"declared thread(s)")
        return None

    def _verify(self, bufs: _Set, given: list[Any], got: list[Any]) -> str | None:
        device, framework = self.device, self.workload.framework
        inputs = {s.name: device.reference_input(a, framework)
                  for s, a in zip(self.workload.inputs, given, strict=True)}
        want = run_reference(self.workload, self.reference, inputs, bufs.axes,
                             torch_device=device.torch_device)
        self.checks_done += 1
        for spec, value in zip(self.workload.outputs, got, strict=True):
            rtol, atol = self.workload.tolerance_for(spec)
            kind = "bool" if spec.dtype == "bool" else "float" if dtype_info(spec.dtype).is_float else "int"
            problem = output_mismatch(spec.name, device.native(value, spec.dtype),
                                      device.native(want[spec.name], spec.dtype), rtol, atol, kind)
            if problem:
                return problem
        return None

    def _call_and_verify(self, candidate: Candidate, bufs: _Set, what: str) -> None:
        self._call(candidate, bufs, "correctness", what)
        outputs = [self.device.clone(v) for v in self._output_views(bufs, self._arena_of(candidate))]
        problem = self._verify(bufs, bufs.inputs, outputs)
        if problem:
            raise CandidateFailed("incorrect", f"{what}: {problem}")

    # -- correctness ------------------------------------------------------------------------
    def check_correctness(self, candidate: Candidate) -> Failure | None:
        first, second, secret = self.seeds[0], self.seeds[1], self.seeds[-1]
        try:
            for axes in self.workload.shapes():
                self._reset()
                label = " ".join(f"{k}={v}" for k, v in axes.items())
                bufs = self._new_set(axes, first)
                self._call_and_verify(candidate, bufs, f"at {label}, seed {first}")
                # New values into the same buffers: a kernel caching by pointer or first call fails.
                self._write_seed(bufs, second)
                self._call_and_verify(candidate, bufs,
                                      f"at {label}, seed {second} (new values in the same buffers)")
                # Fresh buffers while the old ones still exist, so every address differs.
                fresh = self._new_set(axes, secret)
                self._call_and_verify(candidate, fresh,
                                      f"at {label}, secret seed (freshly allocated buffers)")
        except CandidateFailed as exc:
            return exc.outcome, exc.reason
        return None

    # -- fresh inputs -----------------------------------------------------------------------
    def _freshen(self, bufs: _Set) -> list[tuple[Any, Any]]:
        """Redraw a random share of every input's blocks; returns what was drawn, per input."""
        device, drawn = self.device, []
        for index, (spec, view) in enumerate(zip(self.workload.inputs, bufs.inputs, strict=True)):
            blocks = _blocks(view)
            previous = bufs.fresh[index]
            picked = device.upload(_pick_blocks(len(blocks), self._rng))
            values = device.draw(spec, (len(picked), blocks.shape[1]), self._rng)
            for target in (blocks, *([_blocks(bufs.mirror[index])] if bufs.mirror else [])):
                if previous is not None:
                    target[previous[0]] = previous[1]  # back to the base values
                originals = target[picked]
                target[picked] = values
            bufs.fresh[index] = (picked, originals)
            drawn.append((picked, values))
        return drawn

    def _inputs_of(self, bufs: _Set, drawn: list[tuple[Any, Any]]) -> list[Any]:
        """The inputs a kept call saw, rebuilt from the base values and what it drew."""
        rebuilt = []
        for view, (picked, values), current in zip(bufs.inputs, drawn, bufs.fresh, strict=True):
            copy = self.device.clone(view)
            blocks = _blocks(copy)
            if current is not None:
                blocks[current[0]] = current[1]
            blocks[picked] = values
            rebuilt.append(copy)
        return rebuilt

    # -- timing -----------------------------------------------------------------------------
    def timing_sets(self, timing: dict[str, Any]) -> list[_Set]:
        self._reset()
        axes = dict(self.workload.axes)
        base = self.seeds[-1] + 1000
        count = set_count(self.workload, timing)
        return [self._new_set(axes, base + k) for k in range(count)]

    def _timed(self, candidate: Candidate, bufs: _Set, drawn: list[Any], reservoir: _Reservoir,
               aside: list[list[np.ndarray]], tag: Any, stage: str) -> CallResult:
        """One timed call on inputs just freshened; its outputs go aside, kept or not."""
        result = self._call(candidate, bufs, stage, "timed call")
        slot = reservoir.slot()
        target = aside[slot if slot is not None else -1]  # the last one is scratch: same cost
        for sink, view in zip(target, self._output_views(bufs, self._arena_of(candidate)), strict=True):
            self.device.copy_into(sink, view)
        if slot is not None:
            reservoir.kept[slot] = (tag, bufs, drawn)
        return result

    def _aside(self, bufs: _Set) -> list[list[Any]]:
        layout = [(spec.dims(bufs.axes), dtype_info(spec.dtype).numpy) for spec in self.workload.outputs]
        return [[self.device.empty(shape, dtype) for shape, dtype in layout]
                for _ in range(_KEPT_TIMED_CALLS + 1)]

    def _verify_kept(self, reservoir: _Reservoir, aside: list[list[np.ndarray]],
                     describe: Callable[[Any], str]) -> Failure | None:
        self.progress("profile", f"verifying {sum(k is not None for k in reservoir.kept)} timed calls")
        for slot, entry in enumerate(reservoir.kept):
            if entry is None:
                continue
            tag, bufs, drawn = entry
            problem = self._verify(bufs, self._inputs_of(bufs, drawn), aside[slot])
            if problem:
                return "incorrect", f"{describe(tag)}: {problem}"
        return None

    def _warm_up(self, candidate: Candidate, sets: list[_Set], timing: dict[str, Any]) -> float:
        spent, times = 0.0, []
        while len(times) < 2 or (spent < timing["warmup_s"] and len(times) < 50):
            bufs = sets[len(times) % len(sets)]
            self._freshen(bufs)
            result = self._call(candidate, bufs, "profile", "warm-up")
            times.append(result.reported_s)
            spent += result.wall_s
        return max(float(np.median(times)), 1e-9)

    def profile(self, candidate: Candidate, timing: dict[str, Any]) -> dict[str, Any] | Failure:
        try:
            self.progress("profile", "laying out rotated input sets")
            sets = self.timing_sets(timing)
            estimate = self._warm_up(candidate, sets, timing)
            reps = int(min(timing["max_reps"], max(1, round(timing["target_trial_s"] / estimate))))
            reservoir = _Reservoir(_KEPT_TIMED_CALLS, self._rng)
            aside = self._aside(sets[0])
            calls: list[CallResult] = []
            for trial in range(timing["trials"]):
                self.progress("profile", f"trial {trial + 1}/{timing['trials']} x {reps} calls")
                for rep in range(reps):
                    index = trial * reps + rep
                    bufs = sets[index % len(sets)]
                    calls.append(self._timed(candidate, bufs, self._freshen(bufs), reservoir, aside,
                                             index, "profile"))
            times, clocks = self._trusted_times(calls, sets)
            failure = self._verify_kept(reservoir, aside, lambda i: f"timed call {i}")
            if failure:
                return failure
            trials = [times[t * reps:(t + 1) * reps] for t in range(timing["trials"])]
        except CandidateFailed as exc:
            return exc.outcome, exc.reason
        median, spread, medians = summarize_trials(trials)
        return {"median_s": median, "spread": spread, "trial_medians_s": medians,
                "reps_per_trial": reps, "samples": len(calls),
                "min_s": min(min(t) for t in trials),
                "wall_median_s": float(np.median([c.wall_s for c in calls])),
                "input_sets": len(sets), "footprint_bytes": _footprint(self.workload, sets),
                "threads": self.threads, "clock_allowance_s": clocks["allowance_s"],
                "clock_raised_share": clocks["raised_share"]}

    def _trusted_times(self, calls: list[CallResult],
                       sets: list[_Set]) -> tuple[list[float], dict[str, float]]:
        """The calls' times, as neither side's clock alone would give them.

        The candidate's clock is precise but its own; ours includes the round trip. Our
        calibration kernel, in a runner of its own and called the way timed calls are, measures
        how far an honest kernel's clock reads short of ours; the 90th percentile of that is the
        allowance. When the candidate's clock reads short of ours by no more than the allowance
        on the median call, its readings are the times; otherwise ours take over (each call's
        time is at least its round trip less the allowance), so a clock that reads short gains
        nothing, and one that reads under a quarter of what ours allows is a cheat.
        """
        walls = np.asarray([c.wall_s for c in calls])
        reported = np.asarray([c.reported_s for c in calls])
        typical = float(np.median(reported))
        spin_s = typical if typical >= 0.5 * float(np.median(walls)) else 0.9 * float(np.median(walls))
        allowance = float(np.quantile(self._calibrate(spin_s, sets), 0.9))
        ours = np.maximum(walls - allowance, 0.0)
        seen = float(np.median(ours))
        if typical < _FORGED_CLOCK * seen - 2e-5:
            raise CandidateFailed("rejected_cheat", (
                f"the candidate's clock read {typical * 1e3:.3f} ms per call where ours, less the "
                f"{allowance * 1e3:.3f} ms an honest kernel's clock reads short, saw "
                f"{seen * 1e3:.3f} ms: its timer does not measure the call (on a GPU: work "
                f"escaped the timed stream)"))
        believed = float(np.median(walls - reported)) <= allowance
        times = reported if believed else np.maximum(reported, ours)
        info = {"allowance_s": allowance, "raised_share": float(np.mean(times > reported))}
        return times.tolist(), info

    def _calibrate(self, seconds: float, sets: list[_Set]) -> np.ndarray:
        """Calls of our calibration kernel, each after the same work on our side as a timed
        call gets, on the same input sets."""
        if self._spin is None:
            self._spin_outputs = self.device.arena(self._out_bytes, "calibration")
            self._spin = self._make_spin(self.inputs, self._spin_outputs)
        aside = self._aside(sets[0])[-1]
        gaps = []
        for index in range(_CALIBRATION_CALLS):
            bufs = sets[index % len(sets)]
            self._freshen(bufs)
            self._poison(bufs, self._spin_outputs)
            self.device.flush_cache()
            self.device.synchronize()
            sizes = [v.nbytes for v in bufs.inputs] + [o.nbytes for o in bufs.outputs]
            result = self._spin.call(bufs.in_offsets, [o.offset for o in bufs.outputs],
                                     [len(bufs.inputs), len(bufs.outputs), *sizes], [seconds],
                                     "profile: calibrating the clocks")
            for sink, view in zip(aside, self._output_views(bufs, self._spin_outputs), strict=True):
                self.device.copy_into(sink, view)
            gaps.append(result.wall_s - result.reported_s)
        return np.asarray(gaps)

    def paired_times(self, a: Candidate, b: Candidate, timing: dict[str, Any]) -> Any:
        """Interleaved A/B samples (ABBA) on the same fresh inputs, each its own outputs; the
        pairs to verify are kept by a reservoir over all of them."""
        try:
            self.progress("compare", "laying out rotated input sets")
            sets = self.timing_sets(timing)
            each = self._warm_up(a, sets, timing) + self._warm_up(b, sets, timing)
            pairs = int(min(timing["max_pairs"], max(timing["min_pairs"], timing["compare_s"] / each)))
            reservoirs = {id(a): _Reservoir(_KEPT_TIMED_CALLS // 2, self._rng),
                          id(b): _Reservoir(_KEPT_TIMED_CALLS // 2, self._rng)}
            asides = {id(a): self._aside(sets[0]), id(b): self._aside(sets[0])}
            calls: dict[int, list[CallResult]] = {id(a): [], id(b): []}
            for index in range(pairs):
                if index % 10 == 0:
                    self.progress("compare", f"pair {index + 1}/{pairs}")
                bufs = sets[index % len(sets)]
                drawn = self._freshen(bufs)
                order = (a, b) if index % 2 == 0 else (b, a)
                for candidate in order:
                    calls[id(candidate)].append(self._timed(
                        candidate, bufs, drawn, reservoirs[id(candidate)], asides[id(candidate)],
                        index, "compare"))
            times = {id(c): self._trusted_times(calls[id(c)], sets)[0] for c in (a, b)}
            failure = None
            for role, candidate in (("baseline", a), ("candidate", b)):
                failure = failure or self._verify_kept(
                    reservoirs[id(candidate)], asides[id(candidate)],
                    lambda i, role=role: f"the {role} kernel, timed pair {i}")
            if failure:
                return failure
        except CandidateFailed as exc:
            return exc.outcome, exc.reason
        return times[id(a)], times[id(b)]


def set_count(workload: Workload, timing: dict[str, Any]) -> int:
    """How many rotated input sets timing uses: enough to exceed twice the last-level cache."""
    per_set = max(_set_bytes(workload, dict(workload.axes)), 1)
    wanted = math.ceil(2 * timing["cache_bytes"] / per_set) if timing["cache_bytes"] else 1
    count = max(timing["min_sets"], min(wanted, timing["max_sets"],
                                        timing["max_footprint_bytes"] // per_set))
    return max(count, 1)


def arena_sizes(workload: Workload, timing: dict[str, Any]) -> tuple[int, int]:
    """(input arena, output arena) bytes for the largest layout a session makes."""
    def sizes(axes: dict[str, int], sets: int) -> tuple[int, int]:
        inputs = sum(_nbytes(s, axes) + 64 for s in workload.inputs)
        outputs = sum(-(-max(_nbytes(s, axes), 1) // PAGE) * PAGE + _GUARD for s in workload.outputs)
        return sets * inputs, _GUARD + sets * outputs

    layouts = [sizes(axes, 2) for axes in workload.shapes()]
    layouts.append(sizes(dict(workload.axes), set_count(workload, timing)))
    return max(i for i, _ in layouts), max(o for _, o in layouts)


def _nbytes(spec: Any, axes: dict[str, int]) -> int:
    return math.prod(spec.dims(axes)) * dtype_info(spec.dtype).numpy.itemsize


def _set_bytes(workload: Workload, axes: dict[str, int]) -> int:
    return sum(_nbytes(s, axes) for s in (*workload.inputs, *workload.outputs))


def _footprint(workload: Workload, sets: list[_Set]) -> int:
    return sum(_set_bytes(workload, s.axes) for s in sets)


def _pick_blocks(count: int, rng: np.random.Generator) -> np.ndarray:
    """One block at a random place in each window of ``_FRESH_SHARE`` blocks: distinct indices
    (a duplicate would make the rebuilt inputs ambiguous) in O(picked), unlike np.unique."""
    windows = max(1, count // _FRESH_SHARE)
    width = count // windows
    return np.arange(windows) * width + rng.integers(0, width, windows)


def _blocks(view: np.ndarray) -> np.ndarray:
    """The whole blocks of an input as rows (a view); a small input is one element a row."""
    flat = view.reshape(-1)
    count = flat.shape[0]
    width = _FRESH_BLOCK if count >= _FRESH_BLOCK * _FRESH_SHARE else 1
    return flat[:count - count % width].reshape(-1, width)


def run_sandboxed(workload: Workload, backend: Backend, job: dict[str, Any],
                  builds: list[tuple[Any, str]], stall_s: float, memory_bytes: int | None,
                  progress: Callable[[str, str], None]) -> dict[str, Any]:
    """One gate job (``mode`` 'gate' or 'compare') with each kernel in its own runner; the
    result: outcome, reason, checks, and timing or comparison."""
    # The round trips are timed here, so nothing of ours may delay reading a reply: a
    # collection of a large heap, or another thread of this process holding the GIL for its
    # 5 ms switch interval (a loopback LLM server in the tests), once made an honest clock look
    # forged. Refcounting still frees; cycles wait until the job is done, as timeit does.
    collecting, interval = gc.isenabled(), sys.getswitchinterval()
    gc.disable()
    sys.setswitchinterval(1e-5)
    try:
        return _run_job(workload, backend, job, builds, stall_s, memory_bytes, progress)
    finally:
        sys.setswitchinterval(interval)
        if collecting:
            gc.enable()


def _run_job(workload: Workload, backend: Backend, job: dict[str, Any],
             builds: list[tuple[Any, str]], stall_s: float, memory_bytes: int | None,
             progress: Callable[[str, str], None]) -> dict[str, Any]:
    from klineage.gate.stats import comparison_record

    threads = job["threads"] or 1
    runner, env = backend.sandbox_runner(), backend.sandbox_env(threads)

    def start(artifact: Path, sha256: str, entry: str) -> Callable[[Arena, Arena], Candidate]:
        return lambda ins, outs: Candidate(runner, (artifact, sha256), entry, ins, outs, threads,
                                           memory_bytes, stall_s, env)

    device = backend.open_device(threads)
    session = TrustedSession(workload, device, job["seeds"], threads, progress, job["timing"],
                             start(*backend.calibration_kernel(), "kl_launch"))
    try:
        candidates = []
        for build, entry in builds:
            progress("sandbox", "starting the kernel's runner")
            candidates.append(session.load(start(build.artifact, build.artifact_sha256, entry)))
        if job["mode"] == "compare":
            pairs = session.paired_times(candidates[0], candidates[1], job["timing"])
            if isinstance(pairs[0], str):
                return {"outcome": pairs[0], "reason": pairs[1]}
            return {"outcome": "ok", "comparison": comparison_record(
                *pairs, seed=int(job["timing"]["seed"]))}
        failure = session.check_correctness(candidates[0]) if job["check"] else None
        if failure:
            return {"outcome": failure[0], "reason": failure[1], "checks": session.checks_done}
        result: dict[str, Any] = {"outcome": "ok", "checks": session.checks_done}
        if job["profile"]:
            outcome = session.profile(candidates[0], job["timing"])
            if isinstance(outcome, tuple):
                return {"outcome": outcome[0], "reason": outcome[1], "checks": session.checks_done}
            result["timing"] = outcome
        return result
    except CandidateFailed as exc:
        return {"outcome": exc.outcome, "reason": exc.reason, "checks": session.checks_done}
    finally:
        session.close()
