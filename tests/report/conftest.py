"""Report inputs: hand-written optimize/bench/demo runs, a small hand-written mine run, and one
real mine run of the axpy fixture (walk + re-derivation, once per session, on the null backend:
the report reads the run's records, which do not depend on the backend that gated them)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import FIXTURES
from klineage.gate import GateOptions, Limits
from klineage.lineage import WalkLimits
from klineage.mine import MineOptions, mine
from klineage.workload import load_kernel, load_workload

REPORT_FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def runs(tmp_path) -> Path:
    """A private copy of the hand-written runs (a report writes into RUN/report/)."""
    target = tmp_path / "runs"
    shutil.copytree(REPORT_FIXTURES, target)
    return target


@pytest.fixture(scope="session")
def mine_run(tmp_path_factory) -> Path:
    """A real mine run of tests/fixtures/axpy; admission is skipped (no contexts) to stay cheap."""
    gate = GateOptions(backend="null", limits=Limits(stall_s=10, memory_bytes=2 << 30))
    workload = load_workload(FIXTURES / "axpy")
    options = MineOptions(limits=WalkLimits(max_steps=10, max_rejections=10), gate=gate, admit_on=())
    root = tmp_path_factory.mktemp("report-mine")
    result = mine(workload, load_kernel(workload, "expert"), root / "runs", None, options)
    return result.run.path



def _null_gate() -> GateOptions:
    return GateOptions(backend="null", limits=Limits(stall_s=10, memory_bytes=2 << 30))


@pytest.fixture(scope="session")
def short_mine_run(tmp_path_factory) -> Path:
    """A real mine of axpy whose walk stops after one step, before naive."""
    workload = load_workload(FIXTURES / "axpy")
    options = MineOptions(limits=WalkLimits(max_steps=1, max_rejections=10), gate=_null_gate(),
                          admit_on=())
    root = tmp_path_factory.mktemp("report-short-mine")
    return mine(workload, load_kernel(workload, "expert"), root / "runs", None, options).run.path


@pytest.fixture(scope="session")
def optimize_run(tmp_path_factory) -> Path:
    """A real optimize run of the dot fixture's naive kernel (the rules-table baseline)."""
    from klineage.optimize import OptimizeOptions, optimize
    from klineage.runs import Budget

    workload = load_workload(FIXTURES / "dot")
    options = OptimizeOptions(method="rules-table", budget=Budget.parse("gate_runs=4"),
                              gate=_null_gate(), sol_target=100.0)
    root = tmp_path_factory.mktemp("report-optimize")
    return optimize(workload, load_kernel(workload, "naive"), None, options, runs_root=root).run.path


@pytest.fixture(scope="session")
def bench_run(tmp_path_factory) -> Path:
    """A real bench of two methods on a suite of the dot fixture."""
    from klineage.bench import bench
    from klineage.optimize import OptimizeOptions
    from klineage.runs import Budget

    root = tmp_path_factory.mktemp("report-bench")
    shutil.copytree(FIXTURES / "dot", root / "suite" / "dot")
    options = OptimizeOptions(budget=Budget.parse("gate_runs=3"), gate=_null_gate(), sol_target=100.0)
    return bench(root / "suite", None, ["none", "rules-table"], options, runs_root=root / "runs",
                 seed=3).run.path
