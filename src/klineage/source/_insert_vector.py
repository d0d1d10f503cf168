"""Insertion of vectorized_access (CUDA): a guarded fast-path copy of a kernel whose unit-stride
loops move 16 bytes per access (8 with the ``vector_bytes`` tunable).

The rewrite, for each kernel launched once from kl_launch:

- every loop ``for (I j = START; j < BOUND; j += STRIDE)`` (or ``++j``) whose body reads or writes
  ``p[OFF + j]`` / ``*(p + OFF + j)`` becomes a loop over ``V``-element chunks (``kl_j0``): the
  reads are 16-byte loads before an inner loop over the chunk's lanes, which runs the original
  body with ``j = kl_j0 + kl_lane``; the writes are 16-byte stores after it. ``V = 16 / the
  widest element size`` among the accesses (narrower elements move 8 or 4 bytes).
- only a loop whose iterations, over all threads, are every j of [0, BOUND) once: from 0 by 1,
  or from the thread's index by the block's, grid's or warp's thread count (chunk k of the copy
  stands where element k was; a loop from 1 would skip elements 1 to V - 1).
- a kernel with no loop, one element per thread (``i = blockIdx.x * blockDim.x + threadIdx.x``
  then ``if (i < BOUND) BODY`` or ``if (i >= BOUND) return; BODY``), gets one chunk per thread:
  ``kl_i0 = i * V``, the check on the chunk, and its launch's grid divided by V.
- the copy is named ``<kernel>_vec``; the launch becomes ``if (ok) <kernel>_vec<<<...>>>(...) else
  <kernel><<<...>>>(...)`` with ``ok`` the conditions that make every chunk whole and aligned: the
  integer arguments that BOUND and every OFF are multiples of (divisibility is proved term by
  term through const locals) are multiples of V, and every vectorized pointer argument is 16-byte
  aligned. This is the shape the expert kernels have, so the fast-path removal undoes it.

Only provable accesses are vectorized; a loop qualifies when its bound is provably a multiple of
V, its body has no inner loop, no break/return/goto/__syncthreads and does not assign j, and
every pointer it writes is written only through one vectorizable, unconditional store. Kernels
whose launch passes the same buffer twice are skipped (a hoisted load could then read what a
store has not yet written; distinct ABI buffers never alias). Whether the result is correct and
faster is the gate's call.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from klineage.source._cuda_kernel import (
    EXITS,
    GLOBAL_INDEX,
    VECTOR_BYTES,
    KernelFacts,
    LoopFacts,
    declaration_kind,
    flat_shape,
    indent_of,
    innermost_name,
    mentions_of,
    param_kind,
    plain_index,
    plus_terms,
    read_kernel,
    uncast,
)
from klineage.source._insert_qualifiers import Inserted, Refusals, Refused, _block_size
from klineage.source.parse import (
    Parsed,
    Splice,
    callee_name,
    calls,
    for_loops,
    function_definitions,
    function_name,
    is_cuda_kernel,
    walk,
    writes,
)

ELEMENT_BYTES = {"float": 4, "int": 4, "unsigned": 4, "int32_t": 4, "uint32_t": 4,
                 "__nv_bfloat16": 2, "__half": 2, "half": 2, "nv_bfloat16": 2, "short": 2,
                 "int16_t": 2, "uint16_t": 2}
_RAW_TYPES = {16: "uint4", 8: "uint2", 4: "unsigned int"}


@dataclass
class _Pointer:
    root: str
    """The kernel parameter it points into."""
    element: str
    needs: frozenset[str]
    """Integer parameters whose divisibility by V makes its offset from ``root`` a multiple of V."""


@dataclass
class _Access:
    node: object
    pointer: str
    offset: str
    """The access's offset from ``pointer`` without the counter ('' when none)."""
    write: bool


@dataclass
class _Group:
    pointer: str
    offset: str
    write: bool
    accesses: list = field(default_factory=list)


def insert_vectorized_access(parsed: Parsed, params: dict) -> Inserted | Refused:
    if parsed.language != "cuda":
        return Refused("not CUDA: the pass rewrites device loads and stores")
    launcher = next((f for f in function_definitions(parsed.root) if function_name(f) == "kl_launch"),
                    None)
    if launcher is None:
        return Refused("no kl_launch in the file: the launch cannot be guarded")
    vector_bytes = int(params.get("vector_bytes", VECTOR_BYTES))
    if vector_bytes not in (8, 16):
        return Refused(f"vector_bytes {vector_bytes}: the pass moves 8- or 16-byte chunks")
    splice, sites, widths, why = Splice(parsed.data), [], {}, Refusals(parsed)
    for function in function_definitions(parsed.root):
        if not is_cuda_kernel(function):
            continue
        name = function_name(function)
        if function.parent.type == "template_declaration":
            why.add(function, f"{name} is a template: its element type is not known")
            continue
        launches = [c for c in calls(launcher) if callee_name(c) == name
                    and any(k.type == "kernel_call_syntax" for k in c.children)]
        kernel = read_kernel(function)
        kernel.vector_bytes = vector_bytes
        if len(launches) != 1:
            why.add(function, f"kl_launch launches {name} {len(launches)} times, not once")
            continue
        if _passes_a_buffer_twice(launches[0], kernel):
            why.add(function, f"the launch passes one buffer twice to {name}: a hoisted load could "
                              "read what a store has not yet written")
            continue
        clone = _vectorized_clone(parsed, kernel)
        if isinstance(clone, Refused):
            why.add(function, f"{name}: {clone.reason}")
            continue
        splice.replace(function.end_byte, function.end_byte, "\n\n" + clone)
        _splice_launch(parsed, splice, launcher, launches[0], kernel)
        sites.append(function)
        widths[name] = kernel.width
    if not sites:
        return why.refused("no __global__ kernel")
    return Inserted(splice.apply(), [parsed.site(n) for n in sites], {"vector_bytes": vector_bytes,
                                                                      "lanes": widths})


def _passes_a_buffer_twice(launch, kernel: KernelFacts) -> bool:
    arguments = launch.child_by_field_name("arguments").named_children
    buffers = [uncast(a).text for a, (_, kind) in zip(arguments, kernel.params, strict=False)
               if kind.startswith("ptr:")]
    return len(buffers) != len(set(buffers))


# ---------------------------------------------------------------------------- kernel facts


def _multiple_of(kernel: KernelFacts, node, lanes: int, seen: frozenset = frozenset()) -> frozenset | None:
    """The integer parameters that must be multiples of ``lanes`` for ``node`` to be one (None:
    not provable)."""
    kind = node.type
    if kind in ("parenthesized_expression", "cast_expression"):
        return _multiple_of(kernel, uncast(node), lanes, seen)
    if kind == "number_literal":
        digits = re.fullmatch(r"(\d+)[uUlL]*", node.text.decode())
        return frozenset() if digits and int(digits.group(1)) % lanes == 0 else None
    if kind == "identifier":
        name = node.text.decode()
        if param_kind(kernel, name) == "int":
            return frozenset({name})
        init = kernel.locals_.get(name)
        value = init.child_by_field_name("value") if init is not None else None
        if value is None or name in seen or declaration_kind(init) != "int":
            return None
        return _multiple_of(kernel, value, lanes, seen | {name})
    if kind == "binary_expression":
        operator = node.child_by_field_name("operator").type
        left = _multiple_of(kernel, node.child_by_field_name("left"), lanes, seen)
        right = _multiple_of(kernel, node.child_by_field_name("right"), lanes, seen)
        if operator in ("+", "-"):
            return left | right if left is not None and right is not None else None
        if operator == "*":
            options = [s for s in (left, right) if s is not None]
            return min(options, key=len) if options else None
    return None


def _pointer(kernel: KernelFacts, name: str, lanes: int, seen: frozenset = frozenset()) -> _Pointer | None:
    """Where ``name`` points: a pointer parameter, or a const local ``param + offset``."""
    kind = param_kind(kernel, name)
    if kind is not None:
        return _Pointer(name, kind[4:], frozenset()) if kind.startswith("ptr:") else None
    init = kernel.locals_.get(name)
    if init is None or name in seen or init.child_by_field_name("value") is None \
            or not declaration_kind(init).startswith("ptr:"):
        return None
    terms = plus_terms(init.child_by_field_name("value"))
    bases = [t for t in terms if t.type == "identifier" and _pointer(kernel, t.text.decode(), lanes,
                                                                      seen | {name})]
    if len(bases) != 1:
        return None
    base = _pointer(kernel, bases[0].text.decode(), lanes, seen | {name})
    needs = set(base.needs)
    for term in terms:
        if term is not bases[0]:
            need = _multiple_of(kernel, term, lanes)
            if need is None:
                return None
            needs |= need
    element = declaration_kind(init)[4:]
    return _Pointer(base.root, element, frozenset(needs)) if element == base.element else None


# ---------------------------------------------------------------------------- loops


def _unit_stride_loop(loop) -> LoopFacts | None:
    init = loop.child_by_field_name("initializer")
    condition = loop.child_by_field_name("condition")
    update = loop.child_by_field_name("update")
    if init is None or init.type != "declaration" or condition is None or update is None:
        return None
    declarators = init.children_by_field_name("declarator")
    if len(declarators) != 1 or declarators[0].type != "init_declarator":
        return None
    counter = declarators[0].child_by_field_name("declarator")
    if counter.type != "identifier":
        return None
    name = counter.text
    if condition.type != "binary_expression" or condition.child_by_field_name("operator").type != "<" \
            or condition.child_by_field_name("left").text != name:
        return None
    if update.type == "update_expression" and update.child_by_field_name("argument").text == name \
            and b"++" in update.text:
        stride = "1"
    elif update.type == "assignment_expression" and update.child_by_field_name("left").text == name \
            and update.child_by_field_name("operator").type == "+=" \
            and name not in {n.text for n in walk(update.child_by_field_name("right"))}:
        stride = update.child_by_field_name("right").text.decode()
    else:
        return None
    counter_type = re.sub(r"\s+", " ", init.child_by_field_name("type").text.decode())
    return LoopFacts(loop, name.decode(), counter_type,
                 declarators[0].child_by_field_name("value").text.decode(), stride,
                 condition.child_by_field_name("right"), loop.child_by_field_name("body"), loop)


def _accesses(kernel: KernelFacts, loop: LoopFacts, lanes: int) -> list[_Access]:
    """The loop's memory accesses at ``offset + counter`` through a known pointer."""
    found = []
    for node in walk(loop.body):
        address = None
        if node.type == "subscript_expression":
            index = node.child_by_field_name("indices") or node.named_children[-1]
            index = index.named_children[0] if index.type == "subscript_argument_list" else index
            address = [node.child_by_field_name("argument"), *plus_terms(index)]
        elif node.type == "pointer_expression" and node.children[0].type == "*":
            address = plus_terms(node.child_by_field_name("argument"))
        if address is None:
            continue
        counters = [t for t in address if t.type == "identifier" and t.text.decode() == loop.counter]
        pointers = [t for t in address if t.type == "identifier" and _pointer(kernel, t.text.decode(),
                                                                              lanes)]
        if len(counters) != 1 or len(pointers) != 1:
            continue
        rest = [t.text.decode() for t in address if t is not counters[0] and t is not pointers[0]]
        found.append(_Access(node, pointers[0].text.decode(), " + ".join(rest), _is_store(node)))
    return found


def _is_store(access) -> bool:
    parent = access.parent
    return parent.type == "assignment_expression" and parent.child_by_field_name("left") == access


def _groups(kernel: KernelFacts, loop: LoopFacts, lanes: int) -> list[_Group] | Refused:
    """Vectorizable access groups (pointer, offset), or why the loop must stay scalar."""
    accesses = _accesses(kernel, loop, lanes)
    body = loop.body
    groups: dict[tuple[str, str], _Group] = {}
    for access in accesses:
        key = (access.pointer, re.sub(r"\s+", "", access.offset))
        group = groups.setdefault(key, _Group(access.pointer, access.offset, access.write))
        if group.write != access.write:
            return Refused(f"{access.pointer} is both read and written at one index")
        group.accesses.append(access)
    written = {g.pointer for g in groups.values() if g.write}
    for name in written:
        uses = [n for n in walk(body) if n.type == "identifier" and n.text.decode() == name]
        mine = [g for g in groups.values() if g.pointer == name]
        if len(mine) != 1 or len(uses) != len(mine[0].accesses) or len(uses) != 1:
            return Refused(f"{name} is touched other than by one store at one index")
        if not _unconditional(mine[0].accesses[0].node, loop.owner):
            return Refused(f"the store to {name} is conditional or in an inner block")
        if mine[0].accesses[0].node.parent.child_by_field_name("operator").type != "=":
            return Refused(f"the store to {name} is a compound assignment (it reads the old value)")
    kept = []
    for group in groups.values():
        if _group_needs(kernel, group, loop.counter, lanes) is None:
            if group.write:
                return Refused(f"the offset of the store to {group.pointer} is not provably a "
                               f"multiple of {lanes}")
            continue
        kept.append(group)
    return kept or Refused(f"no access is provably a whole, aligned chunk of {lanes}")


def _group_needs(kernel: KernelFacts, group: _Group, counter: str, lanes: int) -> frozenset | None:
    """Integer parameters that make the group's chunks whole multiples of ``lanes`` from an
    aligned parameter, or None if none can."""
    needs = set(_pointer(kernel, group.pointer, lanes).needs)
    for term in _address_terms(group.accesses[0].node):
        if term.type == "identifier" and term.text.decode() in (group.pointer, counter):
            continue
        need = _multiple_of(kernel, term, lanes)
        if need is None:
            return None
        needs |= need
    return frozenset(needs)


def _address_terms(access) -> list:
    if access.type == "subscript_expression":
        index = access.child_by_field_name("indices") or access.named_children[-1]
        index = index.named_children[0] if index.type == "subscript_argument_list" else index
        return [access.child_by_field_name("argument"), *plus_terms(index)]
    return plus_terms(access.child_by_field_name("argument"))


def _unconditional(access, loop) -> bool:
    """The store is a statement of the loop body itself, not under a condition or inner loop."""
    statement = access.parent.parent
    return statement.type == "expression_statement" and (
        statement.parent == loop or (statement.parent.type == "compound_statement"
                                     and statement.parent.parent == loop))


# ---------------------------------------------------------------------------- the rewrite


def _vectorized_clone(parsed: Parsed, kernel: KernelFacts) -> str | Refused:
    function = kernel.node
    base = function.start_byte
    splice = Splice(parsed.data[base:function.end_byte])
    rewritten, reasons = 0, []
    loops = for_loops(function)
    if not loops:
        flat = flat_shape(kernel)
        if isinstance(flat, Refused):
            return Refused(f"it has no loop, and not the flat one-element-per-thread shape: "
                           f"{flat.reason}")
        plan = _plan(kernel, flat)
        if isinstance(plan, str):
            return Refused(f"the flat index {flat.counter}: {plan}")
        _flat_rewrite(parsed, splice, kernel, flat, *plan, base)
        kernel.flat = True
        rewritten = 1
    for loop in loops:  # loops holding loops are skipped, so none overlap
        line = f"the loop at line {parsed.site(loop).start_line}"
        facts = _unit_stride_loop(loop)
        if facts is None:
            reasons.append(f"{line} is not 'for (T j = START; j < BOUND; j += STRIDE or ++j)'")
            continue
        blocked = _blocked(loop, facts) or _not_a_partition(parsed, kernel, facts)
        if blocked:
            reasons.append(f"{line} {blocked}")
            continue
        plan = _plan(kernel, facts)
        if isinstance(plan, str):
            reasons.append(f"{line}: {plan}")
            continue
        splice.replace(loop.start_byte - base, loop.end_byte - base,
                       _vector_loop(parsed, kernel, facts, *plan, base))
        rewritten += 1
    if not rewritten:
        return Refused("; ".join(reasons))
    text = splice.apply()
    name = function_name(function)
    return re.sub(rf"\b{re.escape(name)}\b", f"{name}_vec", text, count=1)


def _plan(kernel: KernelFacts, facts: LoopFacts) -> tuple[list[_Group], int] | str:
    """The access groups to vectorize and the lanes, noting what the launch guard must check;
    or why not."""
    elements = _loop_elements(kernel, facts)
    if not elements:
        return (f"no access p[OFF + {facts.counter}] of a 2- or 4-byte element through a pointer "
                "parameter")
    lanes = kernel.vector_bytes // max(ELEMENT_BYTES[e] for e in elements)
    if lanes < 2:
        return f"a {kernel.vector_bytes}-byte chunk holds one element"
    bound = _multiple_of(kernel, facts.bound, lanes)
    if bound is None:
        return (f"its bound {facts.bound.text.decode()} is not provably a multiple of {lanes} "
                "(a product or sum of integer parameters and literals)")
    groups = _groups(kernel, facts, lanes)
    if isinstance(groups, Refused):
        return groups.reason
    kernel.needs |= bound
    for group in groups:
        kernel.needs |= _group_needs(kernel, group, facts.counter, lanes)
        kernel.aligned.add(_pointer(kernel, group.pointer, lanes).root)
    kernel.width = max(kernel.width, lanes)
    return groups, lanes


# ---------------------------------------------------------------------------- flat kernels


def _flat_rewrite(parsed: Parsed, splice: Splice, kernel: KernelFacts, flat: LoopFacts, groups: list[_Group],
                  lanes: int, base: int) -> None:
    """``T i = G;`` -> ``const T kl_i0 = (T)(G) * V;``; the bounds check tests the chunk, and the
    body runs for its V lanes between the 16-byte loads and stores. The launch divides the grid
    by V (``_splice_launch``)."""
    chunk = f"kl_{flat.counter}0"
    declaration = flat.node
    splice.replace(declaration.start_byte - base, declaration.end_byte - base,
                   f"const {flat.counter_type} {chunk} = ({flat.counter_type})({flat.start}) * {lanes};")
    guard = flat.guard
    condition = guard.child_by_field_name("condition")
    (mention,) = mentions_of(condition, flat.counter)
    test = parsed.data[condition.start_byte:mention.start_byte].decode() + chunk + \
        parsed.data[mention.end_byte:condition.end_byte].decode()
    indent = indent_of(parsed, guard)
    if flat.owner == guard:
        inner = indent + "  "
        lines = [f"if {test} {{", *_chunk(parsed, kernel, flat, groups, lanes, chunk, inner,
                                          flat.body.start_byte, flat.body.end_byte), f"{indent}}}"]
        splice.replace(guard.start_byte - base, guard.end_byte - base, "\n".join(lines))
        return
    statements = [c for c in flat.body.named_children if c.start_byte > guard.start_byte]
    first, last = statements[0], statements[-1]
    splice.replace(condition.start_byte - base, condition.end_byte - base, test)
    lines = _chunk(parsed, kernel, flat, groups, lanes, chunk, indent, first.start_byte, last.end_byte)
    lines[0] = lines[0].lstrip()
    splice.replace(first.start_byte - base, last.end_byte - base, "\n".join(lines))


def _blocked(loop, facts: LoopFacts) -> str | None:
    body = loop.child_by_field_name("body")
    if any(target is not None and target.text.decode() == facts.counter for _, target in writes(body)):
        return f"assigns its counter {facts.counter} in the body"
    for node in walk(body):
        if node.type in EXITS:
            return "has a break, return or goto"
        if node.type == "call_expression" and callee_name(node) == "__syncthreads":
            return "has a __syncthreads()"
        if node.type == "for_statement" and node is not loop:
            return "holds a loop"  # nested loops keep their own counters: left to a later pass
    return None


def _not_a_partition(parsed: Parsed, kernel: KernelFacts, facts: LoopFacts) -> str | None:
    """Why the loop's iterations, over all threads, might not be every j in [0, BOUND) once,
    if so. The chunked copy runs chunk ``START + m * STRIDE`` where the loop ran element
    ``START + m * STRIDE``: the same elements only when the loop partitions the range, i.e. from
    0 by 1, or each thread from its index by the number of threads (of the block, the grid or
    the warp). A loop from 1 (a max seeded with x[0]) would skip elements 1 to V - 1."""
    start, stride = plain_index(facts.start), plain_index(facts.stride)
    if start == "0" and stride == "1":
        return None
    lane = kernel.locals_.get(start)
    lane_value = lane.child_by_field_name("value") if lane is not None else None
    if lane_value is not None and plain_index(lane_value.text.decode()) in (
            "threadIdx.x%32", "threadIdx.x&31", "threadIdx.x%warpSize") and stride in ("32", "warpSize"):
        return None
    block = _block_size(parsed, function_name(kernel.node))
    if start == "threadIdx.x" and (stride == "blockDim.x" or (block is not None and stride == block)):
        return None
    if start in GLOBAL_INDEX and stride in ("blockDim.x*gridDim.x", "gridDim.x*blockDim.x"):
        return None
    return (f"runs from {facts.start.strip()} by {facts.stride.strip()}: not every element of the "
            f"range once over all threads, which chunking it needs")


def _loop_elements(kernel: KernelFacts, facts: LoopFacts) -> set[str]:
    elements = set()
    for access in _accesses(kernel, facts, 1):
        pointer = _pointer(kernel, access.pointer, 1)
        if pointer.element not in ELEMENT_BYTES:
            return set()
        elements.add(pointer.element)
    return elements


def _vector_loop(parsed: Parsed, kernel: KernelFacts, facts: LoopFacts, groups: list[_Group], lanes: int,
                 base: int) -> str:
    indent = indent_of(parsed, facts.node)
    chunk = f"kl_{facts.counter}0"
    start = "0" if facts.start.strip() == "0" else f"({facts.start}) * {lanes}"
    step = str(lanes) if facts.stride.strip() == "1" else f"({facts.stride}) * {lanes}"
    header = (f"for ({facts.counter_type} {chunk} = {start}; {chunk} < {facts.bound.text.decode()}; "
              f"{chunk} += {step}) {{")
    body = facts.body
    return "\n".join([header, *_chunk(parsed, kernel, facts, groups, lanes, chunk, indent + "  ",
                                      body.start_byte, body.end_byte), f"{indent}}}"])


def _chunk(parsed: Parsed, kernel: KernelFacts, facts: LoopFacts, groups: list[_Group], lanes: int,
           chunk: str, inner: str, start: int, end: int) -> list[str]:
    """One chunk's lines: the 16-byte loads, the body (the source from ``start`` to ``end``, a
    block or statements) once per lane with its accesses on the lanes, the 16-byte stores."""
    lines, stores = [], []
    body_splice = Splice(parsed.data[start:end])
    for number, group in enumerate(groups):
        pointer = _pointer(kernel, group.pointer, lanes)
        raw = _RAW_TYPES[lanes * ELEMENT_BYTES[pointer.element]]
        lane_name = f"kl_{group.pointer}_{number}"
        address = f"{group.pointer} + {group.offset + ' + ' if group.offset else ''}{chunk}"
        if group.write:
            lines += [f"{inner}{raw} {lane_name}_raw;",
                      f"{inner}{pointer.element}* {lane_name} = "
                      f"reinterpret_cast<{pointer.element}*>(&{lane_name}_raw);"]
            stores.append(f"{inner}*reinterpret_cast<{raw}*>({address}) = {lane_name}_raw;")
        else:
            lines += [f"{inner}const {raw} {lane_name}_raw = *reinterpret_cast<const {raw}*>({address});",
                      f"{inner}const {pointer.element}* {lane_name} = "
                      f"reinterpret_cast<const {pointer.element}*>(&{lane_name}_raw);"]
        for access in group.accesses:
            node = access.node
            body_splice.replace(node.start_byte - start, node.end_byte - start, f"{lane_name}[kl_lane]")
    new_body = body_splice.apply().strip()
    if parsed.data[start:start + 1] == b"{" and new_body.endswith("}"):
        new_body = new_body[1:-1].strip()
    statements = new_body.splitlines()
    statements[0] = inner + statements[0]  # strip() took the first line's indent
    uses_counter = re.search(rf"\b{re.escape(facts.counter)}\b", "\n".join(statements)) is not None
    lines.append(f"{inner}for (int kl_lane = 0; kl_lane < {lanes}; ++kl_lane) {{")
    if uses_counter:
        lines.append(f"{inner}  const {facts.counter_type} {facts.counter} = {chunk} + kl_lane;")
    lines += [("  " + s if s.strip() else s) for s in statements]
    return [*lines, f"{inner}}}", *stores]


def _splice_launch(parsed: Parsed, splice: Splice, launcher, launch, kernel: KernelFacts) -> None:
    """``K<<<...>>>(args);`` -> ``if (guard) K_vec<<<...>>>(args); else K<<<...>>>(args);``, with
    the guard declared before the launcher's first use of K. Other uses (an occupancy query that
    sizes a persistent grid) become ``guard ? K_vec : K``: a grid sized for the general kernel's
    occupancy would put the fast kernel's extra blocks in a second wave."""
    statement = launch.parent
    arguments = launch.child_by_field_name("arguments").named_children
    by_position = {name: arguments[i] for i, (name, _) in enumerate(kernel.params) if i < len(arguments)}
    name = function_name(kernel.node)
    guarded = [n for n, _ in kernel.params if n in kernel.needs or n in kernel.aligned]
    checks = [f"({by_position[n].text.decode()}) % {kernel.width} == 0"
              for n, _ in kernel.params if n in kernel.needs]
    checks += [f"((unsigned long long)({by_position[n].text.decode()}) & {kernel.vector_bytes - 1}ull) == 0"
               for n, _ in kernel.params if n in kernel.aligned]
    guard = f"kl_{name}_vec_ok"
    call = statement.text.decode().replace("\n", "\n  ")  # continuation lines move in with it
    fast = call.replace(name, f"{name}_vec", 1)
    indent = indent_of(parsed, statement)
    if kernel.flat:  # a thread per chunk of V: a grid of G blocks becomes ceil(G / V)
        grid = next(c for c in launch.children if c.type == "kernel_call_syntax").named_children[0]
        at = grid.start_byte - statement.start_byte
        text = statement.text.decode()
        launched = (text[:at] + "kl_grid" + text[at + grid.end_byte - grid.start_byte:]).replace(
            name, f"{name}_vec", 1).replace("\n", "\n    ")
        fast = (f"{{\n{indent}    dim3 kl_grid({grid.text.decode()});\n"
                f"{indent}    kl_grid.x = (kl_grid.x + {kernel.width - 1}u) / {kernel.width}u;\n"
                f"{indent}    {launched}\n{indent}  }}")
    branches = f"if ({guard})\n{indent}  {fast}\n{indent}else\n{indent}  {call}"
    if statement.parent is None or statement.parent.type != "compound_statement":
        _guard_in_place(splice, statement, guard, checks, branches, indent)
        return
    body = launcher.child_by_field_name("body")
    top = {n.start_byte: n for n in body.named_children}
    uses = [n for n in walk(body) if n.type == "identifier" and n.text.decode() == name
            and n != launch.child_by_field_name("function")]
    first = min((_top_statement(n, top) for n in [launch, *uses]), key=lambda n: n.start_byte)
    needed = {i.text.decode() for n in guarded for i in walk(by_position[n]) if i.type == "identifier"}
    if not needed <= _declared_before(launcher, body, first):
        first, uses = _top_statement(launch, top), []
        if not needed <= _declared_before(launcher, body, first):  # set inside the loop it sits in
            _guard_in_place(splice, statement, guard, checks, branches, indent)
            return
    place = indent_of(parsed, first)
    line_start = parsed.data.rfind(b"\n", 0, first.start_byte) + 1
    splice.replace(line_start, line_start,
                   f"{place}const bool {guard} = {f' &&{chr(10)}{place}    '.join(checks) or 'true'};\n")
    for use in uses:
        splice.replace(use.start_byte, use.end_byte,
                       f"({guard} ? (const void*){name}_vec : (const void*){name})")
    splice.replace(statement.start_byte, statement.end_byte, branches)


def _guard_in_place(splice: Splice, statement, guard: str, checks: list[str], branches: str,
                    indent: str) -> None:
    """The guard declared in a block of its own around the launch: what the launch names is
    in scope there, wherever the launch sits."""
    declaration = f"const bool {guard} = {f' &&{chr(10)}{indent}      '.join(checks) or 'true'};"
    splice.replace(statement.start_byte, statement.end_byte,
                   f"{{\n{indent}  {declaration}\n{indent}  {branches}\n{indent}}}")


def _top_statement(node, top: dict):
    while node.start_byte not in top or top[node.start_byte] != node:
        node = node.parent
    return node


def _declared_before(launcher, body, statement) -> set[str]:
    """kl_launch's parameters and the names its top-level declarations before ``statement`` make."""
    names = {i.text.decode() for p in walk(launcher.child_by_field_name("declarator"))
             if p.type == "parameter_declaration" for i in walk(p) if i.type == "identifier"}
    for node in body.named_children:
        if node.start_byte >= statement.start_byte:
            break
        if node.type == "declaration":
            names |= {innermost_name(d) for d in node.children_by_field_name("declarator")}
    return names
