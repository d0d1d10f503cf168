"""A runner never outlives the trusted process that started it (a killed Ray worker, a lost
node): it would otherwise stay stopped for good, holding its memory."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from conftest import FIXTURES

GATE_FOR_LONG = f"""
from klineage.gate import GateOptions, run_gate
from klineage.workload import load_kernel, load_workload
workload = load_workload({str(FIXTURES / "axpy")!r})
run_gate(workload, load_kernel(workload, "slow"), options=GateOptions(trials=50, target_trial_s=0.5))
"""


def _runners_of(parent: int) -> list[int]:
    table = subprocess.run(["ps", "-eo", "pid=,ppid=,args="], capture_output=True, text=True).stdout
    return [int(pid) for pid, ppid, *args in (line.split() for line in table.splitlines())
            if int(ppid) == parent and args and args[0].endswith("kl_runner")]


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return "gone"


def test_a_runner_dies_with_the_process_that_gates():
    gating = subprocess.Popen([sys.executable, "-c", GATE_FOR_LONG])
    try:
        deadline = time.monotonic() + 60
        while not (runners := _runners_of(gating.pid)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert runners, "the gate never started a runner"
    finally:
        os.kill(gating.pid, signal.SIGKILL)
        gating.wait()
    time.sleep(1)
    assert {_state(pid) for pid in runners} <= {"gone", "Z"}  # dead (a zombie until reaped)


def test_a_runner_that_fails_to_load_leaves_no_folder_behind(axpy_copy, quick, monkeypatch):
    """The session only closes runners it got back: one that dies while loading closes itself."""
    import tempfile

    from klineage.gate import run_gate, sandbox
    from klineage.workload import load_kernel, load_workload

    kernel = axpy_copy / "kernels" / "dies_loading"
    kernel.mkdir()
    (kernel / "kernel.c").write_text(
        "__attribute__((constructor)) static void dies(void) { __builtin_trap(); }\n"
        + (axpy_copy / "kernels" / "plain" / "kernel.c").read_text())
    folders, make = [], tempfile.mkdtemp

    def recorded(*args, **kwargs):
        made = make(*args, **kwargs)
        if kwargs.get("prefix") == "klineage-candidate-":
            folders.append(made)
        return made

    monkeypatch.setattr(sandbox.tempfile, "mkdtemp", recorded)
    workload = load_workload(axpy_copy)
    report = run_gate(workload, load_kernel(workload, "dies_loading"), options=quick)
    assert report.verdict.value != "accepted"
    assert folders and not any(os.path.exists(folder) for folder in folders)
