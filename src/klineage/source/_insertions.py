"""Insertion passes: the mechanical forward moves the rules brain can make.

  restrict             restrict (C) / __restrict__ (C++, CUDA) on unqualified pointer parameters of
                       helper functions and kernels, and on kl_launch's pointer locals (the ABI's
                       input and output buffers never alias).
  omp_parallel         '#pragma omp parallel for schedule(static)' on the outermost loop of the
                       deepest loop nest, when its counter is declared in the loop and it assigns
                       no scalar declared outside it (+ -fopenmp); a loop that shares only what its
                       bare block declares (a malloc'd scratch row) gets that block as the parallel
                       region ('omp parallel' + 'omp for', an atomic write on a constant flag store).
  omp_simd             '#pragma omp simd' on innermost loops with no break/return, no scalar written
                       from outside except 's += ...' sums (reduction(+:s)) and max/min reductions
                       ('m = v > m ? v : m', 'm = fmaxf(m, v)', 'if (v > m) m = v;'), and every
                       written array read only at the same subscript (+ -fopenmp-simd unless
                       -fopenmp is set).
  unroll               '#pragma GCC unroll N' (params: factor, default 4) on innermost loops.
  unroll_pragma        '#pragma unroll' or '#pragma unroll N' on innermost device loops.
  launch_bounds        __launch_bounds__(B) on kernels whose launch sites all use one block size B.
  read_only_cache      p[i] -> __ldg(&p[i]) for reads of const __restrict__ kernel parameters.
  fast_math_intrinsics expf -> __expf (and logf/sinf/cosf), 1.0f / sqrtf(x) -> rsqrtf(x) in device code.
  smem_padding_or_swizzle  [A][B] -> [A][B + 1] on 2-D 4-byte __shared__ tiles.
  vectorized_access    a guarded <kernel>_vec copy whose unit-stride loops move 16-byte chunks
                       (_insert_vector.py: what it proves, and what it leaves alone).
  loop_interchange     the two loops of a perfect C/C++ nest swapped, so the inner one walks
                       memory at unit stride, where a dependence check proves it changes no result
                       (_insert_interchange.py: what it proves).
  cache_blocking       the two loops of a perfect C/C++ nest tiled by '#define KL_TILE N' (params:
                       tile, default 64) where the inner loop strides memory and the interchange's
                       dependence check proves the new order changes no result; an 'omp parallel
                       for' on the outer loop moves to the outer block loop (_insert_blocking.py).
  packing              a read-only input that a C/C++ nest's inner loop reads with a stride (and an
                       outer loop re-reads) copied once into a malloc'd buffer in the inner loop's
                       order, the nest reading the buffer; the nest as it was runs where the
                       allocation fails (_insert_packing.py: what it proves; no tunable).
  grid_stride_loop     a flat one-element-per-thread kernel's bounds check becomes a loop striding
                       by the grid's thread count, and its launches cap the grid at max_blocks
                       (params: max_blocks, default 2048; _insert_stride.py: what it refuses).
  warp_shuffle_reduction  the shared-memory warp exchange its removal writes becomes the
                       __shfl_xor_sync / __shfl_down_sync / __shfl_sync again (_shuffle.py).
Only an LLM brain can add: simd_intrinsics, packing into micro-panels (BLIS's pack_a / pack_b),
streaming_store, prefetch, shared_memory_tiling, other warp reductions, cp_async_pipeline, tma,
tensor_core_mma, register_blocking and swizzles: each
needs new code whose shape depends on the algorithm, not a local rewrite.
"""

from __future__ import annotations

from klineage.source._insert_blocking import insert_cache_blocking
from klineage.source._insert_interchange import insert_loop_interchange
from klineage.source._insert_loops import insert_omp_parallel, insert_omp_simd, insert_unroll
from klineage.source._insert_packing import insert_packing
from klineage.source._insert_qualifiers import (
    Refused,
    insert_fast_math,
    insert_launch_bounds,
    insert_read_only_cache,
    insert_restrict,
    insert_smem_padding,
)
from klineage.source._insert_stride import insert_grid_stride_loop
from klineage.source._insert_vector import insert_vectorized_access
from klineage.source._shuffle import insert_warp_shuffle
from klineage.source.model import Edit
from klineage.source.parse import parse

INSERTERS = {
    "restrict": insert_restrict,
    "omp_parallel": insert_omp_parallel,
    "omp_simd": insert_omp_simd,
    "unroll": insert_unroll,
    "unroll_pragma": insert_unroll,
    "launch_bounds": insert_launch_bounds,
    "read_only_cache": insert_read_only_cache,
    "fast_math_intrinsics": insert_fast_math,
    "smem_padding_or_swizzle": insert_smem_padding,
    "vectorized_access": insert_vectorized_access,
    "loop_interchange": insert_loop_interchange,
    "cache_blocking": insert_cache_blocking,
    "packing": insert_packing,
    "grid_stride_loop": insert_grid_stride_loop,
    "warp_shuffle_reduction": insert_warp_shuffle,
}


def insertion(text: str, language: str, feature: str, params: dict | None = None) -> Edit | Refused:
    """The mechanical insertion of ``feature`` as one Edit, or why it made none (no site
    qualifies, or no rule exists). ``params`` may carry tunables (factor) and the kernel's
    current ``flags``."""
    inserter = INSERTERS.get(feature)
    if inserter is None:
        return Refused(f"no insertion pass for {feature}: only an LLM brain can add it")
    params = dict(params or {})
    parsed = parse(text, language)
    result = inserter(parsed, params)
    if isinstance(result, Refused):
        return result
    if result.text == text:
        return Refused("the rewrite changed nothing")
    used = {k: v for k, v in {**params, **result.params}.items() if k != "flags"}
    return Edit(feature=feature, direction="insert", pass_name=f"insert_{feature}", old_source=text,
                new_source=result.text, sites=tuple(result.sites), params=used,
                flags_added=result.flags_added)


def insertion_edits(text: str, language: str, feature: str, params: dict | None = None) -> list[Edit]:
    """``insertion`` as a list: the one Edit, or none."""
    result = insertion(text, language, feature, params)
    return [result] if isinstance(result, Edit) else []
