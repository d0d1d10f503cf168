"""A runner's replies are parsed as hostile: only the runner's own shapes pass (the catalogue's
reply_* kernels write the others into the pipe from inside a call)."""

from __future__ import annotations

import pytest

from klineage.gate.sandbox import _READY, _RESULT


@pytest.mark.parametrize("line", ["R 0 1000", "R -1 0", "R 3 123456789012345678"])
def test_a_call_result_is_a_return_code_and_a_reading_in_nanoseconds(line):
    assert _RESULT.fullmatch(line)


@pytest.mark.parametrize("line", [
    "R 0 -6000000",  # a reading below zero: a median of -6 ms was once accepted
    "R 0 1.5", "R 0 nan", "R x y", "R 0", "R 0 1 2", " R 0 1", "R 0 1 ", "R 0 0x10",
    "R 0 1234567890123456789",  # longer than any honest reading
])
def test_anything_else_is_out_of_protocol(line):
    assert _RESULT.fullmatch(line) is None


def test_the_ready_line_is_two_addresses():
    assert _READY.fullmatch("READY 0x7f00aa000000 0x7f00bb000000")
    assert _READY.fullmatch("READY (nil) 0x7f00bb000000")  # no inputs: nothing mapped
    assert _READY.fullmatch("READY 0x1 0x2 0x3") is None
    assert _READY.fullmatch("READY hello world") is None
