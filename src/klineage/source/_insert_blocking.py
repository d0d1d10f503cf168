"""cache_blocking insertion and removal on C/C++: tile the two loops of a perfect nest by a named
tile size, and undo such a tiling back to the plain nest.

The insertion turns ``for (T i = lo; i < M; i++) for (T j = lo2; j < N; j++) BODY`` into

    #define KL_TILE 64
    for (T ib = lo; ib < M; ib += KL_TILE)
        for (T jb = lo2; jb < N; jb += KL_TILE)
            for (T i = ib; i < (ib + KL_TILE < M ? ib + KL_TILE : M); i++)
                for (T j = jb; j < (jb + KL_TILE < N ? jb + KL_TILE : N); j++)
                    BODY

(one KL_TILE per file; params: tile, default 64). What it proves: tiling two loops reorders their
iterations as interchanging the inner block loops would, so the nest must pass
loop_interchange's proof (_insert_interchange.read_nest and why_dependent: canonical and
rectangular loops, no exits, no effects but its own array elements, no element carried from one
iteration to another, no aliasing). Besides, both loops step by 1 and neither bound is written in
the nest or is more than arithmetic on names (the tiled bound repeats it). It pays only where the
inner loop strides memory (an access scales the inner counter: a transpose, a column walk). No
pragma may sit on the inner loop; an ``omp parallel for`` on the outer loop ends up on the outer
block loop, so threads split the block rows. A deeper body (a matmul's k loop) is carried along.

The removal undoes that form and hand-written ones of the same shape (_blocking_nest) and drops
the tile's definition when nothing else names it; other blocked nests are left to an LLM.
"""

from __future__ import annotations

import re

from klineage.source._blocking_nest import (
    blocked_nests,
    compared_bound,
    declared,
    flat,
    line_start,
    tile_constants,
    tile_step,
    unit_step,
)
from klineage.source._detect_cpu import omp_directive_words
from klineage.source._insert_interchange import (
    function_macros,
    loop_counter,
    read_nest,
    scaled_use,
    subscripts,
    why_dependent,
)
from klineage.source._insert_loops import _has_pragma_above
from klineage.source._insert_qualifiers import Inserted, Refusals, Refused
from klineage.source.model import FeatureHit
from klineage.source.parse import (
    Parsed,
    Splice,
    ancestors,
    for_loops,
    pragma_text,
    pragmas,
    sole_loop,
    walk,
    writes,
)
from klineage.source.tunables import DEFAULTS

__all__ = ["TILE_NAME", "insert_cache_blocking", "remove_cache_blocking"]

TILE_NAME = "KL_TILE"
_PLAIN_BOUND = ("identifier", "number_literal", "field_expression", "subscript_expression")
_ARITHMETIC = (b"+", b"-", b"*", b"/", b"%", b"<<", b">>")


def insert_cache_blocking(parsed: Parsed, params: dict) -> Inserted | Refused:
    if parsed.language == "cuda":
        return Refused("CUDA: a GPU nest maps its loops to threads; its tiling is shared_memory_tiling")
    tiles = tile_constants(parsed)
    tile = _tile_size(parsed, tiles, params)
    if isinstance(tile, Refused):
        return tile
    macros, taken_names = function_macros(parsed.text), set(re.findall(r"\w+", parsed.text))
    splice, sites, taken, why = Splice(parsed.data), [], [], Refusals(parsed)
    for outer in for_loops(parsed.root):
        inner = sole_loop(outer, ("comment", "preproc_call"))
        if inner is None or any(start <= outer.start_byte < end for start, end in taken):
            continue
        reason = _why_not_blockable(parsed, outer, inner, macros, tiles)
        if reason:
            why.add(outer, reason)
            continue
        start = line_start(parsed, outer)
        splice.replace(start, outer.end_byte, _tiled(parsed, outer, inner, taken_names))
        taken.append((outer.start_byte, outer.end_byte))
        sites.append(parsed.site(outer))
    if not sites:
        return why.refused("no perfect nest: no loop whose body is one for loop alone")
    if TILE_NAME not in tiles:
        at = _definition_offset(parsed)
        splice.replace(at, at, f"#define {TILE_NAME} {tile}\n")
    return Inserted(splice.apply(), sites, {"tile": tile})


def _tile_size(parsed: Parsed, tiles: dict, params: dict) -> int | Refused:
    """The tile the nests step by: the file's KL_TILE if it has one (one per file), else params'."""
    if TILE_NAME in tiles:
        return int(flat(tiles[TILE_NAME].child_by_field_name("value").text.decode())) \
            if tiles[TILE_NAME].type == "preproc_def" else Refused(f"{TILE_NAME} is a const here")
    if re.search(rf"\b{TILE_NAME}\b", parsed.text):
        return Refused(f"{TILE_NAME} is already a name in the file, not a tile size")
    tile = params.get("tile", DEFAULTS["cache_blocking"]["tile"])
    if not isinstance(tile, int) or isinstance(tile, bool) or tile < 2:
        return Refused(f"tile {tile!r}: the pass writes a whole number of at least 2")
    return tile


def _definition_offset(parsed: Parsed) -> int:
    """Just below the file's last top-level #include (the top of the file when it has none)."""
    includes = [n for n in parsed.root.named_children if n.type == "preproc_include"]
    if not includes:
        return 0
    return parsed.data.find(b"\n", includes[-1].start_byte) + 1 or len(parsed.data)


# ---------------------------------------------------------------------------- the checks


def _why_not_blockable(parsed: Parsed, outer, inner, macros: dict, tiles: dict) -> str | None:
    for loop in (outer, *ancestors(outer)):
        if loop.type == "for_statement" and tile_step(loop, tiles):
            return f"already blocked: it sits in a loop stepping by tile {tile_step(loop, tiles)}"
    reason = _why_not_unit(outer) or _why_not_unit(inner) or _pragma_in_the_way(parsed, outer, inner)
    if reason:
        return reason
    if parsed.data[line_start(parsed, outer):outer.start_byte].strip():
        return "the nest shares its first line with other code"
    nest = read_nest(parsed, outer, inner, macros)
    if isinstance(nest, str):
        return nest
    a, b, body = nest
    return (_why_not_invariant(inner, [outer, inner], (a[0], b[0])) or _why_no_gain(body, b[0])
            or why_dependent(parsed, outer, body, {a[0]: a, b[0]: b}))


def _why_not_unit(loop) -> str | None:
    counter, update = declared(loop), loop.child_by_field_name("update")
    if counter is not None and update is not None and not unit_step(loop, counter[0]):
        return (f"the loop over {counter[0]} steps by '{update.text.decode()}', not by 1: only "
                "unit-step loops are tiled")
    return None


def _pragma_in_the_way(parsed: Parsed, outer, inner) -> str | None:
    body = outer.child_by_field_name("body")
    between = [c for c in body.named_children if c.type == "preproc_call"]
    known = pragmas(body) if between else []  # which of them are #pragma lines (one walk)
    for pragma in between:
        if pragma not in known or not _about_its_own_iterations(pragma_text(pragma)):
            return (f"'{parsed.text_of(pragma).strip()}' sits on the inner loop: only a pragma about "
                    "that loop's own iterations (omp simd without collapse, ordered or data clauses, "
                    "GCC ivdep, GCC unroll) stays on it in each tile")
    for pragma in (p for p in pragmas(parsed.root) if _has_pragma_above(parsed, outer, [p])):
        text = pragma_text(pragma)
        if omp_directive_words(text) != ["omp", "parallel", "for"] or re.search(r"\b(collapse|ordered)\b",
                                                                                 text):
            return (f"'#pragma {text}' sits on the outer loop: only a plain 'omp parallel for' "
                    "moves to the outer block loop")
    return None


def _about_its_own_iterations(text: str) -> bool:
    """A pragma that asserts something of each pair of the loop's iterations, or asks for an
    unrolling: what holds for all of them holds for a tile's, so it stays on the point loop."""
    words = text.split()
    if omp_directive_words(text) == ["omp", "simd"]:
        return not re.search(r"\b(collapse|ordered|linear|lastprivate|reduction|private|scan)\b", text)
    return words[:2] == ["GCC", "ivdep"] or words[:2] == ["GCC", "unroll"]


def _why_not_invariant(inner, loops: list, counters: tuple[str, str]) -> str | None:
    """Why a bound could change while the nest runs or must not be repeated, if so."""
    written = {t.text.decode() for _, t in writes(inner.child_by_field_name("body"))
               if t is not None and t.type == "identifier"}
    for loop, counter in zip(loops, counters, strict=True):
        bound = compared_bound(loop, counter)
        if not _arithmetic(bound):
            return (f"the bound '{bound.text.decode()}' is not arithmetic on names (the tiled bound "
                    "repeats it)")
        names = {n.text.decode() for n in walk(bound) if n.type == "identifier"}
        if names & written:
            return f"the bound {sorted(names & written)[0]} is written inside the nest"
    return None


def _arithmetic(node) -> bool:
    """Names, literals, fields and elements combined by + - * / % << >> alone."""
    if node.type == "binary_expression":
        return node.child_by_field_name("operator").text in _ARITHMETIC and all(
            _arithmetic(node.child_by_field_name(k)) for k in ("left", "right"))
    if node.type == "parenthesized_expression":
        return all(_arithmetic(child) for child in node.named_children)
    return node.type in _PLAIN_BOUND and not any(
        n.type in ("call_expression", "assignment_expression", "update_expression") for n in walk(node))


def _why_no_gain(body, inner: str) -> str | None:
    indices = [index for _, index in subscripts(body)]
    if not indices:
        return ("nothing to gain that the pass can see: the body indexes no array (accessor calls "
                "are not followed)")
    if not any(scaled_use(index, inner)[0] for index in indices):
        return (f"nothing to gain: no access strides memory with the inner counter {inner} (each "
                "walks it at unit stride or not at all)")
    return None


# ---------------------------------------------------------------------------- the rewrites


def _tiled(parsed: Parsed, outer, inner, taken_names: set[str]) -> str:
    """The text that replaces the nest's lines: the two block loops, then the nest re-indented
    with its loops bounded to the block."""
    start = line_start(parsed, outer)
    indent = parsed.data[start:outer.start_byte].decode()
    unit = _indent_step(parsed, outer, inner) or ("\t" if "\t" in indent else "    ")
    heads, changes = [], []
    for depth, loop in enumerate((outer, inner)):
        counter, low, bound = loop_counter(loop)
        block = _fresh(f"{counter}b", taken_names)
        limit = f"({block} + {TILE_NAME} < {bound} ? {block} + {TILE_NAME} : {bound})"
        changes += [(declared(loop)[1], block), (compared_bound(loop, counter), limit)]
        heads.append(f"{indent}{unit * depth}for ({_counter_type(loop)} {block} = {low}; "
                     f"{block} < {bound}; {block} += {TILE_NAME})\n")
    nest = _respliced(parsed, start, outer.end_byte, [(n.start_byte, n.end_byte, t) for n, t in changes])
    return "".join(heads) + "\n".join(unit * 2 + line if line.strip() else line
                                      for line in nest.split("\n"))


def _indent_step(parsed: Parsed, outer, inner) -> str:
    """How much deeper ``inner`` is indented than ``outer`` ('' when it is not on its own line)."""
    indent = parsed.data[line_start(parsed, outer):outer.start_byte].decode()
    deeper = parsed.data[line_start(parsed, inner):inner.start_byte].decode()
    return deeper[len(indent):] if deeper.startswith(indent) and not deeper.strip() else ""


def _fresh(name: str, taken_names: set[str]) -> str:
    """``name``, or name2, name3, ...: the first that names nothing in the file yet."""
    chosen, k = name, 1
    while chosen in taken_names:
        k += 1
        chosen = f"{name}{k}"
    taken_names.add(chosen)
    return chosen


def _counter_type(loop) -> str:
    init = loop.child_by_field_name("initializer")
    declarator = init.children_by_field_name("declarator")[0]
    return init.text[:declarator.start_byte - init.start_byte].decode().strip()


def _respliced(parsed: Parsed, start: int, end: int, changes: list[tuple[int, int, str]]) -> str:
    """The text of [start, end) with ``changes`` (absolute spans inside it) made."""
    out, cursor = [], start
    for begin, finish, new in sorted(changes):
        out += [parsed.data[cursor:begin].decode(), new]
        cursor = finish
    return "".join(out) + parsed.data[cursor:end].decode()


def remove_cache_blocking(parsed: Parsed, hits: list[FeatureHit]) -> str | None:
    """Each removable blocked nest becomes its plain nest; a tile's definition goes with the last
    nest that used it."""
    starts = {h.site.start_byte for h in hits if h.removable}
    tiles = tile_constants(parsed)
    splice, removed, used_tiles = Splice(parsed.data), [], set()
    for nest in blocked_nests(parsed, tiles):
        outer = nest.blocks[0]
        if outer.start_byte not in starts or any(s <= outer.start_byte < e for s, e in removed):
            continue
        removed.append((line_start(parsed, outer), outer.end_byte))
        splice.replace(*removed[-1], _untiled(parsed, nest))
        used_tiles.update(nest.tiles)
    for tile in sorted(used_tiles):
        if _uses_left(parsed, tile, removed) == 1:  # its definition alone
            splice.delete_lines(tiles[tile].start_byte, tiles[tile].end_byte)
    return splice.apply() if removed else None


def _untiled(parsed: Parsed, nest) -> str:
    """The element loops, from the block loops' starts to their bounds, indented as the block
    loops were."""
    changes = []
    for loop, low, bound in zip(nest.loops, nest.starts, nest.bounds, strict=True):
        counter, value = declared(loop)
        limit = compared_bound(loop, counter)
        changes += [(value.start_byte, value.end_byte, low), (limit.start_byte, limit.end_byte, bound)]
    first = nest.loops[0]
    depth = _indent_step(parsed, nest.blocks[0], first)
    text = _respliced(parsed, line_start(parsed, first), first.end_byte, changes)
    return "\n".join(line[len(depth):] if line.strip() and line.startswith(depth) else line
                     for line in text.split("\n"))


def _uses_left(parsed: Parsed, tile: str, removed: list[tuple[int, int]]) -> int:
    """How often ``tile`` is named outside the ``removed`` spans (its definition included)."""
    kept, cursor = [], 0
    for start, end in sorted(removed):
        kept.append(parsed.data[cursor:start])
        cursor = end
    kept.append(parsed.data[cursor:])
    return sum(len(re.findall(rf"\b{re.escape(tile)}\b".encode(), part)) for part in kept)
