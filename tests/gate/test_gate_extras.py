"""Degenerate workloads, speed-of-light rejection, paired comparison, trusted state."""

from __future__ import annotations

import os
import tempfile
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from klineage.backends import backend_for
from klineage.errors import DegenerateWorkloadError, WorkerError
from klineage.gate import Verdict, run_gate
from klineage.workload import load_kernel, load_workload
from klineage.workload.model import KernelSpec


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("import numpy as np\ndef reference(x, z, alpha):\n    return {'y': np.full_like(x, 2.0)}\n",
         "is constant"),
        ("import numpy as np\ndef reference(x, z, alpha):\n    return {'y': 1e-9 * x}\n",
         "within tolerance of zero"),
        ("def reference(x, z, alpha):\n    return {'y': alpha * x}\n",
         "do not change when input 'z' is redrawn"),
    ],
)
def test_degenerate_workloads_are_refused(axpy_copy, quick, body, message):
    (axpy_copy / "reference.py").write_text(body)
    workload = load_workload(axpy_copy)
    with pytest.raises(DegenerateWorkloadError, match=message):
        run_gate(workload, load_kernel(workload, "plain"), options=quick)


def test_faster_than_speed_of_light_is_rejected(axpy_copy, quick):
    # Claim a trillion flops per element: an honest kernel now "beats" the measured peak.
    path = axpy_copy / "workload.toml"
    path.write_text(path.read_text().replace('flops = "2 * N"', 'flops = "1e12 * N"'))
    workload = load_workload(axpy_copy)
    report = run_gate(workload, load_kernel(workload, "plain"), options=quick)
    assert report.verdict is Verdict.REJECTED_CHEAT
    assert "faster than speed of light" in report.reason


def test_paired_comparison_decides(axpy, quick):
    plain, slow = load_kernel(axpy, "plain"), load_kernel(axpy, "slow")
    ahead = run_gate(axpy, plain, options=quick, against=slow)
    assert ahead.verdict is Verdict.ACCEPTED, ahead.reason
    assert ahead.comparison.decision == "faster"
    behind = run_gate(axpy, slow, options=quick, against=plain)
    # A loaded moment may leave it undecided (CI, 2026-12-05); it must never come out faster.
    assert behind.verdict in (Verdict.SLOWER, Verdict.UNMEASURABLE), behind.reason
    assert behind.reason.startswith(("not faster than plain", "the comparison with plain could not decide"))


def test_a_build_cache_entry_changed_after_it_was_built_is_refused(axpy, quick):
    # Build artifacts are trusted state: what is loaded is a private copy checked against the
    # hash recorded at build time.
    kernel = load_kernel(axpy, "plain")
    build = backend_for(kernel.language).build(kernel)
    original = build.artifact.read_bytes()
    try:
        build.artifact.write_bytes(original[:-1] + bytes([original[-1] ^ 0xFF]))
        with pytest.raises(WorkerError, match="was changed after it was built"):
            run_gate(axpy, kernel, options=quick)
    finally:
        build.artifact.write_bytes(original)
    assert run_gate(axpy, kernel, options=quick).verdict is Verdict.ACCEPTED


def test_timing_reports_the_clock_check(axpy, quick):
    report = run_gate(axpy, load_kernel(axpy, "plain"), options=quick)
    clock = report.timing.clock
    assert clock is not None and clock.allowance_s >= clock.calibration_gap_s
    # A believed clock times a trial by ours only where one of its calls was not believed.
    assert 0.0 <= clock.raised_share <= 1.0 and (not clock.believed or clock.raised_share < 1.0)


def test_the_runner_is_unprivileged_and_sees_no_secret(axpy, quick, monkeypatch):
    # A kernel that fails unless its process runs as nobody (when the gate runs as root), with
    # nothing of our environment, and without the secret seed on its command line.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    seed = 987654321
    source = axpy_source(f"""
        #include <stdlib.h>
        #include <string.h>
        #include <unistd.h>
        extern char** environ;
        static int leaks(void) {{
            for (char** e = environ; *e; e++)
                if (strstr(*e, "sk-test") || strstr(*e, "{seed}")) return 1;
            return {0 if os.geteuid() != 0 else 1} && geteuid() != 65534;
        }}""", "if (leaks()) return 9;")
    kernel = KernelSpec(name="probe", source=source, language="c",
                        allow_symbols=("environ", "__environ", "geteuid"))
    report = run_gate(axpy, kernel, options=replace(quick, secret_seed=seed))
    assert report.verdict is Verdict.ACCEPTED, report.reason


def axpy_source(prelude: str, check: str) -> Path:
    folder = Path(tempfile.mkdtemp(prefix="klineage-test-"))
    path = folder / "kernel.c"
    path.write_text(textwrap.dedent(prelude) + f"""
#include <stdint.h>
int kl_launch(const void* const* in, void* const* out, const int64_t* axes, const double* p, void* s) {{
    {check}
    const float *x = in[0], *z = in[1];
    float* y = out[0];
    for (int64_t i = 0; i < axes[0]; i++) y[i] = (float)p[0] * x[i] + z[i];
    return 0;
}}
""")
    return path


def test_which_calls_are_verified_does_not_follow_from_the_seeds(axpy, quick):
    """A kernel sees the inputs made from every seed; the session's own draws (fresh blocks, the
    calls kept for verification, the timing sets) must not be computable from them."""
    from klineage.gate._trusted import TrustedSession
    from klineage.gate.runner import _Run

    backend = backend_for("c")
    job = _Run(axpy, load_kernel(axpy, "plain"), backend, quick, lambda s, d: None)._job("gate")
    draws = []
    for _ in range(2):
        session = TrustedSession(axpy, backend.open_device(1), [0, 1, 12345], 1, lambda s, d: None,
                                 job.timing, make_spin=None)
        draws.append(session._rng.integers(0, 1 << 62, 4).tolist())
        session.close()
    assert draws[0] != draws[1]


def test_a_cpu_excess_rejects_a_kernel_the_second_time_not_the_first():
    # Honest kernels showed one call over the allowance in a few hundred on 2 cores (more CPU
    # than the runner's 2 cores allow: a clock artifact); hidden threads exceed on every call.
    from types import SimpleNamespace

    from klineage.gate._trusted import TrustedSession
    from klineage.gate.sandbox import CallResult

    session = SimpleNamespace(threads=2, device=SimpleNamespace(helper_threads=0), _cpu_excess={})
    honest = CallResult(rc=0, reported_s=1e-3, wall_s=1.1e-3, cpu_s=2.1e-3)
    over = CallResult(rc=0, reported_s=0.4e-3, wall_s=0.4e-3, cpu_s=2.1e-3)
    a, b = object(), object()
    account = TrustedSession._accounting
    assert account(session, a, honest, "call 1") is None
    assert account(session, a, over, "call 2") is None, "one excess is forgiven"
    assert account(session, b, over, "call 2") is None, "counted per candidate"
    outcome, reason = account(session, a, over, "call 9")
    assert outcome == "rejected_cheat" and "more than its 2 declared thread(s)" in reason
    assert "and before, at call 2" in reason
    forged = CallResult(rc=0, reported_s=2e-3, wall_s=1e-3, cpu_s=1e-3)
    assert account(session, b, forged, "call 3")[0] == "rejected_cheat", "a forged clock: at once"


def test_a_kernel_that_fails_only_in_its_comparison_gets_a_verdict(axpy_copy, quick):
    """The comparison runs the candidate in a fresh runner: whatever it does there is its verdict,
    never an error of the gate's (it once raised WorkerError, 'a klineage bug')."""
    kernel = axpy_copy / "kernels" / "traps"
    kernel.mkdir()
    (kernel / "kernel.c").write_text((axpy_copy / "kernels" / "plain" / "kernel.c").read_text()
                                     .replace("{", "{ __builtin_trap();", 1))
    workload = load_workload(axpy_copy)
    # Unchecked and unprofiled, the comparison is the first place the kernel runs.
    report = run_gate(workload, load_kernel(workload, "traps"), against=load_kernel(workload, "plain"),
                      options=replace(quick, check=False, profile=False))
    assert report.verdict is Verdict.CRASHED
    assert "paired comparison with plain" in report.reason


def test_a_kernel_that_recomputes_only_the_inputs_that_changed_is_not_faster(quick):
    """Every call's inputs differ from the last ones in every window of 32 elements, so keeping
    earlier outputs saves nothing. With one 64-element block in 64 redrawn, this kernel redid
    2 blocks of 128 a call, exact and many times faster than the plain one."""
    workload = load_workload(Path(__file__).parent / "stale_inputs")
    report = run_gate(workload, load_kernel(workload, "memo"), against=load_kernel(workload, "plain"),
                      options=quick)
    # The same work as the plain kernel now, so the pairs read 0.95-1.01 and, with 12 of them, a
    # 'faster' by noise now and then (CI, once); the old redraw timed it at 0.36.
    compared = report.comparison
    assert report.verdict is Verdict.UNMEASURABLE or (compared is not None and compared.ratio > 0.9), (
        report.reason)


def test_a_kernel_correct_only_on_the_timed_distribution_fails_on_a_check_init(quick):
    """A softmax that skips the row's max is exact on N(0, 1) rows and NaN on rows near 100;
    the workload's check_inits put such rows into correctness, and only there."""
    workload = load_workload(Path(__file__).parent / "shifted_inputs")
    checks = replace(quick, profile=False)
    report = run_gate(workload, load_kernel(workload, "unshifted"), options=checks)
    assert report.verdict is Verdict.INCORRECT, report.reason
    assert "check init x = 'normal:100:1'" in report.reason
    assert run_gate(workload, load_kernel(workload, "stable"), options=checks).verdict is Verdict.ACCEPTED
    timed_only = workload.model_copy(update={"inputs": tuple(
        s.model_copy(update={"check_inits": ()}) for s in workload.inputs)})
    unchecked = run_gate(timed_only, load_kernel(timed_only, "unshifted"), options=checks)
    assert unchecked.verdict is Verdict.ACCEPTED
