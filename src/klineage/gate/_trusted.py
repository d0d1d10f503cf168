"""The trusted side of the gate: checks and timing of kernels that run in sandboxed runners.

Runs in a process that never loads candidate code. It draws every input (seeds never leave
it), writes them into shared memory the candidate can only read, poisons the outputs, tells
the runner to call, then reads the outputs back and compares them with the reference itself.

Each check answers a way a gate has been fooled (REFERENCES.md):
- outputs are poisoned (NaN / sentinels) before every call, and canary bytes and guard pages
  surround them, so unwritten elements and writes past an output fail;
- correctness runs every size with three seeds: new buffers, new values in the same buffers,
  the secret seed in freshly allocated buffers (caching by pointer or by first call fails),
  then once per declared check init (shifted, scaled or shaped inputs);
- every runner has its own copy of the inputs (``InputArenas``), so no two candidates share a
  byte of input memory: a baseline once heard its successor through a shared arena;
- every timed call gets fresh input values (one element at a random place in every 32 of
  each input redrawn), so a result cache is never right; every timed call's outputs are
  copied aside at the same cost, into a reservoir that keeps a uniformly random few, chosen by
  randomness the candidate never sees; those are verified after timing (a comparison verifies
  its pairs the same way);
- the candidate's own clock is believed only within the measured overhead of ours, its CPU
  time per call is bounded by its declared threads, and CPU it burns after a call returns
  (work left running) is a cheat;
- a comparison's baseline is timed alone too, before the candidate's runner starts; a baseline
  slower beside the candidate than alone leaves the pairs undecided.
The timed jobs themselves (``profile``, ``compare``) are in ``_phases``.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any

import numpy as np

from klineage.backends._arenas import PAGE
from klineage.backends.base import CAUGHT_IN_PROCESS_RC, Device
from klineage.gate._compare import float_errors, output_mismatch, rows_sorted, selection_mismatch
from klineage.gate._layout import (
    CANARY,
    GUARD,
    InputArenas,
    InputSet,
    Output,
    TimingPlan,
    arena_sizes,
    canary_regions,
    freshen,
    nbytes,
    set_count,
)
from klineage.gate._phases import KEPT_TIMED_CALLS, Reservoir
from klineage.gate.sandbox import Arena, CallResult, Candidate, CandidateFailed
from klineage.workload import load_reference, poison_value, run_reference
from klineage.workload.dtypes import dtype_info
from klineage.workload.inputs import check_rounds
from klineage.workload.model import TensorSpec, Workload

__all__ = ["TrustedSession"]

Failure = tuple[str, str]


class TrustedSession:
    """Checks and times candidates, each a ``Candidate`` in its own runner process."""

    def __init__(self, workload: Workload, device: Device, seeds: list[int], threads: int,
                 progress: Callable[[str, str], None], timing: TimingPlan,
                 make_spin: Callable[[Arena, Arena], Candidate]):
        self.workload, self.seeds, self.threads, self.progress = workload, seeds, threads, progress
        self.device = device
        self.reference = load_reference(workload)
        self.checks_done = 0
        self.max_errors = {"absolute": 0.0, "relative": 0.0}
        """The largest float output errors over every checked call (FlashInfer-Bench traces)."""
        self._cpu_excess: dict[int, str] = {}
        """A candidate's first call over its CPU allowance (see ``_accounting``)."""
        # Fresh blocks, the calls kept for verification and the timing sets come from randomness
        # of this process alone: derived from the seeds, whose inputs the kernel sees, they were
        # predicted by a kernel that searched the secret seed (held-out red team, 2026-12-01).
        self._rng = np.random.default_rng(secrets.randbits(128))
        self._draws = device.generator(self._rng)
        self._round = 0
        in_bytes, out_bytes = arena_sizes(workload, timing)
        self._inputs = InputArenas(device, in_bytes)
        self._input_arena: dict[int, Arena] = {}
        """Each runner's own input arena, by the id of its ``Candidate``."""
        self._laid: list[InputSet] = []
        """The sets of the current layout: a runner started now gets them too."""
        self._out_bytes = out_bytes
        self._next_out = GUARD  # the arena starts with a guard region
        self.candidates: list[tuple[Candidate, Arena]] = []
        self._make_spin = make_spin
        self._spin: Candidate | None = None
        self._spin_aside: list[Any] | None = None
        self._pending: list[tuple[str, Callable[[int], Failure], Any]] = []
        """Checks queued on the device and not read back yet: (call, failure for a count, count)."""

    def load(self, make: Callable[[Arena, Arena], Candidate]) -> Candidate:
        """A runner for ``make``'s kernel with an input arena and an output arena of its own; one
        started after inputs were laid out gets a copy of them, and guards around their outputs."""
        inputs = self._inputs.add(self._laid, self.workload)
        outputs = self.device.arena(self._out_bytes, "outputs")
        candidate = make(inputs, outputs)
        self.candidates.append((candidate, outputs))
        self._input_arena[id(candidate)] = inputs
        if self._laid:
            candidate.protect(0, GUARD, accessible=False)
            for bufs in self._laid:
                self._guard(candidate, outputs, bufs.outputs)
        return candidate

    def close(self) -> None:
        for candidate, outputs in self.candidates:
            candidate.close()
            outputs.close()
        if self._spin is not None:
            self._spin.close()
            self._spin_outputs.close()
        self._inputs.close()

    # -- layout -----------------------------------------------------------------------------
    def _reset(self) -> None:
        self._inputs.reset()
        self._laid = []
        self._next_out = GUARD
        for candidate, outputs in self.candidates:
            candidate.protect(0, outputs.nbytes, accessible=True)
            candidate.protect(0, GUARD, accessible=False)

    def _new_set(self, axes: dict[str, int], seed: int, specs: tuple[TensorSpec, ...] = ()) -> InputSet:
        """``specs``: the inputs drawn by these (a check init's round), not the workload's own."""
        copies, offsets = [], []  # per input, its views in every runner's arena
        for index, spec in enumerate(specs or self.workload.inputs):
            values = self.device.random(spec, spec.dims(axes), seed, index)
            offset, views = self._inputs.place(spec, axes, values)
            copies.append(views)
            offsets.append(offset)
        placed = {id(arena): [views[k] for views in copies] for k, arena in enumerate(self._inputs.arenas)}
        inputs = [views[0] for views in copies]
        outputs = []
        for spec in self.workload.outputs:
            size = nbytes(spec, axes)
            span = -(-max(size, 1) // PAGE) * PAGE
            offset = self._next_out
            self._next_out += span + GUARD
            if self._next_out > self._out_bytes:
                raise RuntimeError("internal: output arena too small")
            outputs.append(Output(offset, size, span))
        for candidate, arena in self.candidates:
            self._guard(candidate, arena, outputs)
        mirror = [] if self.device.inputs_protected else [self.device.clone(v) for v in inputs]
        bufs = InputSet(axes, inputs, offsets, outputs, seed, [None] * len(inputs), mirror, placed=placed)
        self._laid.append(bufs)
        return bufs

    def _guard(self, candidate: Candidate, arena: Arena, outputs: list[Output]) -> None:
        """Canary bytes around each output in one runner's output arena, and the guard region
        after it made inaccessible."""
        for out in outputs:
            for start, end in canary_regions(out):
                self.device.fill(arena.region(start, end), CANARY, bytewise=True)
            candidate.protect(out.offset + out.span, GUARD, accessible=False)

    def _write_seed(self, bufs: InputSet, seed: int) -> None:
        """New values into the same buffers, in every runner's arena and the mirror."""
        for index, spec in enumerate(self.workload.inputs):
            values = self.device.random(spec, spec.dims(bufs.axes), seed, index)
            for views in (*bufs.placed.values(), *([bufs.mirror] if bufs.mirror else [])):
                self.device.put(views[index], values)
        bufs.seed = seed

    def _output_views(self, bufs: InputSet, arena: Arena) -> list[Any]:
        views = bufs.views.get(id(arena))
        if views is None:
            views = bufs.views[id(arena)] = [
                arena.view(o.offset, spec.dims(bufs.axes), dtype_info(spec.dtype).numpy)
                for o, spec in zip(bufs.outputs, self.workload.outputs, strict=True)]
        return views

    # -- one call ---------------------------------------------------------------------------
    def _poison(self, bufs: InputSet, arena: Arena) -> None:
        self._round += 1
        for spec, view in zip(self.workload.outputs, self._output_views(bufs, arena), strict=True):
            self.device.fill(view, poison_value(spec.dtype, self._round), bytewise=spec.dtype == "bool")

    def _call(self, candidate: Candidate, bufs: InputSet, stage: str, detail: str,
              deferred: bool = False) -> CallResult:
        """One call on poisoned outputs. Its canaries and (where the runner could write them)
        inputs are checked on the device; ``deferred``: read back at the next ``_settle``, so a
        timed call costs no synchronisation of ours beyond the one before it."""
        arena, inputs = self._arena_of(candidate), self._input_arena[id(candidate)]
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
            said = candidate.log_tail().splitlines()
            if result.rc == CAUGHT_IN_PROCESS_RC:
                raise CandidateFailed("rejected_cheat", f"{detail}: "
                                      + (said[-1][:300] if said else "caught in its process"))
            raise CandidateFailed("crashed", f"{detail}: kl_launch returned {result.rc}"
                                  + (f"; last output: {said[-1][:200]}" if said else ""))
        problem = self._accounting(candidate, result, detail)
        if problem:
            raise CandidateFailed(problem[0], f"{detail}: {problem[1]}")
        self._pending.extend(self._device_checks(bufs, inputs, arena, detail))
        if not deferred:
            self._settle()
        return result

    def _device_checks(self, bufs: InputSet, inputs: Arena, arena: Arena,
                       detail: str) -> list[tuple[str, Callable[[int], Failure], Any]]:
        """Canary bytes past every output, and the inputs in the runner's own input arena against
        our copy, as counts on the device."""
        checks = []
        for index, (spec, out) in enumerate(zip(self.workload.outputs, bufs.outputs, strict=True)):
            regions = list(zip(canary_regions(out), ("before its start", "past its end"), strict=True))
            # Outputs follow each other: the region before one is the region after the last.
            for (start, end), where in regions[index > 0:]:
                checks.append((detail, lambda n, name=spec.name, where=where: (
                    "incorrect", f"output {name!r}: the kernel wrote {where} ({n} bytes of the "
                                 f"canary there changed)"),
                               self.device.bytes_not(arena.region(start, end), CANARY)))
        for spec, view, mine in zip(self.workload.inputs, bufs.inputs_in(inputs), bufs.mirror, strict=False):
            checks.append((detail, lambda n, name=spec.name: (
                "incorrect", f"input {name!r} was modified by the kernel (at least {n} bytes "
                             f"changed)"), self.device.words_differ(view, mine)))
        return checks

    def _settle(self) -> None:
        """Read back every queued device check; the first that found something fails."""
        pending, self._pending = self._pending, []
        for (detail, failure, _), count in zip(pending, self.device.counts([c for *_, c in pending]),
                                               strict=True):
            if count:
                outcome, reason = failure(count)
                raise CandidateFailed(outcome, f"{detail}: {reason}")

    def _input_at(self, bufs: InputSet, offset: int | None) -> str | None:
        for spec, start, view in zip(self.workload.inputs, bufs.in_offsets, bufs.inputs, strict=True):
            if offset is not None and start <= offset < start + max(view.nbytes, 1):
                return spec.name
        return None

    def _arena_of(self, candidate: Candidate) -> Arena:
        return next(arena for c, arena in self.candidates if c is candidate)

    def _accounting(self, candidate: Candidate, result: CallResult, detail: str) -> Failure | None:
        """The candidate's clock may not exceed ours; its process may not use more CPU than its
        declared threads. The CPU excess must happen twice: on the 2-core VM honest 1- and
        2-thread kernels each showed it once in a few hundred calls ("2.1 ms of CPU in 0.4 ms",
        "15.2 ms in 5.9 ms": more than the 2 cores the runner's affinity allows, which it cannot
        change, so an artifact of reading another process's CPU clock, not work). A kernel with
        hidden threads exceeds on every call they run in; one call's excess times nothing the
        verdict uses (the times are medians)."""
        if result.reported_s > result.wall_s + 5e-6:
            return "rejected_cheat", (f"the candidate's clock said {result.reported_s * 1e3:.3f} ms "
                                      f"but the whole round trip took {result.wall_s * 1e3:.3f} ms "
                                      f"(its timer was tampered with)")
        threads = self.threads + self.device.helper_threads
        if result.cpu_s <= threads * result.wall_s * 1.05 + 1e-3:
            return None
        helpers = (f" and the {self.device.helper_threads} the device's runtime may use"
                   if self.device.helper_threads else "")
        excess = (f"the call used {result.cpu_s * 1e3:.1f} ms of CPU in {result.wall_s * 1e3:.1f} ms: "
                  f"more than its {self.threads} declared thread(s){helpers}")
        first = self._cpu_excess.get(id(candidate))
        if first is None:
            self._cpu_excess[id(candidate)] = f"{detail}: {excess}"
            return None
        return "rejected_cheat", f"{excess} (and before, at {first})"

    def _verify(self, bufs: InputSet, given: list[Any], got: list[Any]) -> str | None:
        device, framework = self.device, self.workload.framework
        inputs = {s.name: device.reference_input(a, framework)
                  for s, a in zip(self.workload.inputs, given, strict=True)}
        want = run_reference(self.workload, self.reference, inputs, bufs.axes,
                             torch_device=device.torch_device)
        self.checks_done += 1
        mine = {spec.name: value for spec, value in zip(self.workload.outputs, got, strict=True)}
        for spec in self.workload.outputs:
            value = mine[spec.name]
            if spec.indexes:  # never the reference's indices: any of tied positions is right
                source, _, values = spec.indexes.partition(":")
                problem = selection_mismatch(spec.name, value, mine[values], inputs[source], values,
                                             source)
                if problem:
                    return problem
                continue
            rtol, atol = self.workload.tolerance_for(spec)
            kind = "bool" if spec.dtype == "bool" else "float" if dtype_info(spec.dtype).is_float else "int"
            got_native = device.native(value, spec.dtype)
            want_native = device.native(want[spec.name], spec.dtype)
            if spec.order == "free":
                got_native, want_native = rows_sorted(got_native), rows_sorted(want_native)
            if kind == "float" and tuple(got_native.shape) == tuple(want_native.shape):
                absolute, relative = float_errors(got_native, want_native)
                self.max_errors["absolute"] = max(self.max_errors["absolute"], absolute)
                self.max_errors["relative"] = max(self.max_errors["relative"], relative)
            problem = output_mismatch(spec.name, got_native, want_native, rtol, atol, kind)
            if problem:
                return problem
        return None

    def _call_and_verify(self, candidate: Candidate, bufs: InputSet, what: str) -> None:
        self._call(candidate, bufs, "correctness", what)
        outputs = [self.device.clone(v) for v in self._output_views(bufs, self._arena_of(candidate))]
        problem = self._verify(bufs, bufs.trusted_inputs(self._input_arena[id(candidate)]), outputs)
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
                for specs, named in check_rounds(self.workload):
                    self._reset()
                    self._call_and_verify(candidate, self._new_set(axes, secret + 1, specs),
                                          f"at {label}, check init {named}")
        except CandidateFailed as exc:
            return exc.outcome, exc.reason
        return None

    # -- timing -----------------------------------------------------------------------------
    def timing_sets(self, timing: TimingPlan) -> list[InputSet]:
        self._reset()
        axes = dict(self.workload.axes)
        base = int(self._rng.integers(1 << 62))
        count = set_count(self.workload, timing)
        return [self._new_set(axes, base + k) for k in range(count)]

    def _freshen(self, bufs: InputSet) -> list[tuple[Any, Any]]:
        return freshen(self.device, self.workload, bufs, self._draws)

    def _timed(self, candidate: Candidate, bufs: InputSet, drawn: list[Any], reservoir: Reservoir,
               aside: list[list[Any]], tag: Any, stage: str) -> CallResult:
        """One timed call on inputs just freshened; its outputs go aside, kept or not."""
        result = self._call(candidate, bufs, stage, f"timed call {tag}", deferred=True)
        slot = reservoir.slot()
        target = aside[slot if slot is not None else -1]  # the last one is scratch: same cost
        for sink, view in zip(target, self._output_views(bufs, self._arena_of(candidate)), strict=True):
            self.device.copy_into(sink, view)
        if slot is not None:
            reservoir.kept[slot] = (tag, bufs, drawn)
        return result

    def _aside(self, bufs: InputSet) -> list[list[Any]]:
        layout = [(spec.dims(bufs.axes), dtype_info(spec.dtype).numpy) for spec in self.workload.outputs]
        return [[self.device.empty(shape, dtype) for shape, dtype in layout]
                for _ in range(KEPT_TIMED_CALLS + 1)]

    def _runners_cpu(self) -> float:
        runners = [c for c, _ in self.candidates] + ([self._spin] if self._spin is not None else [])
        return sum(r.cpu_seconds() for r in runners)

    def start_calibration(self) -> None:
        """Our calibration kernel's runner, started (not yet waited for) where a job will time:
        it loads, a CUDA context takes a few hundred milliseconds, while the candidate's calls
        are checked. Inputs of its own, as every runner has: standing in for a comparison's
        candidate, it must not warm the baseline's copy in the caches, as the candidate cannot."""
        if self._spin is None:
            self._spin_inputs = self._inputs.add(self._laid, self.workload)
            self._spin_outputs = self.device.arena(self._out_bytes, "calibration")
            self._spin = self._make_spin(self._spin_inputs, self._spin_outputs)

    def _calibration_gap(self, seconds: float, bufs: InputSet) -> float:
        """One call of our calibration kernel, given the same work on our side as a timed call:
        how far its clock read short of ours."""
        self.start_calibration()
        if self._spin_aside is None:
            self._spin_aside = self._aside(bufs)[-1]
        self._freshen(bufs)
        self._poison(bufs, self._spin_outputs)
        self.device.flush_cache()
        self.device.synchronize()
        sizes = [v.nbytes for v in bufs.inputs] + [o.nbytes for o in bufs.outputs]
        result = self._spin.call(bufs.in_offsets, [o.offset for o in bufs.outputs],
                                 [len(bufs.inputs), len(bufs.outputs), *sizes], [seconds],
                                 "profile: calibrating the clocks")
        # The same work as a timed call's, nothing to judge.
        self._device_checks(bufs, self._spin_inputs, self._spin_outputs, "")
        views = self._output_views(bufs, self._spin_outputs)
        for sink, view in zip(self._spin_aside, views, strict=True):
            self.device.copy_into(sink, view)
        return result.wall_s - result.reported_s
