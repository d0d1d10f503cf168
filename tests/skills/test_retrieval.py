"""Retrieval rules with hand-built cards: scope, requires, provides, conflicts, admission, rank."""

from __future__ import annotations

from types import SimpleNamespace

from conftest import FIXTURES
from klineage.skills import Scope, Trial
from klineage.skills.retrieval import retrieve
from klineage.workload import KernelState, load_kernel, load_workload
from optimize.cards import card

AXPY = load_workload(FIXTURES / "axpy")
PLAIN = KernelState.from_spec(load_kernel(AXPY, "plain"))
WITH_SIMD = PLAIN.with_source(PLAIN.source.replace("    for (int64_t i",
                                                   "#pragma omp simd\n    for (int64_t i"))
MEMORY_BOUND = SimpleNamespace(platform="cpu-x86_64-avx512", sol=SimpleNamespace(limiter="memory"))


def _by_feature(choices):
    return {c.card.feature: c for c in choices}


def test_scope_language_platform_and_op_with_wildcards():
    cuda = card("restrict", scope=Scope(ops=["*"], languages=["cuda"], platforms=["*"]))
    gpu = card("omp_simd", scope=Scope(ops=["*"], languages=["c"], platforms=["nvidia-*"]))
    choices = _by_feature(retrieve([cuda, gpu], PLAIN, AXPY, MEMORY_BOUND))
    assert not choices["restrict"].chosen and "language c" in choices["restrict"].reason
    assert not choices["omp_simd"].chosen and "platform cpu-x86_64-avx512" in choices["omp_simd"].reason
    # without a profile the platform is unknown, so only the language is checked
    assert _by_feature(retrieve([gpu], PLAIN, AXPY))["omp_simd"].chosen


def test_op_outside_scope_needs_a_held_out_success():
    narrow = dict(scope=Scope(ops=["softmax"], languages=["c"], platforms=["cpu-*"]))
    unproven = card("omp_simd", verification=[Trial(target="sgemm/naive", held_out=True,
                                                    verdict="slower")], **narrow)
    proven = card("restrict", category="tuning", **narrow)  # builder logs a passed held-out trial
    choices = _by_feature(retrieve([unproven, proven], PLAIN, AXPY, MEMORY_BOUND))
    assert not choices["omp_simd"].chosen and "op axpy is outside scope" in choices["omp_simd"].reason
    assert choices["restrict"].chosen and "transferred" in choices["restrict"].reason
    named = card("unroll", scope=Scope(ops=["ax*"], languages=["c"], platforms=["cpu-*"]))
    assert retrieve([named], PLAIN, AXPY, MEMORY_BOUND)[0].chosen


def test_requires_provides_conflicts_and_presence():
    needs = card("restrict", requires=["omp_parallel"])
    clash = card("unroll", conflicts=["omp_simd"])
    present = card("omp_simd")
    extra = card("omp_parallel", provides=["omp_parallel", "omp_simd"])
    choices = _by_feature(retrieve([needs, clash, present, extra], WITH_SIMD, AXPY, MEMORY_BOUND))
    assert choices["restrict"].reason == "requires omp_parallel"
    assert choices["unroll"].reason == "conflicts with omp_simd"
    assert choices["omp_simd"].reason == "omp_simd is already present"
    assert choices["omp_parallel"].reason == "provides omp_simd, already present"
    assert not any(c.chosen for c in choices.values())
    assert _by_feature(retrieve([needs, clash], PLAIN, AXPY))["unroll"].chosen


def test_unadmitted_cards_only_on_request():
    hypothesis = card("omp_simd", admitted=False)
    assert not retrieve([hypothesis], PLAIN, AXPY)[0].chosen
    assert "not admitted" in retrieve([hypothesis], PLAIN, AXPY)[0].reason
    assert retrieve([hypothesis], PLAIN, AXPY, include_unadmitted=True)[0].chosen


def test_rank_by_bottleneck_effect_similarity_and_risk():
    tuning = card("restrict", category="tuning", ratio=2.0)
    parallel = card("omp_parallel", category="parallelism", ratio=2.0)
    choices = retrieve([tuning, parallel], PLAIN, AXPY, MEMORY_BOUND)
    assert [c.card.feature for c in choices] == ["omp_parallel", "restrict"]
    assert choices[0].bottleneck == 1.0 and choices[1].bottleneck == 0.25
    assert choices[0].rank == 1 and choices[0].reason.startswith("#1: bottleneck 1.00 (memory")
    strong = card("restrict", category="tuning", ratio=8.0)
    assert retrieve([strong, parallel], PLAIN, AXPY, MEMORY_BOUND)[0].card.feature == "restrict"
    named = card("unroll", category="tuning", ratio=2.0,
                 scope=Scope(ops=["axpy"], languages=["c"], platforms=["cpu-*"]))
    first = retrieve([tuning, named], PLAIN, AXPY, MEMORY_BOUND)[0]
    assert first.card.feature == "unroll" and first.similarity > 0.5
    failed = [Trial(target=f"w{i}/naive", held_out=True, verdict="incorrect") for i in range(3)]
    risky = parallel.model_copy(update={"verification": [*parallel.verification, *failed]})
    ranked = retrieve([risky, tuning.model_copy(update={"category": "parallelism"})], PLAIN, AXPY,
                      MEMORY_BOUND)
    assert ranked[0].card.feature == "restrict" and ranked[1].risk == 0.375


def test_explain_json_lists_chosen_then_skipped():
    rows = [c.to_json() for c in retrieve([card("omp_simd"), card("unroll", admitted=False)],
                                          PLAIN, AXPY, MEMORY_BOUND)]
    assert [r["chosen"] for r in rows] == [True, False]
    assert {"id", "name", "feature", "reason", "rank", "score", "bottleneck", "effect",
            "similarity", "risk"} <= set(rows[0])
