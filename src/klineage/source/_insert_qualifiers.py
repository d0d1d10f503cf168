"""Insertions that qualify or rewrite single tokens: restrict, __launch_bounds__, __ldg,
fast-math intrinsics, shared-memory padding."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from klineage.source._detect_common import RESTRICT_WORDS
from klineage.source._detect_cuda import array_dims, shared_arrays
from klineage.source.model import Site
from klineage.source.parse import (
    Parsed,
    Splice,
    ancestors,
    callee_name,
    calls,
    function_definitions,
    function_name,
    is_cuda_kernel,
    walk,
    writes,
)


@dataclass
class Inserted:
    text: str
    sites: list[Site]
    params: dict = field(default_factory=dict)
    flags_added: tuple[str, ...] = ()


@dataclass(frozen=True)
class Refused:
    """Why an insertion pass made no edit, precisely enough to act on: which site was refused
    for what (a user reads it in the run's notes; the style corpus tests assert it)."""
    reason: str


class Refusals:
    """The reasons a pass turned down each candidate site, as one Refused."""

    def __init__(self, parsed: Parsed) -> None:
        self.parsed, self.reasons = parsed, []

    def add(self, node, reason: str) -> None:
        self.reasons.append(f"line {self.parsed.site(node).start_line}: {reason}")

    def refused(self, when_none: str) -> Refused:
        unique = list(dict.fromkeys(self.reasons))
        return Refused("; ".join(unique[:6]) + (f"; and {len(unique) - 6} more" if len(unique) > 6 else "")
                       if unique else when_none)


def _result(parsed: Parsed, splice: Splice, nodes: list, refusal: Refused | str,
            **params) -> Inserted | Refused:
    if not nodes:
        return refusal if isinstance(refusal, Refused) else Refused(refusal)
    return Inserted(splice.apply(), [parsed.site(n) for n in nodes], params)


def is_device_code(function) -> bool:
    return any(c.text in (b"__global__", b"__device__") for c in function.children)


# ---------------------------------------------------------------------------- restrict


def insert_restrict(parsed: Parsed, params: dict) -> Inserted | Refused:
    word = "restrict" if parsed.language == "c" else "__restrict__"
    splice, sites = Splice(parsed.data), []
    for pointer in _restrict_candidates(parsed):
        name = pointer.child_by_field_name("declarator")
        splice.replace(name.start_byte, name.start_byte, f"{word} ")
        sites.append(pointer)
    return _result(parsed, splice, sites, "no unqualified single-level pointer: not a parameter of a "
                   "kernel or helper, nor a kl_launch local taken from inputs[]/outputs[]",
                   qualifier=word)


def _restrict_candidates(parsed: Parsed) -> list:
    """Unqualified single-level pointers: parameters of helpers and kernels (not of kl_launch),
    and pointer locals of kl_launch initialised from the ABI's inputs/outputs."""
    found = []
    for function in function_definitions(parsed.root):
        launcher = function_name(function) == "kl_launch"
        if parsed.language == "cuda" and not launcher and not is_cuda_kernel(function):
            continue
        for pointer in (n for n in walk(function) if n.type == "pointer_declarator"):
            holder = pointer.parent
            in_params = holder.type == "parameter_declaration"
            is_abi_local = launcher and holder.type == "init_declarator" and re.search(
                rb"\b(inputs|outputs)\s*\[", holder.text or b"")
            if (in_params and not launcher) or is_abi_local:
                qualified = any(c.type == "type_qualifier" and c.text in RESTRICT_WORDS
                                for c in pointer.children)
                if not qualified and pointer.child_by_field_name("declarator").type == "identifier":
                    found.append(pointer)
    return found


# ---------------------------------------------------------------------------- launch bounds


def insert_launch_bounds(parsed: Parsed, params: dict) -> Inserted | Refused:
    splice, sites, used, why = Splice(parsed.data), [], {}, Refusals(parsed)
    for kernel in (f for f in function_definitions(parsed.root) if is_cuda_kernel(f)):
        if any(n.type == "launch_bounds" for n in kernel.children):
            why.add(kernel, f"{function_name(kernel)} has __launch_bounds__ already")
            continue
        block = params.get("threads") or _block_size(parsed, function_name(kernel))
        if block is None:
            why.add(kernel, f"the launches of {function_name(kernel)} do not agree on one block size "
                            "that is a literal, a const local or a file-scope name")
            continue
        declarator = kernel.child_by_field_name("declarator")
        splice.replace(declarator.start_byte, declarator.start_byte, f"__launch_bounds__({block}) ")
        sites.append(declarator)
        used[function_name(kernel)] = block
    return _result(parsed, splice, sites, why.refused("no __global__ kernel"), threads=used)


def _block_size(parsed: Parsed, kernel: str) -> str | None:
    """The block size all launch sites of ``kernel`` agree on, as a literal or a file-scope name."""
    sizes = set()
    for call in calls(parsed.root):
        config = next((c for c in call.children if c.type == "kernel_call_syntax"), None)
        if config is None or callee_name(call).split("<")[0] != kernel:
            continue
        arguments = [c for c in config.named_children]
        if len(arguments) < 2:
            return None
        sizes.add(_resolve(parsed, call, arguments[1]))
    return sizes.pop() if len(sizes) == 1 and None not in sizes else None


def _resolve(parsed: Parsed, call, expression) -> str | None:
    text = parsed.text_of(expression)
    if re.fullmatch(r"\d+", text):
        return text
    scope = next((a for a in ancestors(call) if a.type == "function_definition"), None)
    local = _local_value(scope, text) if scope is not None and expression.type == "identifier" else None
    if local is not None:
        return local
    return text if re.fullmatch(r"[A-Za-z_]\w*(\s*\*\s*\w+)?", text) and local is None \
        and not _declared_in(scope, text) else None


def _local_value(scope, name: str) -> str | None:
    """A launcher-local block size: 'const int threads = 128;' or 'dim3 block(16, 16);' -> '256'."""
    for node in walk(scope):
        if node.type == "init_declarator" and node.child_by_field_name("declarator").text == name.encode():
            value = node.child_by_field_name("value")
            numbers = re.findall(rb"\d+", value.text) if value is not None else []
            if value is not None and re.fullmatch(rb"[(\s\d,)]+", value.text) and numbers:
                product = 1
                for number in numbers:
                    product *= int(number)
                return str(product)
    return None


def _declared_in(scope, name: str) -> bool:
    return scope is not None and any(n.type == "init_declarator" and n.child_by_field_name(
        "declarator").text == name.encode() for n in walk(scope))


# ---------------------------------------------------------------------------- __ldg


def insert_read_only_cache(parsed: Parsed, params: dict) -> Inserted | Refused:
    splice, sites, why = Splice(parsed.data), [], Refusals(parsed)
    for kernel in (f for f in function_definitions(parsed.root) if is_cuda_kernel(f)):
        read_only = _const_restrict_params(kernel)
        if not read_only:
            why.add(kernel, f"{function_name(kernel)} has no const __restrict__ pointer parameter "
                            "(restrict comes first: __ldg needs the no-alias promise)")
            continue
        before = len(sites)
        for load in (n for n in walk(kernel) if n.type == "subscript_expression"):
            base = load.child_by_field_name("argument")
            if base is not None and base.text.decode() in read_only and _is_rvalue(load):
                splice.replace(load.start_byte, load.end_byte, f"__ldg(&{parsed.text_of(load)})")
                sites.append(load)
        if len(sites) == before:
            why.add(kernel, f"{function_name(kernel)} reads its const __restrict__ pointers "
                            f"({', '.join(sorted(read_only))}) through no subscript")
    return _result(parsed, splice, sites, why.refused("no __global__ kernel"))


def _const_restrict_params(kernel) -> set[str]:
    """The kernel's const __restrict__ pointer parameters, and the const pointer locals set once
    to one of them plus an offset (``const float* xr = x + row * N``): the no-alias promise
    holds for what is derived from the pointer, so their loads may take the read-only path."""
    names = set()
    for parameter in (n for n in walk(kernel) if n.type == "parameter_declaration"):
        pointer = parameter.child_by_field_name("declarator")
        const = any(c.type == "type_qualifier" and c.text == b"const" for c in parameter.children)
        if const and pointer is not None and pointer.type == "pointer_declarator" and any(
                c.type == "type_qualifier" and c.text in RESTRICT_WORDS for c in pointer.children):
            names.add(pointer.child_by_field_name("declarator").text.decode())
    assigned = {t.text for _, t in writes(kernel) if t is not None and t.type == "identifier"}
    for declaration in (n for n in walk(kernel) if n.type == "declaration"):
        if not any(c.type == "type_qualifier" and c.text == b"const" for c in declaration.children):
            continue
        for declarator in declaration.children_by_field_name("declarator"):
            pointer = declarator.child_by_field_name("declarator") \
                if declarator.type == "init_declarator" else None
            value = declarator.child_by_field_name("value") if pointer is not None else None
            if pointer is None or pointer.type != "pointer_declarator" or value is None:
                continue
            name = pointer.child_by_field_name("declarator")
            base = re.match(rb"\s*(\w+)\s*\+", value.text or b"")
            if name.type == "identifier" and name.text not in assigned and base \
                    and base.group(1).decode() in names:
                names.add(name.text.decode())
    return names


def _is_rvalue(node) -> bool:
    parent = node.parent
    if parent.type == "assignment_expression" and parent.child_by_field_name("left") == node:
        return False
    return parent.type not in ("update_expression", "pointer_expression", "call_expression")


# ---------------------------------------------------------------------------- fast math

_TO_FAST = {"expf": "__expf", "logf": "__logf", "sinf": "__sinf", "cosf": "__cosf"}


def insert_fast_math(parsed: Parsed, params: dict) -> Inserted | Refused:
    splice, sites = Splice(parsed.data), []
    for function in (f for f in function_definitions(parsed.root) if is_device_code(f)):
        for call in calls(function, "|".join(_TO_FAST)):
            callee = call.child_by_field_name("function")
            splice.replace(callee.start_byte, callee.end_byte, _TO_FAST[callee_name(call)])
            sites.append(call)
        for division in (n for n in walk(function) if n.type == "binary_expression"):
            left, right = division.child_by_field_name("left"), division.child_by_field_name("right")
            if division.child_by_field_name("operator").text == b"/" and left.text in (b"1.0f", b"1.f") \
                    and right.type == "call_expression" and callee_name(right) == "sqrtf":
                argument = right.child_by_field_name("arguments")
                splice.replace(division.start_byte, division.end_byte, f"rsqrtf{parsed.text_of(argument)}")
                sites.append(division)
    return _result(parsed, splice, sites, "no expf/logf/sinf/cosf call or 1.0f / sqrtf(x) in device code")


# ---------------------------------------------------------------------------- padding


def insert_smem_padding(parsed: Parsed, params: dict) -> Inserted | Refused:
    pad = int(params.get("pad", 1))
    splice, sites = Splice(parsed.data), []
    for declaration in shared_arrays(parsed):
        element = declaration.child_by_field_name("type").text
        for declarator in declaration.children_by_field_name("declarator"):
            dims = array_dims(declarator)
            if element in (b"float", b"int", b"unsigned") and len(dims) == 2 and dims[-1] is not None \
                    and not re.search(rb"\+\s*\d+$", dims[-1].text):
                splice.replace(dims[-1].end_byte, dims[-1].end_byte, f" + {pad}")
                sites.append(dims[-1])
    return _result(parsed, splice, sites, "no unpadded 2-D __shared__ array of 4-byte elements",
                   pad=pad)
