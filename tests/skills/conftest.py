"""Small skill cards built in place: a float4 CUDA load skill and a CPU OpenMP skill."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from klineage.skills import Carrier, Effect, Evidence, Precondition, Risk, Scope, SkillCard, skill_id


def vector_card(**changes: Any) -> SkillCard:
    """A CUDA skill: float4 loads in a row reduction, measured once, not admitted."""
    fields: dict[str, Any] = {
        "id": skill_id("vectorized_access", "the innermost load loop of a row reduction", "cuda"),
        "name": "Vectorize row loads with float4",
        "intent": "Load four floats per instruction in the row loop to cut memory transactions.",
        "category": "memory",
        "feature": "vectorized_access",
        "anchor": "the innermost load loop of a row-wise reduction",
        "carrier": Carrier(
            summary="Reinterpret the row pointer as float4 and step by four.",
            before="for (int j = t; j < N; j += B) acc += x[j] * x[j];",
            after="const float4* x4 = (const float4*)x;\nfor (int j = t; j < N / 4; j += B) { ... }",
            diff="-acc += x[j] * x[j];\n+float4 v = x4[j];",
            tunables={"vector_width": 4},
        ),
        "preconditions": [Precondition(
            category="alignment", condition="N is a multiple of 4",
            reason="a float4 load past the row end reads the next row", check="N % 4 == 0",
            source="failure:t-0003",
        )],
        "effect": [Effect(workload="rmsnorm", shape={"M": 4096, "N": 4096},
                          platform="nvidia-sm90-cuda13.0", before_ms=0.2, after_ms=0.1,
                          sol_before=0.4, sol_after=0.8, ci_low=1.9, ci_high=2.1)],
        "evidence": Evidence(transitions=["t-0003"], gate_reports=["g-aaaa", "g-bbbb"]),
        "risk": [Risk(what="misaligned float4 load crashed at N=1000", evidence="t-0003")],
        "scope": Scope(ops=["rmsnorm"], languages=["cuda"], platforms=["nvidia-sm90*"]),
        "provides": ["vectorized_access"],
        "created_at": "2026-11-29T10:00:00+00:00",
    }
    return SkillCard(**{**fields, **changes})


def omp_card(**changes: Any) -> SkillCard:
    """A CPU skill: parallelize the outer row loop, admitted, wildcard op scope."""
    fields: dict[str, Any] = {
        "id": skill_id("omp_parallel", "the outer loop over rows", "c"),
        "name": "Parallelize the row loop with OpenMP",
        "intent": "Split independent rows across cores.",
        "category": "parallelism",
        "feature": "omp_parallel",
        "anchor": "the outer loop over independent rows",
        "carrier": Carrier(summary="Add `#pragma omp parallel for` above the row loop.",
                           before="for (i = 0; i < M; i++)",
                           after="#pragma omp parallel for\nfor (i = 0; i < M; i++)"),
        "preconditions": [Precondition(
            category="pipeline", condition="the build enables OpenMP (-fopenmp)",
            reason="the pragma is ignored without it", check="flag:-fopenmp", source="check",
        )],
        "effect": [Effect(workload="softmax", shape={"M": 2048, "N": 1024}, platform="cpu-x86_64-avx512",
                          before_ms=3.0, after_ms=1.6)],
        "scope": Scope(ops=["*"], languages=["c", "cpp"], platforms=["cpu-*"]),
        "provides": ["omp_parallel"],
        "admitted": True,
    }
    return SkillCard(**{**fields, **changes})


@pytest.fixture
def make_vector_card() -> Callable[..., SkillCard]:
    return vector_card


@pytest.fixture
def make_omp_card() -> Callable[..., SkillCard]:
    return omp_card
