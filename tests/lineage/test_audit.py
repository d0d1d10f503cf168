"""The walk's audit: exactly the targeted feature goes; what lived only inside its code goes with it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from klineage.editors import EditContext, get_editor
from klineage.gate import GateOptions
from klineage.lineage import audit_removal
from klineage.runs import Run, RunMeta
from klineage.source import feature_region
from klineage.workload import KernelState, load_kernel, load_workload

ROW_SUM = Path(__file__).parents[2] / "examples" / "workloads" / "cuda" / "row_sum"

@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_register_tile_of_the_vector_kernel_goes_with_the_fast_path(tmp_path, monkeypatch):
    monkeypatch.setenv("KLINEAGE_CUDA_ARCH", "sm_90a")  # compile-only: no GPU needed
    workload = load_workload(ROW_SUM)
    expert = KernelState.from_spec(load_kernel(workload, "expert"))
    answer = get_editor("rules").simplify(expert, EditContext(workload=workload))
    removal = next(p for p in answer.proposals if p.feature == "vectorized_access")
    gate = Run.create(tmp_path, RunMeta(kind="test", name="audit")).gate(workload, GateOptions())

    problem, nested = audit_removal(gate, expert, removal.state, "vectorized_access")

    assert problem is None
    assert nested == ["register_blocking"]
    # The fast path's region is wider than the vector loads themselves.
    sites = feature_region(expert.source, "cuda", "read_only_cache")
    region = feature_region(expert.source, "cuda", "vectorized_access")
    assert sum(b - a for a, b in region) > sum(b - a for a, b in sites)
