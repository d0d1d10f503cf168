"""A runner's replies are parsed as hostile: only the runner's own shapes pass (the catalogue's
reply_* kernels write the others into the pipe from inside a call)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from klineage.gate import Verdict, run_gate
from klineage.gate.sandbox import _READY, _RESULT
from klineage.workload import load_kernel, load_workload


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


def test_a_runner_seen_exiting_before_its_failure_line_is_read_still_says_why(axpy_copy, quick,
                                                                            monkeypatch):
    """A kernel without kl_launch read "does not define its entry point" in 3 runs of 6 and
    "the kernel's process exited with status 3" otherwise: when the runner wrote its failure
    and exited between two reads of the pipe, its exit was seen first. Forced here: the first
    wait for a reply sees nothing while the runner fails."""
    import select as real_select
    import time
    from types import SimpleNamespace

    from klineage.gate import sandbox

    forced = []

    def late(readers, writers, errors, timeout=None):
        if not forced and timeout:
            forced.append(True)
            time.sleep(1.0)  # the runner writes its failure and exits meanwhile
            return [], [], []
        return real_select.select(readers, writers, errors, timeout)

    monkeypatch.setattr(sandbox, "select", SimpleNamespace(select=late))
    kernel = axpy_copy / "kernels" / "no_entry"
    kernel.mkdir()
    (kernel / "kernel.c").write_text("int not_the_entry(void) { return 0; }\n")
    (kernel / "kernel.toml").write_text('language = "c"\n')
    workload = load_workload(axpy_copy)
    report = run_gate(workload, load_kernel(workload, "no_entry"),
                      options=replace(quick, profile=False))
    assert forced and report.verdict is Verdict.CRASHED
    assert "does not define its entry point: kl_launch" in report.reason, report.reason
