"""Admission seeks a second held-out workload after the first reproduces a card, so the card
stays admitted when a bench leaves one of them out."""

from __future__ import annotations

from conftest import FIXTURES
from klineage.bench import without_workload
from klineage.editors import get_editor
from klineage.runs import Run, RunMeta
from klineage.skills.admission import HELD_OUT_PASSES, Context, admit
from klineage.skills.card import Rewrite
from klineage.workload import KernelState, load_kernel, load_workload
from skills.conftest import omp_card


def _contexts(tmp_path, null_gate, kernels):
    run = Run.create(tmp_path, RunMeta(kind="test", name="admission"))
    found = []
    for name, variant in kernels:
        workload = load_workload(FIXTURES / name)
        state = KernelState.from_spec(load_kernel(workload, variant))
        found.append(Context(workload=workload, state=state, label=f"{name}/{variant}",
                             gate=run.gate(workload, null_gate)))
    return found


def test_admission_goes_on_to_a_second_workload_and_survives_leaving_one_out(tmp_path, null_gate):
    contexts = _contexts(tmp_path, null_gate, [("axpy", "plain"), ("axpy", "slow"), ("dot", "naive"),
                                               ("scale", "naive"), ("axpy", "expert")])
    mechanical = omp_card(admitted=False, rewrite=Rewrite(pass_name="insert_omp_parallel",
                                                         feature="omp_parallel"))
    card = admit(mechanical, contexts, get_editor("rules"), max_trials=4)
    verdicts = [(t.target, t.verdict) for t in card.verification]
    # a second axpy kernel is no new context; dot's reduction loop takes no threads (the pass
    # says why); after two workloads the trials stop
    assert HELD_OUT_PASSES == 2 and verdicts == [
        ("axpy/plain", "accepted"), ("dot/naive", "no_proposal"), ("scale/naive", "accepted")]
    assert "it writes acc, declared outside it" in card.verification[1].reason
    assert card.admitted
    for left_out in ("axpy", "scale"):
        assert without_workload(card, left_out).admitted, f"still admitted without {left_out}"
