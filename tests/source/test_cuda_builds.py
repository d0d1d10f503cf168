"""Every removal edit of every CUDA expert still compiles with nvcc (sm_90a; no GPU needed), and
the compiled-output evidence of the features it removes disappears."""

from __future__ import annotations

import re
import shutil
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import REPO
from klineage.backends.cuda import CudaBackend
from klineage.source import compiled_evidence, insertion_edits, present, removal_edits
from klineage.source.compiled import CUDA_SIGNATURES
from klineage.workload import load_kernel, load_workload
from source._kernels import CUDA_WORKLOADS, source_of, workload, write_kernel

SIGNED = {*CUDA_SIGNATURES, "launch_bounds"}
HELDOUT = REPO / "examples" / "heldout" / "cuda"
pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(autouse=True)
def _hopper(monkeypatch):
    monkeypatch.setenv("KLINEAGE_CUDA_ARCH", "sm_90a")


def test_every_cuda_expert_removal_compiles_and_loses_its_evidence(tmp_path):
    # The held-out experts too: their shuffles are __shfl_down_sync butterflies, one of them
    # over part of a warp's lanes.
    experts = [(name, workload("cuda", name), source_of("cuda", name, "expert")[0])
               for name in CUDA_WORKLOADS]
    for folder in sorted(HELDOUT.glob("*/workload.toml")):
        loaded = load_workload(folder.parent, quick=True)
        experts.append((f"heldout-{folder.parent.name}", loaded,
                        load_kernel(loaded, "expert").source.read_text()))
    jobs = []
    for name, loaded, text in experts:
        for edit in removal_edits(text, "cuda"):
            folder = tmp_path / name / edit.feature
            jobs.append((name, edit, write_kernel(folder, loaded, edit.new_source, "cuda", ())))
    assert len(jobs) >= 40
    shuffles = sorted(name for name, edit, _ in jobs if edit.feature == "warp_shuffle_reduction")
    # dot_f64acc came in a batch written after the pass, by someone who had not read it
    assert len(shuffles) == 7 and "heldout-dot_f64acc" in shuffles, shuffles

    def build(job):
        removed = {job[1].feature, *job[1].params.get("also_removes", ())}
        # disassembling costs about a second: only where a signature exists
        return (*_built_with_evidence(job[2], wanted=bool(removed & SIGNED)), removed)

    for (name, edit, _), (built, evidence, removed) in zip(jobs, _two_at_a_time(build, jobs), strict=True):
        assert built.ok, f"{name} / {edit.feature}:\n{built.log[-2000:]}\n{edit.diff}"
        assert not any(evidence.get(f, False) for f in removed), f"{name}: {removed} in the binary"


def _built_with_evidence(kernel, wanted: bool = True):
    """(build result, compiled evidence or {}) of one kernel: disassembled in the same pool job,
    so the two cores disassemble while they build."""
    built = CudaBackend().build(kernel)
    return built, compiled_evidence(built.artifact, "cuda") if built.ok and wanted else {}


def _two_at_a_time(function, items) -> list:
    """nvcc and cuobjdump are single-threaded: two jobs at a time on the two cores."""
    with ThreadPoolExecutor(2) as pool:
        return list(pool.map(function, items))


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


def _vectorized_states():
    """(label, source) for every CUDA workload whose naive kernel, or whose expert with its fast path
    removed by the walk, takes the vectorized_access insertion."""
    states = []
    for name in CUDA_WORKLOADS:
        states.append((f"{name}/naive", source_of("cuda", name, "naive")[0]))
        text = source_of("cuda", name, "expert")[0]
        while "vectorized_access" in present(text, "cuda"):
            edits = removal_edits(text, "cuda")
            if not edits:
                break
            text = edits[0].new_source
        else:
            states.append((f"{name}/expert-without-vectors", text))
    for folder in sorted(HELDOUT.glob("*/workload.toml")):  # other styles: flat, 2-D grid, grid-stride
        states.append((f"heldout:{folder.parent.name}/naive",
                       load_kernel(load_workload(folder.parent), "naive").source.read_text()))
    return [(label, edit) for label, text in states
            for edit in insertion_edits(text, "cuda", "vectorized_access")]


def _workload_of(label: str):
    name = label.split("/")[0]
    return (load_workload(HELDOUT / name.removeprefix("heldout:"), quick=True)
            if name.startswith("heldout:") else workload("cuda", name))


def test_vectorized_access_insertion_compiles_to_128_bit_accesses_in_registers(tmp_path):
    jobs = _vectorized_states()
    labels = {label for label, _ in jobs}
    assert {"add_rmsnorm/naive", "softmax/naive", "row_sum/naive", "layernorm/naive",
            "silu_and_mul/naive", "silu_and_mul/expert-without-vectors",
            "add_rmsnorm/expert-without-vectors", "heldout:scale_flat/naive",
            "heldout:rmsnorm_2dgrid/naive"} <= labels
    kernels = [write_kernel(tmp_path / label.replace("/", "-").replace(":", "-"), _workload_of(label),
                            edit.new_source, "cuda", ()) for label, edit in jobs]
    for (label, edit), (built, evidence) in zip(jobs, _two_at_a_time(_built_with_evidence, kernels),
                                                 strict=True):
        assert built.ok, f"{label}:\n{built.log[-2000:]}\n{edit.diff}"
        assert evidence["vectorized_access"], label
        for kernel, facts in built.resources["kernels"].items():
            # the lane arrays must live in registers: a stack frame would turn every access local
            assert facts.get("stack_bytes", 0) == 0, f"{label}: {kernel} {facts}"


def test_every_cuda_style_builds_and_imports_only_what_the_gate_allows():
    # nvcc gives each non-inline __device__ helper a host body of ::exit(1): the row-per-block
    # and row-per-warp styles import exit, and the static check refused them all on the H200.
    from klineage.gate.static import forbidden_symbols

    styles = REPO / "tests" / "source" / "styles" / "cuda"
    specs = [load_kernel(workload("cuda", p.parent.parent.name), p.parent)
             for p in sorted(styles.glob("*/*/kernel.toml"))]
    backend = CudaBackend()
    builds = _two_at_a_time(backend.build, specs)
    for spec, built in zip(specs, builds, strict=True):
        assert built.ok, f"{spec.source}:\n{built.log[-2000:]}"
        assert forbidden_symbols(backend.imported_symbols(built.artifact), (),
                                 backend.denied_symbols, backend.allowed_symbols) == [], spec.source


def test_grid_stride_and_shuffle_rewrites_of_naive_kernels_and_styles_compile(tmp_path):
    # Both grid-stride directions: the insertion on every flat kernel (naive examples, held-out,
    # flat styles), the removal on every removable grid-stride loop (the styles, the held-out naive
    # kernel); and the shuffle removal on the row-per-warp styles (the experts': above).
    styles = REPO / "tests" / "source" / "styles" / "cuda"
    texts = [(f"{name}/naive", workload("cuda", name), source_of("cuda", name, "naive")[0])
             for name in CUDA_WORKLOADS]
    for folder in sorted(HELDOUT.glob("*/workload.toml")):
        loaded = load_workload(folder.parent, quick=True)
        naive = load_kernel(loaded, "naive").source.read_text()
        texts.append((f"heldout:{folder.parent.name}", loaded, naive))
    texts += [(f"style:{p.parent.parent.name}/{p.parent.name}", workload("cuda", p.parent.parent.name),
               p.read_text()) for p in sorted(styles.glob("*/*/kernel.cu"))]
    jobs = []
    for label, loaded, text in texts:
        edits = insertion_edits(text, "cuda", "grid_stride_loop")
        edits += [e for e in removal_edits(text, "cuda")
                  if e.feature in ("grid_stride_loop", "warp_shuffle_reduction")]
        for edit in edits:
            folder = tmp_path / re.sub(r"[/:]", "-", f"{label}-{edit.feature}-{edit.direction}")
            jobs.append((label, edit, write_kernel(folder, loaded, edit.new_source, "cuda", ())))
    assert sum(e.direction == "insert" for _, e, _ in jobs) >= 12
    assert sum(e.feature == "grid_stride_loop" and e.direction == "remove" for _, e, _ in jobs) >= 6
    assert sum(e.feature == "warp_shuffle_reduction" for _, e, _ in jobs) >= 4
    builds = _two_at_a_time(lambda job: _built_with_evidence(
        job[2], wanted=job[1].feature == "warp_shuffle_reduction"), jobs)
    for (label, edit, _), (built, evidence) in zip(jobs, builds, strict=True):
        assert built.ok, f"{label} {edit.direction}:\n{built.log[-2000:]}\n{edit.diff}"
        # the butterfly and the broadcast both went
        assert not evidence.get("warp_shuffle_reduction", False), label
