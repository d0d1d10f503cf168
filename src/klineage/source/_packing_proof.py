"""What packing an operand must prove besides its index: the operand is read-only for the whole
call and aliases no output, and the nest reads every element the copy reads."""

from __future__ import annotations

import re

from klineage.source._insert_interchange import _expand, function_macros
from klineage.source._pack_syntax import declarations, expression, input_cast, parens, write_target
from klineage.source.parse import Parsed, ancestors, callee_name, function_definitions, function_name, walk

__all__ = ["why_conditional", "why_exits", "why_not_read_only"]

_EXITS = ("break_statement", "continue_statement", "return_statement", "goto_statement")
_RESTRICT = re.compile(r"\b(restrict|__restrict__|__restrict)\b")
_WRITTEN = "; packing needs a read-only operand"
_GUARDS = {"if_statement": "if", "conditional_expression": "?:", "while_statement": "while",
           "switch_statement": "switch", "case_statement": "case", "lambda_expression": "lambda"}


def _line(node) -> int:
    return node.start_point[0] + 1


def why_exits(nest) -> str | None:
    exit_ = next((n for n in walk(nest) if n.type in _EXITS), None)
    if exit_ is None:
        return None
    word = exit_.type.removesuffix("_statement")
    return (f"a {word} at line {_line(exit_)} leaves the loop early: the copy would read elements "
            "the nest may skip")


def why_conditional(node, nest) -> str | None:
    """Why the read ``node`` may not run in every iteration of the loops around it, if so."""
    child = node
    for parent in ancestors(node):
        if child == nest:
            return None
        kind = parent.type
        guarded = (kind in ("if_statement", "conditional_expression", "while_statement")
                   and child != parent.child_by_field_name("condition")
                   and (kind != "while_statement" or child != parent.child_by_field_name("body")))
        guarded = guarded or (kind == "binary_expression" and parent.child_by_field_name("operator").type
                              in ("&&", "||") and child == parent.child_by_field_name("right"))
        guarded = guarded or kind in ("switch_statement", "case_statement", "lambda_expression")
        if guarded:
            word = _GUARDS.get(kind) or parent.child_by_field_name("operator").type
            return (f"the read at line {_line(node)} is conditional (under the {word} at line "
                    f"{_line(parent)}): the copy would read elements the nest may skip")
        if kind == "for_statement" and child != parent.child_by_field_name("body"):
            return f"the read at line {_line(node)} sits in a loop's header"
        child = parent
    return None


def why_not_read_only(parsed: Parsed, function, base: str, name: str) -> str | None:
    """Why the array may change while the nest runs, if it may: a write to it anywhere in the
    function, a use the check does not follow, or an origin that may alias an output."""
    if input_cast(base):
        return _why_view_written(function, name, base)
    found = declarations(function, base)
    if len(found) != 1:
        return f"{name} is declared {len(found)} times in {function_name(function)}: not followed"
    return _why_used(parsed, function, base) or _why_may_alias(parsed, function, found[0], base)


def _why_view_written(function, name: str, base: str) -> str | None:
    """A view over an input: writable only where its element type is not const."""
    if re.search(r"<\s*const\b|\(\s*const\b", base):
        return None
    for node in walk(function):
        if node.type == "call_expression" and callee_name(node) == name and write_target(node):
            return f"{name} is written at line {_line(node)}{_WRITTEN}"
    return None


def _why_used(parsed: Parsed, function, base: str) -> str | None:
    """The first use of ``base`` in ``function`` that is not a read, as a reason."""
    for node in walk(function):
        if node.type != "identifier" or node.text.decode() != base:
            continue
        use = node
        while use.parent is not None and use.parent.type == "parenthesized_expression":
            use = use.parent
        parent = use.parent
        if parent is None or _declarator(parent, use):
            continue
        kind = parent.type
        if kind in ("subscript_expression", "pointer_expression") and use == parent.named_children[0]:
            if write_target(parent):
                return f"{base} is written at line {_line(node)}{_WRITTEN}"
            continue
        if kind == "binary_expression" and parent.child_by_field_name("operator").type in ("+", "-"):
            use, parent = parent, parent.parent
            kind = parent.type if parent is not None else ""
        if kind == "init_declarator" and _const_pointee(parent.parent):
            continue
        if kind in ("assignment_expression", "update_expression"):
            return f"{base} is written at line {_line(node)}{_WRITTEN}"
        if kind == "argument_list":
            call = parent.parent
            position = [c.id for c in parent.named_children].index(use.id)
            if _const_parameter(parsed, callee_name(call), position) or _macro_read(parsed, call, use):
                continue
            return (f"{base} is passed to {callee_name(call)} at line {_line(node)}: it may be written "
                    "there")
        if kind == "cast_expression":
            return f"{base} is cast at line {_line(node)}: what the cast pointer does is not followed"
        return f"{base} is used at line {_line(node)} in a way the check does not follow"
    return None


def _declarator(parent, use) -> bool:
    return parent.type in ("init_declarator", "pointer_declarator", "array_declarator",
                           "parameter_declaration", "declaration") and \
        parent.child_by_field_name("declarator") == use


def _const_pointee(declaration) -> bool:
    if declaration is None or declaration.type not in ("declaration", "parameter_declaration"):
        return False
    type_text = declaration.text[:declaration.child_by_field_name("declarator").start_byte
                                 - declaration.start_byte].decode()
    return bool(re.search(r"\bconst\b", type_text))


def _macro_read(parsed: Parsed, call, argument) -> bool:
    """``call`` is a function-like macro that expands to an element read of ``argument``."""
    macros = function_macros(parsed.text)
    name = callee_name(call)
    if name not in macros or write_target(call):
        return False
    node = parens(expression(_expand(call.text.decode(), {name: macros[name]}), parsed.language))
    return node is not None and node.type == "subscript_expression" \
        and parens(node.child_by_field_name("argument")).text == argument.text


def _const_parameter(parsed: Parsed, callee: str, position: int) -> bool:
    for function in function_definitions(parsed.root):
        if function_name(function) == callee:
            parameters = [n for n in walk(function.child_by_field_name("declarator"))
                          if n.type == "parameter_declaration"]
            return position < len(parameters) and _const_pointee(parameters[position])
    return False


def _why_may_alias(parsed: Parsed, function, declaration, base: str) -> str | None:
    why = (f"{base} may alias an output: it is neither a kl_launch input buffer nor a const restrict "
           "pointer")
    if declaration.type == "declaration":
        value = next((d.child_by_field_name("value") for d in declaration.children_by_field_name("declarator")
                      if d.type == "init_declarator"), None)
        if value is None or not input_cast(value.text.decode()):
            return why
        return _why_input_writable(parsed, value)
    if declaration.type != "parameter_declaration":
        return why
    if _RESTRICT.search(declaration.text.decode()) and _const_pointee(declaration):
        return None
    position = [n.id for n in walk(function.child_by_field_name("declarator"))
                if n.type == "parameter_declaration"].index(declaration.id)
    calls = [c for c in walk(parsed.root) if c.type == "call_expression"
             and callee_name(c) == function_name(function)]
    for call in calls:
        arguments = call.child_by_field_name("arguments").named_children
        caller = next((a for a in ancestors(call) if a.type == "function_definition"), None)
        if position >= len(arguments) or caller is None or not _input_name(caller, arguments[position]):
            return why + " (nor a parameter every call passes one)"
    return None if calls else why


def _why_input_writable(parsed: Parsed, value) -> str | None:
    """Why the input buffer behind ``value`` may be written: another cast of the same inputs[k]
    to a pointer that is not const."""
    slot = re.search(r"inputs\s*\[\s*(\d+)\s*\]", value.text.decode()).group(1)
    for node in walk(parsed.root):
        if node.type != "subscript_expression" or re.sub(r"\s", "", node.text.decode()) != f"inputs[{slot}]":
            continue
        cast = next((a for a in ancestors(node) if a.type in ("cast_expression", "call_expression")), None)
        if cast is not None and cast != value and not re.match(r"\(?\s*(static_cast\s*<\s*)?\(?\s*const\b",
                                                                  cast.text.decode()):
            return (f"inputs[{slot}] is also cast to a writable pointer at line {_line(node)}"
                    f"{_WRITTEN}")
    return None


def _input_name(function, argument) -> bool:
    """``argument`` is a local of ``function`` initialised from a kl_launch input buffer."""
    if input_cast(argument.text.decode()):
        return True
    if argument.type != "identifier":
        return False
    found = declarations(function, argument.text.decode())
    if len(found) != 1 or found[0].type != "declaration":
        return False
    value = next((d.child_by_field_name("value") for d in found[0].children_by_field_name("declarator")
                  if d.type == "init_declarator"), None)
    return value is not None and input_cast(value.text.decode())
