"""The feature catalogue and the source detectors (DESIGN.md §5).

``detect`` parses once and runs every detector of the language; each hit names the exact span
(lines, bytes, text, enclosing function) and says whether the feature's removal pass handles it.

Detector notes (where a detector is a heuristic or absent, it says so here):
- ``loop_interchange`` has no detector: an interchange is a relation between two versions of a
  loop nest, not a property one source shows.
- ``packing`` is a buffer filled by a copy nest of a read-only array and read afterwards
  (_packing_form: klineage's form and hand-written ones, removable where every read maps back to
  an element of the array), or a helper called pack* with an element-copy loop (by name; reported
  only: its panels are read by offset elsewhere).
- ``cache_blocking`` is a loop stepping by a #define'd or const tile size that holds another loop,
  plus the tile's definition; removable only in the tiled-nest shape of ``_blocking_nest``.
- ``unroll`` (CPU) covers unroll pragmas and manual k-way unrolling (a loop stepping by S that
  touches i, i+S/k, ...); manual unrolling is reported but not removable.
- CUDA fast-path features (``vectorized_access``, ``tensor_core_mma``, ``tma``,
  ``cp_async_pipeline``) are removable only where a launch-time guard selects a fast kernel and
  a general kernel exists: the pass keeps the general branch (see ``_fast_path``).
"""

from __future__ import annotations

from dataclasses import replace

from klineage.source._detect_cpu import CPU_DETECTORS
from klineage.source._detect_cuda import CUDA_DETECTORS
from klineage.source._fast_path import find_fast_path
from klineage.source.model import FeatureHit, FeatureInfo
from klineage.source.parse import Parsed, parse

__all__ = ["CATALOGUE", "FAST_PATH_FEATURES", "detect", "detect_parsed", "feature_region", "present"]

_C, _CU, _ALL = ("c", "cpp"), ("cuda",), ("c", "cpp", "cuda")


def _info(name, category, languages, description, removable, insertable, signature=""):
    return FeatureInfo(name, category, languages, description, removable, insertable, signature)


CATALOGUE: dict[str, FeatureInfo] = {f.name: f for f in (
    # ---- CPU
    _info("omp_parallel", "parallelism", _C, "OpenMP threads over independent iterations "
          "(#pragma omp parallel / for)", True, True, "imports GOMP_parallel*"),
    _info("omp_simd", "compute", _C, "#pragma omp simd on a loop (vectorization asserted, with "
          "reductions)", True, True),
    _info("simd_intrinsics", "compute", _C, "ISA-guarded SIMD intrinsics (#if defined(__AVX512F__) "
          "...) with a general branch", True, False),
    _info("restrict", "tuning", _ALL, "restrict / __restrict__ pointers: no aliasing, so loads can "
          "be reordered and cached", True, True),
    _info("cache_blocking", "memory", _C, "loop nest tiled by named block sizes so the working set "
          "stays in cache", True, True),
    _info("loop_interchange", "memory", _C, "loop order changed for unit-stride access (no detector)",
          False, True),
    # The description is in every LLM prompt's catalogue, so in every recorded cassette's key:
    # reworded, the real-model cassettes in benchmarks/results/ stop replaying.
    _info("packing", "layout", _C, "tiles copied into contiguous micro-panels before the compute "
          "loop", True, True),
    _info("unroll", "tuning", _C, "#pragma GCC unroll N (removable) or manual k-way unrolling with "
          "independent accumulators (reported only)", True, True),
    _info("streaming_store", "memory", _C, "non-temporal stores (_mm*_stream_*) + sfence: skip the "
          "read-for-ownership of write-once output", True, False, "vmovnt* / movnt* instructions"),
    _info("prefetch", "memory", _C, "software prefetch (_mm_prefetch / __builtin_prefetch)", True,
          False, "prefetch* instructions"),
    # ---- CUDA
    _info("vectorized_access", "layout", _CU, "8/16-byte vector loads and stores (float4/uint4) on a "
          "guarded fast path", True, True, "SASS LDG.E.128 / STG.E.128"),
    _info("read_only_cache", "memory", _CU, "__ldg loads through the read-only data cache", True, True),
    _info("launch_bounds", "tuning", _CU, "__launch_bounds__(threads[, blocks]) caps registers for "
          "occupancy", True, True, "ELF attribute EIATTR_MAX_THREADS"),
    _info("unroll_pragma", "tuning", _CU, "#pragma unroll [N] on device loops", True, True),
    _info("shared_memory_tiling", "memory", _CU, "tiles staged in __shared__ memory and reused by the "
          "block", False, False),
    _info("warp_shuffle_reduction", "compute", _CU, "reduction through __shfl_*_sync butterflies",
          True, True, "SASS SHFL.*"),
    _info("cp_async_pipeline", "pipeline", _CU, "asynchronous copies / mbarrier ring overlapping "
          "loads with compute", True, False, "SASS LDGSTS or SYNCS.* (mbarrier)"),
    _info("tma", "pipeline", _CU, "Tensor Memory Accelerator bulk tensor copies (cp.async.bulk.tensor)",
          True, False, "SASS UTMALDG / UTMASTG / UBLKCP"),
    _info("tensor_core_mma", "compute", _CU, "tensor-core MMA (mma.sync / wmma / wgmma)", True, False,
          "SASS HMMA / HGMMA"),
    _info("fast_math_intrinsics", "tuning", _CU, "approximate math intrinsics (__expf, __fdividef, "
          "rsqrtf, __frcp_rn)", True, True),
    _info("grid_stride_loop", "parallelism", _CU, "persistent blocks striding over the work by "
          "gridDim", True, True),
    _info("register_blocking", "compute", _CU, "per-thread register tiles (arrays kept across passes)",
          False, False),
    _info("smem_padding_or_swizzle", "layout", _CU, "padded shared-memory rows (removable) or TMA/MMA "
          "swizzles (entangled, reported only) against bank conflicts", True, True),
)}

FAST_PATH_FEATURES = ("tensor_core_mma", "tma", "cp_async_pipeline", "vectorized_access")
"""The headline feature of a launch-time fast path, in priority order: the fast-path removal is
proposed under the first of these found only on the fast path."""


def detect(text: str, language: str) -> list[FeatureHit]:
    """Every feature hit in a C, C++ or CUDA source, in source order."""
    return detect_parsed(parse(text, language))


def detect_parsed(parsed: Parsed) -> list[FeatureHit]:
    detectors = CUDA_DETECTORS if parsed.language == "cuda" else CPU_DETECTORS
    hits = [h for detector in detectors.values() for h in detector(parsed)]
    if parsed.language == "cuda":
        hits = _mark_fast_path(parsed, hits)
    return sorted(hits, key=lambda h: (h.site.start_byte, h.feature))


def present(text: str, language: str) -> set[str]:
    """The names of the features the source shows."""
    return {h.feature for h in detect(text, language)}


def feature_region(text: str, language: str, feature: str) -> list[tuple[int, int]]:
    """Byte spans a removal of ``feature`` takes away: the whole fast path (kernels, helpers only
    it uses, the launch branch) for a fast-path feature, else the feature's own sites."""
    parsed = parse(text, language)
    hits = detect_parsed(parsed)
    if feature in FAST_PATH_FEATURES:
        path = find_fast_path(parsed)
        if path is not None and fast_path_feature(parsed, hits, path) == feature:
            return path.regions()
    return [(h.site.start_byte, h.site.end_byte) for h in hits if h.feature == feature]


def _mark_fast_path(parsed: Parsed, hits: list[FeatureHit]) -> list[FeatureHit]:
    """Fast-path hits of the headline feature become removable; the others stay as detected."""
    path = find_fast_path(parsed)
    headline = fast_path_feature(parsed, hits, path) if path is not None else None
    if headline is None:
        return [replace(h, removable=False) if h.feature in FAST_PATH_FEATURES else h for h in hits]
    regions = path.regions()
    return [replace(h, removable=h.feature == headline and _inside(h, regions))
            if h.feature in FAST_PATH_FEATURES else h for h in hits]


def fast_path_feature(parsed: Parsed, hits: list[FeatureHit], path) -> str | None:
    regions = path.regions()
    for feature in FAST_PATH_FEATURES:
        if any(h.feature == feature and _inside(h, regions) for h in hits):
            return feature
    return None


def _inside(h: FeatureHit, regions: list[tuple[int, int]]) -> bool:
    return any(start <= h.site.start_byte < end for start, end in regions)
