"""Timing under load: noise that keeps a measurement from deciding is its own verdict, and
nothing measured under it reaches a run's results, a card or a library."""

from __future__ import annotations

import multiprocessing
import os
from dataclasses import replace
from pathlib import Path

import pytest

from conftest import FIXTURES
from klineage.errors import MachineLoadedError
from klineage.gate import Comparison, GateSession, TimingStats, Verdict, run_gate
from klineage.gate import _noise as noise_rules
from klineage.optimize import OptimizeOptions, optimize
from klineage.runs import Budget, Meter, RunDir
from klineage.workload import KernelState, load_kernel, load_workload


def _timing(spread: float, other_cores: float | None = None, threads: int | None = 1) -> TimingStats:
    return TimingStats(median_s=1e-3, spread=spread, trial_medians_s=[1e-3], reps_per_trial=1,
                       samples=5, min_s=1e-3, wall_median_s=1e-3, input_sets=2, footprint_bytes=1,
                       other_cores=other_cores, threads=threads)


@pytest.fixture
def two_cores(monkeypatch):
    monkeypatch.setattr(noise_rules.os, "sched_getaffinity", lambda pid: {0, 1})


def _comparison(ci_low: float, ci_high: float, decision: str) -> Comparison:
    return Comparison(baseline="a", candidate="b", ratio=(ci_low * ci_high) ** 0.5, ci_low=ci_low,
                      ci_high=ci_high, pairs=40, decision=decision, other_cores=0.8)


def test_trial_medians_far_apart_on_a_loaded_machine_are_no_measurement(two_cores):
    assert noise_rules.timing_noise(_timing(0.05, other_cores=0.8)) is None
    noise = noise_rules.timing_noise(_timing(1.07, other_cores=0.8))
    assert "107% apart" in noise and "other processes used 0.8" in noise
    # A quiet 2-core VM spread honest experts' trial medians up to 333%: no load, no verdict.
    assert noise_rules.timing_noise(_timing(3.33, other_cores=0.01)) is None
    assert noise_rules.timing_noise(_timing(3.33, other_cores=None)) is None


def test_a_phase_timed_while_others_held_the_kernels_cores_is_no_measurement(two_cores):
    # 2 cores: a 2-thread kernel leaves none free, a 1-thread kernel one; half a core of others'
    # load is tolerated either way (the gate's own side is not counted as theirs).
    assert noise_rules.contention(0.3, 2) is None
    assert "more than the 0 its 2 thread(s) left free" in noise_rules.contention(0.6, 2)
    assert noise_rules.contention(0.9, 1) is None
    # One core kept busy by another process reads a little over 1 with the system's own work;
    # two beside a 1-thread kernel read 1.19: its own core is shared.
    assert noise_rules.contention(1.05, 1) is None
    assert "left free" in noise_rules.contention(1.19, 1)
    assert "more than the 1 its 1 thread(s) left free" in noise_rules.contention(1.4, 1)
    assert noise_rules.contention(None, 2) is None  # no /proc/stat: unknown, not loaded
    # Whatever the spread or the interval: a tight 'faster' under 1.4 cores of load is no decision
    # (a threaded expert judged faster at 0.68, CI 0.51-0.81, while 16x slower than alone).
    assert "left free" in noise_rules.timing_noise(_timing(0.05, other_cores=1.4, threads=2))
    tight = _comparison(0.51, 0.81, "faster").model_copy(update={"other_cores": 1.4})
    assert "left free" in noise_rules.comparison_noise(tight, threads=2)
    assert noise_rules.comparison_noise(tight.model_copy(update={"other_cores": 0.2}), threads=2) is None
    # A modeled backend's times do not depend on the load (its spread is zero besides).
    assert noise_rules.timing_noise(_timing(0.0, other_cores=1.9, threads=2), modeled=True) is None
    assert noise_rules.comparison_noise(tight, threads=2, modeled=True) is None


def test_a_busy_machine_is_timed_on_the_cores_others_leave_and_that_count_is_quiet_enough(two_cores):
    # 2 cores: nobody else, or under half a core -> both; one busy process (1.0-1.1 with the
    # system's own work) -> 1; both busy -> still 1, which the load rule then refuses to time.
    assert [noise_rules.free_threads(load) for load in (None, 0.0, 0.4, 0.6, 1.05, 1.4, 2.0)] == \
        [2, 2, 2, 1, 1, 1, 1]
    for load in (0.0, 0.4, 1.05):  # what a busy process leaves, the kernel can be timed on
        assert noise_rules.contention(load, noise_rules.free_threads(load)) is None
    assert noise_rules.contention(2.0, noise_rules.free_threads(2.0)) is not None


def test_a_comparison_only_noise_kept_from_deciding_is_unmeasurable(two_cores):
    assert noise_rules.comparison_noise(_comparison(0.97, 1.02, "same")) is None  # decided: same
    assert noise_rules.comparison_noise(_comparison(0.4, 0.9, "faster")) is None  # decided
    noise = noise_rules.comparison_noise(_comparison(0.6, 1.6, "same"))
    assert "±" in noise and "40 pairs" in noise and "other processes used 0.8" in noise
    quiet = _comparison(0.6, 1.6, "same").model_copy(update={"other_cores": 0.01})
    assert noise_rules.comparison_noise(quiet) is None


def _spin() -> None:
    while True:
        pass


@pytest.fixture
def loaded_machine():
    """Every core busy with another process, for the length of the test."""
    hogs = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(os.cpu_count() or 2)]
    for hog in hogs:
        hog.start()
    yield
    for hog in hogs:
        hog.kill()
        hog.join()


def test_under_load_the_gate_never_accepts_a_timing_it_could_not_measure(loaded_machine, quick):
    axpy = load_workload(FIXTURES / "axpy")
    report = run_gate(axpy, load_kernel(axpy, "plain"), options=quick)
    timing = report.timing
    assert timing is not None
    if Path("/proc/stat").is_file():
        assert timing.other_cores is not None and timing.other_cores > 0.5, timing.other_cores
    if report.verdict is Verdict.ACCEPTED:
        assert noise_rules.timing_noise(timing) is None
    else:
        assert report.verdict is Verdict.UNMEASURABLE and "measured twice" in report.reason


def test_a_profile_still_noisy_when_measured_again_is_unmeasurable(monkeypatch, quick):
    monkeypatch.setattr(noise_rules, "MAX_SPREAD", -1.0)  # every profile counts as noise
    monkeypatch.setattr(noise_rules, "LOADED_CORES", -1.0)  # on a machine counted as loaded
    axpy = load_workload(FIXTURES / "axpy")
    report = run_gate(axpy, load_kernel(axpy, "plain"), options=quick)
    assert report.verdict is Verdict.UNMEASURABLE
    assert "measured twice" in report.reason and "quiet machine" in report.reason
    assert [s.name for s in report.stages if not s.ok] == ["profile"]


def test_a_run_stops_on_an_unmeasurable_timing_records_nothing_and_resumes(monkeypatch, tmp_path,
                                                                           null_gate):
    dot = load_workload(FIXTURES / "dot")
    options = OptimizeOptions(method="none", budget=Budget(gate_runs=3), gate=null_gate,
                              sol_target=100.0)
    monkeypatch.setattr(noise_rules, "MAX_SPREAD", -1.0)
    monkeypatch.setattr(noise_rules, "LOADED_CORES", -1.0)
    with pytest.raises(MachineLoadedError, match=r"too noisy.*continue it with klineage optimize"):
        optimize(dot, load_kernel(dot, "naive"), None, options, runs_root=tmp_path / "runs")
    (run_path,) = (tmp_path / "runs").iterdir()
    run = RunDir.open(run_path)
    assert run.event_kinds()[-1] == "run_interrupted"
    assert not list(run_path.glob("*/*/gate-*.json")), "an unmeasurable report was cached"
    assert not (run_path / "optimize.json").exists()
    monkeypatch.setattr(noise_rules, "MAX_SPREAD", 0.5)  # a quiet machine again
    resumed = optimize(dot, None, None, OptimizeOptions(gate=null_gate), runs_root=tmp_path / "runs",
                       resume=run_path)
    assert resumed.record["status"] == "ok"


def test_a_gate_comparison_noise_kept_from_deciding_is_unmeasurable(monkeypatch, null_gate):
    # On the null backend a kernel against itself is exactly 'same'; with the threshold below
    # zero that counts as noise, so it is measured again and then called unmeasurable.
    monkeypatch.setattr(noise_rules, "MAX_INTERVAL", -1.0)
    monkeypatch.setattr(noise_rules, "LOADED_CORES", -1.0)
    axpy = load_workload(FIXTURES / "axpy")
    plain = load_kernel(axpy, "plain")
    report = run_gate(axpy, plain, options=null_gate, against=plain)
    assert report.verdict is Verdict.UNMEASURABLE
    assert report.comparison.decision == "unmeasurable" and "measured twice" in report.reason


def test_a_patient_run_waits_for_the_load_to_pass_and_times_again(tmp_path, quick):
    """Both cores busy while the kernel is timed, free once the session says it waits: with
    patience it waits for the quieter machine and times again, uncharged, instead of stopping."""
    hogs = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(os.cpu_count() or 2)]
    for hog in hogs:
        hog.start()

    def release() -> None:
        for hog in hogs:
            hog.kill()

    said: list[str] = []

    def progress(stage: str, line: str) -> None:
        said.append(f"{stage}: {line}")
        if stage == "waiting":
            release()

    try:
        axpy = load_workload(FIXTURES / "axpy")
        meter = Meter(log=RunDir(tmp_path / "run").log)
        session = GateSession(RunDir(tmp_path / "run"), axpy, replace(quick, threads=1, patience_s=120),
                              progress=progress, meter=meter)
        report = session.check(KernelState.from_spec(load_kernel(axpy, "plain")), profile=True)
    finally:
        release()
        for hog in hogs:
            hog.join()
    assert any(line.startswith("waiting: waiting for a quieter machine") for line in said), said
    assert report.verdict is Verdict.ACCEPTED, report.reason
    assert meter.spent.gate_runs == 1


def test_patience_times_again_once_the_machine_is_quiet_and_gives_up_when_it_is_not():
    from klineage.gate.session import patiently

    tries, said = [], []

    def again() -> str:
        tries.append(1)
        return "measured"

    def unmeasurable(result: str) -> bool:
        return result == "unmeasurable"

    everything = float(os.cpu_count() or 2)  # others can never use more: the machine counts as quiet
    assert patiently(again, "unmeasurable", unmeasurable, everything, 0.0, said.append) == "unmeasurable"
    assert patiently(again, "measured", unmeasurable, everything, 60.0, said.append) == "measured"
    assert tries == [] and said == []
    assert patiently(again, "unmeasurable", unmeasurable, everything, 60.0, said.append) == "measured"
    assert tries == [1]
    # a limit no load is under: it says what it waits for and gives up when patience runs out
    assert patiently(again, "unmeasurable", unmeasurable, -1.0, 4.5, said.append) == "unmeasurable"
    assert tries == [1] and said and all(line.startswith("waiting for a quieter machine") for line in said)
