"""CPU compiled-output evidence: what the experts' objects show, and that naive objects show none."""

from __future__ import annotations

import pytest

from klineage.backends.cpu import CpuBackend
from klineage.source import compiled_evidence
from klineage.source.compiled import CPU_SIGNATURES
from source._kernels import source_of

SHOWN = {
    "rmsnorm": {"omp_parallel", "streaming_store"},
    "softmax": {"omp_parallel", "streaming_store", "prefetch"},
    "sgemm": {"omp_parallel"},
}


@pytest.mark.parametrize("name", sorted(SHOWN))
def test_cpu_expert_and_naive_evidence(name):
    for variant, expected in (("expert", SHOWN[name]), ("naive", set())):
        built = CpuBackend().build(source_of("cpu", name, variant)[1])
        evidence = compiled_evidence(built.artifact, "c")
        assert set(evidence) == {"omp_parallel", *CPU_SIGNATURES}
        assert {f for f, shown in evidence.items() if shown} == expected, variant
