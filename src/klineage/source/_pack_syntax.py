"""Syntax the packing passes read: counted loops, names and their declarations, element reads,
and indices as sums of terms in the counters (``linear_terms``: a counter times counter-free
factors, or counter-free; a counter anywhere else, in a division, a call or a product of two
counters, makes the index not affine)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from klineage.source._blocking_nest import compared_bound, declared
from klineage.source._insert_blocking import _counter_type
from klineage.source.parse import ancestors, parse, walk

__all__ = ["Loop", "address_taken", "base_name", "counted", "declarations", "declared_at", "declared_name",
           "element_type",
           "expression", "index_of", "input_cast", "linear_terms", "outermost_parens", "parens", "root_name",
           "steps", "targets", "unwrap", "value_of", "write_target", "written_names"]

_INPUT = re.compile(r"^(?:static_cast<|reinterpret_cast<|\()\s*(const\s+)?[\w:]+(\s+const)?\s*\*\s*[>)]\s*"
                    r"\(?\s*inputs\s*\[\s*\d+\s*\]\s*\)?$")
_WRAPPERS = ("parenthesized_expression", "cast_expression")


@dataclass(frozen=True)
class Loop:
    """A counted loop: ``for (T name = low; name < high; name++)`` (the increment may step other
    names beside the counter; the body never writes the counter)."""
    node: object
    name: str
    low: str
    high: str
    type: str


def counted(loop) -> Loop | None:
    if loop.type != "for_statement":
        return None
    counter = declared(loop)
    bound = compared_bound(loop, counter[0]) if counter else None
    update = loop.child_by_field_name("update")
    if bound is None or update is None:
        return None
    parts = update.named_children if update.type == "comma_expression" else [update]
    stepping = [p for p in parts if steps(p, counter[0])]
    others = [p for p in parts if p not in stepping]
    if len(stepping) != 1 or any(counter[0] in written_names(p) for p in others):
        return None
    if counter[0] in written_names(loop.child_by_field_name("body")):
        return None
    return Loop(loop, counter[0], counter[1].text.decode(), bound.text.decode(), _counter_type(loop))


def steps(node, name: str) -> bool:
    """``node`` is ``name++``, ``++name`` or ``name += 1``."""
    return re.sub(r"\s", "", node.text.decode()) in (f"{name}++", f"++{name}", f"{name}+=1")


def written_names(node) -> set[str]:
    return {root_name(t) for t in targets(node)} - {None}


def targets(node) -> list:
    found = []
    for n in walk(node):
        if n.type == "assignment_expression":
            found.append(n.child_by_field_name("left"))
        elif n.type == "update_expression":
            found.append(n.child_by_field_name("argument"))
    return found


def root_name(node) -> str | None:
    """The name under subscripts, fields, dereferences and parentheses: ``B`` of ``B[i].x``."""
    while node is not None and node.type in ("subscript_expression", "field_expression",
                                             "pointer_expression", *_WRAPPERS):
        key = {"subscript_expression": "argument", "field_expression": "argument",
               "pointer_expression": "argument", "cast_expression": "value"}.get(node.type)
        node = node.child_by_field_name(key) if key else next(iter(node.named_children), None)
    return node.text.decode() if node is not None and node.type == "identifier" else None


def write_target(node) -> bool:
    """``node`` is assigned or incremented."""
    node = outermost_parens(node)
    parent = node.parent
    if parent is None:
        return False
    if parent.type == "assignment_expression":
        return parent.child_by_field_name("left") == node
    return parent.type == "update_expression"


def address_taken(node) -> bool:
    parent = outermost_parens(node).parent
    return parent is not None and parent.type == "pointer_expression" and parent.children[0].type == "&"


def outermost_parens(node):
    while node.parent is not None and node.parent.type == "parenthesized_expression":
        node = node.parent
    return node


# ---------------------------------------------------------------------------- expressions


def expression(text: str, language: str):
    """``text`` parsed as one expression (its node), or None where it does not parse."""
    parsed = parse(f"void kl_e(void) {{ kl_e = ({text.strip()}); }}\n", language)
    if any(n.type == "ERROR" for n in walk(parsed.root)):
        return None
    assignment = next(n for n in walk(parsed.root) if n.type == "assignment_expression")
    return assignment.child_by_field_name("right").named_children[0]


def parens(node):
    """``node`` without the parentheses around it."""
    while node is not None and node.type == "parenthesized_expression" and node.named_children:
        node = node.named_children[0]
    return node


def unwrap(node):
    while node is not None and node.type in _WRAPPERS:
        node = node.child_by_field_name("value") if node.type == "cast_expression" \
            else next(iter(node.named_children), None)
    return node


def index_of(subscript):
    index = subscript.child_by_field_name("index")
    if index is None:  # tree-sitter-cuda nests the index in subscript_argument_list
        arguments = next((c for c in subscript.named_children if c.type == "subscript_argument_list"), None)
        index = next(iter(arguments.named_children), None) if arguments is not None else None
    return index


def linear_terms(node, counters: set[str]) -> list[tuple[str | None, list[str], int]] | None:
    """The index as (counter or None, its counter-free factors, sign) terms; None when a counter
    appears other than as a term times counter-free factors."""
    node = unwrap(node)
    names = {n.text.decode() for n in walk(node) if n.type == "identifier"} & counters
    if not names:
        return [(None, [node.text.decode()], 1)]
    if node.type == "identifier":
        return [(node.text.decode(), [], 1)]
    if node.type == "unary_expression" and node.children[0].type in ("-", "+"):
        inner = linear_terms(node.child_by_field_name("argument"), counters)
        sign = -1 if node.children[0].type == "-" else 1
        return None if inner is None else [(c, f, s * sign) for c, f, s in inner]
    if node.type != "binary_expression":
        return None
    operator = node.child_by_field_name("operator").type
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    if operator in ("+", "-"):
        a, b = linear_terms(left, counters), linear_terms(right, counters)
        if a is None or b is None:
            return None
        return a + [(c, f, s * (-1 if operator == "-" else 1)) for c, f, s in b]
    if operator == "*":
        for scaled, factor in ((left, right), (right, left)):
            if not {n.text.decode() for n in walk(factor) if n.type == "identifier"} & counters:
                terms = linear_terms(scaled, counters)
                return None if terms is None else [(c, [*f, factor.text.decode()], s) for c, f, s in terms]
    return None


# ---------------------------------------------------------------------------- declarations


def declarations(function, name: str) -> list:
    """The declarations and parameters of ``function`` (lambdas included) that declare ``name``."""
    found = []
    for node in walk(function):
        if node.type in ("declaration", "parameter_declaration", "field_declaration"):
            for declarator in node.children_by_field_name("declarator"):
                if declared_name(declarator) == name:
                    found.append(node)
    return found


def declared_at(node, name: str):
    """The declaration (or parameter) of ``name`` in scope at ``node``: the nearest enclosing
    block's last one before it, a loop header's, or the function's parameter."""
    child = node
    for scope in ancestors(node):
        if scope.type == "compound_statement":
            found = [s for s in scope.named_children if s.type == "declaration"
                     and s.end_byte <= child.start_byte and _declares(s, name)]
            if found:
                return found[-1]
        elif scope.type in ("for_statement", "function_definition", "lambda_expression"):
            headers = [scope.child_by_field_name("initializer")] if scope.type == "for_statement" \
                else [n for n in walk(scope.child_by_field_name("declarator"))
                      if n.type == "parameter_declaration"]
            for header in (h for h in headers if h is not None and h != child):
                if _declares(header, name):
                    return header
            if scope.type == "function_definition":
                return None
        child = scope
    return None


def _declares(declaration, name: str) -> bool:
    return any(declared_name(d) == name for d in declaration.children_by_field_name("declarator"))


def declared_name(declarator) -> str | None:
    while declarator is not None and declarator.type not in ("identifier", "field_identifier"):
        declarator = declarator.child_by_field_name("declarator")
    return declarator.text.decode() if declarator is not None else None


def _declarator_of(declaration, name: str):
    return next(d for d in declaration.children_by_field_name("declarator") if declared_name(d) == name)


def value_of(declaration, name: str):
    declarator = _declarator_of(declaration, name)
    return declarator.child_by_field_name("value") if declarator.type == "init_declarator" else None


def base_name(text: str) -> str | None:
    return text if re.fullmatch(r"[A-Za-z_]\w*", text) else None


def input_cast(text: str) -> bool:
    """``(const T*)inputs[k]`` or ``static_cast<const T*>(inputs[k])``: a kl_launch input buffer."""
    return bool(_INPUT.match(re.sub(r"\s+", " ", text.strip())))


def element_type(function, base: str) -> str | None:
    """The type of one element of ``base`` (const and restrict dropped): ``float`` for ``const
    float* B`` or ``static_cast<const float*>(...)``."""
    name = base_name(base)
    if name is None:
        return _cast_pointee(base)
    found = declarations(function, name)
    if len(found) != 1:
        return None
    declaration = found[0]
    declarator = _declarator_of(declaration, name)
    pointer = declarator.child_by_field_name("declarator") if declarator.type == "init_declarator" \
        else declarator
    if pointer is None or pointer.type != "pointer_declarator" \
            or pointer.child_by_field_name("declarator").type != "identifier":
        return None
    kind = declaration.child_by_field_name("type").text.decode()
    if kind == "auto":
        value = value_of(declaration, name)
        return _cast_pointee(value.text.decode()) if value is not None else None
    return kind if re.fullmatch(r"[\w:]+", kind) else None


def _cast_pointee(text: str) -> str | None:
    found = re.match(r"^\(?\s*(?:static_cast<|reinterpret_cast<|\()\s*(?:const\s+)?([\w:]+)(?:\s+const)?"
                     r"\s*\*\s*[>)]", text.strip())
    return found.group(1) if found else None
