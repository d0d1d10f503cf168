"""Every removal edit of every CUDA expert still compiles with nvcc (sm_90a; no GPU needed), and
the compiled-output evidence of the features it removes disappears."""

from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor

import pytest

from klineage.backends.cuda import CudaBackend
from klineage.source import compiled_evidence, removal_edits
from klineage.source.compiled import CUDA_SIGNATURES
from source._kernels import CUDA_WORKLOADS, source_of, workload, write_kernel

SIGNED = {*CUDA_SIGNATURES, "launch_bounds"}
pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(autouse=True)
def _hopper(monkeypatch):
    monkeypatch.setenv("KLINEAGE_CUDA_ARCH", "sm_90a")


def test_every_cuda_expert_removal_compiles_and_loses_its_evidence(tmp_path):
    jobs = []
    for name in CUDA_WORKLOADS:
        text, _ = source_of("cuda", name, "expert")
        for edit in removal_edits(text, "cuda"):
            folder = tmp_path / name / edit.feature
            jobs.append((name, edit, write_kernel(folder, workload("cuda", name), edit.new_source,
                                                  "cuda", ())))
    assert len(jobs) >= 30
    with ThreadPoolExecutor(2) as pool:  # nvcc is single-threaded; two builds at a time
        builds = list(pool.map(lambda job: CudaBackend().build(job[2]), jobs))
    for (name, edit, _), built in zip(jobs, builds, strict=True):
        assert built.ok, f"{name} / {edit.feature}:\n{built.log[-2000:]}\n{edit.diff}"
        removed = {edit.feature, *edit.params.get("also_removes", ())}
        if removed & SIGNED:  # disassembling costs seconds: only where a signature exists
            evidence = compiled_evidence(built.artifact, "cuda")
            assert not any(evidence.get(f, False) for f in removed), f"{name}: {removed} in the binary"


def test_cuda_expert_evidence_matches_its_readme():
    expected = {
        "gemm_bf16": {"tensor_core_mma", "tma", "cp_async_pipeline", "launch_bounds"},
        "row_sum": {"vectorized_access", "warp_shuffle_reduction", "launch_bounds"},
        "silu_and_mul": {"vectorized_access", "launch_bounds"},
    }
    for name, features in expected.items():
        built = CudaBackend().build(source_of("cuda", name, "expert")[1])
        evidence = compiled_evidence(built.artifact, "cuda")
        assert {f for f, shown in evidence.items() if shown} == features, name
        naive = CudaBackend().build(source_of("cuda", name, "naive")[1])
        assert not any(compiled_evidence(naive.artifact, "cuda").values()), name
