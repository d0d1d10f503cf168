"""Detectors for CUDA kernels: memory access width, caches, reductions, pipelines, tensor cores."""

from __future__ import annotations

import re

from klineage.source._detect_common import (
    asm_strings,
    detect_restrict,
    detect_unroll_pragmas,
    hit,
    identifiers,
)
from klineage.source.model import FeatureHit
from klineage.source.parse import (
    Parsed,
    ancestors,
    callee_name,
    calls,
    enclosing_function_node,
    for_loops,
    function_definitions,
    is_cuda_kernel,
    walk,
)

VECTOR_TYPES = {"float4", "float2", "int4", "int2", "uint4", "uint2", "double2", "longlong2",
                "ulonglong2", "char4", "uchar4", "short4", "ushort4"}
FAST_MATH = {  # intrinsic -> its plain (IEEE) form, as a format string over the arguments
    "__expf": "expf({0})", "__exp10f": "exp10f({0})", "__logf": "logf({0})", "__log2f": "log2f({0})",
    "__log10f": "log10f({0})", "__sinf": "sinf({0})", "__cosf": "cosf({0})", "__tanf": "tanf({0})",
    "__powf": "powf({0}, {1})", "__fdividef": "{0} / {1}", "__frcp_rn": "1.0f / {0}",
    "__fsqrt_rn": "sqrtf({0})", "rsqrtf": "1.0f / sqrtf({0})",
}
SHUFFLES = r"__shfl(_xor|_down|_up)?_sync|__reduce_(add|min|max|and|or|xor)_sync"
_MMA_CALLS = r"(nvcuda::)?(wmma::)?(mma_sync|load_matrix_sync|store_matrix_sync)|__hmma\w*"
_PIPELINE_CALLS = r"__pipeline_memcpy_async|__pipeline_commit|__pipeline_wait_prior|" \
                  r"(cuda::)?memcpy_async|cp_async\w*"


def detect_vectorized_access(parsed: Parsed) -> list[FeatureHit]:
    """Pointers to 8/16-byte vector types: parameters, declarations and casts (bf16x2/half2
    pairs are not counted: they are 4-byte accesses)."""
    hits = []
    for name in identifiers(parsed, names=VECTOR_TYPES):
        holder = name.parent
        if holder is None or holder.type not in ("parameter_declaration", "declaration", "type_descriptor"):
            continue
        declarators = [c for c in holder.named_children if "pointer_declarator" in c.type
                       or any("pointer_declarator" in d.type for d in c.named_children)]
        if declarators:
            site = holder.parent if holder.type == "type_descriptor" and holder.parent.type == \
                "cast_expression" else holder
            hits.append(hit(parsed, "vectorized_access", site, f"{name.text.decode()} pointer"))
    return hits


def detect_read_only_cache(parsed: Parsed) -> list[FeatureHit]:
    return [hit(parsed, "read_only_cache", c, "__ldg") for c in calls(parsed.root, "__ldg")]


def detect_launch_bounds(parsed: Parsed) -> list[FeatureHit]:
    hits = []
    for node in walk(parsed.root):
        if node.type == "launch_bounds":
            hits.append(hit(parsed, "launch_bounds", node, parsed.text_of(node)))
    return hits


def shared_arrays(parsed: Parsed) -> list:
    """Declarations qualified __shared__."""
    return [n for n in walk(parsed.root) if n.type == "declaration"
            and any(c.type == "type_qualifier" and c.text == b"__shared__" for c in n.children)]


def array_dims(declarator) -> list:
    """Dimension expressions of an array declarator, outermost first."""
    dims = []
    while declarator is not None and declarator.type == "array_declarator":
        dims.append(declarator.child_by_field_name("size"))
        declarator = declarator.child_by_field_name("declarator")
    return list(reversed(dims))


def detect_shared_memory_tiling(parsed: Parsed) -> list[FeatureHit]:
    """2-D __shared__ tiles, or a dynamic (extern) __shared__ buffer used inside a loop. One-dimensional
    reduction scratch (one float per warp) is not tiling."""
    hits = []
    for declaration in shared_arrays(parsed):
        function = enclosing_function_node(declaration)
        dims = max((len(array_dims(d)) for d in declaration.children_by_field_name("declarator")), default=0)
        is_extern = any(c.type == "storage_class_specifier" and c.text == b"extern"
                        for c in declaration.children)
        if dims >= 2 or (is_extern and function is not None and for_loops(function)):
            hits.append(hit(parsed, "shared_memory_tiling", declaration, "__shared__ tile",
                            removable=False))
    return hits


def detect_smem_padding_or_swizzle(parsed: Parsed) -> list[FeatureHit]:
    hits = []
    for declaration in shared_arrays(parsed):
        for declarator in declaration.children_by_field_name("declarator"):
            dims = array_dims(declarator)
            last = dims[-1] if dims else None
            if len(dims) >= 2 and last is not None and re.fullmatch(r".+\+\s*\d+", last.text.decode()):
                hits.append(hit(parsed, "smem_padding_or_swizzle", last, "padded shared-memory row"))
    for name in identifiers(parsed, pattern=r"CU_TENSOR_MAP_SWIZZLE_(32|64|128)B\w*"):
        hits.append(hit(parsed, "smem_padding_or_swizzle", name, "TMA swizzle (entangled with the "
                        "MMA descriptors)", removable=False))
    return hits


def detect_warp_shuffle_reduction(parsed: Parsed) -> list[FeatureHit]:
    """Every shuffle or warp-reduce call; removable where _shuffle's removal applies (the
    detail says why not elsewhere)."""
    from klineage.source._shuffle import shuffle_removal

    hits = []
    for call in calls(parsed.root, SHUFFLES):
        plan = shuffle_removal(parsed, call)
        detail = callee_name(call) + (f"; kept: {plan}" if isinstance(plan, str) else "")
        hits.append(hit(parsed, "warp_shuffle_reduction", call, detail, removable=not isinstance(plan, str)))
    return hits


def _asm_hits(parsed: Parsed, feature: str, pattern: str, exclude: str | None = None) -> list[FeatureHit]:
    return [hit(parsed, feature, node, re.search(pattern, text).group(0), removable=False)
            for node, text in asm_strings(parsed)
            if re.search(pattern, text) and not (exclude and re.search(exclude, text))]


def detect_tensor_core_mma(parsed: Parsed) -> list[FeatureHit]:
    hits = _asm_hits(parsed, "tensor_core_mma", r"wgmma\.mma_async\S*|mma\.sync\S*|wmma\.mma\S*")
    hits += [hit(parsed, "tensor_core_mma", c, callee_name(c), removable=False)
             for c in calls(parsed.root, _MMA_CALLS)]
    return hits


def detect_tma(parsed: Parsed) -> list[FeatureHit]:
    hits = _asm_hits(parsed, "tma", r"cp\.async\.bulk\S*")
    hits += [hit(parsed, "tma", n, "tensor map", removable=False)
             for n in identifiers(parsed, pattern=r"CUtensorMap|cuTensorMapEncode\w*")
             if n.parent is not None and n.parent.type == "parameter_declaration"]
    return hits


def detect_cp_async_pipeline(parsed: Parsed) -> list[FeatureHit]:
    hits = _asm_hits(parsed, "cp_async_pipeline", r"cp\.async(?!\.bulk)\S*|mbarrier\.\S+")
    hits += [hit(parsed, "cp_async_pipeline", c, callee_name(c), removable=False)
             for c in calls(parsed.root, _PIPELINE_CALLS)]
    return hits


def detect_fast_math_intrinsics(parsed: Parsed) -> list[FeatureHit]:
    return [hit(parsed, "fast_math_intrinsics", c, callee_name(c))
            for c in calls(parsed.root, "|".join(FAST_MATH))]


def detect_grid_stride_loop(parsed: Parsed) -> list[FeatureHit]:
    """Kernel loops whose stride is (or is a local computed from) gridDim; removable where
    _insert_stride's removal applies (the detail says why not elsewhere)."""
    from klineage.source._insert_stride import stride_removal

    hits = []
    for function in (f for f in function_definitions(parsed.root) if is_cuda_kernel(f)):
        for loop in for_loops(function):
            update = loop.child_by_field_name("update")
            if update is None or update.type != "assignment_expression":
                continue
            stride = update.child_by_field_name("right")
            if "gridDim" in _expand(parsed, function, stride):
                plan = stride_removal(parsed, loop)
                detail = f"stride {parsed.text_of(stride)}" + (f"; kept: {plan}" if isinstance(plan, str)
                                                                else "")
                hits.append(hit(parsed, "grid_stride_loop", loop, detail,
                                removable=not isinstance(plan, str)))
    return hits


def _expand(parsed: Parsed, function, expression) -> str:
    """The expression's text plus the initializers of the locals it names (one level)."""
    text = parsed.text_of(expression)
    names = {n.text for n in walk(expression) if n.type == "identifier"}
    for node in walk(function):
        if node.type == "init_declarator" and node.child_by_field_name("declarator").text in names:
            text += " " + parsed.text_of(node.child_by_field_name("value"))
    return text


def detect_register_blocking(parsed: Parsed) -> list[FeatureHit]:
    """Per-thread register arrays in kernels: declared outside every loop (a tile kept across
    passes), or a vector-typed batch declared inside one. Scratch arrays inside loops are not."""
    hits, shared = [], {d.start_byte for d in shared_arrays(parsed)}
    for function in (f for f in function_definitions(parsed.root) if is_cuda_kernel(f)):
        for declaration in (n for n in walk(function) if n.type == "declaration"):
            declarator = declaration.child_by_field_name("declarator")
            if declarator is None or declarator.type != "array_declarator" or declaration.start_byte in \
                    shared or any(c.type == "storage_class_specifier" for c in declaration.children):
                continue
            element = declaration.child_by_field_name("type").text.decode()
            in_loop = any(a.type in ("for_statement", "while_statement") for a in ancestors(declaration)
                          if a.start_byte >= function.start_byte)
            if not in_loop or element in VECTOR_TYPES:
                hits.append(hit(parsed, "register_blocking", declaration, f"{element} register tile",
                                removable=False))
    return hits


def detect_unroll_pragma(parsed: Parsed) -> list[FeatureHit]:
    return detect_unroll_pragmas(parsed, "unroll_pragma")


CUDA_DETECTORS = {
    "vectorized_access": detect_vectorized_access,
    "restrict": detect_restrict,
    "read_only_cache": detect_read_only_cache,
    "launch_bounds": detect_launch_bounds,
    "unroll_pragma": detect_unroll_pragma,
    "shared_memory_tiling": detect_shared_memory_tiling,
    "warp_shuffle_reduction": detect_warp_shuffle_reduction,
    "cp_async_pipeline": detect_cp_async_pipeline,
    "tma": detect_tma,
    "tensor_core_mma": detect_tensor_core_mma,
    "fast_math_intrinsics": detect_fast_math_intrinsics,
    "grid_stride_loop": detect_grid_stride_loop,
    "register_blocking": detect_register_blocking,
    "smem_padding_or_swizzle": detect_smem_padding_or_swizzle,
}
