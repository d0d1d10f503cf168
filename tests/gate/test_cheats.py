"""The cheat catalogue: each way a gate has been fooled gets the verdict it deserves."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from klineage.gate import Limits, Verdict, run_gate
from klineage.workload import load_kernel

CHEATS = Path(__file__).parent / "cheats"

EXPECTED = {
    "writes_nothing": (Verdict.INCORRECT, "NaN"),
    "cache_by_pointer": (Verdict.INCORRECT, "new values in the same buffers"),
    "cache_first_call": (Verdict.INCORRECT, "new values in the same buffers"),
    "mutates_input": (Verdict.INCORRECT, "input 'x' was modified"),
    "partial": (Verdict.INCORRECT, "elements off"),
    "default_shape_only": (Verdict.INCORRECT, "at N=37"),
    "writes_nan": (Verdict.INCORRECT, "1 NaN"),
    "segfaults": (Verdict.CRASHED, "SIGSEGV"),
    "aborts": (Verdict.CRASHED, "SIGABRT"),
    "returns_error": (Verdict.CRASHED, "returned 7"),
    "allocates_forever": (Verdict.CRASHED, "out of memory"),
    "reads_a_file": (Verdict.REJECTED_CHEAT, "calls fopen()"),
    "hidden_call": (Verdict.REJECTED_CHEAT, "imports 'fopen'"),
    "no_op_after_warm_up": (Verdict.INCORRECT, "timed call"),
    "hangs": (Verdict.TIMEOUT, "no progress for 3 s"),
}


def test_catalogue_is_complete():
    assert sorted(EXPECTED) == sorted(p.name for p in CHEATS.iterdir() if p.is_dir())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_cheat_gets_its_verdict(name, axpy, quick):
    options = replace(quick, limits=Limits(stall_s=3, memory_bytes=1 << 30))
    report = run_gate(axpy, load_kernel(axpy, CHEATS / name), options=options)
    verdict, reason = EXPECTED[name]
    assert report.verdict is verdict, report.reason
    assert reason in report.reason


def test_honest_kernel_is_accepted(axpy, quick):
    report = run_gate(axpy, load_kernel(axpy, "plain"), options=quick)
    assert report.verdict is Verdict.ACCEPTED, report.reason
    assert report.timing is not None and report.timing.median_s > 0
    assert [s.name for s in report.stages] == ["compile", "static", "correctness", "profile",
                                               "speed_of_light"]
    assert len(report.seeds) == 3


def test_secret_seed_differs_between_runs(axpy, quick):
    no_profile = replace(quick, profile=False)
    kernel = load_kernel(axpy, "plain")
    seeds = {run_gate(axpy, kernel, options=no_profile).seeds[-1] for _ in range(3)}
    assert len(seeds) > 1
