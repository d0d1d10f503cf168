"""Checks on a gate report's clocks, shared by the catalogue and the GPU tests."""

from __future__ import annotations


def assert_timed_in_full(report) -> None:
    """The runner's clock saw all of the call's GPU work: it reads short of our round trip by no
    more than the calibration kernel's does (work its clock missed would widen that gap by its
    own length: a tail of a fifth, by a fifth of the time)."""
    clock = report.timing.clock
    assert clock.believed, clock
    assert clock.gap_s - clock.calibration_gap_s < 0.1 * report.timing.median_s, clock
