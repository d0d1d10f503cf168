"""CUDA builds on a machine without a GPU: compile, resource report, SASS, static checks."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import FIXTURES, REPO
from klineage import settings
from klineage.backends.cuda import CudaBackend, parse_ptxas_report, sass
from klineage.gate.static import forbidden_in_source, forbidden_symbols
from klineage.workload import load_kernel, load_workload

pytestmark = pytest.mark.skipif(shutil.which(settings.nvcc()) is None and
                                not Path(settings.nvcc()).exists(), reason="nvcc not installed")

CUDA_EXAMPLES = sorted(p for p in (REPO / "examples" / "workloads" / "cuda").glob("*")
                       if (p / "workload.toml").is_file())
STAGED = sorted(p for p in (REPO / "examples" / "paper").glob("*") if (p / "workload.toml").is_file())


@pytest.fixture(autouse=True)
def _hopper_target(monkeypatch):
    monkeypatch.setenv("KLINEAGE_CUDA_ARCH", "sm_90a")


def test_fixture_builds_with_resource_report():
    workload = load_workload(FIXTURES / "axpy_cuda")
    result = CudaBackend().build(load_kernel(workload, "vectorized"))
    assert result.ok, result.log
    kernels = result.resources["kernels"]
    assert any("axpy4" in name for name in kernels)
    assert all("registers" in k for k in kernels.values())
    assert "-gencode=arch=compute_90a,code=sm_90a" in result.command


def test_sass_shows_the_vector_loads():
    if settings.cuobjdump() is None:
        pytest.skip("cuobjdump not installed")
    workload = load_workload(FIXTURES / "axpy_cuda")
    built = CudaBackend().build(load_kernel(workload, "vectorized"))
    text = sass(built.artifact)
    assert "LDG.E.128" in text or "LDG.E.ENL2" in text or "LDG.E.128.CONSTANT" in text


def test_stream_creation_is_denied_in_source_and_binary():
    workload = load_workload(FIXTURES / "axpy_cuda")
    backend = CudaBackend()
    kernel = load_kernel(workload, FIXTURES.parent / "gate" / "cuda_cheats" / "own_stream")
    assert any("cudaStreamCreateWithFlags" in p
               for p in forbidden_in_source(kernel.source, (), backend.denied_symbols))
    built = backend.build(kernel)
    assert built.ok, built.log
    found = forbidden_symbols(backend.imported_symbols(built.artifact), (), backend.denied_symbols)
    assert any("cudaStreamCreateWithFlags" in p for p in found)


def test_ptxas_report_parsing():
    log = ("ptxas info    : Compiling entry function '_Z3fooPf' for 'sm_90a'\n"
           "ptxas info    : Function properties for _Z3fooPf\n"
           "    16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\n"
           "ptxas info    : Used 40 registers, used 1 barriers, 2048 bytes smem, 380 bytes cmem[0]\n")
    report = parse_ptxas_report(log)
    assert report["kernels"]["_Z3fooPf"] == {"registers": 40, "stack_bytes": 16,
                                             "spill_store_bytes": 8, "spill_load_bytes": 4,
                                             "shared_bytes": 2048}
    assert report["total_spill_bytes"] == 12


@pytest.mark.parametrize("folder", CUDA_EXAMPLES + STAGED, ids=lambda p: p.name)
def test_cuda_examples_compile_clean(folder):
    """Every example's naive and expert (a staged paper workload: every kernel it has so far)."""
    workload = load_workload(folder)
    backend = CudaBackend()
    for variant in ("naive", "expert") if folder in CUDA_EXAMPLES else workload.kernel_variants():
        kernel = load_kernel(workload, variant)
        assert forbidden_in_source(kernel.source, kernel.allow_symbols, backend.denied_symbols) == []
        built = backend.build(kernel)
        assert built.ok, f"{folder.name}/{variant}:\n{built.log[-3000:]}"
        assert forbidden_symbols(backend.imported_symbols(built.artifact), kernel.allow_symbols,
                                 backend.denied_symbols, backend.allowed_symbols) == []
