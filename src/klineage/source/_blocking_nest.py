"""The shape of a cache-blocked loop nest, shared by the detector and the cache_blocking passes.

A blocked nest is two block loops stepping by named tile sizes, each holding only the next loop,
then two element loops that run from their block's start to the smaller of block + tile and the
bound the block loop runs to:

    for (T ib = lo; ib < M; ib += TILE)
        for (T jb = lo2; jb < N; jb += TILE)
            for (T i = ib; i < (ib + TILE < M ? ib + TILE : M); i++)
                for (T j = jb; j < MIN(jb + TILE, N); ++j)
                    BODY

The minimum may be a ternary either way round, or a call to MIN / min / std::min. That is the
form the insertion writes and the form the removal undoes back to the plain nest.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from klineage.source.parse import Parsed, callee_name, for_loops, sole_loop, walk

__all__ = ["BlockedNest", "blocked_nests", "compared_bound", "declared", "flat", "line_start",
           "tile_constants", "tile_step", "unit_step"]


@dataclass(frozen=True)
class BlockedNest:
    blocks: tuple
    """The two block loops (tree-sitter nodes), outer first."""
    loops: tuple
    """The two element loops, outer first."""
    starts: tuple[str, str]
    """Where each block loop starts (the plain nest's lower bounds)."""
    bounds: tuple[str, str]
    """The bound of each element loop's minimum (the plain nest's upper bounds)."""
    tiles: tuple[str, str]


def tile_constants(parsed: Parsed) -> dict[str, object]:
    """Names bound to an integer literal (tile sizes and the like) -> the node that binds them:
    a ``#define T 64``, or a ``const`` / ``constexpr`` declaration ``const int64_t T = 64;``."""
    found = {}
    for node in walk(parsed.root):
        if node.type == "preproc_def":
            value = node.child_by_field_name("value")
            if value is not None and re.fullmatch(r"\s*\(?\d+\)?\s*", value.text.decode()):
                found[node.child_by_field_name("name").text.decode()] = node
        elif node.type == "declaration" and re.match(rb"(static\s+)?(const|constexpr)\b", node.text):
            declarators = node.children_by_field_name("declarator")
            value = declarators[0].child_by_field_name("value") if len(declarators) == 1 else None
            if value is not None and value.type == "number_literal" and value.text.isdigit():
                found[declarators[0].child_by_field_name("declarator").text.decode()] = node
    return found


def tile_step(loop, tiles) -> str | None:
    """The tile name a loop steps by (``b += T``, T one of ``tiles``), if it steps by one."""
    update = loop.child_by_field_name("update")
    if update is None or update.type != "assignment_expression" \
            or update.child_by_field_name("operator").text != b"+=":
        return None
    right = update.child_by_field_name("right")
    return right.text.decode() if right.type == "identifier" and right.text.decode() in tiles else None


def flat(text: str) -> str:
    """An expression's text without spaces and parentheses: the form compared."""
    return re.sub(r"[\s()]", "", text)


def line_start(parsed: Parsed, node) -> int:
    return parsed.data.rfind(b"\n", 0, node.start_byte) + 1


def blocked_nests(parsed: Parsed, tiles: dict | None = None) -> list[BlockedNest]:
    """Every blocked nest of the file whose loops each start their own line."""
    tiles = tile_constants(parsed) if tiles is None else tiles
    return [nest for nest in (_blocked_nest(parsed, loop, tiles) for loop in for_loops(parsed.root))
            if nest is not None]


def _blocked_nest(parsed: Parsed, outer, tiles: dict) -> BlockedNest | None:
    second = sole_loop(outer, skipped=())
    first_element = sole_loop(second, skipped=()) if second is not None else None
    last = sole_loop(first_element, ("comment", "preproc_call")) if first_element is not None else None
    if last is None:
        return None
    blocks = [_block_loop(loop, tiles) for loop in (outer, second)]
    if None in blocks:
        return None
    bounds = [_element_bound(loop, block) for loop, block in zip((first_element, last), blocks,
                                                                  strict=True)]
    indent = parsed.data[line_start(parsed, outer):outer.start_byte]
    inner_indent = parsed.data[line_start(parsed, first_element):first_element.start_byte]
    if None in bounds or indent.strip() or inner_indent.strip() or not inner_indent.startswith(indent):
        return None
    if any(n.type == "comment" and not first_element.start_byte <= n.start_byte < first_element.end_byte
           for n in walk(outer)):
        return None  # a comment on a block loop would be lost with it
    return BlockedNest((outer, second), (first_element, last), (blocks[0][1], blocks[1][1]),
                       (bounds[0], bounds[1]), (blocks[0][3], blocks[1][3]))


def declared(loop) -> tuple[str, object] | None:
    """(counter, its initial value node) of a loop declaring exactly one counter."""
    init = loop.child_by_field_name("initializer")
    if init is None or init.type != "declaration":
        return None
    declarators = init.children_by_field_name("declarator")
    if len(declarators) != 1 or declarators[0].type != "init_declarator":
        return None
    return declarators[0].child_by_field_name("declarator").text.decode(), \
        declarators[0].child_by_field_name("value")


def compared_bound(loop, counter: str):
    """The node ``hi`` of the loop's condition ``counter < hi``, if that is its condition."""
    cond = loop.child_by_field_name("condition")
    if cond is None or cond.type != "binary_expression" or cond.child_by_field_name("operator").text \
            != b"<" or cond.child_by_field_name("left").text.decode() != counter:
        return None
    return cond.child_by_field_name("right")


def _block_loop(loop, tiles: dict) -> tuple[str, str, str, str] | None:
    """(counter, start, bound, tile) of ``for (T b = lo; b < M; b += TILE)``."""
    counter, tile = declared(loop), tile_step(loop, tiles)
    bound = compared_bound(loop, counter[0]) if counter else None
    stepped = loop.child_by_field_name("update").child_by_field_name("left") if tile else None
    if bound is None or tile is None or stepped.text.decode() != counter[0]:
        return None
    return counter[0], counter[1].text.decode(), bound.text.decode(), tile


def unit_step(loop, counter: str) -> bool:
    update = loop.child_by_field_name("update")
    return update is not None and re.sub(r"\s", "", update.text.decode()) in (
        f"{counter}++", f"++{counter}", f"{counter}+=1")


def _element_bound(loop, block: tuple[str, str, str, str]) -> str | None:
    """The bound M of ``for (T c = b; c < min(b + TILE, M); c++)`` over ``block`` b, when M is
    the block loop's own bound."""
    counter = declared(loop)
    if counter is None or counter[1].text.decode() != block[0] or not unit_step(loop, counter[0]):
        return None
    bound = compared_bound(loop, counter[0])
    operands = _minimum(bound) if bound is not None else None
    if operands is None:
        return None
    step = {f"{block[0]}+{block[3]}", f"{block[3]}+{block[0]}"}
    for first, second in (operands, operands[::-1]):
        if flat(first.text.decode()) in step and flat(second.text.decode()) == flat(block[2]):
            return second.text.decode()
    return None


def _minimum(node) -> tuple | None:
    """The two operands of ``x < y ? x : y`` (or ``>`` with the sides swapped) or of a call to
    MIN, min or std::min."""
    while node.type == "parenthesized_expression" and node.named_child_count == 1:
        node = node.named_children[0]
    if node.type == "call_expression":
        arguments = node.child_by_field_name("arguments").named_children
        return tuple(arguments) if callee_name(node).lower() in ("min", "std::min") \
            and len(arguments) == 2 else None
    if node.type != "conditional_expression":
        return None
    test = node.child_by_field_name("condition")
    while test.type == "parenthesized_expression" and test.named_child_count == 1:
        test = test.named_children[0]
    if test.type != "binary_expression":
        return None
    sides = [flat(test.child_by_field_name(k).text.decode()) for k in ("left", "right")]
    picked = (node.child_by_field_name("consequence"), node.child_by_field_name("alternative"))
    order = {b"<": sides, b"<=": sides, b">": sides[::-1], b">=": sides[::-1]}.get(
        test.child_by_field_name("operator").text)
    return picked if order == [flat(p.text.decode()) for p in picked] else None
