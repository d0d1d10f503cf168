"""The card model: JSON round trip, schema docs, stable ids, merge and trial semantics."""

from __future__ import annotations

import math
import typing

import pytest
from pydantic import ValidationError

from klineage.skills import Effect, Evidence, Precondition, Scope, SkillCard, Trial, skill_id
from klineage.skills.card import SkillCategory


def test_json_round_trip_is_exact(make_vector_card):
    card = make_vector_card()
    again = SkillCard.model_validate_json(card.model_dump_json())
    assert again == card


def test_every_schema_field_is_described():
    schema = SkillCard.model_json_schema()
    models = [schema, *schema["$defs"].values()]
    for model in models:
        assert model.get("description"), model.get("title")
        for name, field in model["properties"].items():
            assert field.get("description"), f"{model['title']}.{name}"


def test_categories_match_the_source_catalogue():
    source_model = pytest.importorskip("klineage.source.model")
    assert set(typing.get_args(SkillCategory)) == set(source_model.CATEGORIES)


def test_ratio_is_filled_in_when_omitted():
    effect = Effect(workload="w", shape={"N": 8}, platform="cpu", before_ms=3.0, after_ms=1.5)
    assert effect.ratio == pytest.approx(2.0)
    given = Effect(workload="w", shape={}, platform="cpu", before_ms=3.0, after_ms=1.5, ratio=1.9)
    assert given.ratio == 1.9


def test_skill_id_is_stable_and_ignores_case_and_spacing():
    first = skill_id("vectorized_access", "the innermost load loop", "cuda")
    # Pinned: an id must not change across runs, machines or releases of this module.
    assert first == "03addda925c7"
    assert first == skill_id("Vectorized_Access", "  the innermost\nload   loop ", "CUDA")
    assert first != skill_id("vectorized_access", "the innermost load loop", "c")
    assert first != skill_id("restrict", "the innermost load loop", "cuda")


def test_ids_must_be_hashes(make_vector_card):
    with pytest.raises(ValidationError):
        make_vector_card(id="../escape")


def test_best_effect_and_geomean(make_vector_card):
    fast = Effect(workload="softmax", shape={"N": 64}, platform="p", before_ms=8.0, after_ms=1.0)
    card = make_vector_card(effect=[*make_vector_card().effect, fast])
    assert card.best_effect() == fast
    assert card.geomean_ratio() == pytest.approx(math.sqrt(2.0 * 8.0))
    empty = make_vector_card(effect=[])
    assert empty.best_effect() is None and empty.geomean_ratio() is None


def test_merge_unions_and_deduplicates(make_vector_card):
    base = make_vector_card()
    other_effect = Effect(workload="layernorm", shape={"M": 8, "N": 4096}, platform="nvidia-sm80-cuda13.0",
                          before_ms=0.3, after_ms=0.2)
    reworded = Precondition(category="alignment", condition="N is a MULTIPLE of 4", reason="other words",
                            source="check")
    new_shape = Precondition(category="shape", condition="rows are contiguous", reason="stride 1",
                             source="workload")
    other = make_vector_card(
        effect=[*base.effect, other_effect],
        preconditions=[reworded, new_shape],
        evidence=Evidence(transitions=["t-0003", "t-0042"], gate_reports=["g-cccc"]),
        scope=Scope(ops=["layernorm"], languages=["cuda"], platforms=["nvidia-sm80*"]),
        requires=["restrict"],
        created_at="2026-11-30T00:00:00+00:00",
    )
    merged = base.merge(other)
    assert merged.effect == [*base.effect, other_effect]
    assert [p.condition for p in merged.preconditions] == ["N is a multiple of 4", "rows are contiguous"]
    assert merged.evidence.transitions == ["t-0003", "t-0042"]
    assert merged.evidence.gate_reports == ["g-aaaa", "g-bbbb", "g-cccc"]
    assert merged.scope.ops == ["rmsnorm", "layernorm"]
    assert merged.scope.platforms == ["nvidia-sm90*", "nvidia-sm80*"]
    assert merged.requires == ["restrict"]
    assert merged.risk == base.risk
    assert merged.created_at == base.created_at
    assert merged.version == base.version + 1


def test_merge_is_idempotent(make_vector_card):
    card = make_vector_card()
    assert card.merge(card) is card
    assert card.merge(make_vector_card()).version == card.version


def test_merge_widens_to_wildcards_and_admits_either(make_vector_card):
    base = make_vector_card()
    admitted = make_vector_card(admitted=True, name="Proven wording",
                                scope=Scope(ops=["*"], languages=["cuda"], platforms=[]))
    merged = base.merge(admitted)
    assert merged.admitted
    assert merged.scope.ops == ["*"]
    assert merged.name == "Proven wording"  # only the admitted side was proven: its text wins
    assert admitted.merge(base).name == "Proven wording"


def test_merge_refuses_a_different_skill(make_vector_card, make_omp_card):
    with pytest.raises(ValueError, match="different skills"):
        make_vector_card().merge(make_omp_card())


def test_tunables_merge_keeps_the_worded_cards_values(make_vector_card):
    base = make_vector_card()
    other = make_vector_card(carrier=base.carrier.model_copy(
        update={"tunables": {"vector_width": 8, "unroll": 2}}))
    assert base.merge(other).carrier.tunables == {"vector_width": 4, "unroll": 2}


def test_failed_trial_becomes_risk_evidence(make_vector_card):
    card = make_vector_card()
    failed = Trial(target="layernorm/naive", held_out=True, verdict="incorrect",
                   reason="mismatch at N=1001", at="2026-11-29T12:00:00+00:00")
    after = card.with_trial(failed)
    assert after.verification == [failed]
    assert after.risk[-1].what == "incorrect on layernorm/naive: mismatch at N=1001"
    assert "layernorm/naive" in after.risk[-1].evidence
    passed = Trial(target="softmax/naive", held_out=True, verdict="accepted", effect_observed=1.7)
    assert passed.passed and passed.at
    assert after.with_trial(passed).risk == after.risk
    assert after.with_trial(passed).version == card.version + 2


def test_scope_covers_globs_and_empty_lists():
    scope = Scope(ops=["*"], languages=["c", "cpp"], platforms=["cpu-x86_64-*"])
    assert scope.covers(op="anything", language="CPP", platform="cpu-x86_64-avx512")
    assert scope.covers()
    assert not scope.covers(language="cuda")
    assert not scope.covers(platform="cpu-aarch64-neon")
    assert not Scope().covers(op="rmsnorm")


def test_the_same_failure_seen_again_is_one_risk(make_vector_card):
    # Three optimize runs that met the same slower trial wrote three identical risk entries.
    card = make_vector_card()
    for run, ratio in enumerate(("1.012", "1.031", "1.008")):
        card = card.with_trial(Trial(target="rmsnorm/naive", held_out=True, verdict="slower",
                                     reason=f"paired time ratio {ratio} (95% CI 0.99–1.04): same",
                                     at=f"2026-12-01T1{run}:00:00+00:00"))
    assert len(card.verification) == 3
    assert [r.what for r in card.risk].count(card.risk[-1].what) == 1
    slower = [r for r in card.risk if r.what.startswith("slower on rmsnorm/naive")]
    assert len(slower) == 1
    # Another size is another failure.
    card = card.with_trial(Trial(target="rmsnorm/naive", verdict="incorrect", held_out=True,
                                 reason="mismatch at N=1001"))
    card = card.with_trial(Trial(target="rmsnorm/naive", verdict="incorrect", held_out=True,
                                 reason="mismatch at N=1000"))
    assert len([r for r in card.risk if r.what.startswith("incorrect")]) == 2
