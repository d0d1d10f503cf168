"""Findings: every measured re-derivation is kept, card or not, and the library merges them."""

from __future__ import annotations

import pytest

from conftest import FIXTURES
from klineage.errors import LibraryError
from klineage.lineage.model import Lineage, Rederivation, Transition
from klineage.skills import Finding, Library
from klineage.skills.findings import findings_of, rank_features
from klineage.workload import load_workload


def _step(feature: str, redo: Rederivation | None) -> Transition:
    return Transition(id=f"dot:{feature}", step=1, feature=feature, category="tuning",
                      faster_state="a", simpler_state="b", removal_diff="", rederivation=redo,
                      features_before=sorted({feature, "unroll"}))


def test_each_measured_step_is_a_finding_whatever_its_outcome():
    lineage = Lineage(workload="dot", op="dot", language="c", platform="cpu-x", expert="expert",
                      states=["a", "b"], transitions=[
                          _step("omp_parallel", Rederivation(reproduced=True, note="reproduced",
                                                             speedup_over_simpler=1.8)),
                          _step("restrict", Rederivation(reproduced=False, note="correct but slower",
                                                         speedup_over_simpler=1.004)),
                          _step("unroll", Rederivation(reproduced=False, note="correct but slower",
                                                       speedup_over_simpler=0.7)),
                          _step("omp_simd", Rederivation(
                              reproduced=False, note="re-derived kernel incorrect: mismatch")),
                          _step("prefetch", Rederivation(
                              reproduced=False, note="the rules brain has no insertion pass")),
                          _step("launch_bounds", None)])
    found = findings_of(lineage, load_workload(FIXTURES / "dot"))
    assert [(f.feature, f.outcome) for f in found] == [
        ("omp_parallel", "faster"), ("restrict", "no_effect"), ("unroll", "slower"),
        ("omp_simd", "failed")], "a step that measured nothing is no finding"
    assert {f.workload for f in found} == {"dot"} and found[0].speedup == 1.8
    assert found[0].context == ["unroll"] and found[2].context == [], (
        "the features of the kernel the feature was inserted into")


def _found(feature, workload, outcome, speedup):
    return Finding(feature=feature, workload=workload, op="op", language="c", platform="cpu",
                   outcome=outcome, speedup=speedup)


def test_the_best_outcome_of_a_feature_ranks_it():
    ranked = rank_features([_found("a", "w1", "slower", 0.8), _found("a", "w2", "faster", 1.4),
                            _found("b", "w1", "faster", 2.0), _found("c", "w1", "failed", None)])
    assert sorted(ranked, key=ranked.get) == ["b", "a", "c"]


def test_a_finding_against_a_feature_counts_only_where_its_context_is_present():
    nothing = Finding(feature="restrict", workload="w", op="op", language="cuda", platform="gpu",
                      outcome="no_effect", speedup=1.0, context=["vectorized_access"])
    gain = nothing.model_copy(update={"feature": "unroll", "outcome": "faster", "speedup": 1.3})
    assert rank_features([nothing, gain], present=set()) == {"unroll": (0, -1.3)}
    assert rank_features([nothing], present={"vectorized_access", "launch_bounds"})["restrict"][0] == 2
    assert rank_features([nothing])["restrict"][0] == 2, "no kernel given: every finding counts"


def test_the_library_keeps_the_latest_finding_of_each_feature_and_workload(tmp_path):
    library = Library.open(tmp_path / "lib", create=True)
    assert library.findings() == []
    library.add_findings([_found("a", "w1", "slower", 0.8), _found("b", "w1", "faster", 1.5)])
    library.add_findings([_found("a", "w1", "faster", 1.3), _found("a", "w2", "no_effect", 1.0)])
    assert {(f.feature, f.workload, f.outcome) for f in Library.open(tmp_path / "lib").findings()} == {
        ("a", "w1", "faster"), ("a", "w2", "no_effect"), ("b", "w1", "faster")}
    (tmp_path / "lib" / "findings.json").write_text('{"findings": [{"feature": 1}]}')
    with pytest.raises(LibraryError, match="damaged findings"):
        library.findings()
