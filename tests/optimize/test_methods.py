"""Each method's candidate order with the rules brain (no gate runs: order only)."""

from __future__ import annotations

from conftest import FIXTURES
from klineage.editors import get_editor
from klineage.optimize._context import ExpertSource, MemoryPair, memory_pairs, memory_text
from klineage.optimize.methods import MethodInputs, make_method
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
        tried.add(candidate.key)
        order.append(candidate.feature)
    return order, method


ALL = {"omp_parallel", "omp_simd", "restrict", "unroll"}


def test_none_is_a_seeded_random_order():
    calls = []
    first, _ = _order("none", MethodInputs(), seed=3, calls=calls)
    assert set(first) == ALL and len(first) == len(ALL)
    assert calls == ["improve"], "one brain call per state"
    assert _order("none", MethodInputs(), seed=3)[0] == first
    orders = {tuple(_order("none", MethodInputs(), seed=s)[0]) for s in range(8)}
    assert len(orders) > 1


def test_memory_ranks_by_past_success_counts():
    pairs = [MemoryPair("w1", "unroll", 1.5, "x"), MemoryPair("w2", "unroll", 1.2, "x"),
             MemoryPair("w3", "unroll", 1.1, "x"), MemoryPair("w1", "restrict", 1.3, "x"),
             MemoryPair("w2", "restrict", 1.1, "x"), MemoryPair("w1", "omp_simd", 1.4, "x"),
             MemoryPair("w2", "omp_parallel", 0.5, "x")]
    for seed in range(3):
        order, method = _order("memory", MethodInputs(memory=pairs), seed=seed)
        assert order == ["unroll", "restrict", "omp_simd", "omp_parallel"]
    text = method.extra()["memory"]
    assert "unroll: faster in 3 of 3" in text and "omp_parallel: faster in 0 of 1" in text
    assert "precondition" not in text.lower() and "requires" not in text


def test_memory_pairs_come_from_cards_without_the_excluded_workload():
    cards = [card("omp_simd", workload="softmax"), card("restrict", workload="axpy")]
    pairs = memory_pairs(cards, exclude_workload="axpy")
    # effects and held-out trials (the builder logs one on softmax) both count; axpy's do not
    assert {(p.workload, p.feature) for p in pairs} == {("softmax", "omp_simd"), ("softmax", "restrict")}
    assert {p.source.split()[0] for p in pairs} == {"card", "trial"}
    assert memory_text([]) == "No past optimizations are remembered."


def test_expert_source_ranks_by_features_the_experts_show():
    both = "int f(float* restrict x) {\n#pragma omp simd\nfor (int i = 0; i < 4; i++) x[i] = 0;\nreturn 0;}\n"
    one = "int g(float* restrict y) { return 0; }\n"
    experts = [ExpertSource("a", "c", both), ExpertSource("b", "c", one)]
    for seed in range(3):
        order, method = _order("expert-source", MethodInputs(experts=experts), seed=seed)
        assert order[:2] == ["restrict", "omp_simd"] and set(order[2:]) == {"omp_parallel", "unroll"}
    assert "expert kernel of a" in method.extra()["expert_source"]


def test_klineage_follows_retrieval_and_skips_unadmitted_cards():
    cards = [card("restrict", category="tuning", ratio=1.2), card("omp_simd", ratio=4.0),
             card("unroll", admitted=False)]
    calls = []
    order, _ = _order("klineage", MethodInputs(cards=cards), calls=calls)
    assert order == ["omp_simd", "restrict"]
    assert calls == ["materialize", "materialize"]
