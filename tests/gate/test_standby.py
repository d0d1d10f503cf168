"""Standby workers: the next worker starts while a candidate runs, and isolation is unchanged."""

from __future__ import annotations

from pathlib import Path

from klineage.backends.cpu import CpuBackend
from klineage.gate import Verdict, isolation, run_gate
from klineage.workload import load_kernel

CHEATS = Path(__file__).parent / "cheats"


class _StandbyCpu(CpuBackend):
    """The in-worker path (what CUDA uses until its runner exists), driven by gcc kernels."""

    standby_imports = ("json",)
    sandboxed = False


def _waiting_pids() -> set[int]:
    return {w.process.pid for w in isolation._STANDBY._waiting.values() if w.alive()}


def test_each_job_takes_the_waiting_worker_and_a_new_one_starts(axpy, quick):
    backend = _StandbyCpu()
    first = run_gate(axpy, load_kernel(axpy, "plain"), backend=backend, options=quick)
    assert first.verdict is Verdict.ACCEPTED, first.reason
    waiting = _waiting_pids()
    assert len(waiting) == 1

    second = run_gate(axpy, load_kernel(axpy, "expert"), backend=backend, options=quick)
    assert second.verdict is Verdict.ACCEPTED, second.reason
    now_waiting = _waiting_pids()
    assert len(now_waiting) == 1 and now_waiting != waiting  # the old one ran the job
    isolation._STANDBY.close()
    assert not _waiting_pids()


def test_a_crash_in_a_standby_worker_does_not_reach_the_next_candidate(axpy, quick):
    backend = _StandbyCpu()
    crashed = run_gate(axpy, load_kernel(axpy, CHEATS / "segfaults"), backend=backend, options=quick)
    assert crashed.verdict is Verdict.CRASHED and "SIGSEGV" in crashed.reason
    after = run_gate(axpy, load_kernel(axpy, "plain"), backend=backend, options=quick)
    assert after.verdict is Verdict.ACCEPTED, after.reason
    isolation._STANDBY.close()
