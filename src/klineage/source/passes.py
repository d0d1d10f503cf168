"""Rewrite passes: remove one feature (the backward walk's moves) or insert one (the rules brain's
forward moves), each as a whole-file Edit with its sites and a readable diff.

Removal passes (deterministic; every site of the feature, nothing else):
  omp_parallel        drop threading pragmas (parallel / for / atomic / ...); 'parallel for simd'
                      keeps its simd part. -fopenmp goes when no OpenMP pragma is left and no
                      omp_* call sits outside an ``#ifdef _OPENMP``.
  omp_simd            drop '#pragma omp simd' lines (and the simd word of combined constructs).
  simd_intrinsics     every ISA-guarded ``#if defined(__AVX512F__) ... #else <general> #endif``
                      becomes its #else branch (nothing if it has none). Streaming stores, prefetches
                      and manual unrolling inside the blocks go with them (Edit.params['also_removes']).
  restrict            drop restrict / __restrict__ qualifiers.
  unroll, unroll_pragma  drop '#pragma unroll [N]' / '#pragma GCC unroll N' (manual unrolling stays).
  streaming_store     _mm*_stream_* -> _mm*_storeu_* of the same width; drop _mm_sfence().
  prefetch            drop _mm_prefetch / __builtin_prefetch statements (and a comment naming them).
  read_only_cache     __ldg(&a[i]) -> a[i], __ldg(p) -> *(p).
  launch_bounds       drop __launch_bounds__(...) and the setmaxnreg lines of the same kernels.
  fast_math_intrinsics __expf -> expf, __fdividef(a, b) -> (a) / (b), rsqrtf(x) -> 1.0f / sqrtf(x), ...
  smem_padding_or_swizzle  padded shared rows [N + 1] -> [N] (swizzles are entangled: not removed).
  cache_blocking      a tiled nest (two block loops stepping by a #define'd or const tile, two
                      element loops bounded by min(block + tile, bound) as a ternary or MIN/min)
                      becomes the plain nest; the tile's definition goes when nothing else uses
                      it (_insert_blocking.py). Other blocked nests (block loops that compute
                      extents and call a helper, as the transpose expert's) are reported only.
  packing             the packing insertion's form (its fallback branch is the nest as it was) and
                      hand-written ones: a malloc'd / new[] / std::vector buffer filled by a copy
                      nest 'P[r * C + c] = SRC' of a read-only array, only read afterwards by
                      counters over the copy's ranges, freed in the same block: each read becomes
                      SRC at its counters; buffer, check, copy and free go (_packing_form.py).
                      Packing routines that zero-pad micro-panels (pack_a / pack_b) are reported only.
  vectorized_access, tensor_core_mma, tma, cp_async_pipeline
                      keep only the general branch of a launch-time fast path: the guarded ifs and
                      ternaries become their else side, the guard variable, the fast kernels and the
                      helpers only they used are deleted. The edit carries the fast path's headline
                      feature (features.FAST_PATH_FEATURES); the others it removes are listed in
                      params['also_removes'].
  grid_stride_loop    'for (i = <global index>; i < n; i += gridDim.x * blockDim.x) BODY' becomes
                      'i = <global index>; if (i < n) BODY' and every launch of the kernel gets a
                      grid of ceil(n / block) blocks, where n is clearly the launch's element count
                      (_insert_stride.py: the loops it keeps, e.g. a block-stride loop over rows).
  warp_shuffle_reduction  each full-warp __shfl_xor_sync / __shfl_down_sync / __shfl_sync becomes the
                      same exchange through a per-thread __shared__ slot between two __syncwarp(),
                      where the call is proved to be reached by whole warps (_shuffle.py).
Not removable by a rule (an LLM brain must rewrite code): loop_interchange (it has an insertion,
_insert_interchange.py, but no detector), cache_blocking other than the tiled nest above, packing
other than the forms above, shared_memory_tiling, register_blocking, manual unrolling, unguarded
intrinsics, fast-path features without a general kernel, grid-stride loops outside the shape
above, __shfl_up_sync and __reduce_*_sync.
"""

from __future__ import annotations

from typing import Any

from klineage.source._insert_qualifiers import Refused
from klineage.source._insertions import insertion, insertion_edits
from klineage.source._removals import REMOVERS
from klineage.source.features import detect_parsed
from klineage.source.model import Edit, FeatureHit
from klineage.source.parse import CONDITIONALS, Parsed, ancestors, calls, parse, pragma_text, pragmas
from klineage.source.tunables import mined

__all__ = ["DEPENDS_ON", "REMOVAL_ORDER", "Refused", "insertion", "insertion_edits", "removal_edits",
           "removal_order"]

REMOVAL_ORDER = (
    # tuning and instruction-level: local, nothing else builds on them
    "unroll", "unroll_pragma", "launch_bounds", "fast_math_intrinsics", "streaming_store", "prefetch",
    "restrict", "read_only_cache",
    # compute and layout: how the inner loop computes, on top of the memory structure
    "simd_intrinsics", "omp_simd", "vectorized_access", "register_blocking", "tensor_core_mma",
    "warp_shuffle_reduction", "smem_padding_or_swizzle",
    # memory and pipeline: the data movement the compute relies on
    "tma", "cp_async_pipeline", "shared_memory_tiling", "packing", "cache_blocking", "loop_interchange",
    # parallelism: the outermost decomposition
    "omp_parallel", "grid_stride_loop",
)
"""The backward walk removes dependents before prerequisites: a tuning knob or an instruction
choice is removed while the structure it tunes still exists, then the compute mapping (SIMD,
tensor cores, vector width) before the data movement it feeds on (tiles, pipelines, packing),
and the parallel decomposition last, so every intermediate kernel stays a sensible program."""

DEPENDS_ON: dict[str, tuple[str, ...]] = {
    "tensor_core_mma": ("shared_memory_tiling",),
    "cp_async_pipeline": ("shared_memory_tiling",),
    "tma": ("shared_memory_tiling",),
    "smem_padding_or_swizzle": ("shared_memory_tiling",),
    "packing": ("cache_blocking",),
}
"""feature -> the features it needs. A prerequisite is never removed while a dependent is present."""

_PASS_NAMES = {
    "omp_parallel": "drop_omp_threading_pragmas", "omp_simd": "drop_omp_simd_pragmas",
    "simd_intrinsics": "keep_isa_general_branch", "restrict": "drop_restrict_qualifiers",
    "unroll": "drop_unroll_pragmas", "unroll_pragma": "drop_unroll_pragmas",
    "streaming_store": "stream_to_regular_stores", "prefetch": "drop_prefetches",
    "read_only_cache": "ldg_to_plain_loads", "launch_bounds": "drop_launch_bounds",
    "fast_math_intrinsics": "fast_math_to_ieee", "smem_padding_or_swizzle": "drop_smem_padding",
    "cache_blocking": "unblock_loop_nest", "packing": "unpack_operand",
    "grid_stride_loop": "grid_stride_to_bounds_check", "warp_shuffle_reduction": "shuffle_to_shared_exchange",
}


def removal_order(features) -> list[str]:
    """``features`` in walk order: REMOVAL_ORDER rank, and never a prerequisite (DEPENDS_ON) before
    one of its dependents."""
    rank = {name: i for i, name in enumerate(REMOVAL_ORDER)}
    pending = sorted(set(features), key=lambda f: (rank.get(f, len(rank)), f))
    ordered: list[str] = []
    while pending:
        ready = next((f for f in pending if not _dependents(f, pending)), pending[0])
        ordered.append(ready)
        pending.remove(ready)
    return ordered


def _dependents(feature: str, present) -> list[str]:
    """The features of ``present`` that need ``feature``."""
    return [f for f in present if feature in DEPENDS_ON.get(f, ())]


def removal_edits(text: str, language: str, flags: tuple[str, ...] = ()) -> list[Edit]:
    """One Edit per present feature that a rule can remove, in walk order; features still needed
    by a present dependent are not proposed."""
    parsed = parse(text, language)
    hits = detect_parsed(parsed)
    present_now = {h.feature for h in hits}
    edits = []
    for feature in removal_order(present_now):
        removable = [h for h in hits if h.feature == feature and h.removable]
        if feature not in REMOVERS or not removable or _dependents(feature, present_now):
            continue
        edit = _removal_edit(parsed, feature, removable, present_now, flags)
        if edit is not None:
            edits.append(edit)
    return edits


def _removal_edit(parsed: Parsed, feature: str, hits: list[FeatureHit], present_now: set[str],
                  flags: tuple[str, ...]) -> Edit | None:
    new_text = REMOVERS[feature](parsed, hits)
    if new_text is None or new_text == parsed.text:
        return None
    new_parsed = parse(new_text, parsed.language)
    after = {h.feature for h in detect_parsed(new_parsed)}
    also = sorted(present_now - after - {feature})
    pass_name = _PASS_NAMES.get(feature, "keep_general_branch")
    return Edit(feature=feature, direction="remove", pass_name=pass_name, old_source=parsed.text,
                new_source=new_text, sites=tuple(h.site for h in hits),
                params={**_tunables(feature, hits), **({"also_removes": also} if also else {})},
                flags_removed=_openmp_flag_removed(new_parsed, flags))


def _tunables(feature: str, hits: list[FeatureHit]) -> dict[str, Any]:
    """Values that worked, for the skill carrier and the re-derivation (source/tunables.py)."""
    return mined(feature, [h.site.text for h in hits])


def _openmp_flag_removed(parsed: Parsed, flags: tuple[str, ...]) -> tuple[str, ...]:
    """('-fopenmp',) once no OpenMP pragma is left and no omp_* call would lose its library."""
    if "-fopenmp" not in flags or parsed.language == "cuda":
        return ()
    if any(pragma_text(p).split()[:1] == ["omp"] for p in pragmas(parsed.root)):
        return ()
    for call in calls(parsed.root, r"omp_\w+"):
        guarded = any(a.type in CONDITIONALS and b"_OPENMP" in (a.child_by_field_name("condition")
                      or a.child_by_field_name("name") or a).text for a in ancestors(call))
        if not guarded:
            return ()
    return ("-fopenmp",)

