"""The memory baseline acquires its memory its own way: forward runs on the training workloads
with the budget mining spent there, kept as free text (on the null backend: what is tested is
what is run and kept, not the gate)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from conftest import FIXTURES
from klineage.cli import app
from klineage.errors import ConfigError
from klineage.lineage import WalkLimits
from klineage.mine import MineOptions, mine
from klineage.optimize import OptimizeOptions, optimize
from klineage.optimize.memory import MemoryStore, mine_spent
from klineage.workload import load_kernel, load_workload


@pytest.fixture
def mine_run(tmp_path, null_gate):
    axpy = load_workload(FIXTURES / "axpy")
    result = mine(axpy, load_kernel(axpy, "expert"), tmp_path / "runs", None,
                  MineOptions(limits=WalkLimits(max_steps=2, max_rejections=4), gate=null_gate,
                              admit_on=()))
    return result.run.path, result.summary()["spent"]


def test_memory_build_spends_what_the_mine_spent_on_the_same_workload(mine_run, tmp_path):
    path, spent = mine_run
    folder, budget, quick = mine_spent(path)
    assert folder == FIXTURES / "axpy" and not quick
    assert budget.gate_runs == spent["gate_runs"] and budget.calls is None  # the rules brain: 0 calls
    runner = CliRunner()
    result = runner.invoke(app, ["memory", "build", "--like", str(path), "--out", str(tmp_path / "mem"),
                                 "--runs", str(tmp_path / "runs"), "--backend", "null", "--start", "plain",
                                 "--json"])
    assert result.exit_code == 0, result.output
    store = MemoryStore.load(tmp_path / "mem")
    assert json.loads(result.output)["workloads"] == store.workloads == ["axpy"]
    assert store.budgets == {"axpy": f"gate_runs={spent['gate_runs']}"}
    assert store.spent["axpy"]["gate_runs"] <= spent["gate_runs"]
    # what its own run gated, from the naive kernel, with no cards: kept pairs carry their diff
    kept = [o for o in store.observations if o.verdict == "accepted"]
    assert kept and all(o.speedup > 1 and o.diff.startswith("---") for o in kept)
    assert {o.workload for o in store.observations} == {"axpy"}
    assert store.without("axpy") == []


def test_the_memory_method_needs_its_own_store(tmp_path):
    runner = CliRunner()
    result = runner.invoke(app, ["optimize", str(FIXTURES / "axpy"), "--start", "plain", "--method",
                                 "memory", "--runs", str(tmp_path / "runs"), "--backend", "null"])
    assert result.exit_code == 2 and "--method memory needs its memory: --memory DIR" in result.output
    assert not (tmp_path / "runs").exists(), "a refused start leaves no run folder"
    axpy = load_workload(FIXTURES / "axpy")
    with pytest.raises(ConfigError, match=r"no memory\.json"):
        optimize(axpy, load_kernel(axpy, "plain"), None,
                 OptimizeOptions(method="memory", memory=tmp_path), runs_root=tmp_path / "runs")


def test_like_refuses_a_run_that_is_not_a_finished_mine(tmp_path):
    with pytest.raises(ConfigError, match="is not a finished mine run"):
        mine_spent(tmp_path)
