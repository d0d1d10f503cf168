"""The null backend: the pipeline end to end with no compiler (CC points nowhere), on a model."""

from __future__ import annotations

import pytest

from conftest import FIXTURES
from klineage.backends import BACKEND_NAMES, get_backend
from klineage.gate import GateOptions, compare_kernels, run_gate
from klineage.lineage import WalkLimits
from klineage.mine import MineOptions, mine
from klineage.optimize import OptimizeOptions, optimize
from klineage.runs import Budget
from klineage.skills import Library
from klineage.workload import load_kernel, load_workload

NULL = GateOptions(backend="null", trials=3, target_trial_s=0.05, warmup_s=0.02, max_sets=3,
                   compare_s=0.5, min_pairs=12)


@pytest.fixture(autouse=True)
def _no_compiler(monkeypatch):
    monkeypatch.setenv("CC", "/nonexistent/cc")
    monkeypatch.setenv("CXX", "/nonexistent/c++")


def test_null_is_a_backend_no_language_maps_to():
    assert "null" in BACKEND_NAMES and get_backend("null").platform() == "null"


def test_a_kernel_with_more_features_is_modeled_faster():
    axpy = load_workload(FIXTURES / "axpy")
    plain, expert = load_kernel(axpy, "plain"), load_kernel(axpy, "expert")
    assert run_gate(axpy, plain, options=NULL).accepted
    comparison = compare_kernels(axpy, plain, expert, options=NULL)
    assert comparison.decision == "faster"


def test_a_walk_and_an_optimize_run_without_a_compiler(tmp_path):
    # The README's examples run the whole chain on the null backend (tests/test_readme_examples.py);
    # here the compiler is gone, so nothing of it can have needed one.
    axpy = load_workload(FIXTURES / "axpy")
    mined = mine(axpy, load_kernel(axpy, "expert"), tmp_path / "runs", None,
                 MineOptions(limits=WalkLimits(max_steps=10, max_rejections=10), gate=NULL,
                             admit_on=()))
    assert mined.lineage.naive_reached, mined.lineage.stop_reason
    # each re-derived step measured the model's 1.5x: a finding, in the run's own library
    found = {f.feature: f for f in Library.open(mined.run.path).findings()}
    assert {c.feature for c in mined.cards} <= set(found)
    assert all(f.outcome == "faster" and f.workload == "axpy" for f in found.values())
    dot = load_workload(FIXTURES / "dot")
    result = optimize(dot, load_kernel(dot, "naive"), None,
                      OptimizeOptions(method="none", budget=Budget.parse("gate_runs=3"), gate=NULL,
                                      sol_target=100.0), runs_root=tmp_path / "runs")
    assert result.record["status"] == "ok" and result.record["steps"]
