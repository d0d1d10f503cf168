"""Each method's candidate order with the rules brain (no gate runs: order only)."""

from __future__ import annotations

from conftest import FIXTURES
from klineage.editors import get_editor
from klineage.optimize._context import ExpertSource
from klineage.optimize._table import table_for
from klineage.optimize.memory import Observation, memory_text
from klineage.optimize.methods import MethodInputs, make_method, without_when
from klineage.skills import Finding
from klineage.workload import KernelState, load_kernel, load_workload
from optimize.cards import card


class _Counted:
    """The rules brain, with the name of every call it is asked to make."""

    def __init__(self, brain, calls):
        self.brain, self.calls, self.name = brain, calls, brain.name

    def __getattr__(self, method):
        def call(*args):
            self.calls.append(method)
            return getattr(self.brain, method)(*args)
        return call


def _order(name, inputs, seed=0, calls=None):
    axpy = load_workload(FIXTURES / "axpy")
    state = KernelState.from_spec(load_kernel(axpy, "plain"))
    method = make_method(name, _Counted(get_editor("rules"), calls if calls is not None else []),
                         axpy, inputs, seed)
    tried, order = set(), []
    while (candidate := method.next(state, None, "", tried)) is not None:
        _gated(tried, candidate)
        order.append(candidate.feature)
    return order, method


def _gated(tried, candidate, best=None):
    """What the loop records of a candidate it gated on the best kernel ``best``: its key, its
    kernel's and the feature it tried there."""
    tried.add(candidate.key)
    if candidate.proposal is not None:
        tried.add(f"state:{candidate.proposal.state.fingerprint}")
    if best is not None and candidate.feature:
        tried.add(f"on:{candidate.feature}@{best.fingerprint}")


ALL = {"omp_parallel", "omp_simd", "restrict", "unroll"}


def test_none_is_a_seeded_random_order():
    calls = []
    first, _ = _order("none", MethodInputs(), seed=3, calls=calls)
    assert set(first) == ALL and len(first) == len(ALL)
    assert calls == ["improve"], "one brain call per state"
    assert _order("none", MethodInputs(), seed=3)[0] == first
    orders = {tuple(_order("none", MethodInputs(), seed=s)[0]) for s in range(8)}
    assert len(orders) > 1


def _seen(workload, feature, verdict="accepted", speedup=None, diff=""):
    return Observation(workload=workload, feature=feature, verdict=verdict, speedup=speedup,
                       reason="paired time ratio" if speedup else "compile: error: x", diff=diff)


def test_memory_ranks_by_what_its_own_runs_saw_succeed():
    seen = [_seen("w1", "unroll", speedup=1.5), _seen("w2", "unroll", speedup=1.2),
            _seen("w3", "unroll", speedup=1.1), _seen("w1", "restrict", speedup=1.3),
            _seen("w2", "restrict", speedup=1.1), _seen("w1", "omp_simd", speedup=1.4),
            _seen("w2", "omp_parallel", "incorrect")]
    for seed in range(3):
        order, method = _order("memory", MethodInputs(memory=seen), seed=seed)
        assert order == ["unroll", "restrict", "omp_simd", "omp_parallel"]
    text = method.knowledge(None, None)
    assert "unroll made it 1.50x faster" in text and "omp_parallel failed: incorrect" in text
    assert "precondition" not in text.lower() and "requires" not in text


def test_memory_text_shows_the_diffs_of_its_best_pairs_and_nothing_when_empty():
    text = memory_text([_seen("w1", "omp_simd", speedup=2.0, diff="-a\n+b"),
                        _seen("w1", "unroll", "slower", speedup=0.9)])
    assert "```diff\n-a\n+b\n```" in text and "unroll" not in text  # slower: neither pair nor failure
    assert memory_text([]) == "No past optimizations are remembered."


def test_rules_table_puts_allowed_techniques_first_and_never_forbidden_ones():
    # memory-bound, nothing present: parallelise, then unit stride, then vectorise; no unroll
    allowed, forbidden, reasons = table_for("memory", set(), "c")
    assert allowed[:2] == ["omp_parallel", "loop_interchange"] and "unroll" in forbidden
    assert len(reasons) >= 3 and not any("GPU" in why for why in reasons), "C: no GPU rows"
    assert "vectorized_access" in table_for("memory", set(), "cuda")[0]
    # once parallel, that row is off: the kernel's features change the table's answer
    assert "omp_parallel" not in table_for("memory", {"omp_parallel"}, "c")[0]
    # unprofiled: every row applies, so unroll is forbidden by the memory rows
    order, method = _order("rules-table", MethodInputs())
    assert order[:3] == ["omp_parallel", "restrict", "omp_simd"] and "unroll" not in order
    text = method.knowledge(KernelState.from_spec(load_kernel(load_workload(FIXTURES / "axpy"),
                                                              "plain")), None)
    assert "decision table" in text and "forbidden: " in text


def test_nowhen_sees_the_same_cards_without_their_when():
    stripped = without_when(card("omp_simd", ratio=4.0, admitted=False))
    assert not (stripped.preconditions or stripped.risk or stripped.effect or stripped.verification)
    assert stripped.intent and stripped.carrier.summary and stripped.rewrite is not None
    cards = [card("restrict", category="tuning", ratio=1.2), card("omp_simd", ratio=4.0),
             card("unroll", admitted=False)]
    findings = [_found("omp_parallel", "slower", 0.5)]
    found = _candidates("klineage-nowhen", MethodInputs(cards=cards, findings=findings))
    # no admission, effect or risk left to rank or filter by: every card is tried, then the
    # passes no card made (no findings either, so no evidence against any), then the unroll
    # card's values swept, as klineage does (that is how, not when)
    kinds = [c.key.split(":")[0] for c in found]
    assert sorted(c.feature for c in found if c.key.startswith("skill:")) == [
        "omp_simd", "restrict", "unroll"]
    assert kinds == ["skill"] * 3 + ["feature", "tune", "tune"] and found[3].feature == "omp_parallel"


def test_expert_source_ranks_by_features_the_experts_show():
    both = "int f(float* restrict x) {\n#pragma omp simd\nfor (int i = 0; i < 4; i++) x[i] = 0;\nreturn 0;}\n"
    one = "int g(float* restrict y) { return 0; }\n"
    experts = [ExpertSource("a", "c", both), ExpertSource("b", "c", one)]
    for seed in range(3):
        order, method = _order("expert-source", MethodInputs(experts=experts), seed=seed)
        assert order[:2] == ["restrict", "omp_simd"] and set(order[2:]) == {"omp_parallel", "unroll"}
    assert "expert kernel for a related problem (a)" in method.knowledge(None, None)


def test_klineage_follows_retrieval_and_skips_unadmitted_cards():
    cards = [card("restrict", category="tuning", ratio=1.2), card("omp_simd", ratio=4.0),
             card("unroll", admitted=False)]
    calls = []
    order, _ = _order("klineage", MethodInputs(cards=cards), calls=calls)
    assert order[:2] == ["omp_simd", "restrict"] and set(order[2:]) == {"unroll", "omp_parallel"}
    assert calls == ["materialize", "materialize", "improve"], "then the passes, one call per state"


def _found(feature, outcome, speedup, workload="w1"):
    return Finding(feature=feature, workload=workload, op="op", language="c", platform="cpu",
                   outcome=outcome, speedup=speedup)


def test_klineage_orders_the_passes_after_its_cards_by_what_the_mines_measured():
    findings = [_found("unroll", "slower", 0.7), _found("restrict", "no_effect", 1.0),
                _found("restrict", "slower", 0.9, "w2"), _found("omp_simd", "faster", 1.3),
                _found("omp_simd", "no_effect", 1.01, "w2")]
    for seed in range(4):  # measured faster anywhere, never measured, no effect, slower
        order, _ = _order("klineage", MethodInputs(findings=findings), seed=seed)
        assert order == ["omp_simd", "omp_parallel", "restrict", "unroll"]
    # without findings the passes come in the decision table's order, as for rules-table, and
    # what the table forbids comes last instead of never
    for seed in range(3):
        ours = _order("klineage", MethodInputs(), seed)[0]
        table = _order("rules-table", MethodInputs(), seed)[0]
        assert ours[:len(table)] == table and set(ours[len(table):]) == {"unroll"}


def _candidates(name, inputs, seed=0):
    axpy = load_workload(FIXTURES / "axpy")
    state = KernelState.from_spec(load_kernel(axpy, "plain"))
    method = make_method(name, get_editor("rules"), axpy, inputs, seed)
    tried, found = set(), []
    while (candidate := method.next(state, None, "", tried)) is not None:
        _gated(tried, candidate)
        found.append(candidate)
    return found


def test_klineage_tries_a_card_with_its_experts_values_then_the_values_next_to_them():
    found = _candidates("klineage", MethodInputs(cards=[card("unroll", params={"factor": 4})]))
    unrolls = [(c.key.split(":")[0], c.proposal.state.source) for c in found if c.feature == "unroll"]
    assert [kind for kind, _ in unrolls] == ["skill", "tune", "tune"]
    assert ["#pragma GCC unroll 4" in unrolls[0][1], "#pragma GCC unroll 2" in unrolls[1][1],
            "#pragma GCC unroll 8" in unrolls[2][1]] == [True, True, True]
    assert all(c.skill is None for c in found if c.key.startswith("tune:")), (
        "a retuned kernel is not a trial of the card: its values are not the card's")


def test_klineage_retunes_a_kept_card_on_the_best_kernel_without_its_feature():
    axpy = load_workload(FIXTURES / "axpy")
    plain = KernelState.from_spec(load_kernel(axpy, "plain"))
    method = make_method("klineage", get_editor("rules"), axpy,
                         MethodInputs(cards=[card("unroll", params={"factor": 4})]), 0)
    first = method.next(plain, None, "", set())
    best = first.proposal.state  # as if the loop kept it
    tried = set()
    _gated(tried, first)
    while not (tuned := method.next(best, None, "", tried)).key.startswith("tune:"):
        _gated(tried, tuned)  # the passes no card made come first, on the same best kernel
    assert "#pragma GCC unroll 2" in tuned.proposal.state.source
    assert "#pragma GCC unroll 4" not in tuned.proposal.state.source, "one unroll, retuned"


def test_none_draws_each_passs_parameters_at_random_from_its_seed():
    def factor(seed):
        (unroll,) = [c for c in _candidates("none", MethodInputs(), seed) if c.feature == "unroll"]
        return unroll.proposal.edit.params["factor"]
    assert factor(5) == factor(5)
    assert {factor(s) for s in range(10)} == {2, 4, 8}


def test_klineage_tries_every_pass_with_no_evidence_against_it_before_retuning_a_card():
    # The demo's 4-run budget: the threads card, then its schedule retuned (1.16x slower), then
    # restrict; omp simd, which the mines measured faster, never came, and memory's kernel won.
    # On the H200 the 8-byte retuning of the vectorized card was slower on 3 of 3 workloads and
    # took the run restrict needed (rules-table got 1.6-4.3% more from it).
    findings = [_found("omp_simd", "faster", 1.3), _found("restrict", "no_effect", 1.0)]
    found = _candidates("klineage", MethodInputs(cards=[card("unroll", params={"factor": 4})],
                                                 findings=findings))
    kinds = [(c.key.split(":")[0], c.feature) for c in found]
    assert kinds == [("skill", "unroll"), ("feature", "omp_simd"), ("feature", "omp_parallel"),
                     ("tune", "unroll"), ("tune", "unroll"), ("feature", "restrict")], kinds


def test_a_finding_against_a_pass_counts_only_on_a_kernel_like_its_own():
    """restrict brought nothing inserted into a vectorized expert; on a kernel without those
    features that finding says nothing, and restrict comes with the untried passes."""
    richer = Finding(feature="restrict", workload="w1", op="op", language="c", platform="cpu",
                     outcome="no_effect", speedup=1.0, context=["omp_parallel", "omp_simd"])
    order, _ = _order("klineage", MethodInputs(findings=[richer]), seed=0)
    table, _ = _order("rules-table", MethodInputs(), seed=0)
    assert order[:len(table)] == table, "on the plain kernel: as if never measured"
    assert order.index("restrict") < order.index("unroll")


def test_a_pass_measured_faster_elsewhere_is_tried_again_on_a_new_best_kernel():
    """On sgemm `omp simd` was slower before packing and 4.5x faster after it (CPU suite bench,
    2026-12-02): a pass tried once in a run comes again, once, on each new best kernel, before
    the passes with no evidence, when the mines measured it faster elsewhere."""
    axpy = load_workload(FIXTURES / "axpy")
    plain = KernelState.from_spec(load_kernel(axpy, "plain"))
    findings = [_found("omp_simd", "faster", 1.3)]
    method = make_method("klineage", get_editor("rules"), axpy, MethodInputs(findings=findings), 0)
    tried = set()
    first = method.next(plain, None, "", tried)
    assert first.key == "feature:omp_simd"
    _gated(tried, first, plain)  # slower: not kept
    while (other := method.next(plain, None, "", tried)).feature != "restrict":
        assert other.feature != "omp_simd", "not again on the kernel it was measured on"
        _gated(tried, other, plain)  # slower: not kept (threads would leave omp simd no loop)
    _gated(tried, other, plain)  # restrict kept: a new best kernel
    best = other.proposal.state
    again = method.next(best, None, "", tried)
    assert again.key == f"again:omp_simd@{best.fingerprint}", again.key
    assert "omp simd" in again.proposal.state.source and again.skill is None
    _gated(tried, again, best)
    after = method.next(best, None, "", tried)
    assert after is None or after.feature != "omp_simd", "once per best kernel"


def test_a_card_tried_on_this_best_kernel_is_not_tried_again_as_its_pass():
    """On sgemm the omp simd card was slower on the threaded kernel; the plain pass on that same
    kernel (another kernel: the card carries its expert's values) was a gate run wasted."""
    axpy = load_workload(FIXTURES / "axpy")
    plain = KernelState.from_spec(load_kernel(axpy, "plain"))
    method = make_method("klineage", get_editor("rules"), axpy,
                         MethodInputs(cards=[card("unroll", params={"factor": 4})],
                                      findings=[_found("unroll", "faster", 1.3)]), 0)
    tried = set()
    first = method.next(plain, None, "", tried)
    assert first.key.startswith("skill:") and first.feature == "unroll"
    _gated(tried, first, plain)  # slower: not kept
    rest = []
    while (candidate := method.next(plain, None, "", tried)) is not None:
        _gated(tried, candidate, plain)
        rest.append(candidate.key)
    assert not any(key.startswith("again:") for key in rest), rest

