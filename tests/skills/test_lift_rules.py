"""Lift's grounded preconditions (the parts that need no walk to test)."""

from __future__ import annotations

from klineage.skills.lift import divisibility_precondition


def test_divisibility_from_an_odd_failure():
    found = divisibility_precondition("N", passing=[4096, 1024], failing=1000)
    assert found is not None
    assert found.check == "N % 16 == 0"  # 1000 = 8 * 125: 16 is the weakest that explains it
    assert found.category == "shape" and found.source == "failure"
    assert "N=1000" in found.reason


def test_no_divisibility_when_the_evidence_does_not_support_one():
    assert divisibility_precondition("N", passing=[4096, 37], failing=1000) is None
    assert divisibility_precondition("N", passing=[64], failing=128) is None  # 128 is a multiple


def test_a_rederived_fast_path_states_its_launch_guard():
    from klineage.skills.lift import _launch_guard
    from klineage.source import insertion_edits
    from source._kernels import source_of

    text, _ = source_of("cuda", "softmax", "naive")
    (edit,) = insertion_edits(text, "cuda", "vectorized_access")
    guard = _launch_guard(edit.diff)
    assert guard.startswith("(N) % 8 == 0 && ((unsigned long long)((const __nv_bfloat16*)inputs[0])")
    assert _launch_guard("+  y[i] = x[i];\n") == ""
