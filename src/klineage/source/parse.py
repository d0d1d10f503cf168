"""Parsing C, C++ and CUDA with the tree-sitter-cuda grammar (it parses C and C++ too).

One grammar gap is patched before parsing: ``__align__(n)`` becomes ``alignas  (n)``, padded with
spaces to the same length, so every byte offset of the tree is also an offset of the original text
and edits apply to the original without any mapping.

Everything here works on bytes (tree-sitter's offsets are byte offsets); ``Parsed.text_of`` and
``Parsed.site`` decode for people.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache

from klineage.source.model import Site

__all__ = [
    "LANGUAGES", "Parsed", "Splice", "ancestors", "callee_name", "calls", "enclosing_function",
    "for_loops", "function_definitions", "function_name", "is_cuda_kernel", "line_bounds", "parse",
    "pragma_text", "pragmas", "sole_loop", "walk", "writes",
]

LANGUAGES = ("c", "cpp", "cuda")
_ALIGN_FROM, _ALIGN_TO = b"__align__(", b"alignas  ("  # same length: offsets stay valid


@cache
def _parser():  # -> tree_sitter.Parser
    import tree_sitter
    import tree_sitter_cuda

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_cuda.language()))


@dataclass(frozen=True)
class Parsed:
    """A parsed source: the original bytes, its tree, and the language it was parsed as."""

    data: bytes
    tree: object  # tree_sitter.Tree
    language: str

    @property
    def root(self):
        return self.tree.root_node

    @property
    def text(self) -> str:
        return self.data.decode()

    def text_of(self, node_or_span) -> str:
        start, end = _span(node_or_span)
        return self.data[start:end].decode(errors="replace")

    def site(self, node_or_span, scope_node=None) -> Site:
        """The Site of a node (or a (start, end) byte span), named by its enclosing function."""
        start, end = _span(node_or_span)
        anchor = scope_node if scope_node is not None else _node_at(self, start)
        return Site(
            start_line=self.data.count(b"\n", 0, start) + 1,
            end_line=self.data.count(b"\n", 0, max(start, end - 1)) + 1,
            start_byte=start,
            end_byte=end,
            text=self.data[start:end].decode(errors="replace"),
            scope=enclosing_function(anchor) if anchor is not None else "",
        )


def parse(text: str, language: str) -> Parsed:
    """Parse ``text`` as C, C++ or CUDA."""
    if language not in LANGUAGES:
        raise ValueError(f"the source model parses {', '.join(LANGUAGES)}, not {language!r}")
    data = text.encode()
    return Parsed(data, _parser().parse(data.replace(_ALIGN_FROM, _ALIGN_TO)), language)


def _span(node_or_span) -> tuple[int, int]:
    if isinstance(node_or_span, tuple):
        return node_or_span
    return node_or_span.start_byte, node_or_span.end_byte


def _node_at(parsed: Parsed, offset: int):
    return parsed.root.descendant_for_byte_range(offset, offset)


# ---------------------------------------------------------------------------- walking


def walk(node) -> Iterator:
    """Every node under ``node`` (itself included), in source order."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))


def writes(node) -> Iterator[tuple]:
    """(expression, target) for every assignment and increment under ``node``."""
    for found in walk(node):
        if found.type == "assignment_expression":
            yield found, found.child_by_field_name("left")
        elif found.type == "update_expression":
            yield found, found.child_by_field_name("argument")


def ancestors(node) -> Iterator:
    parent = node.parent
    while parent is not None:
        yield parent
        parent = parent.parent


def function_definitions(root) -> list:
    """Every function definition, including those inside namespaces, extern "C" and templates."""
    return [n for n in walk(root) if n.type == "function_definition"]


def function_name(function) -> str:
    declarator = function.child_by_field_name("declarator")
    while declarator is not None and declarator.type != "function_declarator":
        declarator = declarator.child_by_field_name("declarator")
    if declarator is None:
        return ""
    name = declarator.child_by_field_name("declarator")
    return name.text.decode() if name is not None else ""


def enclosing_function(node) -> str:
    for parent in (node, *ancestors(node)):
        if parent.type == "function_definition":
            return function_name(parent)
    return ""


def enclosing_function_node(node):
    return next((p for p in ancestors(node) if p.type == "function_definition"), None)


def is_cuda_kernel(function) -> bool:
    """A ``__global__`` function."""
    return any(child.type == "__global__" or child.text == b"__global__" for child in function.children)


def for_loops(node) -> list:
    return [n for n in walk(node) if n.type == "for_statement"]


def innermost(loops: Iterable) -> list:
    """The loops of ``loops`` that contain no other for-loop."""
    return [loop for loop in loops if not any(n.type == "for_statement" for n in walk(loop) if n != loop)]


def loop_depth(loop) -> int:
    """1 + the deepest for-loop nesting below ``loop``."""
    inner = [n for n in loop.children if n.type != "for_statement"]
    deepest = 0
    for child in inner:
        for node in walk(child):
            if node.type == "for_statement" and _nearest_loop(node) == loop:
                deepest = max(deepest, loop_depth(node))
    return 1 + deepest


def sole_loop(outer, skipped: tuple[str, ...] = ("comment",)):
    """The for loop that is the whole body of ``outer`` (statements of the ``skipped`` kinds
    aside), or None: the inner loop of a perfect nest."""
    body = outer.child_by_field_name("body")
    if body is not None and body.type == "compound_statement":
        statements = [c for c in body.named_children if c.type not in skipped]
        body = statements[0] if len(statements) == 1 else None
    return body if body is not None and body.type == "for_statement" else None


def _nearest_loop(node):
    return next((p for p in ancestors(node) if p.type == "for_statement"), None)


# ---------------------------------------------------------------------------- preprocessor


def pragmas(root) -> list:
    """``#pragma`` lines (tree-sitter: preproc_call with directive #pragma)."""
    found = []
    for node in walk(root):
        if node.type == "preproc_call":
            directive = node.child_by_field_name("directive")
            if directive is not None and directive.text.strip() == b"#pragma":
                found.append(node)
    return found


def pragma_text(node) -> str:
    """The pragma's argument, whitespace-normalised: 'omp parallel for schedule(static)'."""
    argument = node.child_by_field_name("argument")
    return " ".join(argument.text.decode().split()) if argument is not None else ""


CONDITIONALS = ("preproc_if", "preproc_ifdef")
BRANCHES = ("preproc_elif", "preproc_else", "preproc_elifdef")


def conditional_conditions(node) -> list[str | None]:
    """The condition of each branch of an #if/#ifdef chain, None for #else ('defined(X)' for #ifdef)."""
    conditions: list[str | None] = []
    current = node
    while current is not None:
        if current.type in ("preproc_ifdef", "preproc_elifdef"):
            name = current.child_by_field_name("name")
            negate = current.children[0].text.strip().endswith(b"ndef")
            conditions.append(f"{'!' if negate else ''}defined({name.text.decode() if name else ''})")
        elif current.type == "preproc_else":
            conditions.append(None)
        else:
            condition = current.child_by_field_name("condition")
            conditions.append(condition.text.decode() if condition is not None else "")
        current = current.child_by_field_name("alternative")
    return conditions


def else_body_span(data: bytes, node) -> tuple[int, int] | None:
    """The whole lines between ``#else`` and ``#endif`` of a conditional chain, if it has an #else."""
    current = node
    while current is not None and current.type != "preproc_else":
        current = current.child_by_field_name("alternative")
    if current is None:
        return None
    else_token, endif_token = current.children[0], node.children[-1]
    return line_bounds(data, else_token.start_byte, else_token.end_byte)[1], \
        line_bounds(data, endif_token.start_byte, endif_token.end_byte)[0]


# ---------------------------------------------------------------------------- calls


def callee_name(call) -> str:
    function = call.child_by_field_name("function")
    if function is None:
        return ""
    if function.type == "template_function":
        function = function.child_by_field_name("name") or function
    return function.text.decode()


def calls(root, pattern: str | None = None) -> list:
    """Call expressions, optionally only those whose callee matches the regex ``pattern``."""
    regex = re.compile(pattern) if pattern else None
    return [n for n in walk(root) if n.type == "call_expression"
            and (regex is None or regex.fullmatch(callee_name(n)))]


# ---------------------------------------------------------------------------- rewriting


def line_bounds(data: bytes, start: int, end: int) -> tuple[int, int]:
    """The span of the whole lines that hold [start, end), trailing newline included."""
    line_start = data.rfind(b"\n", 0, start) + 1
    line_end = data.find(b"\n", max(start, end - 1) if end > start else start)
    return line_start, len(data) if line_end < 0 else line_end + 1


def owns_its_lines(data: bytes, start: int, end: int) -> bool:
    """Nothing but whitespace shares the lines of [start, end)."""
    line_start, line_end = line_bounds(data, start, end)
    return not data[line_start:start].strip() and not data[end:line_end].strip()


class Splice:
    """Non-overlapping byte-span replacements, applied together."""

    def __init__(self, data: bytes):
        self.data = data
        self.changes: list[tuple[int, int, bytes]] = []

    def replace(self, start: int, end: int, new: str | bytes) -> None:
        self.changes.append((start, end, new.encode() if isinstance(new, str) else new))

    def delete(self, start: int, end: int) -> None:
        self.replace(start, end, b"")

    def delete_lines(self, start: int, end: int) -> None:
        """Delete [start, end) with its whole lines when nothing else is on them."""
        if owns_its_lines(self.data, start, end):
            self.delete(*line_bounds(self.data, start, end))
        else:
            self.delete(start, end)

    def apply(self) -> str:
        out, cursor = [], 0
        for start, end, new in sorted(set(self.changes)):
            if start < cursor:
                continue  # nested in a change already made (e.g. a site inside a deleted block)
            out += [self.data[cursor:start], new]
            cursor = end
        out.append(self.data[cursor:])
        return b"".join(out).decode()
