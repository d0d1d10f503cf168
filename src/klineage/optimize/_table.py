"""The ``rules-table`` baseline's knowledge: a fixed, expert-written decision table (the style of
KernelSkill), written once and never learned. It maps what limits the kernel by speed of light
(memory or compute) and which features it already has to the techniques allowed next and those
forbidden, each with its reason.

It is ours, not mined: no precondition here was checked by a gate. Its rows are what a
performance engineer would write down from experience; that is the point of the baseline.
"""

from __future__ import annotations

from dataclasses import dataclass

from klineage.source import CATALOGUE

__all__ = ["TABLE", "Row", "table_for", "table_text"]


@dataclass(frozen=True)
class Row:
    limiter: str
    """'memory' or 'compute' (an unprofiled kernel uses every row)."""
    when: tuple[str, ...]
    """Features that must already be present for the row to apply (empty: always)."""
    unless: tuple[str, ...]
    """Features whose presence turns the row off."""
    allow: tuple[str, ...]
    forbid: tuple[str, ...]
    why: str


TABLE: tuple[Row, ...] = (
    Row("memory", (), ("omp_parallel",), ("omp_parallel",), (),
        "a memory-bound loop on one core leaves most of the bandwidth unused: parallelise the "
        "outermost independent loop first"),
    Row("memory", (), ("loop_interchange",), ("loop_interchange",), (),
        "strided inner loops waste every cache line: make the innermost loop walk unit stride"),
    Row("memory", (), (), ("restrict", "omp_simd"), ("unroll", "fast_math_intrinsics"),
        "vectorised unit-stride loads raise the achieved bandwidth; unrolling and cheaper math "
        "do not change the bytes moved"),
    Row("memory", (), (), ("vectorized_access", "read_only_cache", "grid_stride_loop"),
        ("tensor_core_mma", "register_blocking"),
        "on a GPU, wide coalesced loads and enough bytes in flight decide a memory-bound "
        "kernel; more arithmetic throughput does not"),
    Row("memory", (), (), ("warp_shuffle_reduction", "shared_memory_tiling"), (),
        "reductions and stencils re-read data: combine partial results in registers and "
        "shared memory instead of global memory"),
    Row("compute", (), (), ("cache_blocking", "packing", "omp_parallel", "omp_simd"),
        ("streaming_store", "prefetch"),
        "a compute-bound nest is limited by reuse and vector width: block and pack for cache, "
        "vectorise the inner kernel, then parallelise; bandwidth tricks do not help"),
    Row("compute", (), (), ("register_blocking", "tensor_core_mma", "shared_memory_tiling",
                            "unroll_pragma"), ("read_only_cache",),
        "on a GPU, register tiles over shared-memory tiles and tensor cores raise the "
        "arithmetic per byte"),
    Row("compute", ("cache_blocking",), ("unroll",), ("unroll",), (),
        "once blocked, unrolling the micro-kernel with independent accumulators hides latency"),
)


def table_for(limiter: str | None, features: set[str],
              language: str) -> tuple[list[str], set[str], list[str]]:
    """(allowed techniques in table order, forbidden techniques, the reasons of the rows used);
    a row whose techniques do not exist in ``language`` (the GPU rows for C) is not used."""
    allowed: list[str] = []
    forbidden: set[str] = set()
    reasons: list[str] = []
    for row in TABLE:
        if limiter in ("memory", "compute") and row.limiter != limiter:
            continue
        if not set(row.when) <= features or set(row.unless) & features:
            continue
        allow = [t for t in row.allow if language in CATALOGUE[t].languages]
        forbid = {t for t in row.forbid if language in CATALOGUE[t].languages}
        if not allow and not forbid:
            continue
        allowed += [t for t in allow if t not in allowed and t not in features]
        forbidden |= forbid
        reasons.append(row.why)
    return [t for t in allowed if t not in forbidden], forbidden, reasons


def table_text(limiter: str | None, features: set[str], language: str) -> str:
    """The table's verdict on one kernel, as the brain is shown it."""
    allowed, forbidden, reasons = table_for(limiter, features, language)
    bound = f"{limiter}-bound" if limiter else "not profiled (every row applies)"
    return "\n".join([
        f"An expert-written decision table for this kernel ({bound}):",
        f"- allowed next, in order: {', '.join(allowed) or '(nothing)'}",
        f"- forbidden: {', '.join(sorted(forbidden)) or '(nothing)'}",
        *(f"- because {why}" for why in reasons)])
