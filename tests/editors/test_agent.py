"""The agent brain with a stand-in CLI script: scratch folder, gate.sh, result files, time limit."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from conftest import FIXTURES
from klineage.config import AgentConfig, Config
from klineage.editors import EditContext
from klineage.editors.agent import AgentEditor
from klineage.workload import KernelState, load_kernel, load_workload

SCRIPT = Path(__file__).parent / "stand_in_agent.py"


def _agent(mode: str, time_limit_s: float = 60.0) -> AgentEditor:
    return AgentEditor(AgentConfig(command=[sys.executable, str(SCRIPT), mode],
                                   time_limit_s=time_limit_s), Config())


@pytest.fixture
def expert():
    workload = load_workload(FIXTURES / "axpy")
    return workload, KernelState.from_spec(load_kernel(workload, "expert"))


def test_agent_edits_a_scratch_copy_calls_the_gate_and_its_result_is_a_proposal(expert):
    workload, state = expert
    before = (FIXTURES / "axpy" / "kernels" / "expert" / "kernel.c").read_text()
    answer = _agent("edit").simplify(state, EditContext(workload=workload))
    assert answer.failures == []
    [proposal] = answer.proposals
    assert proposal.feature == "unroll" and proposal.edit.params == {"factor": 4}
    assert "#pragma GCC unroll" not in proposal.state.source and proposal.state.flags == state.flags
    assert "gate said accepted" in proposal.rationale
    scratch = proposal.rationale.split("worked in ", 1)[1]
    assert "klineage-agent-" in scratch and not Path(scratch).exists(), "scratch must be temporary"
    assert (FIXTURES / "axpy" / "kernels" / "expert" / "kernel.c").read_text() == before
    assert answer.usage.calls == 1


def test_without_result_json_the_feature_is_what_the_detectors_saw_go(expert):
    workload, state = expert
    answer = _agent("bare").simplify(state, EditContext(workload=workload))
    assert [p.feature for p in answer.proposals] == ["unroll"]
    # asked to insert something else, the same edit is the wrong feature: a failure
    answer = _agent("bare").rederive(state, "restrict", EditContext(workload=workload), {})
    assert answer.proposals == [] and answer.failures


def test_agent_past_its_time_limit_is_killed_with_its_children(expert, tmp_path, monkeypatch):
    workload, state = expert
    pids = tmp_path / "pids"
    monkeypatch.setenv("STAND_IN_PIDS", str(pids))
    answer = _agent("hang", time_limit_s=2).simplify(state, EditContext(workload=workload))
    assert answer.proposals == [] and "time limit (2s)" in answer.failures[0]
    for pid in pids.read_text().split():
        status = Path(f"/proc/{pid}/status")
        assert not status.exists() or "State:\tZ" in status.read_text(), f"process {pid} survived"


def test_agent_that_fails_is_a_recorded_failure(expert):
    workload, state = expert
    answer = _agent("fail").simplify(state, EditContext(workload=workload))
    assert answer.proposals == [] and "exited with status 3: cannot do it" in answer.failures[0]
