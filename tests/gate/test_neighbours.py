"""Neighbours cannot talk: every runner of a comparison reads its own copy of the inputs, and a
comparison's baseline is timed alone as well as beside the candidate (docs/gate.md, "Memory."
and "8. compare"; held-out review 2026-12-03: a baseline that slowed down when it heard its
successor through the shared input arena made identical code 'faster', 0.68 CPU, 0.73 H200)."""

from __future__ import annotations

import os
from dataclasses import replace
from typing import ClassVar

import numpy as np
import pytest

from conftest import FIXTURES
from gate.neighbours import runners
from klineage.backends.cpu import CpuDevice
from klineage.gate import GateOptions, Limits, compare_kernels
from klineage.gate import _job as job_module
from klineage.gate._layout import InputArenas, TimingPlan
from klineage.gate._phases import compare
from klineage.gate._trusted import TrustedSession
from klineage.gate.sandbox import Candidate
from klineage.gate.stats import beside_and_alone, comparison_record, paired_decision
from klineage.workload import load_kernel, load_workload

TIMING = TimingPlan(trials=2, target_trial_s=0.01, warmup_s=0.0, max_reps=3, min_sets=2, max_sets=2,
                    max_footprint_bytes=1 << 28, cache_bytes=0, compare_s=0.05, min_pairs=12,
                    max_pairs=12, seed=3)
"""With the runners here: 2 warm-up calls and 12 calls alone, then 12 pairs."""


def _session(axpy, device=None) -> TrustedSession:
    return TrustedSession(axpy, device or CpuDevice(), [0, 1, 4242], 1, lambda stage, detail: None,
                          TIMING, make_spin=lambda i, o: runners.Spin(i, o, lambda r: 0.0))


def _compare(axpy, make_a, make_b, device=None):
    """(the result of a compare job, the baseline's runner, what the session measured)."""
    session = _session(axpy, device)
    try:
        baseline = session.load(make_a)
        measured = compare(session, baseline, make_b, TIMING)
        return job_module._compared(measured, seed=3), baseline, measured
    finally:
        session.close()


def _same_bytes(a, b) -> bool:
    return bool(np.array_equal(np.asarray(a).view(np.uint8), np.asarray(b).view(np.uint8)))


def test_each_runner_has_its_own_input_arena_holding_the_same_inputs(axpy):
    session = _session(axpy)
    try:
        a, b = session.load(runners.plain), session.load(runners.plain)
        sets = session.timing_sets(TIMING)
        late = session.load(runners.plain)  # started after the layout: it gets a copy
        for bufs in sets:
            session._freshen(bufs)
        session._write_seed(sets[0], 7)
        mine, theirs, third = a.inputs, b.inputs, late.inputs
        assert len({os.fstat(arena.fd).st_ino for arena in (mine, theirs, third)}) == 3
        assert not np.shares_memory(mine.base, theirs.base) and not np.shares_memory(mine.base, third.base)
        for bufs in sets:
            session._freshen(bufs)  # a new draw after the late runner joined reaches it too
            for views in zip(*(bufs.inputs_in(r.inputs) for r in (a, b, late)), strict=True):
                assert _same_bytes(views[0], views[1]) and _same_bytes(views[0], views[2])
                assert not np.shares_memory(views[0], views[1])
    finally:
        session.close()


def test_every_call_changes_every_window_of_32_elements_of_every_input(axpy):
    # One 64-element block in 64 redrawn per call left 98% of the blocks as the kernel last saw
    # them: recomputing only the changed blocks was exact and 2.8x faster (held-out review).
    session = _session(axpy)
    try:
        runner = session.load(runners.plain)
        [bufs, *_] = session.timing_sets(TIMING)
        session._freshen(bufs)
        for _ in range(3):
            before = [np.array(view) for view in bufs.inputs_in(runner.inputs)]
            session._freshen(bufs)
            for old, new in zip(before, bufs.inputs_in(runner.inputs), strict=True):
                changed = (old.reshape(-1) != np.asarray(new).reshape(-1))
                whole = changed[:changed.size // 32 * 32].reshape(-1, 32)
                assert whole.any(axis=1).all(), f"{(~whole.any(axis=1)).sum()} windows unchanged"
                assert changed.mean() < 0.1  # a share is redrawn, not the whole input
    finally:
        session.close()


class _Writable(CpuDevice):
    """The host device as a GPU is: runners could write their inputs, so a mirror checks them."""

    inputs_protected = False


def test_a_write_to_inputs_is_found_in_the_arena_of_the_runner_that_made_it(axpy):
    # The second runner of a comparison writes its own copy of x; checking the first runner's
    # arena (or only ever one arena) would miss it.
    def writer(inputs, outputs):
        def seconds(runner):
            runner.inputs.view(0, (4,), np.float32)[0] += 1.0
            return 1e-3
        return runners.Runner(inputs, outputs, seconds)

    result, _, _ = _compare(axpy, runners.plain, writer, device=_Writable())
    assert result.outcome == "incorrect", result.reason
    assert "input 'x' was modified" in result.reason


def test_a_baseline_listening_for_its_successor_hears_nothing(axpy):
    result, baseline, _ = _compare(axpy, runners.listening_baseline, runners.successor)
    assert result.outcome == "ok", result.reason
    assert baseline.heard == 0, "the successor's mark reached the baseline's input arena"
    comparison = result.comparison
    assert comparison.decision == "same" and comparison.ratio == pytest.approx(1.0)
    assert comparison.baseline_solo_s == pytest.approx(comparison.baseline_median_s)


def test_through_a_shared_arena_the_baseline_alone_exposes_the_listener(axpy, monkeypatch):
    # The layout before 2026-12: every runner maps the first input arena.
    made = InputArenas.add
    monkeypatch.setattr(InputArenas, "add", lambda self, laid, workload: (
        self.arenas[0] if self.arenas else made(self, laid, workload)))
    result, baseline, measured = _compare(axpy, runners.listening_baseline, runners.successor)
    assert baseline.heard > 0, "the test's channel did not work"
    (times_a, times_b), *_ = measured
    assert paired_decision(times_a, times_b)[3] == "faster"  # what the pairs alone would say
    assert result.comparison.decision == "unmeasurable"
    assert "3.00x slower beside the candidate than alone" in result.reason
    assert "3.000 ms a call beside it, 1.000 ms alone" in result.reason


def test_a_baseline_counting_its_calls_to_slow_down_during_the_pairs_is_found(axpy):
    # It hears nothing; it knows the job's shape (2 warm-up calls and 12 alone, then 12 pairs)
    # and slows down exactly through the pairs. To hide, it would have to be as slow alone.
    result, _, measured = _compare(axpy, runners.counting_baseline(14, 12), runners.plain)
    (times_a, times_b), *_ = measured
    assert paired_decision(times_a, times_b)[3] == "faster"
    assert result.comparison.decision == "unmeasurable", result.reason
    assert "slower beside the candidate than alone" in result.reason


def test_slower_beside_than_alone_beyond_noise_leaves_a_comparison_undecided():
    alone, beside = np.full(10, 1e-3), np.full(20, 1e-3)
    assert beside_and_alone(beside, alone) is None
    assert beside_and_alone(1.15 * beside, alone) is None  # within the 20% floor
    assert beside_and_alone(0.5 * beside, alone) is None  # faster beside: no reason
    assert beside_and_alone(beside, []) is None  # not measured alone: nothing to say
    reason = beside_and_alone(1.47 * beside, alone)
    assert reason.startswith("the baseline ran 1.47x slower beside the candidate than alone")
    assert "1.470 ms a call beside it, 1.000 ms alone" in reason
    rng = np.random.default_rng(5)
    tight_alone, tight_beside = (1e-3 * np.exp(0.02 * rng.standard_normal(n)) for n in (12, 40))
    assert beside_and_alone(1.3 * tight_beside, tight_alone) is not None
    wide_alone, wide_beside = (1e-3 * np.exp(0.6 * rng.standard_normal(n)) for n in (12, 40))
    assert beside_and_alone(1.3 * wide_beside, wide_alone) is None  # noise explains 1.3x
    record = comparison_record(list(beside), list(0.8 * beside), seed=0, alone=list(alone))
    assert record["decision"] == "faster" and record["baseline_solo_s"] == pytest.approx(1e-3)
    record = comparison_record(list(beside), list(0.8 * beside), seed=0, alone=list(0.5 * alone))
    assert record["decision"] == "unmeasurable" and record["baseline_solo_s"] == pytest.approx(5e-4)


class _Recorded(Candidate):
    """A real runner whose every call first checks that each runner's input arena holds the same
    bytes where the call reads (the spin's sizes are in its axes, axpy's are N float32s)."""

    made: ClassVar[list[_Recorded]] = []
    differ: ClassVar[list[str]] = []

    def __init__(self, runner, kernel, entry, inputs, outputs, *rest, **named):
        super().__init__(runner, kernel, entry, inputs, outputs, *rest, **named)
        self.input_arena, self.calls = inputs, 0
        # The memory's identity while it exists: a memfd's inode, a device allocation's address.
        self.memory = os.fstat(inputs.fd).st_ino if hasattr(inputs, "fd") else inputs.base.data_ptr()
        _Recorded.made.append(self)

    def call(self, in_offsets, out_offsets, axes, params, step):
        spin = step.startswith("profile: calibrating")
        sizes = axes[2:2 + axes[0]] if spin else [axes[0] * 4] * len(in_offsets)
        for other in (r for r in _Recorded.made if r.input_arena.base is not None):  # this job's
            for offset, size in zip(in_offsets, sizes, strict=True):
                here, there = (r.input_arena.region(offset, offset + size) for r in (self, other))
                if not _equal(here, there):
                    _Recorded.differ.append(f"{step} at {offset}")
        self.calls += 1
        return super().call(in_offsets, out_offsets, axes, params, step)


def _equal(a, b) -> bool:
    if isinstance(a, np.ndarray):
        return bool(np.array_equal(a, b))
    return bool((a == b).all())


def _recorded_comparison(monkeypatch, workload, options):
    monkeypatch.setattr(job_module, "Candidate", _Recorded)
    _Recorded.made, _Recorded.differ = [], []
    plain = load_kernel(workload, "plain")
    comparison = compare_kernels(workload, plain, plain, options=options)
    # Baseline, calibration kernel, candidate, per compare job (a noisy one is measured again).
    jobs = [_Recorded.made[k:k + 3] for k in range(0, len(_Recorded.made), 3)]
    assert jobs and all(len(runners_of_job) == 3 for runners_of_job in jobs), len(_Recorded.made)
    assert all(r.calls for r in _Recorded.made)
    assert not _Recorded.differ, _Recorded.differ[:5]
    assert comparison.baseline_solo_s is not None and comparison.baseline_solo_s > 0
    assert all(len({r.memory for r in job}) == 3 for job in jobs), "two runners were given one arena"
    return comparison


def test_real_runners_of_a_comparison_map_their_own_arenas_with_the_same_inputs(axpy, quick,
                                                                                monkeypatch):
    _recorded_comparison(monkeypatch, axpy, replace(quick, compare_s=0.05, min_pairs=6, max_pairs=12))


@pytest.mark.gpu
def test_cuda_runners_of_a_comparison_have_their_own_device_memory(monkeypatch):
    workload = load_workload(FIXTURES / "axpy_cuda")
    options = GateOptions(trials=3, target_trial_s=0.02, warmup_s=0.01, max_sets=3, compare_s=0.1,
                          min_pairs=6, max_pairs=24, limits=Limits(stall_s=60, memory_bytes=None))
    comparison = _recorded_comparison(monkeypatch, workload, options)
    assert comparison.decision in ("same", "faster", "slower"), comparison
