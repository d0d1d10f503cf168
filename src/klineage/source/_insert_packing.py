"""packing insertion on C/C++: copy an input that a nest's inner loop walks with a stride into a
contiguous buffer laid out in the order the inner loop walks it, and read the buffer instead.

On the naive sgemm (``for i, for j, for k: sum += A[i * K + k] * B[k * N + j]``, B strided by N
with k) it writes

    float* kl_B_packed = (float*)kl_pack_alloc(N, K, sizeof(float));
    if (kl_B_packed != NULL) {
        for (int64_t j = 0; j < N; j++)
            for (int64_t k = 0; k < K; k++)
                kl_B_packed[j * K + k] = B[k * N + j];
        <the nest, reading kl_B_packed[j * K + k] for B[k * N + j]>
        free(kl_B_packed);
    } else {
        <the nest as it was>
    }

with one ``kl_pack_alloc`` per file (below the includes; NULL when an extent is not positive or
the bytes would overflow a size_t). A failed or empty allocation runs the nest as it was: the
bundled experts answer a failed malloc by returning 1 from kl_launch, which the gate counts as a
crash, and the nest may sit in a void helper where no such return exists.

What it proves (_pack_reads says how reads are followed):
- the read: an element ``B[index]`` (a subscript, a one-return accessor, a pointer walk) whose
  index is affine in the counters of the loops around it, strided by the loop that reads it (the
  inner counter X, or the walk's step) and naming exactly one other counter Y;
- the buffer holds the read for every (X, Y) of the two loops' ranges: both loops are counted
  (``for (T c = lo; c < hi; c++)``, the body never writes c), their bounds are not written in the
  nest nor declared in it, neither names another counter, every read of B in the nest reads that
  one element, unconditionally (no if, ?:, && or || on the way, no break, continue, return or
  goto in the nest), so the copy reads no element the nest does not (when another loop of the nest
  is empty, e.g. M = 0, it still reads the rectangle: B is an input that holds it);
- B is read-only for the whole call: every use of it in the function is a read (or a const
  pointer derived from it), and it cannot alias an output: a kl_launch input buffer, a const
  restrict pointer, or a helper's parameter that every call passes an input buffer;
- it pays: some loop around the read besides X's and Y's repeats it (sgemm's i), so the copy is
  read more often than it is made.
Packing keeps the order of the nest's iterations, so loop_interchange's dependence proof is not
needed here. One operand per nest; an ``omp parallel for`` on any loop of the nest threads the
copy's outer loop too. The nest must be a statement of a block, not inside an ``omp parallel``
region (each thread would pack its own copy and a failed allocation would split the team).

No tunable: the operand is packed whole, once, before the nest; packing per panel of a blocked
nest (with the blocking's tile) would tie this pass to cache_blocking's shapes and copy inside the
block loops, and a blocked nest is refused (its inner ranges depend on the block counters).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from klineage.source._blocking_nest import flat, line_start
from klineage.source._detect_cpu import omp_directive_words
from klineage.source._insert_blocking import _arithmetic, _definition_offset, _fresh, _indent_step
from klineage.source._insert_loops import _has_pragma_above, _locals_of
from klineage.source._insert_qualifiers import Inserted, Refusals, Refused
from klineage.source._pack_reads import Read, nest_reads
from klineage.source._pack_syntax import Loop, counted, element_type, expression, linear_terms
from klineage.source._packing_form import (
    ALLOCATOR,
    allocator_text,
    header_lines,
    own_packing_of,
    reindented,
)
from klineage.source._packing_proof import why_conditional, why_exits, why_not_read_only
from klineage.source.parse import (
    Parsed,
    Splice,
    ancestors,
    function_definitions,
    pragma_text,
    pragmas,
    walk,
    writes,
)

__all__ = ["insert_packing"]

_WIDE = {"int64_t", "std::int64_t", "uint64_t", "std::uint64_t", "size_t", "std::size_t", "ptrdiff_t",
         "std::ptrdiff_t", "long", "long long", "unsigned long", "unsigned long long", "intptr_t",
         "std::intptr_t", "ssize_t", "long int", "long long int"}
_LOOPS = ("for_statement", "while_statement", "do_statement")


@dataclass(frozen=True)
class Plan:
    """One operand of one nest to pack."""
    reads: tuple[Read, ...]
    name: str
    element: str
    outer: Loop
    """Y's loop: the buffer's rows."""
    inner: Loop
    """X's loop (a walk's: its trip counter kl_t from 0): the buffer's unit-stride columns."""
    threads: str
    """The OpenMP pragma of the copy ('' without threads)."""


def insert_packing(parsed: Parsed, params: dict) -> Inserted | Refused:
    if parsed.language == "cuda":
        return Refused("CUDA: a GPU kernel stages reused tiles in shared memory (shared_memory_tiling), "
                       "not in a malloc'd copy")
    if re.search(rf"\b{ALLOCATOR}\b", parsed.text) and allocator_text(parsed.language) not in parsed.text:
        return Refused(f"{ALLOCATOR} is already a name in the file, not the packing allocator")
    taken_names = set(re.findall(r"\w+", parsed.text))
    splice, sites, why = Splice(parsed.data), [], Refusals(parsed)
    for function in function_definitions(parsed.root):
        for nest in _nests(function):
            plan = _plan(parsed, function, nest)
            if isinstance(plan, str):
                why.add(nest, plan)
                continue
            start = _region_start(parsed, nest)
            splice.replace(start, nest.end_byte, _packed(parsed, nest, plan, taken_names))
            sites.append(parsed.site(nest))
    if not sites:
        return why.refused("no loop nest: no for loop that holds another loop")
    if allocator_text(parsed.language) not in parsed.text:
        at = _definition_offset(parsed)
        splice.replace(at, at, header_lines(parsed) + allocator_text(parsed.language))
    return Inserted(splice.apply(), sites, {})


def _nests(function) -> list:
    """The outermost for loops of ``function`` that hold another loop (lambdas' loops apart)."""
    body = function.child_by_field_name("body")
    found = []
    for node in walk(body) if body is not None else []:
        if node.type != "for_statement" or not any(n.type in _LOOPS for n in walk(node) if n != node):
            continue
        around = [a for a in ancestors(node) if a == function or a.type in (*_LOOPS, "lambda_expression")]
        if around and around[0] == function:
            found.append(node)
    return found


# ---------------------------------------------------------------------------- the plan


def _plan(parsed: Parsed, function, nest) -> Plan | str:
    placed = _why_not_placeable(parsed, nest)
    if placed:
        return placed
    reads, unknown = nest_reads(parsed, function, nest)
    loops = {loop.node.start_byte: loop for loop in map(counted, (n for n in walk(nest)
                                                                  if n.type == "for_statement")) if loop}
    groups: dict[tuple[str, int], list[Read]] = {}
    for read in reads:
        if _innermost(read.loop):
            groups.setdefault((flat(read.base), read.loop.start_byte), []).append(read)
    refusals, unit = [], []
    for group in groups.values():
        found = _operand(parsed, function, nest, group, loops)
        if isinstance(found, Plan):
            return found
        if isinstance(found, tuple):
            unit.append(found)
        elif found:
            refusals.append(found)
    refusals += [why for name, _, why in unknown if why]
    if refusals:
        return refusals[0]
    if unit:
        names = _listed(name for name, _ in unit)
        walks = _listed(how for _, how in unit)
        return f"nothing to pack: every read of {names} in the nest walks memory at unit stride with {walks}"
    return "nothing to pack: no read in the nest moves with the loop around it"


def _listed(words) -> str:
    unique = list(dict.fromkeys(words))
    return unique[0] if len(unique) == 1 else ", ".join(unique[:-1]) + " and " + unique[-1]


def _why_not_placeable(parsed: Parsed, nest) -> str | None:
    if parsed.data[line_start(parsed, nest):nest.start_byte].strip():
        return "the nest shares its first line with other code"
    end = parsed.data.find(b"\n", nest.end_byte)
    if parsed.data[nest.end_byte:end if end >= 0 else len(parsed.data)].strip():
        return "the nest shares its last line with other code"
    if nest.parent.type != "compound_statement":
        kind = nest.parent.type.replace("_", " ")
        return (f"the nest is the body of {'an' if kind[0] in 'aeiou' else 'a'} {kind}, not a statement "
                "of a block")
    for block in (a for a in ancestors(nest) if a.type == "compound_statement"):
        if own_packing_of(parsed, block) is not None:
            return "already packed: the nest is part of a packing (the packed nest or its fallback)"
        above = [p for p in pragmas(parsed.root) if _has_pragma_above(parsed, block, [p])]
        if any(omp_directive_words(pragma_text(p))[:1] == ["omp"] for p in above):
            return (f"the nest sits in the block of '#pragma {pragma_text(above[0])}': every thread "
                    "would pack its own copy")
    return None


def _operand(parsed: Parsed, function, nest, group: list[Read], loops: dict) -> Plan | tuple | str | None:
    """A Plan for ``group`` (the reads of one array); ('B', 'k') when they walk it at unit stride;
    why not where they stride it; None where no read moves with its loop."""
    first = group[0]
    walked = first.walk is not None
    chain = [loops[a.start_byte] for a in ancestors(first.node)
             if a.start_byte in loops and loops[a.start_byte].node == a]
    own = loops.get(first.loop.start_byte)
    counter = "kl_t" if walked else own.name if own is not None else None
    around = [loop for loop in chain if loop.node != first.loop]
    counters = {loop.name for loop in chain} | {"kl_t"}
    terms = _terms(parsed, nest, first, counters)
    if isinstance(terms, str):
        return terms
    if counter is None:
        return None if not terms or all(c is None for c, _, _ in terms) else \
            f"{first.name} is read in the loop at line {first.loop.start_point[0] + 1}, which is not counted"
    stride = [f for c, f, _ in terms if c == counter]
    how = f"the walk of {first.walk.pointer}" if walked else counter
    if not stride:
        return None
    if len(stride) == 1 and all(flat(f) == "1" for f in stride[0]):
        return first.name, how
    return _strided(parsed, function, nest, group, terms, counter, around)


def _innermost(loop) -> bool:
    return not any(n.type in _LOOPS for n in walk(loop) if n != loop)


def _terms(parsed: Parsed, nest, read: Read, counters: set[str]):
    """The index's linear terms, or why it is not affine in the nest's counters."""
    node = expression(read.index, parsed.language)
    if node is None:
        return f"{_shown(read)}: its index '{read.index}' does not parse"
    names = {n.text.decode() for n in walk(node) if n.type == "identifier"}
    moving = sorted(names & (_declared_in(nest) | _written_in(nest)) - counters)
    if moving:
        return (f"{_shown(read)} names {_listed(moving)}, set inside the nest: its index is not affine "
                "in the nest's counters")
    terms = linear_terms(node, counters)
    if terms is None:
        return f"{_shown(read)}: its index '{read.index}' is not affine in the nest's counters"
    return terms


def _shown(read: Read) -> str:
    """The read as the source writes it (a walk: the element it reads)."""
    if read.walk is not None:
        return f"{read.base}[{read.index.replace('kl_t', 't')}]"
    return re.sub(r"\s+", " ", read.node.text.decode())


def _written_in(nest) -> set[str]:
    return {t.text.decode() for _, t in writes(nest) if t is not None and t.type == "identifier"}


def _strided(parsed: Parsed, function, nest, group: list[Read], terms, counter: str,
             around: list[Loop]) -> Plan | str:
    first = group[0]
    others = sorted({c for c, _, _ in terms if c is not None and c != counter})
    shown = first.walk.pointer if first.walk else counter
    if len(others) != 1:
        named = f"the counters {_listed(others)} besides {shown}" if others else f"no counter besides {shown}"
        return f"{_shown(first)} names {named}: packing lays out two counters"
    outer = next(loop for loop in around if loop.name == others[0])
    inner = _inner(first, outer)
    reason = (_why_moving_bounds(parsed, nest, outer, inner, {loop.name for loop in around} | {counter})
              or _why_not_in_scope(parsed, nest, first, {outer.name, inner.name})
              or _why_no_reuse(first, around, outer)
              or _why_not_one_element(group)
              or next(filter(None, (why_conditional(r.node, nest) for r in group)), None)
              or why_exits(nest)
              or why_not_read_only(parsed, function, first.base, first.name))
    if reason:
        return reason
    element = element_type(function, first.base)
    if element is None:
        return f"the element type of {first.name} is not known (a pointer declared once, or a cast)"
    return Plan(tuple(group), first.name, element, outer, inner, _threads(parsed, nest))


def _inner(read: Read, outer: Loop) -> Loop:
    if read.walk is not None:
        return Loop(read.loop, "kl_t", "0", read.walk.trip, outer.type)
    return counted(read.loop)


def _why_moving_bounds(parsed: Parsed, nest, outer: Loop, inner: Loop, counters: set[str]) -> str | None:
    """Why a bound could differ between the copy and the nest, if it could."""
    written, inside = _written_in(nest), _declared_in(nest)
    for label, bounds in ((outer.name, (outer.low, outer.high)), (inner.name, (inner.low, inner.high))):
        for bound in bounds:
            node = expression(bound, parsed.language)
            if node is None or not _arithmetic(node):
                return (f"the bound '{bound}' of {label} is not arithmetic on names (the allocation and "
                        "the copy evaluate it again)")
            names = {n.text.decode() for n in walk(node) if n.type == "identifier"}
            if names & counters:
                return (f"triangular: the range of {label} ('{bound}') names the counter "
                        f"{sorted(names & counters)[0]}")
            if names & (written | inside):
                return f"the bound '{bound}' of {label} is set inside the nest"
    return None


def _why_not_in_scope(parsed: Parsed, nest, read: Read, counters: set[str]) -> str | None:
    """Why the copy, which runs before the nest, could not name what the read names, if so."""
    text = _source_names(read)
    inside = sorted(text & (_declared_in(nest) - counters))
    if inside:
        return (f"{_shown(read)} names {_listed(inside)}, declared inside the nest: the copy before "
                "the nest could not")
    return None


def _source_names(read: Read) -> set[str]:
    node = read.node if read.walk is None else None
    names = {n.text.decode() for n in walk(node) if n.type == "identifier"} if node is not None else set()
    if read.walk is not None:
        names = {read.base} | set(re.findall(r"[A-Za-z_]\w*", read.walk.offset))
    return names - {"kl_t"}


def _why_no_reuse(read: Read, around: list[Loop], outer: Loop) -> str | None:
    if any(loop.name != outer.name for loop in around):
        return None
    return (f"nothing to gain: the nest reads each element of {read.name} once (no loop around the read "
            "leaves its index unchanged); packing would copy every element as often as it is read")


def _why_not_one_element(group: list[Read]) -> str | None:
    elements = list(dict.fromkeys(flat(r.index) for r in group))
    if len(elements) > 1:
        return (f"{group[0].name} is read at {len(elements)} different elements in the nest "
                f"('{group[0].index}', ...): one buffer holds one of them")
    return None


def _declared_in(node) -> set[str]:
    return {name.decode() for name in _locals_of(node)}


def _threads(parsed: Parsed, nest) -> str:
    """'#pragma omp parallel for ...' for the copy when a loop of the nest is threaded by one."""
    loops = [nest, *(n for n in walk(nest) if n.type == "for_statement")]
    for pragma in pragmas(parsed.root):
        text = pragma_text(pragma)
        if omp_directive_words(text)[:3] == ["omp", "parallel", "for"] \
                and any(_has_pragma_above(parsed, loop, [pragma]) for loop in loops):
            threads = re.search(r"\bnum_threads\s*\([^()]*\)", text)
            return "#pragma omp parallel for schedule(static)" + (f" {threads.group(0)}" if threads else "")
    return ""


# ---------------------------------------------------------------------------- the rewrite


def _region_start(parsed: Parsed, nest) -> int:
    """The start of the nest's first line, or of the first pragma line just above it."""
    start = line_start(parsed, nest)
    sibling = nest.prev_sibling
    while sibling is not None and sibling.type == "preproc_call" \
            and not parsed.data[sibling.end_byte:start].strip():
        start = line_start(parsed, sibling)
        sibling = sibling.prev_sibling
    return start


def _packed(parsed: Parsed, nest, plan: Plan, taken_names: set[str]) -> str:
    """The allocation, then ``if (P != NULL) { copy; packed nest; free } else { nest }``."""
    start = _region_start(parsed, nest)
    indent = parsed.data[line_start(parsed, nest):nest.start_byte].decode()
    inner_loop = next((n for n in walk(nest) if n != nest and n.type in _LOOPS), nest)
    unit = _indent_step(parsed, nest, inner_loop) or ("\t" if "\t" in indent else "    ")
    cpp = parsed.language == "cpp"
    buffer = _fresh(f"kl_{plan.name}_packed", taken_names)
    column = _fresh("kl_t", taken_names) if plan.reads[0].walk is not None else plan.inner.name
    rows, columns = _extent(plan.outer), _extent(plan.inner)
    row = _offset(plan.outer.name, plan.outer.low, _wide(parsed, plan.outer.type), cpp)
    at = f"{row} * {_atom(columns)} + {_offset(column, plan.inner.low, True, cpp)}"
    changes = []
    for read in plan.reads:
        if read.walk is None:
            changes.append((read.node.start_byte, read.node.end_byte, f"{buffer}[{at}]"))
        else:
            changes += [(read.walk.value.start_byte, read.walk.value.end_byte,
                         f"{buffer} + {row} * {_atom(columns)}"),
                        (read.walk.step.start_byte, read.walk.step.end_byte, "1")]
    packed_nest = _respliced(parsed, start, nest.end_byte, sorted(set(changes)))
    element, null = plan.element, "nullptr" if cpp else "NULL"
    call = f"{ALLOCATOR}({rows}, {columns}, sizeof({element}))"
    allocated = f"static_cast<{element}*>({call})" if cpp else f"({element}*){call}"
    return "\n".join([f"{indent}{element}* {buffer} = {allocated};",
                      f"{indent}if ({buffer} != {null}) {{",
                      *_copy(plan, indent + unit, unit, f"{buffer}[{at}]", column),
                      reindented(packed_nest, unit),
                      f"{indent}{unit}{'std::free' if cpp else 'free'}({buffer});",
                      f"{indent}}} else {{",
                      reindented(parsed.data[start:nest.end_byte].decode(), unit),
                      f"{indent}}}"])


def _copy(plan: Plan, indent: str, unit: str, element: str, column: str) -> list[str]:
    """The copy nest's lines: rows outer (threaded as the nest is), columns inner."""
    outer, inner = plan.outer, plan.inner
    step = "++{}" if outer.node.child_by_field_name("update").text.startswith(b"++") else "{}++"
    return ([f"{indent}{plan.threads}"] if plan.threads else []) + [
        f"{indent}for ({outer.type} {outer.name} = {outer.low}; {outer.name} < {outer.high}; "
        f"{step.format(outer.name)})",
        f"{indent}{unit}for ({inner.type} {column} = {inner.low}; {column} < {inner.high}; "
        f"{step.format(column)})",
        f"{indent}{unit * 2}{element} = {_source(plan, column)};"]


def _source(plan: Plan, column: str) -> str:
    """What the copy reads one element with: the nest's own read, or the walk's element."""
    read = plan.reads[0]
    if read.walk is None:
        return re.sub(r"\s*\n\s*", " ", read.node.text.decode())
    step = read.walk.step.text.decode()
    offset = read.walk.offset
    element = f"{column} * {_atom(step)}"
    return f"{read.base}[{element}]" if flat(offset) == "0" else f"{read.base}[{offset} + {element}]"


def _extent(loop: Loop) -> str:
    return loop.high if flat(loop.low) == "0" else f"{_atom(loop.high)} - {_atom(loop.low)}"


def _offset(counter: str, low: str, wide: bool, cpp: bool) -> str:
    shifted = counter if flat(low) == "0" else f"({counter} - {_atom(low)})"
    if wide:
        return shifted
    return f"static_cast<std::size_t>({shifted})" if cpp else f"(size_t){shifted}"


def _atom(text: str) -> str:
    text = text.strip()
    return text if re.fullmatch(r"[\w.]+|[\w.]+(->\w+)+|\w+\[\w+\]", text) else f"({text})"


def _wide(parsed: Parsed, kind: str) -> bool:
    """A counter type of 64 bits: a known one, or an alias of one (``using index_t = std::int64_t``)."""
    kind = re.sub(r"\s+", " ", kind.replace("const", "")).strip()
    if kind in _WIDE:
        return True
    alias = re.search(rf"\busing\s+{re.escape(kind)}\s*=\s*([\w:\s]+);|\btypedef\s+([\w:\s]+?)\s+"
                      rf"{re.escape(kind)}\s*;", parsed.text)
    return bool(alias) and re.sub(r"\s+", " ", (alias.group(1) or alias.group(2)).strip()) in _WIDE


def _respliced(parsed: Parsed, start: int, end: int, changes: list[tuple[int, int, str]]) -> str:
    out, cursor = [], start
    for begin, finish, new in changes:
        if begin < cursor:
            continue
        out += [parsed.data[cursor:begin].decode(), new]
        cursor = finish
    return "".join(out) + parsed.data[cursor:end].decode()
