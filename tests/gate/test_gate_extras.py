"""Degenerate workloads, speed-of-light rejection, paired comparison, escaped streams."""

from __future__ import annotations

import pytest

from klineage.errors import DegenerateWorkloadError
from klineage.gate import Verdict, run_gate
from klineage.gate.report import TimingStats
from klineage.gate.runner import _escaped_stream
from klineage.workload import load_kernel, load_workload


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
    assert behind.verdict is Verdict.SLOWER
    assert "not faster than plain" in behind.reason


def _timing(device_ms: float, wall_ms: float) -> TimingStats:
    return TimingStats(median_s=device_ms / 1e3, spread=0.0, trial_medians_s=[device_ms / 1e3],
                       reps_per_trial=1, samples=1, min_s=device_ms / 1e3,
                       wall_median_s=wall_ms / 1e3, input_sets=1, footprint_bytes=1)


def test_work_escaping_the_timed_stream_is_caught():
    assert _escaped_stream(_timing(1.0, 1.05)) is None
    assert "escaped the timed stream" in _escaped_stream(_timing(0.01, 1.0))
