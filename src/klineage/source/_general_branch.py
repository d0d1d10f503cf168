"""The kernel-level removal: keep only the general branch of a launch-time fast path."""

from __future__ import annotations

import re

from klineage.source._fast_path import FastPath
from klineage.source.parse import (
    Parsed,
    Splice,
    ancestors,
    function_definitions,
    function_name,
    line_bounds,
    owns_its_lines,
    parse,
    walk,
)


def keep_general_branch(parsed: Parsed, path: FastPath) -> str:
    splice = Splice(parsed.data)
    for statement, general in path.branches:
        if statement.type == "conditional_expression":
            splice.replace(statement.start_byte, statement.end_byte, parsed.text_of(general))
        else:
            _replace_if_by_general(splice, parsed, statement, general)
    if path.guard_declaration is not None:
        splice.delete_lines(path.guard_declaration.start_byte, path.guard_declaration.end_byte)
    for definition in path.removed_functions:
        _delete_block(splice, parsed.data, _with_leading_comments(definition), definition.end_byte)
    launcher = _launcher_name(path)
    text = _drop_orphaned_locals(parsed, splice.apply(), launcher)
    if b"\n\n\n" not in parsed.data:  # adjacent deletions leave stacked blank lines
        text = re.sub(r"\n{3,}", "\n\n", text)
    return text


def _replace_if_by_general(splice: Splice, parsed: Parsed, statement, general) -> None:
    data = parsed.data
    if not owns_its_lines(data, statement.start_byte, statement.end_byte):
        splice.replace(statement.start_byte, statement.end_byte, parsed.text_of(general))
        return
    indent = _indent_of(data, statement.start_byte)
    if general.type == "compound_statement":
        body = general.named_children
        if not body:
            splice.delete_lines(statement.start_byte, statement.end_byte)
            return
        lines = data[line_bounds(data, body[0].start_byte, body[-1].end_byte)[0]:
                     line_bounds(data, body[0].start_byte, body[-1].end_byte)[1]].decode()
    elif owns_its_lines(data, general.start_byte, general.end_byte):
        lines = data[slice(*line_bounds(data, general.start_byte, general.end_byte))].decode()
    else:
        lines = indent + parsed.text_of(general) + "\n"
    splice.replace(*line_bounds(data, statement.start_byte, statement.end_byte), _reindent(lines, indent))


def _indent_of(data: bytes, offset: int) -> str:
    line_start = data.rfind(b"\n", 0, offset) + 1
    line = data[line_start:offset].decode()
    return line[: len(line) - len(line.lstrip())]


def _reindent(lines: str, indent: str) -> str:
    """Shift a block of lines so its least-indented line starts at ``indent``."""
    rows = lines.splitlines(keepends=True)
    current = min((len(r) - len(r.lstrip()) for r in rows if r.strip()), default=0)
    shift = current - len(indent)
    if shift <= 0:
        return lines
    return "".join(r[shift:] if r[:shift].strip() == "" else r for r in rows)


def _with_leading_comments(node) -> int:
    """Start of a definition including the comment lines directly above it."""
    start, line = node.start_byte, node.start_point[0]
    previous = node.prev_sibling
    while previous is not None and previous.type == "comment" and previous.end_point[0] == line - 1:
        start, line = previous.start_byte, previous.start_point[0]
        previous = previous.prev_sibling
    return start


def _delete_block(splice: Splice, data: bytes, start: int, end: int) -> None:
    """Delete whole lines, and one blank line after them when one also precedes (no double gaps)."""
    line_start, line_end = line_bounds(data, start, end)
    before_blank = line_start == 0 or data[:line_start].endswith(b"\n\n")
    next_end = data.find(b"\n", line_end)
    if before_blank and next_end >= 0 and not data[line_end:next_end].strip():
        line_end = next_end + 1
    splice.delete(line_start, line_end)


def _launcher_name(path: FastPath) -> str:
    statement = path.branches[0][0]
    function = next(a for a in ancestors(statement) if a.type == "function_definition")
    return function_name(function)


def _drop_orphaned_locals(before: Parsed, text: str, launcher: str) -> str:
    """Delete locals of the launcher that only the removed branches used (nvec, vpt, ...)."""
    used_before = _reference_counts(before, launcher)
    while True:
        parsed = parse(text, before.language)
        counts = _reference_counts(parsed, launcher)
        orphans = [declaration for name, declaration in _plain_locals(parsed, launcher)
                   if counts.get(name, 0) == 0 and used_before.get(name, 0) > 0]
        if not orphans:
            return text
        splice = Splice(parsed.data)
        for declaration in orphans:
            splice.delete_lines(declaration.start_byte, declaration.end_byte)
        text = splice.apply()


def _function(parsed: Parsed, name: str):
    return next((f for f in function_definitions(parsed.root) if function_name(f) == name), None)


def _reference_counts(parsed: Parsed, launcher: str) -> dict[str, int]:
    function = _function(parsed, launcher)
    counts: dict[str, int] = {}
    if function is None:
        return counts
    for node in walk(function.child_by_field_name("body")):
        if node.type == "identifier" and not (node.parent.type == "init_declarator"
                                              and node.parent.child_by_field_name("declarator") == node):
            counts[node.text.decode()] = counts.get(node.text.decode(), 0) + 1
    return counts


def _plain_locals(parsed: Parsed, launcher: str) -> list[tuple[str, object]]:
    """(name, declaration) for single-variable declarations whose initializer calls nothing."""
    function = _function(parsed, launcher)
    found = []
    for node in walk(function.child_by_field_name("body")) if function is not None else []:
        declarators = node.children_by_field_name("declarator") if node.type == "declaration" else []
        if len(declarators) != 1 or declarators[0].type != "init_declarator":
            continue
        value = declarators[0].child_by_field_name("value")
        if value is not None and not any(n.type == "call_expression" for n in walk(value)):
            found.append((declarators[0].child_by_field_name("declarator").text.decode(), node))
    return found
