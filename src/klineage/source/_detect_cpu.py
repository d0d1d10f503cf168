"""Detectors for C/C++ CPU kernels: OpenMP, SIMD intrinsics, blocking, packing, unrolling."""

from __future__ import annotations

import re

from klineage.source._blocking_nest import blocked_nests, tile_constants, tile_step
from klineage.source._detect_common import (
    detect_manual_unroll,
    detect_restrict,
    detect_unroll_pragmas,
    hit,
)
from klineage.source.model import FeatureHit
from klineage.source.parse import (
    CONDITIONALS,
    Parsed,
    ancestors,
    callee_name,
    calls,
    conditional_conditions,
    for_loops,
    function_definitions,
    function_name,
    pragma_text,
    pragmas,
    walk,
)

_OMP_CONSTRUCT_WORDS = {"omp", "parallel", "for", "simd", "declare", "distribute", "teams", "target",
                        "taskloop", "do", "loop"}
_ISA_MACRO = re.compile(r"__(AVX\w*|SSE\w*|FMA|F16C|ARM_NEON|ARM_FEATURE_\w+)__")
INTRINSIC_CALL = r"_mm\d*_\w+"
_VECTOR_TYPE = r"__m(128|256|512)[id]?h?"
STREAM_STORES = {  # streaming store -> the regular unaligned store of the same width
    "_mm_stream_ps": "_mm_storeu_ps", "_mm_stream_pd": "_mm_storeu_pd",
    "_mm_stream_si128": "_mm_storeu_si128", "_mm256_stream_ps": "_mm256_storeu_ps",
    "_mm256_stream_pd": "_mm256_storeu_pd", "_mm256_stream_si256": "_mm256_storeu_si256",
    "_mm512_stream_ps": "_mm512_storeu_ps", "_mm512_stream_pd": "_mm512_storeu_pd",
    "_mm512_stream_si512": "_mm512_storeu_si512",
}
FENCES = ("_mm_sfence",)
PREFETCHES = ("_mm_prefetch", "__builtin_prefetch")


def omp_directive_words(text: str) -> list[str]:
    """The construct words of an OpenMP pragma: 'omp parallel for schedule(x)' -> omp parallel for."""
    words = []
    for token in text.split():
        if token not in _OMP_CONSTRUCT_WORDS:
            break
        words.append(token)
    return words if words[:1] == ["omp"] else []


def omp_pragmas(parsed: Parsed) -> list:
    return [p for p in pragmas(parsed.root) if omp_directive_words(pragma_text(p))]


def is_simd_only(text: str) -> bool:
    """'omp simd ...' or 'omp declare simd ...': no threads involved."""
    return omp_directive_words(text)[1:] in (["simd"], ["declare", "simd"])


def detect_omp_parallel(parsed: Parsed) -> list[FeatureHit]:
    return [hit(parsed, "omp_parallel", p, f"#pragma {pragma_text(p)}") for p in omp_pragmas(parsed)
            if not is_simd_only(pragma_text(p))]


def detect_omp_simd(parsed: Parsed) -> list[FeatureHit]:
    return [hit(parsed, "omp_simd", p, f"#pragma {pragma_text(p)}") for p in omp_pragmas(parsed)
            if "simd" in omp_directive_words(pragma_text(p))]


def is_isa_conditional(node) -> bool:
    """An #if/#ifdef chain whose every condition only tests instruction-set macros."""
    if node.type not in CONDITIONALS:
        return False
    conditions = [c for c in conditional_conditions(node) if c is not None]
    return bool(conditions) and all(_only_isa_macros(c) for c in conditions)


def _only_isa_macros(condition: str) -> bool:
    names = re.findall(r"[A-Za-z_]\w*", condition)
    names = [n for n in names if n != "defined"]
    return bool(names) and all(_ISA_MACRO.fullmatch(n) for n in names)


def isa_blocks(parsed: Parsed) -> list:
    """Outermost ISA-guarded conditionals, when any of them holds intrinsics or vector types. All of
    them count: a dispatch block that calls an ISA-specific helper is part of the same fast path."""
    blocks = [node for node in walk(parsed.root)
              if is_isa_conditional(node) and not any(is_isa_conditional(a) for a in ancestors(node))]
    return blocks if any(_uses_simd(parsed, b) for b in blocks) else []


def _uses_simd(parsed: Parsed, node) -> bool:
    text = parsed.text_of(node)
    return bool(re.search(rf"\b({INTRINSIC_CALL}|{_VECTOR_TYPE})\b", text))


def detect_simd_intrinsics(parsed: Parsed) -> list[FeatureHit]:
    blocks = isa_blocks(parsed)
    hits = [hit(parsed, "simd_intrinsics", b, f"ISA-guarded block: #if {conditional_conditions(b)[0]}")
            for b in blocks if b"#include" not in parsed.data[b.start_byte:b.end_byte]]
    inside = [(b.start_byte, b.end_byte) for b in blocks]
    for call in calls(parsed.root, INTRINSIC_CALL):
        if not any(s <= call.start_byte < e for s, e in inside):
            hits.append(hit(parsed, "simd_intrinsics", call, "unguarded intrinsic (no general branch)",
                            removable=False))
    return hits


def detect_streaming_store(parsed: Parsed) -> list[FeatureHit]:
    hits = [hit(parsed, "streaming_store", c, callee_name(c))
            for c in calls(parsed.root, r"_mm\d*_stream_\w+|_mm_sfence|__builtin_nontemporal_store")]
    return [h if h.detail in STREAM_STORES or h.detail in FENCES else
            hit(parsed, "streaming_store", (h.site.start_byte, h.site.end_byte), h.detail, False)
            for h in hits]


def detect_prefetch(parsed: Parsed) -> list[FeatureHit]:
    return [hit(parsed, "prefetch", c, callee_name(c), removable=c.parent.type == "expression_statement")
            for c in calls(parsed.root, "|".join(PREFETCHES))]


def detect_cache_blocking(parsed: Parsed) -> list[FeatureHit]:
    """Loops that step by a named tile size and hold another loop: a blocked loop nest; and the
    definition of each tile size they step by (the value a removal records).

    Removable where the nest is the canonical tiled nest or a hand-written one of the same shape
    (``_blocking_nest``); other blocked nests are reported only: the transpose
    expert's block loops compute rows/cols and call a helper with them, so there is no plain nest
    for a rule to restore."""
    tiles = tile_constants(parsed)
    removable = {loop.start_byte for nest in blocked_nests(parsed, tiles) for loop in nest.blocks}
    hits, used = [], {}
    for loop in for_loops(parsed.root):
        tile = tile_step(loop, tiles)
        body = loop.child_by_field_name("body")
        if tile is not None and body is not None and for_loops(body):
            hits.append(hit(parsed, "cache_blocking", loop, f"loop steps by tile {tile}",
                            removable=loop.start_byte in removable))
            used[tile] = used.get(tile, False) or loop.start_byte in removable
    for tile, any_removable in used.items():
        hits.append(hit(parsed, "cache_blocking", tiles[tile], f"tile size {tile}", any_removable))
    return hits


def detect_packing(parsed: Parsed) -> list[FeatureHit]:
    """Packed operands (_packing_form): klineage's own form and hand-written buffers filled by a
    copy nest, removable where the rule can undo them; and helpers named pack* that copy elements
    into a buffer in a loop (heuristic by name), which stay: their panels are read by offset
    elsewhere, so there is no plain read of the operand to put back."""
    from klineage.source._packing_form import packings

    hits = []
    for packed in packings(parsed):
        form = "klineage's packing" if packed.own else "a buffer filled by a copy nest"
        why = f" (not removable: {packed.why_not})" if packed.why_not else ""
        detail = f"{packed.buffer}: {form}{why}"
        hits.append(hit(parsed, "packing", packed.declaration, detail, removable=not packed.why_not))
    for function in function_definitions(parsed.root):
        name = function_name(function)
        if not re.search(r"(^|_)pack", name) or not for_loops(function):
            continue
        copies = [n for n in walk(function) if n.type == "assignment_expression"
                  and n.child_by_field_name("left").type == "subscript_expression"]
        if copies:
            hits.append(hit(parsed, "packing", function, f"packing routine {name} (not removable: "
                            f"{_why_routine_stays(function)})", removable=False))
    return hits


def _why_routine_stays(function) -> str:
    zeroes = any(n.type == "assignment_expression" and re.fullmatch(
        r"0(\.0*)?f?", n.child_by_field_name("right").text.decode()) for n in walk(function))
    return ("it zero-pads micro-panels that other routines read by offset; no plain read of the "
            "operand to put back" if zeroes else
            "other routines read its panels by offset; no plain read of the operand to put back")


def detect_unroll(parsed: Parsed) -> list[FeatureHit]:
    return detect_unroll_pragmas(parsed, "unroll") + detect_manual_unroll(parsed)


CPU_DETECTORS = {
    "omp_parallel": detect_omp_parallel,
    "omp_simd": detect_omp_simd,
    "simd_intrinsics": detect_simd_intrinsics,
    "restrict": detect_restrict,
    "cache_blocking": detect_cache_blocking,
    "packing": detect_packing,
    "unroll": detect_unroll,
    "streaming_store": detect_streaming_store,
    "prefetch": detect_prefetch,
}
