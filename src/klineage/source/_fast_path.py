"""A CUDA fast path selected at launch: ``if (guard) fast<<<...>>>(...) else general<<<...>>>(...)``.

Removing it keeps the general branch: every ``if (guard)`` with an else and every
``guard ? a : b`` becomes its general side, the guard's declaration goes, and so do the fast
kernels and the helpers nothing else calls any more. Detection uses the same analysis to know
which hits live only on the fast path.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from klineage.source.parse import (
    Parsed,
    ancestors,
    function_definitions,
    function_name,
    is_cuda_kernel,
    walk,
)


@dataclass
class FastPath:
    guard: str
    """The guard's text (e.g. 'vec_ok')."""
    branches: list = field(default_factory=list)
    """(if_statement or conditional_expression, the general-side node) pairs."""
    guard_declaration: object = None
    removed_functions: list = field(default_factory=list)
    """Definition nodes (template_declaration when templated) only the fast path used."""

    def regions(self) -> list[tuple[int, int]]:
        """Byte spans of code that goes away (fast branches, fast kernels, their helpers)."""
        spans = [(f.start_byte, f.end_byte) for f in self.removed_functions]
        for statement, general in self.branches:
            spans.append((statement.start_byte, general.start_byte))
        if self.guard_declaration is not None:
            spans.append((self.guard_declaration.start_byte, self.guard_declaration.end_byte))
        return spans

    def kernel_names(self) -> list[str]:
        return [function_name(_function_of(f)) for f in self.removed_functions]


def find_fast_path(parsed: Parsed) -> FastPath | None:
    """The first launch-time fast path in host code, or None."""
    definitions = {function_name(f): _definition_node(f) for f in function_definitions(parsed.root)}
    kernels = {name for name, node in definitions.items() if is_cuda_kernel(_function_of(node))}
    for statement in (n for n in walk(parsed.root) if n.type == "if_statement"):
        alternative = statement.child_by_field_name("alternative")
        if alternative is None:
            continue
        fast = _names(statement.child_by_field_name("consequence")) & kernels
        general = _names(alternative) & kernels
        if general and fast - general:
            return _complete(parsed, statement, definitions, kernels)
    return None


def _complete(parsed: Parsed, first, definitions: dict, kernels: set[str]) -> FastPath:
    condition = _condition(first)
    path = FastPath(guard=condition.text.decode())
    scope = next(a for a in ancestors(first) if a.type == "function_definition")
    for node in walk(scope):
        if node.type == "if_statement" and node.child_by_field_name("alternative") is not None \
                and _condition(node).text == condition.text:
            path.branches.append((node, _else_body(node)))
        elif node.type == "conditional_expression" \
                and node.child_by_field_name("condition").text == condition.text:
            path.branches.append((node, node.child_by_field_name("alternative")))
    if condition.type == "identifier":
        path.guard_declaration = _declaration_of(scope, path.guard)
    removed_spans = path.regions()
    fast = set()
    for statement, general in path.branches:
        fast |= (_names_in_span(statement, statement.start_byte, general.start_byte) & kernels) \
            - _names(general)
    path.removed_functions = _unreferenced_closure(parsed, definitions, fast, removed_spans)
    return path


def _unreferenced_closure(parsed: Parsed, definitions: dict, seeds: set[str], spans: list) -> list:
    """The seed functions plus every function that is referenced only from removed code."""
    removed = {name: definitions[name] for name in seeds if name in definitions}
    while True:
        dead = [(n.start_byte, n.end_byte) for n in removed.values()] + spans
        live_refs = {
            node.text.decode() for node in walk(parsed.root)
            if node.type == "identifier" and not any(s <= node.start_byte < e for s, e in dead)
            and not _is_own_name(node)
        }
        more = {name: node for name, node in definitions.items()
                if name not in removed and name != "kl_launch" and name not in live_refs
                and _referenced_in(parsed, name, dead)}
        if not more:
            return sorted(removed.values(), key=lambda n: n.start_byte)
        removed.update(more)


def _referenced_in(parsed: Parsed, name: str, spans: list) -> bool:
    return any(node.type == "identifier" and node.text.decode() == name
               and any(s <= node.start_byte < e for s, e in spans) and not _is_own_name(node)
               for node in walk(parsed.root))


def _is_own_name(identifier) -> bool:
    parent = identifier.parent
    return parent is not None and parent.type == "function_declarator" \
        and parent.child_by_field_name("declarator") == identifier


def _condition(statement):
    clause = statement.child_by_field_name("condition")
    value = clause.child_by_field_name("value") if clause is not None else None
    return value if value is not None else clause.named_children[0]


def _else_body(statement):
    clause = statement.child_by_field_name("alternative")
    return clause.named_children[-1] if clause.type == "else_clause" else clause


def _declaration_of(scope, name: str):
    for node in walk(scope):
        if node.type == "declaration":
            for declarator in node.children_by_field_name("declarator"):
                target = declarator.child_by_field_name("declarator") or declarator
                if target.text.decode() == name:
                    return node
    return None


def _names(node) -> set[str]:
    return {n.text.decode() for n in walk(node) if n.type == "identifier"} if node is not None else set()


def _names_in_span(node, start: int, end: int) -> set[str]:
    return {n.text.decode() for n in walk(node) if n.type == "identifier" and start <= n.start_byte < end}


def _definition_node(function):
    parent = function.parent
    return parent if parent is not None and parent.type == "template_declaration" else function


def _function_of(definition):
    if definition.type == "template_declaration":
        return next(c for c in definition.named_children if c.type == "function_definition")
    return definition
