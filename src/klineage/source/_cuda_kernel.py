"""What the CUDA passes read off a kernel: its parameters and single-assignment locals, the
global thread index, the flat one-element-per-thread shape, and small expression helpers.
Shared by vectorized access, grid-stride loops and warp-shuffle reductions."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from klineage.source._insert_qualifiers import Refused
from klineage.source.parse import Parsed, callee_name, walk, writes

VECTOR_BYTES = 16
INTEGER_TYPES = {"int", "int64_t", "int32_t", "long", "size_t", "unsigned", "uint32_t", "uint64_t",
                 "long long", "unsigned int", "unsigned long", "unsigned long long", "ptrdiff_t"}
EXITS = ("break_statement", "return_statement", "goto_statement")


@dataclass
class KernelFacts:
    node: object
    params: list[tuple[str, str]]
    """(name, 'int' | 'ptr:<element>' | other) in order."""
    locals_: dict[str, object]
    """Single-assignment locals: name -> initializer node."""
    needs: set[str] = field(default_factory=set)
    aligned: set[str] = field(default_factory=set)
    width: int = 1
    vector_bytes: int = VECTOR_BYTES
    flat: bool = False
    """One chunk per thread: the launch divides its grid by ``width``."""


def uncast(node):
    while node.type in ("cast_expression", "parenthesized_expression"):
        node = node.named_children[-1]
    return node


def read_kernel(function) -> KernelFacts:
    params = []
    declarator = function.child_by_field_name("declarator")
    while declarator is not None and declarator.type != "function_declarator":
        declarator = declarator.child_by_field_name("declarator")
    for param in declarator.child_by_field_name("parameters").named_children:
        kind, name = declared_kind(param)
        params.append((name, kind))
    assigned = {target.text.decode() for _, target in writes(function)
                if target is not None and target.type == "identifier"}
    locals_, counts = {}, {}
    for node in walk(function.child_by_field_name("body")):
        if node.type == "init_declarator":
            name = innermost_name(node.child_by_field_name("declarator"))
            counts[name] = counts.get(name, 0) + 1
            if name not in assigned:
                locals_[name] = node
    return KernelFacts(function, params, {n: v for n, v in locals_.items() if counts[n] == 1})


def declared_kind(declaration) -> tuple[str, str]:
    """('int' | 'ptr:<element>' | 'other', name) for a parameter or declaration."""
    base = re.sub(r"\s+", " ", declaration.child_by_field_name("type").text.decode())
    declarator = declaration.child_by_field_name("declarator")
    if declarator is not None and declarator.type == "init_declarator":
        declarator = declarator.child_by_field_name("declarator")
    name = innermost_name(declarator)
    if declarator is not None and declarator.type == "pointer_declarator" \
            and declarator.child_by_field_name("declarator").type == "identifier":
        return f"ptr:{base}", name
    if declarator is not None and declarator.type == "identifier" and base in INTEGER_TYPES:
        return "int", name
    return "other", name


def innermost_name(declarator) -> str:
    while declarator is not None and declarator.type != "identifier":
        declarator = declarator.child_by_field_name("declarator")
    return declarator.text.decode() if declarator is not None else ""


def param_kind(kernel: KernelFacts, name: str) -> str | None:
    return next((kind for n, kind in kernel.params if n == name), None)


def declaration_kind(init_declarator) -> str:
    return declared_kind(init_declarator.parent)[0] if init_declarator.parent.type == "declaration" else ""


def plus_terms(node) -> list:
    """The summands of a chain of '+' (parentheses and all)."""
    while node.type == "parenthesized_expression":
        node = node.named_children[0]
    if node.type == "binary_expression" and node.child_by_field_name("operator").type == "+":
        return plus_terms(node.child_by_field_name("left")) + plus_terms(node.child_by_field_name("right"))
    return [node]


@dataclass
class LoopFacts:
    """A unit-stride loop, or a flat kernel's one element per thread (``owner`` its guard)."""
    node: object
    counter: str
    counter_type: str
    start: str
    stride: str
    bound: object
    body: object
    owner: object
    """What the body's unconditional statements belong to (the loop, the guard, the kernel)."""
    guard: object = None
    """A flat kernel's bounds check (None for a loop)."""


INTEGER_CAST = re.compile(r"\((?:const\s+)?(?:unsigned\s+|signed\s+)?(?:long\s+long|long|int|short|"
                          r"int64_t|int32_t|uint64_t|uint32_t|size_t|ptrdiff_t|unsigned)\)")


GLOBAL_INDEX = {f"{a}+{b}" for product in ("blockIdx.x*blockDim.x", "blockDim.x*blockIdx.x")
                for a, b in ((product, "threadIdx.x"), ("threadIdx.x", product))}


def plain_index(text: str) -> str:
    """An index expression without integer casts, parentheses and spaces: the form compared."""
    return re.sub(r"[\s()]", "", INTEGER_CAST.sub("", text))


def is_global_index(node) -> bool:
    """``blockIdx.x * blockDim.x + threadIdx.x`` in any order, with integer casts: the index
    that enumerates 0 .. gridDim.x * blockDim.x - 1, one per thread."""
    return plain_index(node.text.decode()) in GLOBAL_INDEX


def chain_operands(node, operator: str) -> list:
    """The operands of a chain of ``operator`` (``&&`` or ``||``), parentheses dropped."""
    while node.type == "parenthesized_expression":
        node = node.named_children[0]
    if node.type == "binary_expression" and node.child_by_field_name("operator").type == operator:
        return (chain_operands(node.child_by_field_name("left"), operator)
                + chain_operands(node.child_by_field_name("right"), operator))
    return [node]


def mentions_of(node, name: str) -> list:
    return [n for n in walk(node) if n.type == "identifier" and n.text.decode() == name]


def flat_shape(kernel: KernelFacts, loops_ok: bool = False) -> LoopFacts | Refused:
    """The flat kernel: declarations, ``T i = <global index>;``, then ``if (i < BOUND [&& ...])
    BODY`` as the last statement, or ``if (i >= BOUND [|| ...]) return;`` and BODY after it.
    BODY may hold loops only with ``loops_ok`` (the grid-stride insertion keeps them as they are)."""
    body = kernel.node.child_by_field_name("body")
    statements = [c for c in body.named_children if c.type != "comment"]
    at = next((k for k, st in enumerate(statements) if st.type == "declaration" and any(
        d.type == "init_declarator" and is_global_index(d.child_by_field_name("value"))
        for d in st.children_by_field_name("declarator"))), None)
    if at is None:
        return Refused("no local set to blockIdx.x * blockDim.x + threadIdx.x")
    declaration = statements[at]
    declarators = declaration.children_by_field_name("declarator")
    if len(declarators) != 1:
        return Refused("the global index shares its declaration with other names")
    index = innermost_name(declarators[0])
    if any(mentions_of(st, index) for st in statements[:at]) or mentions_of(declaration.child_by_field_name(
            "type"), index):
        return Refused(f"{index} is used before it is set")
    check = at + 1  # other coordinates may come first ('int row = blockIdx.y * ...;')
    while check < len(statements) and statements[check].type == "declaration" \
            and not mentions_of(statements[check], index):
        check += 1
    if check >= len(statements) or statements[check].type != "if_statement":
        return Refused(f"the first statement after {index} that is not a declaration without it is "
                       "not its bounds check")
    guard = statements[check]
    condition = guard.child_by_field_name("condition")
    condition = condition.named_children[0] if condition.type == "condition_clause" else condition
    consequence = guard.child_by_field_name("consequence")
    early = consequence.type == "return_statement" or (
        consequence.type == "compound_statement" and [c.type for c in consequence.named_children]
        == ["return_statement"])
    if guard.child_by_field_name("alternative") is not None:
        return Refused("the bounds check has an else branch")
    if early:
        bound = bound_test(chain_operands(condition, "||"), index, (">=",), "<=")
        work, owner = body, kernel.node
        rest = statements[check + 1:]
    else:
        bound = bound_test(chain_operands(condition, "&&"), index, ("<",), ">")
        work, owner, rest = consequence, guard, []
        if statements[check + 1:]:
            return Refused("statements follow the bounds-checked block")
    if isinstance(bound, Refused):
        return bound
    counter_type = re.sub(r"\s+", " ", declaration.child_by_field_name("type").text.decode())
    counter_type = re.sub(r"^const ", "", counter_type)
    scope = rest if early else [consequence]
    for statement in scope:
        for node in walk(statement):
            if node.type in EXITS:
                return Refused("the body has a break, return or goto")
            if node.type == "call_expression" and callee_name(node) == "__syncthreads":
                return Refused("the body has a __syncthreads()")
            if node.type in ("for_statement", "while_statement", "do_statement") and not loops_ok:
                return Refused("the body holds a loop")
        if any(t is not None and t.text.decode() == index for _, t in writes(statement)):
            return Refused(f"the body assigns {index}")
    if early and not rest:
        return Refused("nothing follows the bounds check")
    start = declarators[0].child_by_field_name("value").text.decode()
    return LoopFacts(declaration, index, counter_type, start, "1", bound, work, owner, guard)


def bound_test(operands: list, index: str, operators: tuple, flipped: str):
    """The BOUND of the one operand ``index < BOUND`` (or its mirror); the others must not
    name the index."""
    tests = [o for o in operands if mentions_of(o, index)]
    if len(tests) != 1 or tests[0].type != "binary_expression":
        return Refused(f"the bounds check does not compare {index} once, alone, with a bound")
    test = tests[0]
    operator = test.child_by_field_name("operator").type
    left, right = test.child_by_field_name("left"), test.child_by_field_name("right")
    if operator in operators and left.type == "identifier" and left.text.decode() == index:
        return right
    if operator == flipped and right.type == "identifier" and right.text.decode() == index:
        return left
    return Refused(f"the bounds check is not {index} {operators[0]} BOUND")


def indent_of(parsed: Parsed, node) -> str:
    line_start = parsed.data.rfind(b"\n", 0, node.start_byte) + 1
    prefix = parsed.data[line_start:node.start_byte].decode()
    return prefix if not prefix.strip() else " " * len(prefix)
