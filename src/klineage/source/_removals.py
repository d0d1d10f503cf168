"""Removal passes: each takes the parsed source and the feature's removable hits, and returns the
rewritten text (or None when nothing changes). They remove the feature at every handled site and
leave the rest of the file byte for byte as it was."""

from __future__ import annotations

import re

from klineage.source._detect_common import restrict_qualifiers, unroll_pragmas
from klineage.source._detect_cpu import (
    PREFETCHES,
    STREAM_STORES,
    is_simd_only,
    isa_blocks,
    omp_directive_words,
    omp_pragmas,
)
from klineage.source._detect_cuda import FAST_MATH
from klineage.source._fast_path import find_fast_path
from klineage.source._insert_blocking import remove_cache_blocking
from klineage.source._insert_stride import remove_grid_stride_loop
from klineage.source._packing_form import remove_packing
from klineage.source._shuffle import remove_warp_shuffle
from klineage.source.model import FeatureHit
from klineage.source.parse import (
    Parsed,
    Splice,
    callee_name,
    calls,
    else_body_span,
    enclosing_function_node,
    line_bounds,
    pragma_text,
    walk,
)

_ATOMIC_EXPRESSIONS = ("identifier", "number_literal", "call_expression", "subscript_expression",
                       "field_expression", "parenthesized_expression")
_OPERATOR_FORMS = ("__fdividef", "__frcp_rn")
_SIMD_CLAUSES = {"safelen", "simdlen", "linear", "aligned", "nontemporal", "private", "lastprivate",
                 "reduction", "collapse", "order", "if"}


def remove_omp_parallel(parsed: Parsed, hits: list[FeatureHit]) -> str:
    """Drop every threading pragma; a combined 'parallel for simd' keeps its simd part."""
    splice = Splice(parsed.data)
    for pragma in omp_pragmas(parsed):
        text = pragma_text(pragma)
        if is_simd_only(text):
            continue
        if "simd" in omp_directive_words(text):
            splice.replace(pragma.start_byte, pragma.end_byte, f"#pragma omp simd{_simd_clauses(text)}")
        else:
            splice.delete_lines(pragma.start_byte, pragma.end_byte)
    return splice.apply()


def _simd_clauses(text: str) -> str:
    clauses = re.findall(r"(\w+)\s*(\([^()]*\))?", text[len(" ".join(omp_directive_words(text))):])
    kept = [f"{name}{args}" for name, args in clauses if name in _SIMD_CLAUSES]
    return "".join(f" {c}" for c in kept)


def remove_omp_simd(parsed: Parsed, hits: list[FeatureHit]) -> str:
    splice = Splice(parsed.data)
    for pragma in omp_pragmas(parsed):
        text = pragma_text(pragma)
        if is_simd_only(text):
            splice.delete_lines(pragma.start_byte, pragma.end_byte)
        elif "simd" in omp_directive_words(text):
            words = omp_directive_words(text)
            rest = text[len(" ".join(words)):]
            splice.replace(pragma.start_byte, pragma.end_byte,
                           "#pragma " + " ".join(w for w in words if w != "simd") + rest)
    return splice.apply()


def remove_simd_intrinsics(parsed: Parsed, hits: list[FeatureHit]) -> str:
    """Each ISA-guarded block becomes its #else branch (or nothing when it has none)."""
    splice = Splice(parsed.data)
    for block in isa_blocks(parsed):
        start, end = line_bounds(parsed.data, block.start_byte, block.end_byte)
        general = else_body_span(parsed.data, block)
        splice.replace(start, end, parsed.data[general[0]:general[1]] if general else b"")
    return splice.apply()


def remove_restrict(parsed: Parsed, hits: list[FeatureHit]) -> str:
    splice = Splice(parsed.data)
    for qualifier in restrict_qualifiers(parsed):
        end = qualifier.end_byte
        while end < len(parsed.data) and parsed.data[end:end + 1] in (b" ", b"\t"):
            end += 1
        splice.delete(qualifier.start_byte, end)
    return splice.apply()


def remove_unroll_pragmas(parsed: Parsed, hits: list[FeatureHit]) -> str:
    splice = Splice(parsed.data)
    for pragma in unroll_pragmas(parsed):
        splice.delete_lines(pragma.start_byte, pragma.end_byte)
    return splice.apply()


def remove_streaming_store(parsed: Parsed, hits: list[FeatureHit]) -> str:
    """Streaming stores become regular stores of the same width; the fences go."""
    splice = Splice(parsed.data)
    for call in calls(parsed.root, "|".join(STREAM_STORES)):
        callee = call.child_by_field_name("function")
        splice.replace(callee.start_byte, callee.end_byte, STREAM_STORES[callee_name(call)])
    for call in calls(parsed.root, "_mm_sfence"):
        statement = call.parent
        if statement.type == "expression_statement":
            _delete_with_trailing_comment(splice, parsed, statement)
    return splice.apply()


def remove_prefetch(parsed: Parsed, hits: list[FeatureHit]) -> str:
    splice = Splice(parsed.data)
    statements = [c.parent for c in calls(parsed.root, "|".join(PREFETCHES))
                  if c.parent.type == "expression_statement"]
    for statement in statements:
        splice.delete_lines(statement.start_byte, statement.end_byte)
        comment = statement.prev_named_sibling
        if comment is not None and comment.type == "comment" and "prefetch" in parsed.text_of(comment) \
                and comment.end_point[0] == statement.start_point[0] - 1:
            splice.delete_lines(comment.start_byte, comment.end_byte)
    return splice.apply()


def remove_read_only_cache(parsed: Parsed, hits: list[FeatureHit]) -> str:
    """__ldg(p) -> *(p); __ldg(&a[i]) -> a[i]."""
    splice = Splice(parsed.data)
    for call in calls(parsed.root, "__ldg"):
        arguments = call.child_by_field_name("arguments").named_children
        if len(arguments) != 1:
            continue
        pointer = arguments[0]
        if pointer.type == "pointer_expression" and pointer.children[0].type == "&":
            plain = parsed.text_of(pointer.child_by_field_name("argument"))
        elif pointer.type == "identifier":
            plain = f"*{parsed.text_of(pointer)}"
        else:
            plain = f"*({parsed.text_of(pointer)})"
        splice.replace(call.start_byte, call.end_byte, plain)
    return splice.apply()


def remove_launch_bounds(parsed: Parsed, hits: list[FeatureHit]) -> str:
    """Drop __launch_bounds__ and, in the same kernels, the setmaxnreg lines it makes effective."""
    splice = Splice(parsed.data)
    for node in (n for n in walk(parsed.root) if n.type == "launch_bounds"):
        _delete_with_trailing_comment(splice, parsed, node, keep_line=True)
        function = enclosing_function_node(node) or node.parent
        for asm in (n for n in walk(function) if n.type == "gnu_asm_expression"):
            if b"setmaxnreg" in asm.text and asm.parent.type == "expression_statement":
                splice.delete_lines(asm.parent.start_byte, asm.parent.end_byte)
    return splice.apply()


def remove_fast_math(parsed: Parsed, hits: list[FeatureHit]) -> str:
    """Each intrinsic becomes its IEEE form; parentheses only where the context needs them."""
    splice = Splice(parsed.data)
    for call in _outermost_fast_math(parsed.root):
        splice.replace(call.start_byte, call.end_byte, _plain_form(parsed, call))
    return splice.apply()


def _outermost_fast_math(node) -> list:
    if node.type == "call_expression" and callee_name(node) in FAST_MATH:
        return [node]
    return [call for child in node.children for call in _outermost_fast_math(child)]


def _plain_form(parsed: Parsed, call) -> str:
    template = FAST_MATH[callee_name(call)]
    arguments = [_rewritten(parsed, a) for a in call.child_by_field_name("arguments").named_children]
    if callee_name(call) in _OPERATOR_FORMS:  # compound operands of '/' need their own parentheses
        arguments = [text if a.type in _ATOMIC_EXPRESSIONS else f"({text})" for a, text in
                     zip(call.child_by_field_name("arguments").named_children, arguments, strict=True)]
    plain = template.format(*arguments)
    if "/" in plain and call.parent.type not in ("init_declarator", "argument_list", "return_statement"):
        plain = f"({plain})"
    return plain


def _rewritten(parsed: Parsed, node) -> str:
    """The text of ``node`` with the fast-math calls inside it in plain form."""
    pieces, cursor = [], node.start_byte
    for call in _outermost_fast_math(node):
        pieces += [parsed.data[cursor:call.start_byte].decode(), _plain_form(parsed, call)]
        cursor = call.end_byte
    pieces.append(parsed.data[cursor:node.end_byte].decode())
    return "".join(pieces)


def remove_smem_padding(parsed: Parsed, hits: list[FeatureHit]) -> str:
    splice = Splice(parsed.data)
    for h in hits:
        padded = parsed.data[h.site.start_byte:h.site.end_byte].decode()
        splice.replace(h.site.start_byte, h.site.end_byte, re.sub(r"\s*\+\s*\d+$", "", padded))
    return splice.apply()


def remove_fast_path(parsed: Parsed, hits: list[FeatureHit]) -> str | None:
    """Keep only the general branch of the launch-time fast path (see _fast_path)."""
    from klineage.source._general_branch import keep_general_branch

    path = find_fast_path(parsed)
    return keep_general_branch(parsed, path) if path is not None else None


def _delete_with_trailing_comment(splice: Splice, parsed: Parsed, node, keep_line: bool = False) -> None:
    """Delete a node and a // comment that follows it on its line; the whole line if it empties."""
    line_start, line_end = line_bounds(parsed.data, node.start_byte, node.end_byte)
    rest = parsed.data[node.end_byte:line_end]
    tail = rest.strip()
    trailing = tail == b"" or tail.startswith(b"//") or (tail.startswith(b"/*") and tail.endswith(b"*/"))
    if trailing and not parsed.data[line_start:node.start_byte].strip():
        splice.delete(line_start, line_end)
    elif trailing and keep_line:
        cut = line_end - 1 if parsed.data[line_end - 1:line_end] == b"\n" else line_end
        splice.delete(node.start_byte, cut)
        _strip_space_before(splice, parsed.data, node.start_byte)
    else:
        end = node.end_byte
        while parsed.data[end:end + 1] in (b" ", b"\t"):
            end += 1
        splice.delete(node.start_byte, end)


def _strip_space_before(splice: Splice, data: bytes, offset: int) -> None:
    start = offset
    while start > 0 and data[start - 1:start] in (b" ", b"\t"):
        start -= 1
    if start < offset:
        splice.delete(start, offset)


REMOVERS = {
    "omp_parallel": remove_omp_parallel,
    "omp_simd": remove_omp_simd,
    "simd_intrinsics": remove_simd_intrinsics,
    "restrict": remove_restrict,
    "unroll": remove_unroll_pragmas,
    "unroll_pragma": remove_unroll_pragmas,
    "streaming_store": remove_streaming_store,
    "prefetch": remove_prefetch,
    "read_only_cache": remove_read_only_cache,
    "launch_bounds": remove_launch_bounds,
    "fast_math_intrinsics": remove_fast_math,
    "smem_padding_or_swizzle": remove_smem_padding,
    "vectorized_access": remove_fast_path,
    "tensor_core_mma": remove_fast_path,
    "tma": remove_fast_path,
    "cp_async_pipeline": remove_fast_path,
    "cache_blocking": remove_cache_blocking,
    "packing": remove_packing,
    "grid_stride_loop": remove_grid_stride_loop,
    "warp_shuffle_reduction": remove_warp_shuffle,
}
