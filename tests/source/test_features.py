"""Detectors find what each expert's README lists, naive kernels show nothing, the catalogue is
consistent with the passes that exist."""

from __future__ import annotations

import pytest

from klineage.source import CATALOGUE, CATEGORIES, detect, present
from klineage.source._insertions import INSERTERS
from klineage.source._removals import REMOVERS
from source._kernels import CPU_WORKLOADS, CUDA_WORKLOADS, source_of

# The README tables of examples/workloads/*/*/README.md (catalogue names only).
README_FEATURES = {
    ("cpu", "rmsnorm"): {"omp_parallel", "simd_intrinsics", "unroll", "omp_simd", "restrict",
                         "streaming_store"},
    ("cpu", "sgemm"): {"cache_blocking", "packing", "simd_intrinsics", "omp_parallel", "unroll",
                       "restrict", "omp_simd"},
    ("cpu", "softmax"): {"omp_parallel", "simd_intrinsics", "unroll", "omp_simd", "restrict",
                         "prefetch", "streaming_store"},
    ("cpu", "stencil2d"): {"omp_parallel", "simd_intrinsics", "unroll", "omp_simd", "restrict"},
    ("cpu", "transpose"): {"cache_blocking", "simd_intrinsics", "omp_parallel", "restrict", "unroll",
                           "loop_interchange"},
    ("cuda", "add_rmsnorm"): {"vectorized_access", "restrict", "read_only_cache", "launch_bounds",
                              "unroll_pragma", "warp_shuffle_reduction", "fast_math_intrinsics",
                              "register_blocking"},
    ("cuda", "gemm_bf16"): {"tensor_core_mma", "tma", "cp_async_pipeline", "smem_padding_or_swizzle",
                            "register_blocking", "grid_stride_loop", "launch_bounds", "restrict",
                            "unroll_pragma"},
    ("cuda", "layernorm"): {"vectorized_access", "restrict", "read_only_cache", "launch_bounds",
                            "unroll_pragma", "warp_shuffle_reduction", "fast_math_intrinsics",
                            "register_blocking"},
    ("cuda", "row_sum"): {"vectorized_access", "restrict", "read_only_cache", "launch_bounds",
                          "unroll_pragma", "warp_shuffle_reduction", "grid_stride_loop",
                          "register_blocking"},
    ("cuda", "silu_and_mul"): {"vectorized_access", "restrict", "read_only_cache", "launch_bounds",
                               "unroll_pragma", "grid_stride_loop", "fast_math_intrinsics"},
    ("cuda", "softmax"): {"vectorized_access", "restrict", "read_only_cache", "launch_bounds",
                          "unroll_pragma", "warp_shuffle_reduction", "fast_math_intrinsics",
                          "register_blocking"},
}
UNDETECTABLE = {"loop_interchange"}  # a relation between two loop orders, not visible in one source
EXTRA = {  # found beyond the README, and why that is right
    ("cuda", "gemm_bf16"): {"shared_memory_tiling"},  # the fallback's 32x32 __shared__ tiles (+ TMA ring)
}
EXPERTS = sorted(README_FEATURES)


@pytest.mark.parametrize("kind,name", EXPERTS, ids=lambda v: v)
def test_expert_features_match_readme(kind, name):
    text, spec = source_of(kind, name, "expert")
    expected = README_FEATURES[kind, name] - UNDETECTABLE
    assert present(text, spec.language) == expected | EXTRA.get((kind, name), set())


def test_every_bundled_expert_has_a_readme_row():
    assert {(k, n) for k, names in (("cpu", CPU_WORKLOADS), ("cuda", CUDA_WORKLOADS)) for n in names} \
        == set(EXPERTS)


@pytest.mark.parametrize("kind,name", EXPERTS, ids=lambda v: v)
def test_naive_kernels_show_no_feature(kind, name):
    text, spec = source_of(kind, name, "naive")
    assert present(text, spec.language) == set()


def test_sites_are_precise():
    text, _ = source_of("cpu", "rmsnorm", "expert")
    pragma = next(h for h in detect(text, "c") if h.feature == "omp_parallel")
    assert (pragma.site.start_line, pragma.site.end_line) == (105, 105)
    assert pragma.site.text.strip() == "#pragma omp parallel for schedule(static)"
    assert pragma.site.scope == "kl_launch"
    assert text.encode()[pragma.site.start_byte:pragma.site.end_byte].decode() == pragma.site.text


def test_manual_unrolling_is_reported_but_not_removable():
    text, _ = source_of("cpu", "rmsnorm", "expert")
    unrolled = [h for h in detect(text, "c") if h.feature == "unroll"]
    assert [h.site.start_line for h in unrolled] == [28, 41]
    assert not any(h.removable for h in unrolled)


def test_fast_path_hits_are_removable_only_for_the_headline_feature():
    text, _ = source_of("cuda", "gemm_bf16", "expert")
    hits = detect(text, "cuda")
    assert all(h.removable for h in hits if h.feature == "tensor_core_mma")
    assert not any(h.removable for h in hits if h.feature in ("tma", "cp_async_pipeline"))


def test_catalogue_is_consistent_with_the_passes():
    for name, info in CATALOGUE.items():
        assert info.name == name and info.category in CATEGORIES and info.description
        assert set(info.languages) <= {"c", "cpp", "cuda"}
        assert info.removable == (name in REMOVERS), name
        assert info.insertable == (name in INSERTERS), name
    required = {"omp_parallel", "omp_simd", "simd_intrinsics", "restrict", "cache_blocking",
                "loop_interchange", "packing", "unroll", "streaming_store", "prefetch",
                "vectorized_access", "read_only_cache", "launch_bounds", "unroll_pragma",
                "shared_memory_tiling", "warp_shuffle_reduction", "cp_async_pipeline", "tma",
                "tensor_core_mma", "fast_math_intrinsics", "grid_stride_loop", "register_blocking",
                "smem_padding_or_swizzle"}
    assert required <= set(CATALOGUE)
