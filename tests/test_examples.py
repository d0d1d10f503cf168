"""Every bundled CPU example: the naive and the expert kernel pass the whole gate."""

from __future__ import annotations

import pytest

from conftest import REPO
from klineage.gate import Verdict, run_gate
from klineage.workload import load_kernel, load_workload

CPU_EXAMPLES = sorted(p for p in (REPO / "examples" / "workloads" / "cpu").glob("*")
                      if (p / "workload.toml").is_file())


def test_there_are_at_least_five_cpu_examples():
    assert len(CPU_EXAMPLES) >= 5


@pytest.mark.parametrize("folder", CPU_EXAMPLES, ids=lambda p: p.name)
def test_cpu_example_kernels_are_accepted(folder, quick):
    # At the quick sizes: every check shape is still checked; the full sizes' correctness check
    # took 8x as long, and benchmarks/gate_cpu.py gates them.
    workload = load_workload(folder, quick=True)
    assert set(workload.kernel_variants()) >= {"naive", "expert"}
    for variant in ("naive", "expert"):
        report = run_gate(workload, load_kernel(workload, variant), options=quick)
        assert report.verdict is Verdict.ACCEPTED, f"{variant}: {report.reason}"
