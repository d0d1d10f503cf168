"""What the packing pass reads in a loop nest: each read of an array element, with the element
as an index in the nest's counters.

A read is one of
- a subscript ``B[k * N + j]`` of a name (index helpers inside it inlined: ``B[idx2(k, j, N)]``);
- an accessor call ``b(k, j)`` that comes down to one element (_pack_accessors);
- a pointer walk: ``*p`` where ``p = B + OFF`` is declared in the block of the loop that reads it
  (or in its header) and stepped once per iteration by ``p += S`` after the reads; the element read
  at iteration t is ``B[OFF + t * S]``, and the loop runs a known number of times (a counted loop,
  or ``while (q != end)`` over a walk q stepped by one from a start that ``end`` is ``start + E``
  of). The pass rewrites p's start and step, so p may have no other use.
"""

from __future__ import annotations

from dataclasses import dataclass

from klineage.source._blocking_nest import flat
from klineage.source._pack_accessors import Accessors
from klineage.source._pack_syntax import (
    address_taken,
    counted,
    declared_at,
    element_type,
    index_of,
    outermost_parens,
    parens,
    root_name,
    steps,
    targets,
    unwrap,
    value_of,
    write_target,
)
from klineage.source.parse import Parsed, ancestors, walk

__all__ = ["Read", "Walk", "nest_reads"]


@dataclass(frozen=True)
class Walk:
    """How a pointer walk reads: ``p = BASE + offset`` stepped by ``step`` once per iteration of a
    loop that runs ``trip`` times."""
    pointer: str
    value: object
    """The node of p's initial value (``B + j``), which the packed nest replaces."""
    offset: str
    step: object
    """The node of S in ``p += S``, which becomes 1."""
    trip: str


@dataclass(frozen=True)
class Read:
    node: object
    """What the packed nest replaces: the subscript or call (for a walk, the ``*p``)."""
    base: str
    """The array read, as the nest (or the accessor) names it: ``B``, or a view's pointer."""
    name: str
    """What a refusal calls it: the base, or the accessor's object where the base is an expression."""
    index: str
    """The element read, in the nest's counters (a walk's: in its trip counter ``kl_t``)."""
    loop: object
    """The loop whose iterations walk it (the nearest loop around the read)."""
    walk: Walk | None = None


def nest_reads(parsed: Parsed, function, nest) -> tuple[list[Read], list[tuple[str, object, str]]]:
    """Every read of an element in ``nest`` that the pass follows, and (array, node, why) for the
    reads of arrays it cannot follow (an index helper it cannot inline, a pointer walk it cannot
    count). Calls that do not come down to one element (``expf``, a lambda with a loop) are no
    reads; an array they read is not packed through them, and it needs no rewrite there: it is
    read-only, and its own elements stay what they were."""
    accessors, reads, unknown = Accessors(parsed, function), [], []
    stepped = {parens(t).text.decode() for t in targets(nest) if parens(t).type == "identifier"}
    for node in walk(nest):
        if write_target(node) or address_taken(node) or _inside_macro_call(node, accessors):
            continue
        if node.type == "subscript_expression" and parens(node.child_by_field_name("argument")).type \
                == "identifier":
            base = parens(node.child_by_field_name("argument")).text.decode()
            if node.parent.type == "subscript_expression":
                unknown.append((base, node, f"{base} is indexed twice (a 2-D array): not followed"))
                continue
            if base in stepped:
                unknown.append((base, node, f"{node.text.decode()} reads through {base}, which the nest "
                                "moves: not followed"))
                continue
            index = accessors.inline_index(index_of(node))
            if index is None:
                unknown.append((base, node, f"the index of {base} calls a helper that is not one return"))
            else:
                reads.append(Read(node, base, base, index, _nearest_loop(node, nest)))
        elif node.type == "call_expression":
            found = accessors.inline(node)
            if not isinstance(found, str):
                reads.append(Read(node, found[0], found[2], found[1], _nearest_loop(node, nest)))
        elif node.type == "pointer_expression" and node.children[0].type == "*":
            found = _walk_read(function, nest, node)
            if isinstance(found, Read):
                reads.append(found)
            elif found is not None:
                unknown.append(found)
    return reads, unknown


def _nearest_loop(node, nest):
    return next((a for a in ancestors(node) if a.type in ("for_statement", "while_statement",
                                                         "do_statement")), nest)


def _inside_macro_call(node, accessors: Accessors) -> bool:
    """Inside the arguments of a function-like macro (the macro's own read covers it)."""
    return any(a.type == "call_expression" and a.child_by_field_name("function").text.decode()
               in accessors.macros for a in ancestors(node))


def _inside(node, outer) -> bool:
    return outer.start_byte <= node.start_byte < outer.end_byte


def _walk_read(function, nest, deref) -> Read | tuple[str, object, str] | None:
    """The Read of ``*p`` where p walks an array; (array, node, why) where p starts at an array
    but its walk is not one the pass counts; None where p is no walk from an array."""
    pointer = unwrap(deref.child_by_field_name("argument"))
    if pointer is None or pointer.type != "identifier":
        return None
    name = pointer.text.decode()
    found = declared_at(deref, name)
    value = value_of(found, name) if found is not None and found.type == "declaration" else None
    start = _start(function, value) if value is not None and _inside(found, nest) else None
    if start is None:
        return None
    base, offset = start
    loop = _nearest_loop(deref, nest)
    if not _inside(loop, nest) or found.parent not in (loop, loop.parent):
        return (base, deref, f"{name} does not start afresh before each run of the loop that walks it")
    step = _step(found, name, loop)
    if isinstance(step, str):
        return (base, deref, step)
    unit = step.type == "update_expression" or flat(step.text.decode()) in ("1", "-1")
    other = None if unit else _other_use(found, name, loop, step)
    if other is not None:
        return (base, deref, f"{name} is used at line {other.start_point[0] + 1} other than by *{name} in "
                "the loop that walks it and its step")
    trip, why = _trip(loop)
    if trip is None:
        return (base, deref, why)
    stride = step.text.decode() if step.type != "update_expression" else "1"
    index = f"{offset} + kl_t * ({stride})" if flat(offset) != "0" else f"kl_t * ({stride})"
    return Read(deref, base, base, index, loop, Walk(name, value, offset, step, trip))


def _start(function, value) -> tuple[str, str] | None:
    """(base, offset) of ``B + OFF``, ``OFF + B``, ``&B[OFF]`` or ``B``, B a pointer declared once."""
    value = unwrap(value)
    candidates = []
    if value.type == "identifier":
        candidates.append((value, "0"))
    elif value.type == "pointer_expression" and value.children[0].type == "&":
        element = unwrap(value.child_by_field_name("argument"))
        if element.type == "subscript_expression":
            candidates.append((parens(element.child_by_field_name("argument")),
                               index_of(element).text.decode()))
    elif value.type == "binary_expression" and value.child_by_field_name("operator").type == "+":
        left, right = value.child_by_field_name("left"), value.child_by_field_name("right")
        candidates += [(parens(left), right.text.decode()), (parens(right), left.text.decode())]
    for base, offset in candidates:
        if base is not None and base.type == "identifier" and element_type(function, base.text.decode()):
            return base.text.decode(), offset
    return None


def _other_use(declaration, pointer: str, loop, step):
    """A use of the walk's pointer besides its declaration, ``*p`` in the loop and its step."""
    for node in walk(declaration.parent):
        if node.type != "identifier" or node.text.decode() != pointer \
                or declared_at(node, pointer) != declaration:
            continue
        use = outermost_parens(node)
        parent = use.parent
        deref = parent.type == "pointer_expression" and parent.children[0].type == "*" \
            and _inside(use, loop) and not write_target(parent)
        stepped = parent == step.parent and parent.child_by_field_name("left") == use
        declarator = parent.type in ("init_declarator", "pointer_declarator") \
            and parent.child_by_field_name("declarator") == use
        if not (deref or stepped or declarator):
            return node
    return None


def _step(declaration, pointer: str, loop):
    """The one step of the p ``declaration`` declares (``p += S`` or ``p++``), as a node, once per
    iteration of ``loop`` after every read of p; or why not."""
    bumps = [t.parent for t in targets(declaration.parent) if t is not None
             and unwrap(t).type == "identifier" and unwrap(t).text.decode() == pointer
             and declared_at(t, pointer) == declaration]
    if len(bumps) != 1:
        return f"{pointer} is written {len(bumps)} times besides its start: not one walk"
    bump = bumps[0]
    if bump.type == "assignment_expression" and bump.child_by_field_name("operator").type == "+=":
        step = bump.child_by_field_name("right")
    elif bump.type == "update_expression" and bump.text.decode().count("+") == 2:
        step = bump
    else:
        return f"{pointer} is stepped by '{bump.text.decode()}', not by 'p += S'"
    if not _once_per_iteration(bump, loop):
        return f"{pointer}'s step '{bump.text.decode()}' is not a statement of the loop that reads it"
    update = loop.child_by_field_name("update") if loop.type == "for_statement" else None
    if update is not None and _inside(bump, update):
        return step
    body = loop.child_by_field_name("body")
    later = [n for n in walk(body) if n.type == "identifier" and n.text.decode() == pointer
             and n.start_byte >= bump.end_byte]
    return f"{pointer} is read after its step '{bump.text.decode()}'" if later else step


def _once_per_iteration(step, loop) -> bool:
    """``step`` is in the loop's increment, or a statement of its body."""
    update = loop.child_by_field_name("update") if loop.type == "for_statement" else None
    if update is not None and _inside(step, update):
        return True
    statement = step.parent
    return statement.type == "expression_statement" and statement.parent == loop.child_by_field_name("body")


def _trip(loop) -> tuple[str | None, str]:
    """(how many times the loop runs, '') : hi - lo of a counted loop, or E of a walk ``q != end``
    with ``end = <q's start> + E`` and q stepped by one; (None, why) otherwise."""
    range_ = counted(loop)
    if range_ is not None:
        return (range_.high if flat(range_.low) == "0" else f"{range_.high} - ({range_.low})"), ""
    condition = loop.child_by_field_name("condition")
    if condition is not None and condition.type == "condition_clause":
        condition = condition.named_children[0]
    condition = unwrap(condition)
    if condition is None or condition.type != "binary_expression" \
            or condition.child_by_field_name("operator").type not in ("!=", "<"):
        return None, "the loop that walks it is neither counted nor 'q != end' over another walk"
    q, end = (condition.child_by_field_name(k).text.decode() for k in ("left", "right"))
    starts, ends = declared_at(condition, q), declared_at(condition, end)
    first = value_of(starts, q) if starts is not None and starts.type == "declaration" else None
    last = unwrap(value_of(ends, end)) if ends is not None and ends.type == "declaration" else None
    if first is None or last is None or starts.parent not in (loop, loop.parent):
        return None, f"the walk {q} != {end} does not start afresh before each run of its loop"
    bumps = [t for t in targets(starts.parent) if root_name(t) == q and declared_at(t, q) == starts] + \
        [t for t in targets(ends.parent) if root_name(t) == end and declared_at(t, end) == ends]
    if len(bumps) != 1 or root_name(bumps[0]) != q or not steps(bumps[0].parent, q) \
            or not _once_per_iteration(bumps[0].parent, loop):
        return None, f"{q} is not stepped by one once per iteration (or {end} is written)"
    if last.type != "binary_expression" or last.child_by_field_name("operator").type != "+" \
            or flat(last.child_by_field_name("left").text.decode()) not in (flat(first.text.decode()), q):
        return None, f"{end} is not {q}'s start plus a count"
    return last.child_by_field_name("right").text.decode(), ""
