"""The elementwise comparison of a kernel's outputs with the reference, at the edges of the float
line: infinities and NaN in the reference."""

from __future__ import annotations

import numpy as np

from klineage.gate._compare import output_mismatch

INF = float("inf")


def _mismatch(got: list[float], want: list[float]) -> str | None:
    return output_mismatch("y", np.array(got), np.array(want), rtol=1e-5, atol=1e-5, kind="float")


def test_a_finite_output_where_the_reference_is_infinite_fails():
    # rtol * |inf| is inf: before, any finite number passed there.
    assert _mismatch([1.0, 3.0], [1.0, INF]) is not None
    assert _mismatch([1.0, -1e30], [1.0, -INF]) is not None


def test_the_same_infinity_passes_and_the_other_one_fails():
    assert _mismatch([1.0, INF, -INF], [1.0, INF, -INF]) is None
    assert _mismatch([1.0, -INF], [1.0, INF]) is not None


def test_an_infinite_or_nan_output_where_the_reference_is_finite_fails():
    assert _mismatch([INF], [1.0]) is not None
    assert "NaN" in _mismatch([float("nan")], [1.0])


def test_nothing_passes_where_the_reference_is_nan():
    # Outputs are poisoned with NaN before each call: a NaN there is an unwritten element too.
    assert _mismatch([float("nan")], [float("nan")]) is not None
    assert _mismatch([0.0], [float("nan")]) is not None


def test_within_tolerance_passes():
    assert _mismatch([1.0 + 1e-6, 2.0], [1.0, 2.0]) is None
    assert _mismatch([1.1], [1.0]) is not None
