"""Accessor calls the packing pass reads through: a call whose callee is one ``return
BASE[INDEX];`` (a lambda of the function, a function of the file, the ``operator()`` or method of a
view struct initialised field by field ``View<const float> b{ptr, cols}``, a function-like macro)
comes down to the element it reads, with its arguments (and the view's fields) in place."""

from __future__ import annotations

import re

from klineage.source._insert_interchange import _expand, function_macros
from klineage.source._pack_syntax import (
    base_name,
    declared_at,
    declared_name,
    expression,
    index_of,
    parens,
    root_name,
    value_of,
)
from klineage.source.parse import Parsed, function_definitions, function_name, walk

__all__ = ["Accessors"]


class Accessors:
    """Resolves accessor calls of one function to the ``BASE[INDEX]`` they read."""

    def __init__(self, parsed: Parsed, function) -> None:
        self.parsed, self.function = parsed, function
        self.macros = function_macros(parsed.text)
        self.functions = {function_name(f): f for f in function_definitions(parsed.root)}

    def inline(self, call) -> tuple[str, str, str] | str:
        """(base, index, name) of what ``call`` reads, or why it is not followed."""
        text = self._expanded(call, call)
        if isinstance(text, str) and text.startswith("!"):
            return text[1:]
        node = parens(expression(text, self.parsed.language)) if text else None
        if node is None or node.type != "subscript_expression":
            return f"{call.text.decode()} is not a plain read of one element (not followed)"
        index = self.inline_index(index_of(node))
        if index is None:
            return f"the index of {call.text.decode()} calls a helper that is not one return (not followed)"
        base = parens(node.child_by_field_name("argument")).text.decode()
        callee = call.child_by_field_name("function")
        name = base if base_name(base) else root_name(callee) or callee.text.decode()
        return base, index, name

    def inline_index(self, node) -> str | None:
        """The index text with every helper call in it inlined (None if one is not followed)."""
        anchor, text = node, node.text.decode()
        for _ in range(4):
            node = expression(text, self.parsed.language)
            calls = [n for n in walk(node) if n.type == "call_expression"] if node is not None else []
            if not calls:
                return text if node is not None else None
            first = calls[0]
            inlined = self._expanded(first, anchor)
            if not isinstance(inlined, str) or inlined.startswith("!"):
                return None
            text = text[:first.start_byte - node.start_byte] + f"({inlined})" \
                + text[first.end_byte - node.start_byte:]
        return None

    def _expanded(self, call, anchor) -> str | None:
        """The call's return expression with its arguments (and a view's fields) in place, or
        '!why' when the callee is not a one-return accessor (names looked up where ``anchor`` is)."""
        callee = call.child_by_field_name("function")
        arguments = [a.text.decode() for a in call.child_by_field_name("arguments").named_children]
        name = callee.text.decode()
        if callee.type == "identifier" and name in self.macros:
            return _expand(call.text.decode(), {name: self.macros[name]})
        body = self._body(anchor, callee)
        if isinstance(body, str):
            return "!" + body
        params, returned, fields = body
        if len(params) != len(arguments):
            return f"!{name} takes {len(params)} arguments, the call passes {len(arguments)}"
        mapping = {**fields, **{p: f"({a})" for p, a in zip(params, arguments, strict=True)}}
        return _substituted(returned, mapping)

    def _body(self, call, callee) -> tuple[list[str], object, dict[str, str]] | str:
        """(parameters, the returned expression, field -> bound text) of the accessor called."""
        name = callee.text.decode()
        if callee.type == "field_expression":
            target = callee.child_by_field_name("argument").text.decode()
            method = callee.child_by_field_name("field").text.decode()
            return self._view(call, target, method)
        if callee.type != "identifier":
            return f"the call to {name} is not followed"
        local = declared_at(call, name)
        if local is not None and local.type == "declaration":
            value = value_of(local, name)
            if value is not None and value.type == "lambda_expression":
                return _one_return(value, name)
            return self._view(call, name, "operator()")
        if name in self.functions:
            return _one_return(self.functions[name], name)
        return f"the call to {name} is not followed (no lambda, view or one-return function of that name)"

    def _view(self, call, target: str, method: str) -> tuple[list[str], object, dict[str, str]] | str:
        local = declared_at(call, target)
        if local is None or local.type != "declaration":
            return f"{target} is not a local view"
        kind = local.child_by_field_name("type")
        kind = kind.child_by_field_name("name") or kind if kind.type == "template_type" else kind
        struct = next((n for n in walk(self.parsed.root) if n.type in ("struct_specifier", "class_specifier")
                       and (n.child_by_field_name("name") or n).text == kind.text
                       and n.child_by_field_name("body") is not None), None)
        value = value_of(local, target)
        if struct is None or value is None or value.type != "initializer_list":
            return f"{target} is not a view initialised field by field"
        members = struct.child_by_field_name("body").named_children
        fields = [declared_name(d) for m in members if m.type == "field_declaration"
                  for d in m.children_by_field_name("declarator")]
        if None in fields or len(fields) != len(value.named_children):
            return f"{target} is not a view initialised field by field"
        methods = [m for m in members if m.type == "function_definition" and _method_name(m) == method]
        if len(methods) != 1:
            return f"{target}'s {method} is not one method of its view"
        body = _one_return(methods[0], f"{target}.{method}")
        if isinstance(body, str):
            return body
        bound = {f: f"({v.text.decode()})" for f, v in zip(fields, value.named_children, strict=True)}
        return body[0], body[1], bound


def _method_name(function) -> str:
    declarator = next((n for n in walk(function.child_by_field_name("declarator"))
                       if n.type == "function_declarator"), None)
    name = declarator.child_by_field_name("declarator") if declarator is not None else None
    return re.sub(r"\s", "", name.text.decode()) if name is not None else ""


def _one_return(function, name: str) -> tuple[list[str], object, dict] | str:
    body = function.child_by_field_name("body")
    statements = [c for c in body.named_children if c.type != "comment"] if body is not None else []
    if len(statements) != 1 or statements[0].type != "return_statement" or not statements[0].named_children:
        return f"{name} is not one return statement (not followed)"
    declarator = function.child_by_field_name("declarator")
    parameters = next((n for n in walk(declarator) if n.type == "parameter_list"), None) \
        if declarator is not None else None
    params = [declared_name(p.child_by_field_name("declarator")) for p in parameters.named_children] \
        if parameters is not None else []
    if None in params:
        return f"{name} has a parameter without a name"
    return params, statements[0].named_children[0], {}


def _substituted(node, mapping: dict[str, str]) -> str:
    """The text of ``node`` with each identifier named in ``mapping`` replaced (at once)."""
    out, cursor = [], node.start_byte
    for n in walk(node):
        if n.type == "identifier" and n.text.decode() in mapping and n.start_byte >= cursor:
            out += [node.text[cursor - node.start_byte:n.start_byte - node.start_byte].decode(),
                    mapping[n.text.decode()]]
            cursor = n.end_byte
    return "".join(out) + node.text[cursor - node.start_byte:].decode()
