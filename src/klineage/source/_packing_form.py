"""The shapes of a packed operand, shared by the packing detector and the passes.

klineage's own form (what _insert_packing writes): ``T* P = (T*)kl_pack_alloc(rows, cols,
sizeof(T));`` then ``if (P != NULL) { <copy nest> <packed nest> free(P); } else { <the nest> }``.
Its removal keeps the else branch, one indent shallower: the text the insertion started from.

A hand-written packing: a buffer ``T* P = (T*)malloc(...)`` (calloc, ``new T[n]``,
``std::vector<T> P(n)``), an optional null check right after it, then a copy nest of two counted
loops from 0 whose one statement is ``P[r * C + c] = SRC`` (``C`` the c loop's bound, SRC a read
of a read-only array in r and c), later reads ``P[e1 * C + e2]`` only, by counters of loops with
the same ranges as r and c, and ``free(P)`` / ``delete[] P`` in the same block. Its removal reads
SRC with e1 and e2 for r and c at each read and drops the buffer, the check, the copy and the
free. Packing into micro-panels with zero padding (BLIS's pack_a / pack_b) is not a permutation
of a read: it stays (features.detect_packing says why).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from klineage.source._blocking_nest import flat, line_start
from klineage.source._pack_syntax import counted, expression, index_of, linear_terms, root_name, write_target
from klineage.source._packing_proof import why_not_read_only
from klineage.source.parse import Parsed, Splice, ancestors, walk

__all__ = ["ALLOCATOR", "Packed", "allocator_text", "header_lines", "own_packing_of", "packings",
           "reindented", "remove_packing"]

ALLOCATOR = "kl_pack_alloc"
_MARK = {"c": "/* for kl_pack_alloc */", "cpp": "// for kl_pack_alloc"}
_HEADERS = {"c": (("stdlib.h", "cstdlib"), ("stdint.h", "cstdint")),
            "cpp": (("cstdlib", "stdlib.h"), ("cstdint", "stdint.h"))}
_C_ALLOCATOR = """
/* packing: room for n x m elements of size bytes, or NULL when an extent is not positive or the
 * bytes would not fit in a size_t (the packed nest then runs unpacked) */
static void* kl_pack_alloc(int64_t n, int64_t m, size_t size)
{
    if (n <= 0 || m <= 0 || (uint64_t)n > SIZE_MAX / size / (uint64_t)m) return NULL;
    return malloc((size_t)n * (size_t)m * size);
}
"""
_CPP_ALLOCATOR = """
// packing: room for n x m elements of size bytes, or nullptr when an extent is not positive or
// the bytes would not fit in a size_t (the packed nest then runs unpacked)
static void* kl_pack_alloc(std::int64_t n, std::int64_t m, std::size_t size)
{
    if (n <= 0 || m <= 0 ||
        static_cast<std::uint64_t>(n) > SIZE_MAX / size / static_cast<std::uint64_t>(m)) {
        return nullptr;
    }
    return std::malloc(static_cast<std::size_t>(n) * static_cast<std::size_t>(m) * size);
}
"""
_ALLOCATION = re.compile(r"^\s*(\([\w:\s]+\*\s*\)|static_cast\s*<[\w:\s]+\*\s*>)?\s*\(?\s*(std::)?"
                         r"(malloc|calloc|aligned_alloc)\s*\(")


def allocator_text(language: str) -> str:
    return _CPP_ALLOCATOR if language == "cpp" else _C_ALLOCATOR


def header_lines(parsed: Parsed) -> str:
    """The #include lines the allocator needs and the file lacks, each marked as the pass's."""
    language = "cpp" if parsed.language == "cpp" else "c"
    lines = []
    for spellings in _HEADERS[language]:
        if not any(re.search(rf"#\s*include\s*<{re.escape(h)}>", parsed.text) for h in spellings):
            lines.append(f"#include <{spellings[0]}> {_MARK[language]}\n")
    return "".join(lines)


def reindented(text: str, unit: str) -> str:
    """``text`` with ``unit`` put before every line that holds more than whitespace."""
    return "\n".join(unit + line if line.strip() else line for line in text.split("\n"))


def _dedented(text: str, unit: str) -> str:
    return "\n".join(line[len(unit):] if line.strip() and line.startswith(unit) else line
                     for line in text.split("\n"))


@dataclass(frozen=True)
class Packed:
    """One packed operand found in a source."""
    declaration: object
    """The buffer's declaration (the hit's site)."""
    buffer: str
    own: bool
    """klineage's own form (else hand-written)."""
    why_not: str = ""
    """Why the removal cannot undo it ('' where it can)."""
    plan: object = None


def own_packing_of(parsed: Parsed, block=None):
    """The ``if (P != NULL)`` statement of klineage's form that ``block`` is a branch of (or the
    first one in the file when ``block`` is None)."""
    around = [block.parent, block.parent.parent] if block is not None and block.parent is not None else []
    for node in (around if block is not None else walk(parsed.root)):
        ours = node is not None and node.type == "if_statement" and _own_declaration(node) is not None
        if ours and (block is None or block in (node.child_by_field_name("consequence"), _else_body(node))):
            return node
    return None


def _else_body(statement):
    alternative = statement.child_by_field_name("alternative")
    body = alternative.named_children[0] if alternative is not None and alternative.named_children else None
    return body if body is not None and body.type == "compound_statement" else None


def _own_declaration(statement):
    """The ``T* P = (T*)kl_pack_alloc(...)`` just before ``statement`` when it tests P."""
    condition = statement.child_by_field_name("condition")
    test = re.fullmatch(r"\(\s*(\w+)\s*!=\s*(NULL|nullptr)\s*\)", condition.text.decode()) \
        if condition is not None else None
    declaration = statement.prev_named_sibling
    if test is None or declaration is None or declaration.type != "declaration" \
            or _else_body(statement) is None:
        return None
    if _declared(declaration) != test.group(1) or ALLOCATOR not in declaration.text.decode():
        return None
    return declaration


def _declared(declaration) -> str | None:
    declarators = declaration.children_by_field_name("declarator")
    if len(declarators) != 1:
        return None
    node = declarators[0]
    while node is not None and node.type != "identifier":
        node = node.child_by_field_name("declarator")
    return node.text.decode() if node is not None else None


# ---------------------------------------------------------------------------- finding packings


def packings(parsed: Parsed) -> list[Packed]:
    """klineage's packings and the hand-written ones (removable or not), in source order."""
    found = []
    for node in walk(parsed.root):
        if node.type == "if_statement":
            declaration = _own_declaration(node)
            if declaration is not None:
                found.append(Packed(declaration, _declared(declaration), True, plan=node))
        elif node.type == "declaration" and node.parent.type == "compound_statement":
            hand = _hand_written(parsed, node)
            if hand is not None:
                found.append(hand)
    return found


def _allocated(declaration) -> str | None:
    """The name a declaration allocates a buffer for (malloc, calloc, new T[n], std::vector)."""
    vector = re.match(r"\s*(std::)?vector\s*<[\w:\s]+>\s+(\w+)\s*[({]", declaration.text.decode())
    if vector:
        return vector.group(2)
    name = _declared(declaration)
    value = declaration.children_by_field_name("declarator")[0].child_by_field_name("value") \
        if name is not None else None
    if value is None:
        return None
    text = value.text.decode()
    return name if _ALLOCATION.match(text) or re.match(r"\s*new\s+[\w:\s]+\[", text) else None


def _hand_written(parsed: Parsed, declaration) -> Packed | None:
    buffer = _allocated(declaration)
    if buffer is None:
        return None
    statements = [s for s in declaration.parent.named_children if s.start_byte >= declaration.end_byte
                  and s.type != "comment"]
    rest = statements[1:] if statements and _null_check(statements[0], buffer) else statements
    rest = [s for s in rest if s.type != "preproc_call"] if rest and rest[0].type == "preproc_call" else rest
    if not rest or rest[0].type != "for_statement" or not _fills(rest[0], buffer):
        return None
    plan = _undo_plan(parsed, declaration, buffer, statements, rest[0])
    if isinstance(plan, str):
        return Packed(declaration, buffer, False, plan)
    return Packed(declaration, buffer, False, "", plan)


def _null_check(statement, buffer: str) -> bool:
    if statement.type != "if_statement":
        return False
    condition = re.sub(r"\s", "", statement.child_by_field_name("condition").text.decode())
    return condition in (f"(!{buffer})", f"({buffer}==NULL)", f"({buffer}==nullptr)", f"(NULL=={buffer})",
                         f"(nullptr=={buffer})", f"({buffer}==0)")


def _fills(loop, buffer: str) -> bool:
    """Some statement of the loop writes an element of ``buffer`` from another array."""
    for node in walk(loop):
        if node.type == "assignment_expression" and root_name(node.child_by_field_name("left")) == buffer:
            right = node.child_by_field_name("right")
            if any(n.type in ("subscript_expression", "call_expression") and root_name(n) != buffer
                   for n in walk(right)):
                return True
    return False


@dataclass(frozen=True)
class _Undo:
    statements: tuple
    """Statements the removal drops (the declaration, the null check, the pragmas, the copy, the free)."""
    reads: tuple
    """(node, replacement text) for each read of the buffer."""


def _undo_plan(parsed: Parsed, declaration, buffer: str, statements: list, copy) -> _Undo | str:
    row_loop = counted(copy)
    inner = _sole_statement(copy)
    col_loop = counted(inner) if inner is not None and inner.type == "for_statement" else None
    assignment = _sole_statement(inner) if col_loop is not None else None
    if None in (row_loop, col_loop, assignment) or assignment.type != "expression_statement":
        return "its copy is not two counted loops around one statement"
    copy_write = assignment.named_children[0]
    if copy_write.type != "assignment_expression" or copy_write.child_by_field_name("operator").type != "=":
        return "its copy is not one 'buffer[...] = element' statement"
    if flat(row_loop.low) != "0" or flat(col_loop.low) != "0":
        return "its copy loops do not start at 0"
    target = copy_write.child_by_field_name("left")
    layout = _layout(target, buffer, {row_loop.name: row_loop, col_loop.name: col_loop})
    if isinstance(layout, str):
        return layout
    source = copy_write.child_by_field_name("right")
    function = next((a for a in ancestors(copy) if a.type == "function_definition"), None)
    why = _why_not_a_read(parsed, function, source, buffer)
    if why:
        return why
    free = next((s for s in statements if _frees(s, buffer)), None)
    vector = re.match(r"\s*(std::)?vector\b", declaration.text.decode()) is not None
    if free is None and not vector:
        return f"{buffer} is not freed in the block that allocates it"
    span_end = free.start_byte if free is not None else declaration.parent.end_byte
    reads = []
    for node in walk(declaration.parent):
        if node.type != "identifier" or node.text.decode() != buffer or node.start_byte < copy.end_byte \
                or node.start_byte >= span_end:
            continue
        read = _restored(parsed, node, buffer, layout, source)
        if isinstance(read, str):
            return read
        reads.append(read)
    bounds = [expression(loop.high, parsed.language) for loop in (row_loop, col_loop)]
    moving = _moving_names(declaration.parent, copy.end_byte, span_end, [source, *bounds],
                           {row_loop.name, col_loop.name})
    if moving:
        return f"{moving} changes between the copy and the reads of {buffer}"
    dropped = [declaration, *[s for s in statements if s.start_byte < copy.start_byte], copy]
    return _Undo(tuple(dropped + ([free] if free is not None else [])), tuple(reads))


def _why_not_a_read(parsed: Parsed, function, source, buffer: str) -> str | None:
    """Why the copied value is not an element of a read-only array, if it is not."""
    while source.type == "parenthesized_expression" and source.named_children:
        source = source.named_children[0]
    array = root_name(source) if source.type == "subscript_expression" else None
    if array is None or function is None:
        return f"its copy stores '{source.text.decode()}' into {buffer}, not an element of an array"
    return why_not_read_only(parsed, function, array, array)


def _moving_names(block, start: int, end: int, nodes: list, counters: set[str]) -> str | None:
    """A name the copied element or the copy's bounds depend on that is written or declared again
    between the copy and the last read (the reads would see another element)."""
    names = {n.text.decode() for node in nodes if node is not None for n in walk(node)
             if n.type == "identifier"} - counters
    for node in walk(block):
        if not start <= node.start_byte < end:
            continue
        if node.type in ("assignment_expression", "update_expression"):
            target = node.child_by_field_name("left" if node.type == "assignment_expression" else "argument")
            if root_name(target) in names:
                return root_name(target)
        if node.type == "init_declarator" and node.child_by_field_name("declarator").text.decode() in names:
            return node.child_by_field_name("declarator").text.decode()
    return None


def _sole_statement(loop):
    body = loop.child_by_field_name("body")
    if body is not None and body.type == "compound_statement":
        statements = [c for c in body.named_children if c.type != "comment"]
        return statements[0] if len(statements) == 1 else None
    return body


def _layout(target, buffer: str, loops: dict) -> tuple | str:
    """(row loop, column loop) of ``buffer[r * C + c]`` with C the column loop's bound."""
    if target.type != "subscript_expression" or root_name(target) != buffer:
        return f"its copy writes {target.text.decode()}, not an element of {buffer}"
    terms = linear_terms(index_of(target), set(loops))
    shape = _row_major(terms, loops)
    return shape if shape else f"its copy writes {buffer}[{index_of(target).text.decode()}], not " \
        "buffer[r * C + c] over the copy's two counters"


def _row_major(terms, loops: dict) -> tuple | None:
    if terms is None or len(terms) != 2 or any(c is None or s != 1 for c, _, s in terms):
        return None
    for (row, factors), (col, unit) in (((terms[0][0], terms[0][1]), (terms[1][0], terms[1][1])),
                                        ((terms[1][0], terms[1][1]), (terms[0][0], terms[0][1]))):
        if row != col and not unit and len(factors) == 1 and flat(factors[0]) == flat(loops[col].high):
            return loops[row], loops[col]
    return None


def _frees(statement, buffer: str) -> bool:
    text = re.sub(r"\s", "", statement.text.decode())
    return text in (f"free({buffer});", f"std::free({buffer});", f"delete[]{buffer};")


def _restored(parsed: Parsed, node, buffer: str, layout: tuple, source) -> tuple | str:
    """(the read node, the element of the copied array it reads) for a use of the buffer."""
    subscript = node.parent
    if subscript is None or subscript.type != "subscript_expression" or write_target(subscript) \
            or root_name(subscript) != buffer:
        return f"{buffer} is used at line {node.start_point[0] + 1} other than by a read of one element"
    loops = {counted(a).name: counted(a) for a in ancestors(subscript) if counted(a) is not None}
    terms = linear_terms(index_of(subscript), set(loops))
    shape = _row_major(terms, loops) if terms is not None else None
    row, col = layout
    if shape is None or flat(shape[0].low) != "0" or flat(shape[1].low) != "0" \
            or flat(shape[0].high) != flat(row.high) or flat(shape[1].high) != flat(col.high):
        return (f"the read {subscript.text.decode()} at line {node.start_point[0] + 1} is not an "
                f"element by counters over the copy's ranges")
    mapping = {row.name: shape[0].name, col.name: shape[1].name}
    return subscript, _renamed(source, mapping)


def _renamed(node, mapping: dict[str, str]) -> str:
    out, cursor = [], node.start_byte
    for n in walk(node):
        if n.type == "identifier" and n.text.decode() in mapping:
            out += [node.text[cursor - node.start_byte:n.start_byte - node.start_byte].decode(),
                    mapping[n.text.decode()]]
            cursor = n.end_byte
    return "".join(out) + node.text[cursor - node.start_byte:].decode()


# ---------------------------------------------------------------------------- the removal


def remove_packing(parsed: Parsed, hits) -> str | None:
    """Each removable packing undone; the allocator and its includes go with the last of ours."""
    starts = {h.site.start_byte for h in hits if h.removable}
    found = packings(parsed)
    splice, removed_own = Splice(parsed.data), 0
    for packed in found:
        if packed.declaration.start_byte not in starts or packed.why_not:
            continue
        if packed.own:
            statement = packed.plan
            start = line_start(parsed, packed.declaration)
            splice.replace(start, statement.end_byte, _kept_branch(parsed, statement))
            removed_own += 1
        else:
            for dropped in packed.plan.statements:
                splice.delete_lines(dropped.start_byte, dropped.end_byte)
            comment = packed.declaration.prev_named_sibling
            if comment is not None and comment.type == "comment" and re.search(
                    rf"\b{re.escape(packed.buffer)}\b", comment.text.decode()) \
                    and comment.end_point[0] == packed.declaration.start_point[0] - 1:
                splice.delete_lines(comment.start_byte, comment.end_byte)
            for read, text in packed.plan.reads:
                splice.replace(read.start_byte, read.end_byte, text)
    if not splice.changes:
        return None
    if removed_own and removed_own == sum(1 for p in found if p.own):
        _drop_allocator(parsed, splice)
    return splice.apply()


def _kept_branch(parsed: Parsed, statement) -> str:
    """The else branch's lines, one indent shallower (the unit the packed branch was indented by)."""
    body = _else_body(statement)
    first = parsed.data.find(b"\n", statement.child_by_field_name("consequence").start_byte) + 1
    inner_line = parsed.data[first:parsed.data.find(b"\n", first)].decode()
    outer = parsed.data[line_start(parsed, statement):statement.start_byte].decode()
    unit = inner_line[len(outer):len(inner_line) - len(inner_line.lstrip())]
    text = parsed.data[body.start_byte + 1:line_start(parsed, body.children[-1])].decode()
    return _dedented(text.removeprefix("\n").removesuffix("\n"), unit)


def _drop_allocator(parsed: Parsed, splice: Splice) -> None:
    language = "cpp" if parsed.language == "cpp" else "c"
    text = allocator_text(language).encode()
    at = parsed.data.find(text)
    if at >= 0:
        splice.delete(at, at + len(text))
    for match in re.finditer(rf"^#include <[\w.]+> {re.escape(_MARK[language])}\n".encode(), parsed.data,
                             re.M):
        splice.delete(match.start(), match.end())

