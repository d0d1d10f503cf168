"""Re-derivation's speed rule: a re-derived kernel is timed against the faster state unless it is
that state, rebuilt exactly."""

from __future__ import annotations

from klineage.editors import Proposal
from klineage.lineage.rederive import _measured
from klineage.runs import Run, RunMeta
from klineage.workload import KernelState, load_kernel


def _gate_that_logs(tmp_path, axpy, null_gate):
    gate = Run.create(tmp_path, RunMeta(kind="test", name="rederive")).gate(axpy, null_gate)
    compared = []
    timed = gate.compare

    def compare(baseline, candidate):
        compared.append((baseline.fingerprint, candidate.fingerprint))
        return timed(baseline, candidate)

    gate.compare = compare
    return gate, compared


def test_the_faster_state_rebuilt_exactly_is_reproduced_without_timing_it_against_itself(
        tmp_path, axpy, null_gate):
    # On the H200 the warp_shuffle_reduction insertion rebuilt the add_rmsnorm expert byte for
    # byte, and a 0.5 s comparison of that kernel with itself called it 0.9% slower: no card.
    gate, compared = _gate_that_logs(tmp_path, axpy, null_gate)
    simpler = KernelState.from_spec(load_kernel(axpy, "plain"))
    faster = KernelState.from_spec(load_kernel(axpy, "expert"))
    again = Proposal(state=faster, feature="omp_parallel", direction="insert", rationale="test")
    result = _measured(gate, simpler, faster, again)
    assert result.reproduced and result.ratio_vs_faster == 1.0, result.note
    assert "rebuilt exactly" in result.note
    assert compared == [(simpler.fingerprint, faster.fingerprint)], "timed only against the simpler"
    assert result.speedup_over_simpler is not None


def test_another_kernel_is_timed_against_the_faster_state(tmp_path, axpy, null_gate):
    gate, compared = _gate_that_logs(tmp_path, axpy, null_gate)
    simpler = KernelState.from_spec(load_kernel(axpy, "plain"))
    faster = KernelState.from_spec(load_kernel(axpy, "expert"))
    slow = KernelState.from_spec(load_kernel(axpy, "slow"))
    result = _measured(gate, simpler, faster, Proposal(state=slow, feature="omp_parallel",
                                                       direction="insert", rationale="test"))
    assert (faster.fingerprint, slow.fingerprint) in compared
    assert not result.reproduced and "slower than the faster state" in result.note
