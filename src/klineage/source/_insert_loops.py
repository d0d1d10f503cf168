"""Insertions of loop pragmas: omp parallel for, omp simd, unroll."""

from __future__ import annotations

from klineage.source._blocking_nest import blocked_nests, declared
from klineage.source._detect_common import unroll_pragmas
from klineage.source._detect_cpu import is_simd_only, omp_pragmas
from klineage.source._insert_qualifiers import Inserted, Refusals, Refused, is_device_code
from klineage.source.parse import (
    Parsed,
    Splice,
    ancestors,
    for_loops,
    function_definitions,
    function_name,
    innermost,
    loop_depth,
    pragma_text,
    walk,
    writes,
)

_EXITS = ("break_statement", "return_statement", "goto_statement")


def _pragma_before(parsed: Parsed, loop, pragma: str) -> tuple[int, str]:
    """Offset and text that put ``#pragma ...`` on its own line above ``loop``."""
    line_start = parsed.data.rfind(b"\n", 0, loop.start_byte) + 1
    prefix = parsed.data[line_start:loop.start_byte]
    if prefix.strip():  # the loop shares its line (e.g. 'else for ...'): break the line
        return loop.start_byte, f"\n#pragma {pragma}\n" + " " * len(prefix)
    return line_start, f"#pragma {pragma}\n"


def _has_pragma_above(parsed: Parsed, loop, pragma_nodes: list) -> bool:
    return any(p.end_byte <= loop.start_byte and not parsed.data[p.end_byte:loop.start_byte].strip()
               for p in pragma_nodes)


def _locals_of(node) -> set[bytes]:
    """Names declared inside ``node`` (the loop's own counter, and parameters, included)."""
    names = set()
    for declaration in (n for n in walk(node) if n.type in ("declaration", "parameter_declaration")):
        for declarator in declaration.children_by_field_name("declarator"):
            while declarator is not None and declarator.type != "identifier":
                declarator = declarator.child_by_field_name("declarator")
            if declarator is not None:
                names.add(declarator.text)
    return names


def _not_canonical(loop) -> str | None:
    """Why ``loop`` is not in OpenMP's canonical form (its counter declared in it, compared
    once, stepped once), if it is not: gcc rejects a comma in the increment, and a pointer
    bumped beside the counter would be shared by every thread."""
    initializer = loop.child_by_field_name("initializer")
    if initializer is None or initializer.type != "declaration":
        return "its counter is not declared in the loop (OpenMP needs it private)"
    counters = _locals_of(initializer)
    update = loop.child_by_field_name("update")
    if update is None:
        return "it has no increment"
    if update.type == "comma_expression":
        return (f"its increment {update.text.decode()!r} steps more than the counter (not OpenMP's "
                "canonical form, and what it steps would be shared by the threads)")
    stepped = update.child_by_field_name("argument" if update.type == "update_expression" else "left")
    if update.type not in ("update_expression", "assignment_expression") or stepped is None \
            or stepped.text not in counters:
        return f"its increment {update.text.decode()!r} does not step its counter"
    return None


def _scalar_writes(loop) -> list:
    """Assignments and increments of plain identifiers inside the loop body."""
    body = loop.child_by_field_name("body")
    return [(node, target.text) for node, target in (writes(body) if body is not None else ())
            if target is not None and target.type == "identifier"]


# ---------------------------------------------------------------------------- omp parallel for


def insert_omp_parallel(parsed: Parsed, params: dict) -> Inserted | Refused:
    """Thread the outermost loop that encloses the most work (ties: the first).

    Work counts the loops in the nest, including those of functions it calls, so a row loop
    in kl_launch that calls per-row helpers wins over a loop inside a helper: threading the
    helper's loop would fork and join once per row (measured 64x slower on rmsnorm).

    A loop that shares only what its enclosing block declares (a scratch row malloc'd before it,
    softmax's) is threaded with that block as the parallel region: ``#pragma omp parallel`` on
    the block, so each thread declares its own, ``#pragma omp for`` on the loop, and ``#pragma
    omp atomic write`` on the block's stores of a constant to a name from outside (an error flag).
    """
    existing = omp_pragmas(parsed)
    if any(not is_simd_only(pragma_text(p)) for p in existing):
        # threaded already; an 'omp simd' on an inner loop is no reason to stop
        return Refused("threaded already: an OpenMP pragma other than 'omp simd' is present")
    taken = existing + unroll_pragmas(parsed)  # a loop carries one pragma of ours
    outermost = [loop for loop in for_loops(parsed.root)
                 if not any(a.type in ("for_statement", "while_statement", "do_statement")
                            for a in ancestors(loop))]
    why, candidates = Refusals(parsed), []
    in_block = _block_counters(parsed)
    for loop in outermost:
        found = _threadable(parsed, loop, taken, in_block.get(loop.start_byte, set()))
        if isinstance(found, str):
            why.add(loop, found)
        else:
            candidates.append((loop, found))
    if not candidates:
        return why.refused("no for loop outside another loop")
    loop, region = max(candidates, key=lambda c: (_work(parsed, c[0]), loop_depth(c[0]), -c[0].start_byte))
    schedule = params.get("schedule", "static")
    if schedule not in ("static", "dynamic"):
        return Refused(f"schedule {schedule!r}: the pass writes static or dynamic")
    if region is None:
        pragma = params.get("pragma", f"omp parallel for schedule({schedule})")
        placed = [(loop, pragma)]
    else:
        block, stores = region
        pragma = f"omp parallel + omp for schedule({schedule})"
        placed = [(block, "omp parallel"), (loop, f"omp for schedule({schedule})"),
                  *((store, "omp atomic write") for store in stores)]
    splice = Splice(parsed.data)
    for node, text in placed:
        offset, line = _pragma_before(parsed, node, text)
        splice.replace(offset, offset, line)
    flags = () if "-fopenmp" in params.get("flags", ()) else ("-fopenmp",)
    return Inserted(splice.apply(), [parsed.site(loop)], {"pragma": pragma, "schedule": schedule}, flags)


def _threadable(parsed: Parsed, loop, taken: list, in_block: set[bytes]):
    """None (thread the loop), (block, stores to make atomic) (thread the block around it), or
    why neither."""
    if _has_pragma_above(parsed, loop, taken):
        return "a pragma sits on it already"
    if _called(parsed, loop):
        return "it sits in a helper another function calls: threading it would fork and join once per call"
    reason = _why_not_parallel(loop, in_block)
    if reason is None:
        return None
    region = _region(parsed, loop, in_block, taken)
    return region if region is not None else reason


def _region(parsed: Parsed, loop, in_block: set[bytes], taken: list):
    """(block, stores) when the loop is the one loop of a bare ``{ ... }`` block whose own
    declarations are all it shares: the block as the parallel region gives each thread its own.
    Outside the loop the block may store only constants to names from outside it (made atomic)."""
    block = loop.parent
    if block is None or block.type != "compound_statement" or block.parent is None \
            or block.parent.type != "compound_statement" or _has_pragma_above(parsed, block, taken):
        return None
    if sum(n.type in ("for_statement", "while_statement", "do_statement") for n in walk(block)) \
            != sum(n.type in ("for_statement", "while_statement", "do_statement") for n in walk(loop)):
        return None  # another loop in the block would run once per thread
    own, stores = _locals_of(block), []
    if _why_not_parallel(loop, in_block, private=own) is not None:
        return None
    if {name for _, name in _scalar_writes(loop)} & (own - _locals_of(loop)):
        return None  # a scalar of the block the loop writes carries from one iteration to the next
    function = next(a for a in ancestors(block) if a.type == "function_definition")
    shared = _mutable_pointers(function) - own
    for statement in (c for c in block.named_children if c != loop):
        if any(n.type == "identifier" and n.text in shared for call in walk(statement)
               if call.type == "call_expression" for n in walk(call)):
            return None  # every thread would pass the shared buffer to the call
        for node, target in writes(statement):
            if target is None or target.text in own:
                continue
            plain = node.type == "assignment_expression" and node.child_by_field_name("operator").text == b"="
            value = node.child_by_field_name("right") if plain else None
            if target.type != "identifier" or value is None or value.type != "number_literal" \
                    or node.parent is None or node.parent.type != "expression_statement":
                return None  # a store that would race, other than one constant to a flag
            stores.append(node.parent)
    return block, stores


def _functions_by_name(parsed: Parsed) -> dict[bytes, object]:
    return {function_name(f).encode(): f for f in function_definitions(parsed.root)}


def _work(parsed: Parsed, node, depth: int = 0) -> int:
    """Loops under ``node``, following calls to functions defined in the file (3 levels)."""
    functions = _functions_by_name(parsed)
    total = sum(1 for n in walk(node) if n.type == "for_statement")
    if depth < 3:
        for call in (n for n in walk(node) if n.type == "call_expression"):
            callee = functions.get(call.child_by_field_name("function").text)
            if callee is not None and callee is not node:
                total += _work(parsed, callee, depth + 1)
    return total


def _called(parsed: Parsed, loop) -> bool:
    """The loop sits in a helper that another function of the file calls (not a top-level entry)."""
    owner = next((a for a in ancestors(loop) if a.type == "function_definition"), None)
    if owner is None:
        return False
    name = function_name(owner).encode()
    return any(call.child_by_field_name("function").text == name
               for call in walk(parsed.root) if call.type == "call_expression")


def _block_counters(parsed: Parsed) -> dict[int, set[bytes]]:
    """Outer block loop (by start) -> the counter of its element loop, which runs over the
    block alone (``for (i = ib; i < min(ib + T, M); i++)`` with ``ib += T``): an index on it is
    as private to one block iteration as one on the block counter itself."""
    found = {}
    for nest in blocked_nests(parsed):
        element = declared(nest.loops[0])
        if element is not None:
            found[nest.blocks[0].start_byte] = {element[0].encode()}
    return found


def _why_not_parallel(loop, in_block: set[bytes] = frozenset(),
                      private: set[bytes] = frozenset()) -> str | None:
    """None when the counter is the loop's own, no scalar from outside the loop is written in it,
    and every array written from outside is indexed by the counter or by a counter that runs
    over its block (a scratch row shared by all iterations, written as e[j], would race:
    softmax's re-derivation was caught doing that)."""
    not_canonical = _not_canonical(loop)
    if not_canonical:
        return not_canonical
    initializer = loop.child_by_field_name("initializer")
    own = _locals_of(loop) | set(private)  # private: each thread declares its own (a region)
    if any(n.type in _EXITS for n in walk(loop)):
        return "a break, return or goto leaves it early"
    shared = sorted({name.decode() for _, name in _scalar_writes(loop) if name not in own})
    if shared:
        return f"it writes {', '.join(shared)}, declared outside it: the threads would race"
    counter = _locals_of(initializer) | set(in_block)
    passed = _shared_mutable_pointer(loop, own)
    if passed:
        return (f"it passes the writable pointer {passed}, declared outside it, to a call: every "
                "iteration may write the same memory")
    racy = [t.text.decode() for t in _array_writes(loop) if not _write_is_private(t, own, counter)]
    if racy:
        return f"it writes {racy[0]}, whose index does not involve its counter: the threads would race"
    return None


def _shared_mutable_pointer(loop, own: set[bytes]) -> str | None:
    """A non-const pointer declared outside the loop that a call in it gets as a bare argument:
    the callee may write through it from every iteration (softmax's shared scratch row)."""
    function = next((a for a in ancestors(loop) if a.type == "function_definition"), None)
    if function is None:
        return None
    mutable = _mutable_pointers(function)
    for call in (n for n in walk(loop) if n.type == "call_expression"):
        arguments = call.child_by_field_name("arguments")
        for argument in arguments.named_children if arguments is not None else ():
            if argument.type == "identifier" and argument.text not in own and argument.text in mutable:
                return argument.text.decode()
    return None


def _mutable_pointers(function) -> set[bytes]:
    """Names declared in ``function`` (parameters included) as pointers to non-const data."""
    names = set()
    for node in walk(function):
        if node.type not in ("declaration", "parameter_declaration"):
            continue
        const = any(c.type == "type_qualifier" and c.text == b"const" for c in node.children)
        declarators = node.children_by_field_name("declarator")
        for declarator in declarators:
            if declarator.type == "init_declarator":
                declarator = declarator.child_by_field_name("declarator")
            if declarator is not None and declarator.type == "pointer_declarator" and not const:
                inner = declarator
                while inner is not None and inner.type != "identifier":
                    inner = inner.child_by_field_name("declarator")
                if inner is not None:
                    names.add(inner.text)
    return names


def _array_writes(loop) -> list:
    """Left sides of assignments through subscripts or pointers inside the loop."""
    return [target for _, target in writes(loop)
            if target is not None and target.type in ("subscript_expression", "pointer_expression")]


def _write_is_private(target, own: set[bytes], counter: set[bytes]) -> bool:
    base = target.child_by_field_name("argument")
    while base is not None and base.type in ("subscript_expression", "parenthesized_expression"):
        inner = base.child_by_field_name("argument")
        base = inner if inner is not None else next(iter(base.named_children), None)
    if base is not None and base.type == "identifier" and base.text in own:
        return True  # a pointer the iteration computed itself, e.g. yr = y + i * N
    mentioned = {n.text for n in walk(target) if n.type == "identifier"}
    return bool(mentioned & counter)


# ---------------------------------------------------------------------------- omp simd


def insert_omp_simd(parsed: Parsed, params: dict) -> Inserted | Refused:
    splice, sites, reductions, why = Splice(parsed.data), [], {}, Refusals(parsed)
    # No other pragma may sit between an omp simd and its loop (GCC rejects both orders with unroll).
    existing = omp_pragmas(parsed) + unroll_pragmas(parsed)
    for loop in innermost(for_loops(parsed.root)):
        if _has_pragma_above(parsed, loop, existing):
            why.add(loop, "a pragma sits on it already")
            continue
        clause = _simd_clause(parsed, loop)
        if isinstance(clause, Refused):
            why.add(loop, clause.reason)
            continue
        offset, text = _pragma_before(parsed, loop, f"omp simd{clause}")
        splice.replace(offset, offset, text)
        sites.append(loop)
        if clause:
            reductions[parsed.site(loop).start_line] = clause.strip()
    if not sites:
        return why.refused("no innermost for loop")
    flags = () if {"-fopenmp", "-fopenmp-simd"} & set(params.get("flags", ())) else ("-fopenmp-simd",)
    return Inserted(splice.apply(), [parsed.site(s) for s in sites], {"reductions": reductions}, flags)


def _simd_clause(parsed: Parsed, loop) -> str | Refused:
    """'' (no clause), ' reduction(+ : s)' for a sum, or why the loop is not safe to vectorize."""
    if loop.child_by_field_name("initializer") is None:
        return Refused("not a canonical loop: OpenMP needs an initializer ('for (; j < n; j++)' "
                       "does not compile)")
    update = loop.child_by_field_name("update")
    if update is not None and update.type == "comma_expression":
        return Refused(f"its increment {update.text.decode()!r} steps more than the counter (not "
                       "OpenMP's canonical form)")
    if any(n.type in _EXITS for n in walk(loop)):
        return Refused("a break, return or goto leaves it early")
    own = _locals_of(loop)
    reductions: dict[str, str] = {}
    spans: dict[bytes, list] = {}
    for node, name in _scalar_writes(loop):
        if name in own:
            continue
        kind = _reduction_kind(node, name)
        if kind is None or reductions.get(name.decode(), kind) != kind:
            return Refused(f"it writes {name.decode()}, declared outside it, other than as one "
                           "+, max or min reduction")
        reductions[name.decode()] = kind
        spans.setdefault(name, []).append(_reduction_span(node, kind))
    for name, own_statements in spans.items():
        # A running value read elsewhere in the loop ('a = row; ...; row += n') carries from
        # one iteration to the next: no reduction (the clause on a pointer does not compile).
        for use in walk(loop):
            if use.type == "identifier" and use.text == name and not any(
                    _within(use, span) for span in own_statements):
                return Refused(f"it reads {name.decode()} (line {use.start_point[0] + 1}), which it also "
                               "accumulates: the value carries from one iteration to the next")
    if not _arrays_independent(loop):
        return Refused("an array it writes is read at another index, or written through a pointer: "
                       "lanes could depend on each other")
    return "".join(f" reduction({kind} : {name})" for name, kind in sorted(reductions.items()))


def _reduction_span(node, kind: str):
    """The code a reduction statement covers: the whole ``if`` of a guarded max or min, the
    assignment otherwise; for ``s += v`` only the target (v must not read s)."""
    if kind == "+":
        return node.child_by_field_name("left")
    statement = node.parent
    branch = statement.parent if statement is not None else None
    if branch is not None and branch.type == "compound_statement":
        branch = branch.parent
    return branch if branch is not None and branch.type == "if_statement" else node


def _within(node, span) -> bool:
    return span.start_byte <= node.start_byte and node.end_byte <= span.end_byte


def _reduction_kind(node, name: bytes) -> str | None:
    """'+' for ``s += v``; 'max'/'min' for ``m = v > m ? v : m``, ``m = fmaxf(m, v)`` or
    ``if (v > m) m = v;``."""
    if node.type != "assignment_expression":
        return None
    operator = node.child_by_field_name("operator")
    if operator is not None and operator.text == b"+=":
        return "+"
    right = node.child_by_field_name("right")
    if operator is None or operator.text != b"=" or right is None:
        return None
    guarded = _guarded_kind(node, name, right)
    if guarded is not None:
        return guarded
    if right.type == "call_expression":
        callee = right.child_by_field_name("function").text
        arguments = right.child_by_field_name("arguments")
        names = {a.text for a in arguments.named_children} if arguments is not None else set()
        kind = {b"fmaxf": "max", b"fmax": "max", b"fminf": "min", b"fmin": "min"}.get(callee)
        return kind if kind and name in names else None
    if right.type != "conditional_expression":
        return None
    condition = right.child_by_field_name("condition")
    while condition is not None and condition.type == "parenthesized_expression":
        condition = next(iter(condition.named_children), None)
    if condition is None or condition.type != "binary_expression":
        return None
    left, test, other = (condition.child_by_field_name(k) for k in ("left", "operator", "right"))
    chosen = right.child_by_field_name("consequence")
    fallback = right.child_by_field_name("alternative")
    if name not in (left.text, other.text):
        return None
    if chosen is None or fallback is None or (chosen.text, fallback.text) != (left.text, other.text):
        return None  # only "a OP b ? a : b" picks the larger (>) or smaller (<) of a and b
    return {b">": "max", b">=": "max", b"<": "min", b"<=": "min"}.get(test.text)


_FLIPPED = {b">": b"<", b">=": b"<=", b"<": b">", b"<=": b">="}


def _guarded_kind(node, name: bytes, value) -> str | None:
    """'max' for ``if (v > m) m = v;`` (or ``m < v``), 'min' for the < forms: the assignment is
    the whole branch of an if with no else, and the test compares the assigned value with m."""
    statement = node.parent
    branch = statement.parent if statement is not None else None
    if branch is not None and branch.type == "compound_statement":
        if branch.named_child_count != 1:
            return None
        branch = branch.parent
    if statement is None or statement.type != "expression_statement" or branch is None \
            or branch.type != "if_statement" or branch.child_by_field_name("alternative") is not None:
        return None
    condition = branch.child_by_field_name("condition")
    while condition is not None and condition.type in ("parenthesized_expression", "condition_clause"):
        condition = next(iter(condition.named_children), None)
    if condition is None or condition.type != "binary_expression":
        return None
    left, test, other = (condition.child_by_field_name(k) for k in ("left", "operator", "right"))
    operator = test.text
    if (left.text, other.text) == (name, value.text):  # m < v: read as v > m
        operator = _FLIPPED.get(operator)
    elif (left.text, other.text) != (value.text, name):
        return None
    return {b">": "max", b">=": "max", b"<": "min", b"<=": "min"}.get(operator)


def _arrays_independent(loop) -> bool:
    """Every array written in the loop is read (if at all) at the same subscript it is written."""
    written: dict[bytes, set[bytes]] = {}
    for node in walk(loop):
        if node.type == "assignment_expression":
            left = node.child_by_field_name("left")
            if left.type == "subscript_expression":
                written.setdefault(left.child_by_field_name("argument").text, set()).add(left.text)
            elif left.type == "pointer_expression":
                return False
    for node in walk(loop):
        if node.type == "subscript_expression":
            base = node.child_by_field_name("argument").text
            if base in written and node.text not in written[base]:
                return False
    return all(len(subscripts) == 1 for subscripts in written.values())


# ---------------------------------------------------------------------------- unroll


def insert_unroll(parsed: Parsed, params: dict) -> Inserted | Refused:
    """'#pragma GCC unroll N' (C/C++) or '#pragma unroll [N]' (CUDA device code) on innermost loops."""
    cuda = parsed.language == "cuda"
    factor = params.get("factor", None if cuda else 4)
    pragma = (f"unroll {factor}" if factor else "unroll") if cuda else f"GCC unroll {factor}"
    device = [f for f in function_definitions(parsed.root) if is_device_code(f)] if cuda else [parsed.root]
    existing = unroll_pragmas(parsed) + omp_pragmas(parsed)
    splice, sites, why = Splice(parsed.data), [], Refusals(parsed)
    for scope in device:
        for loop in innermost(for_loops(scope)):
            if _has_pragma_above(parsed, loop, existing):
                why.add(loop, "a pragma sits on it already")
            else:
                offset, text = _pragma_before(parsed, loop, pragma)
                splice.replace(offset, offset, text)
                sites.append(loop)
    if not sites:
        return why.refused("no innermost for loop" + (" in device code" if cuda else ""))
    return Inserted(splice.apply(), [parsed.site(s) for s in sites], {"factor": factor, "pragma": pragma})
