"""The style corpus (tests/source/styles/README.md): every example's naive kernel in other common
styles. Each insertion pass applies to each style where it is sound and says precisely why not
where it is not; on the CPU, every kernel with all its applicable passes passes the gate (the
CUDA ones are gated on a GPU: tests/gpu)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from klineage.gate import Verdict, run_gate
from klineage.source import CATALOGUE, Refused, insertion, present
from klineage.workload import load_kernel
from source._kernels import apply_flags, workload

STYLES = Path(__file__).parent / "styles"
KERNELS = sorted(str(p.parent.relative_to(STYLES)) for p in STYLES.glob("*/*/*/kernel.toml"))
# packing after omp_parallel: the copy is threaded when the nest is; cache_blocking after omp_parallel
# and before omp_simd: it moves a thread pragma on the outer loop to the outer block loop, and
# refuses a nest whose inner loop carries a pragma already
CPU_PASSES = ("restrict", "omp_parallel", "packing", "cache_blocking", "omp_simd", "unroll",
              "loop_interchange")
CUDA_PASSES = ("restrict", "vectorized_access", "launch_bounds", "unroll_pragma",
               "fast_math_intrinsics", "read_only_cache", "smem_padding_or_swizzle", "grid_stride_loop",
               "warp_shuffle_reduction")

_NOT_CANONICAL = "steps more than the counter (not OpenMP's canonical form"
_NO_GAIN = "nothing to gain: the inner counter"
_NO_NEST = "no perfect nest"
_NO_PERFECT_NEST = (
    "cpu/rmsnorm/rows_c", "cpu/rmsnorm/pointer_c", "cpu/rmsnorm/cpp", "cpu/softmax/rows_c",
    "cpu/softmax/pointer_c", "cpu/softmax/cpp", "cpu/sgemm/rows_c", "cpu/sgemm/pointer_c",
    "cpu/stencil2d/pointer_c", "cpu/transpose/pointer_c")
"""The CPU styles with no perfect two-loop nest: neither interchange nor blocking has a site."""
_NO_STRIDE = "nothing to gain: no access strides memory with the inner counter"
_UNIT = "nothing to pack: every read of {} in the nest walks memory at unit stride with {}"
_LOCALS = "x[r * W + c] names c and r, set inside the nest: its index is not affine in the nest's counters"
_NO_ARRAY = "nothing to gain that the pass can see: the body indexes no array"
REFUSED = {
    # C++ views hold their pointers in struct members: no parameter or ABI local to qualify
    ("cpu/sgemm/cpp", "restrict"): "no unqualified single-level pointer",
    ("cpu/transpose/cpp", "restrict"): "no unqualified single-level pointer",
    # pointer walks: a pointer bumped beside the counter, or a pointer written in the loop
    ("cpu/softmax/pointer_c", "omp_parallel"): "'r++, xr += N, yr += N' " + _NOT_CANONICAL,
    ("cpu/softmax/pointer_c", "omp_simd"): "'++p, ++q' " + _NOT_CANONICAL,
    ("cpu/stencil2d/pointer_c", "omp_parallel"): "it writes out, declared outside it",
    ("cpu/stencil2d/pointer_c", "omp_simd"): "'a++, wp += 3' " + _NOT_CANONICAL,
    ("cpu/sgemm/pointer_c", "omp_simd"): "'j++, c++' " + _NOT_CANONICAL,
    ("cpu/transpose/pointer_c", "omp_simd"): "written through a pointer",
    # interchange only where a nest strides memory in its inner loop and the swap is proved safe
    ("cpu/stencil2d/rows_c", "loop_interchange"): _NO_GAIN,
    ("cpu/stencil2d/cpp", "loop_interchange"): _NO_GAIN,
    ("cpu/transpose/rows_c", "loop_interchange"): _NO_GAIN,
    ("cpu/transpose/colmajor_c", "loop_interchange"): _NO_GAIN,
    ("cpu/transpose/cpp", "loop_interchange"): _NO_GAIN,
    ("cpu/sgemm/cpp", "loop_interchange"): _NO_GAIN,
    **{(k, "loop_interchange"): _NO_NEST for k in _NO_PERFECT_NEST},
    # blocking only where the inner loop strides memory (the column-order styles and the transpose)
    # and the interchange's dependence check proves the tiled order safe
    ("cpu/stencil2d/rows_c", "cache_blocking"): _NO_STRIDE,
    ("cpu/stencil2d/cpp", "cache_blocking"): _NO_STRIDE,
    ("cpu/sgemm/cpp", "cache_blocking"): _NO_ARRAY,
    ("cpu/transpose/cpp", "cache_blocking"): _NO_ARRAY,
    **{(k, "cache_blocking"): _NO_NEST for k in _NO_PERFECT_NEST},
    # packing only where an inner loop strides a read-only input that an outer loop re-reads: the
    # sgemm styles that walk B down a column (colmajor_c, cpp, pointer_c)
    ("cpu/rmsnorm/rows_c", "packing"): _UNIT.format("x and w", "j"),
    ("cpu/rmsnorm/pointer_c", "packing"): _UNIT.format("row and w", "the walk of p and the walk of g"),
    ("cpu/rmsnorm/cpp", "packing"): _UNIT.format("xr and w", "j"),
    ("cpu/softmax/rows_c", "packing"): _UNIT.format("x and y", "j"),
    ("cpu/softmax/pointer_c", "packing"): "p is written 4 times besides its start: not one walk",
    ("cpu/softmax/cpp", "packing"): _UNIT.format("x and y", "j"),
    ("cpu/sgemm/rows_c", "packing"): _UNIT.format("B", "j"),
    ("cpu/stencil2d/rows_c", "packing"): _LOCALS,
    ("cpu/stencil2d/colmajor_c", "packing"): _LOCALS,
    ("cpu/stencil2d/pointer_c", "packing"): "wp[0] reads through wp, which the nest moves: not followed",
    ("cpu/stencil2d/cpp", "packing"): _UNIT.format("w", "b"),  # x.at() pads with zeros: no plain read
    ("cpu/transpose/rows_c", "packing"): _UNIT.format("x", "j"),
    ("cpu/transpose/colmajor_c", "packing"): "nothing to gain: the nest reads each element of x once",
    ("cpu/transpose/pointer_c", "packing"): _UNIT.format("x", "the walk of src"),
    ("cpu/transpose/cpp", "packing"): _UNIT.format("x", "j"),
    # CUDA: no transcendental in a row sum, no loop in a flat elementwise kernel
    **{(f"cuda/row_sum/{s}", "fast_math_intrinsics"): "no expf/logf/sinf/cosf"
       for s in ("flat", "gridstride", "row_per_block", "row_per_warp")},
    ("cuda/silu_and_mul/flat", "unroll_pragma"): "no innermost for loop in device code",
    ("cuda/silu_and_mul/grid2d", "unroll_pragma"): "no innermost for loop in device code",
    # __ldg needs restrict first (applied after it in the test below), and no style pads a tile
    **{(k, "read_only_cache"): "no const __restrict__ pointer parameter (restrict comes first"
       for k in KERNELS if k.startswith("cuda/")},
    **{(k, "smem_padding_or_swizzle"): "no unpadded 2-D __shared__ array"
       for k in KERNELS if k.startswith("cuda/")},
    # grid-stride loops only on flat one-element-per-thread kernels: not on block or warp rows,
    # nor on a kernel striding already, nor on a 2-D grid
    **{(k, "grid_stride_loop"): "no local set to blockIdx.x * blockDim.x + threadIdx.x"
       for k in KERNELS if k.startswith("cuda/") and k.endswith(("/gridstride", "/row_per_warp"))},
    **{(k, "grid_stride_loop"): "it uses __shared__ memory, a barrier or warp intrinsics"
       for k in KERNELS if k.startswith("cuda/") and k.endswith("/row_per_block")},
    ("cuda/silu_and_mul/row_per_block", "grid_stride_loop"): "no local set to blockIdx.x",
    ("cuda/silu_and_mul/grid2d", "grid_stride_loop"): "its bounds check tests more than col",
    # shuffles come back only from the shared-memory warp exchange their removal writes
    **{(k, "warp_shuffle_reduction"): "no shared-memory warp exchange"
       for k in KERNELS if k.startswith("cuda/")},
}


def _kernel(label: str):
    kind, name, _ = label.split("/")
    spec = load_kernel(workload(kind, name), STYLES / label)
    return spec, spec.source.read_text()


def test_the_corpus_has_every_example_in_at_least_three_styles():
    for kind in ("cpu", "cuda"):
        for folder in (Path(__file__).parents[2] / "examples" / "workloads" / kind).iterdir():
            if (folder / "workload.toml").is_file() and folder.name != "gemm_bf16":
                styles = [k for k in KERNELS if k.startswith(f"{kind}/{folder.name}/")]
                assert len(styles) >= 3, f"{kind}/{folder.name}: {styles}"


@pytest.mark.parametrize("label", KERNELS)
def test_each_pass_applies_where_sound_and_says_why_not_where_not(label):
    spec, text = _kernel(label)
    for feature in CUDA_PASSES if spec.language == "cuda" else CPU_PASSES:
        result = insertion(text, spec.language, feature, {"flags": list(spec.flags)})
        expected = REFUSED.get((label, feature))
        if expected is None:
            assert not isinstance(result, Refused), f"{label}: {feature}: {result}"
            if feature == "loop_interchange":  # no detector sees a swap: it must not swap back
                assert isinstance(insertion(result.new_source, spec.language, feature), Refused)
            else:
                assert feature in present(result.new_source, spec.language), f"{label}: {feature}"
        else:
            assert isinstance(result, Refused), f"{label}: {feature} applied; expected: {expected}"
            assert expected in result.reason, f"{label}: {feature}: {result.reason}"


@pytest.mark.parametrize("label", [k for k in KERNELS if k.startswith("cuda/")])
def test_read_only_loads_follow_restrict_in_every_cuda_style(label):
    _, text = _kernel(label)
    qualified = insertion(text, "cuda", "restrict")
    loads = insertion(qualified.new_source, "cuda", "read_only_cache")
    assert not isinstance(loads, Refused), f"{label}: {loads}"
    assert "__ldg(&" in loads.new_source


def _all_passes(spec, text: str, passes) -> tuple[str, tuple[str, ...], list[str]]:
    flags, applied = spec.flags, []
    for feature in passes:
        result = insertion(text, spec.language, feature, {"flags": list(flags)})
        if not isinstance(result, Refused):
            text, flags = result.new_source, apply_flags(flags, result)
            applied.append(feature)
    return text, flags, applied


@pytest.mark.parametrize("label", [k for k in KERNELS if k.startswith("cpu/")])
def test_every_cpu_style_with_its_passes_passes_the_gate(label, quick, tmp_path):
    spec, text = _kernel(label)
    new, flags, applied = _all_passes(spec, text, CPU_PASSES)
    assert len(applied) >= 2, f"{label}: {applied}"
    folder = tmp_path / "inserted"
    folder.mkdir()
    (folder / spec.source.name).write_text(new)
    quoted = ", ".join(f'"{f}"' for f in flags)
    (folder / "kernel.toml").write_text(f'language = "{spec.language}"\nflags = [{quoted}]\n')
    kind, name, _ = label.split("/")
    report = run_gate(workload(kind, name), load_kernel(workload(kind, name), folder),
                      options=replace(quick, profile=False))
    assert report.verdict is Verdict.ACCEPTED, f"{label} with {applied}: {report.reason}"


def test_the_catalogue_lists_every_pass_the_corpus_tests_as_insertable():
    assert all(CATALOGUE[f].insertable for f in (*CPU_PASSES, *CUDA_PASSES))
