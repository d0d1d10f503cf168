"""grid_stride_loop (CUDA): the insertion on flat one-element-per-thread kernels, and its removal.

Insertion. A flat kernel (``_cuda_kernel.flat_shape``: ``T i = blockIdx.x * blockDim.x + threadIdx.x;``
then ``if (i < BOUND) BODY``, or ``if (i >= BOUND) return;`` with BODY after it) becomes
``for (T i = <the same>; i < BOUND; i += (T)gridDim.x * blockDim.x) BODY``, and each of its launches
caps the grid: ``{ dim3 kl_grid(G); if (kl_grid.x > 2048u) kl_grid.x = 2048u; K<<<kl_grid, ...>>>(...); }``.
The cap is a fixed block count, the tunable ``max_blocks`` (1024, 2048, 4096; default 2048), not
SMs x waves: the SM count needs a device query (cudaDeviceGetAttribute) in every launch, a runtime
call beyond the launch itself that the gate's symbol check must allow and the timing pays for. 2048
blocks of 128 to 256 threads are one to two waves of resident blocks on a 132-SM H200; the tuner
tries the neighbours. Refused, per kernel: a 32-bit index (``i += stride`` could wrap before it
reaches BOUND), a bounds check testing more than ``i < BOUND``, a body that writes a scalar declared
outside it (it would carry over between iterations), takes ``&i``, or names threadIdx, blockIdx,
blockDim, gridDim or warp intrinsics (thread identity is no longer one element), a kernel with
__shared__ memory or __syncthreads (block-cooperative: not one element per thread), and a kernel
with no launch in the file or a launch that is not a statement of its own.

Removal. ``for (T i = <global index>; i < BOUND; i += gridDim.x * blockDim.x) BODY`` (the stride
in either order, with casts, or a local holding it; blockDim.x may be the launches' block size)
becomes ``T i = <global index>;`` then ``if (i < BOUND) BODY``, and every launch of the kernel gets
the grid ``(unsigned)((E + B - 1) / B)``: E is BOUND with each kernel parameter replaced by the
launch's argument, B the launch's block size. The grid variable it replaces goes with its
``if (g > C) g = C;`` caps when nothing else reads it; the inverse of this module's own launch
block gives back its G. A hit stays ``removable=False`` (its detail says why) where E is not
clearly the launch's element count: BOUND names something other than integer parameters, literals
and const locals of them, or a launch passes an argument with a call or side effect; and where the
loop cannot become an ``if``: a break or continue of its own, a body writing a scalar from outside,
gridDim in the body or elsewhere in the kernel, __shared__ / __syncthreads / warp intrinsics in the
kernel, a second grid-stride loop, a 2-D grid or block, launches that disagree on the block size.
Removing an insertion gives the kernel back byte for byte where it was written ``if (i < n) BODY``;
an early return comes back in that form (the insertion makes the same loop of both). A
``#define`` that held the old cap stays, unused.
"""

from __future__ import annotations

import re

from klineage.source._cuda_kernel import (
    GLOBAL_INDEX,
    KernelFacts,
    flat_shape,
    indent_of,
    innermost_name,
    is_global_index,
    mentions_of,
    param_kind,
    plain_index,
    read_kernel,
    uncast,
)
from klineage.source._insert_qualifiers import Inserted, Refusals, Refused, _block_size
from klineage.source.parse import (
    Parsed,
    Splice,
    ancestors,
    callee_name,
    calls,
    enclosing_function_node,
    for_loops,
    function_definitions,
    function_name,
    is_cuda_kernel,
    walk,
    writes,
)

MAX_BLOCKS = 2048
_WIDE = {"int64_t", "long long", "long", "long long int", "size_t", "uint64_t", "ptrdiff_t",
         "unsigned long long", "unsigned long"}
_THREAD_IDENTITY = re.compile(r"\b(threadIdx|blockIdx|blockDim|gridDim|warpSize|__shfl\w*|__syncwarp|"
                              r"__ballot_sync|__any_sync|__all_sync|__activemask|__reduce_\w+)\b")
_COOPERATIVE = re.compile(r"\b(__shared__|__syncthreads\w*|__syncwarp|__shfl\w*|__reduce_\w+_sync|"
                          r"cooperative_groups)\b")
_MULTI_DIM = re.compile(r"\b(threadIdx|blockIdx|blockDim|gridDim)\.[yz]\b")
_CAP = re.compile(r"\{\s*dim3 kl_grid\((?P<grid>.*?)\);\s*if \(kl_grid\.x > \d+u\) kl_grid\.x = \d+u;"
                  r"[^\n]*\n(?P<launch>.*)\}", re.S)


def insert_grid_stride_loop(parsed: Parsed, params: dict) -> Inserted | Refused:
    if parsed.language != "cuda":
        return Refused("not CUDA: the pass rewrites kernels and their launches")
    cap = int(params.get("max_blocks", MAX_BLOCKS))
    if cap < 1:
        return Refused(f"max_blocks {cap}: the grid needs at least one block")
    splice, sites, why = Splice(parsed.data), [], Refusals(parsed)
    for function in (f for f in function_definitions(parsed.root) if is_cuda_kernel(f)):
        name = function_name(function)
        launches = _launches(parsed, name)
        reason = _not_insertable(parsed, function, launches)
        if isinstance(reason, str):
            why.add(function, f"{name}: {reason}")
            continue
        splice.replace(reason.node.start_byte, _body_statements(reason)[-1].end_byte,
                       _stride_loop(parsed, reason))
        for launch in launches:
            _cap_launch(parsed, splice, launch, cap)
        sites.append(function)
    if not sites:
        return why.refused("no __global__ kernel")
    return Inserted(splice.apply(), [parsed.site(n) for n in sites], {"max_blocks": cap})


def _launches(parsed: Parsed, name: str) -> list:
    return [c for c in calls(parsed.root) if callee_name(c).split("<")[0] == name
            and any(k.type == "kernel_call_syntax" for k in c.children)]


def _not_insertable(parsed: Parsed, function, launches: list):
    """The flat loop to rewrite (a ``_cuda_kernel.LoopFacts``), or why not."""
    text = parsed.text_of(function)
    if _COOPERATIVE.search(text):
        return "it uses __shared__ memory, a barrier or warp intrinsics: threads cooperate, not one " \
               "element each"
    flat = flat_shape(read_kernel(function), loops_ok=True)
    if isinstance(flat, Refused):
        return f"not the flat one-element-per-thread shape: {flat.reason}"
    if flat.counter_type not in _WIDE:
        return (f"its index {flat.counter} is a 32-bit {flat.counter_type}: {flat.counter} += the "
                "grid's thread count could wrap before it reaches the bound")
    guard = flat.guard
    condition = guard.child_by_field_name("condition").named_children[0]
    if flat.bound.parent != condition:
        return f"its bounds check tests more than {flat.counter} against the bound"
    statements = _body_statements(flat)
    outer = _outer_write(statements)
    if outer:
        return f"the body writes {outer}, declared outside it: it would carry over to the next element"
    for statement in statements:
        used = _THREAD_IDENTITY.search(parsed.text_of(statement))
        if used:
            return f"the body names {used.group(1)}: a thread no longer handles one element"
        if any(n.type == "pointer_expression" and n.children[0].type == "&"
               and n.child_by_field_name("argument").text.decode() == flat.counter for n in walk(statement)):
            return f"the body takes the address of {flat.counter}"
    if not launches:
        return "no launch of it in the file: its grid cannot be capped"
    if any(launch.parent.type != "expression_statement" for launch in launches):
        return "a launch of it is not a statement of its own"
    return flat


def _body_statements(flat) -> list:
    guard = flat.guard
    if flat.owner == guard:
        return [flat.body]
    return [c for c in flat.body.named_children if c.start_byte > guard.start_byte]


def _outer_write(statements: list) -> str | None:
    """A name the statements assign but do not declare (its value would carry over)."""
    declared = {innermost_name(d) for s in statements for n in walk(s) if n.type == "declaration"
                for d in n.children_by_field_name("declarator")}
    targets = [t.text.decode() for s in statements for _, t in writes(s)
               if t is not None and t.type == "identifier"]
    return next((t for t in targets if t not in declared), None)


def _stride_loop(parsed: Parsed, flat) -> str:
    counter, kind = flat.counter, flat.counter_type
    indent = indent_of(parsed, flat.node)
    header = f"for ({kind} {counter} = {flat.start}; {counter} < {parsed.text_of(flat.bound)}; "
    stride = f"{counter} += ({kind})gridDim.x * blockDim.x)"
    if len(indent + header + stride) > 100:
        header = f"{header.rstrip()}\n{indent}     "
    header += stride
    guard = flat.guard
    if flat.owner == guard:
        return f"{header} {parsed.text_of(flat.body)}"
    statements = _body_statements(flat)
    body = parsed.data[statements[0].start_byte:statements[-1].end_byte].decode()
    body = "\n".join(("  " + line if line.strip() else line) for line in body.split("\n"))
    return f"{header} {{\n{indent}{body}\n{indent}}}"


def _cap_launch(parsed: Parsed, splice: Splice, launch, cap: int) -> None:
    statement = launch.parent
    grid = next(c for c in launch.children if c.type == "kernel_call_syntax").named_children[0]
    indent = indent_of(parsed, statement)
    text = parsed.text_of(statement)
    at = grid.start_byte - statement.start_byte
    launched = (text[:at] + "kl_grid" + text[at + grid.end_byte - grid.start_byte:]).replace("\n", "\n  ")
    splice.replace(statement.start_byte, statement.end_byte,
                   f"{{\n{indent}  dim3 kl_grid({parsed.text_of(grid)});\n"
                   f"{indent}  if (kl_grid.x > {cap}u) kl_grid.x = {cap}u;  // the grid-stride loop "
                   f"covers the rest\n{indent}  {launched}\n{indent}}}")


# ---------------------------------------------------------------------------- removal


def stride_removal(parsed: Parsed, loop):
    """The loop's bound expression in kernel terms and its launches, or why it cannot go."""
    function = enclosing_function_node(loop)
    if function is None or not is_cuda_kernel(function):
        return "not in a __global__ kernel"
    kernel = read_kernel(function)
    init, condition = loop.child_by_field_name("initializer"), loop.child_by_field_name("condition")
    update = loop.child_by_field_name("update")
    counter = _counter(init)
    if counter is None or not _starts_at_the_thread(parsed, function_name(function), _start(init)):
        return "it does not start at blockIdx.x * blockDim.x + threadIdx.x (one declared counter)"
    if condition is None or condition.type != "binary_expression" or \
            condition.child_by_field_name("operator").type != "<" or \
            condition.child_by_field_name("left").text.decode() != counter:
        return f"its condition is not {counter} < BOUND"
    if not _grid_stride(parsed, kernel, update):
        return f"its stride {parsed.text_of(update.child_by_field_name('right'))} is not " \
               "gridDim.x * blockDim.x"
    why = _not_an_if(parsed, function, loop, counter)
    if why:
        return why
    bound = _host_terms(kernel, condition.child_by_field_name("right"))
    if isinstance(bound, str):
        return bound
    name = function_name(function)
    launches = _launches(parsed, name)
    if not launches or _block_size(parsed, name) is None:
        return f"the launches of {name} do not agree on one literal or const block size" if launches \
            else f"no launch of {name} in the file: nothing sizes its grid"
    names = [n for n, _ in kernel.params]
    for launch in launches:
        arguments = launch.child_by_field_name("arguments").named_children
        used = [arguments[names.index(p)] for p in bound[1] if names.index(p) < len(arguments)]
        if len(used) != len(bound[1]) or any(n.type in ("call_expression", "assignment_expression",
                                                        "update_expression", "comma_expression")
                                             for a in used for n in walk(a)):
            return f"a launch's argument for {', '.join(bound[1])} is not a plain expression"
    return bound[0], kernel, launches


def _counter(init) -> str | None:
    if init is None or init.type != "declaration":
        return None
    declarators = init.children_by_field_name("declarator")
    if len(declarators) != 1 or declarators[0].type != "init_declarator":
        return None
    return innermost_name(declarators[0])


def _starts_at_the_thread(parsed: Parsed, kernel: str, start) -> bool:
    """The global thread index, with blockDim.x or the launches' block size."""
    block = _block_size(parsed, kernel)
    return is_global_index(start) or (block is not None and plain_index(start.text.decode()).replace(
        block, "blockDim.x") in GLOBAL_INDEX)


def _start(init):
    return init.children_by_field_name("declarator")[0].child_by_field_name("value")


def _grid_stride(parsed: Parsed, kernel: KernelFacts, update) -> bool:
    if update is None or update.type != "assignment_expression" or \
            update.child_by_field_name("operator").type != "+=":
        return False
    stride = uncast(update.child_by_field_name("right"))
    if stride.type == "identifier" and stride.text.decode() in kernel.locals_:
        stride = kernel.locals_[stride.text.decode()].child_by_field_name("value")
    block = _block_size(parsed, function_name(kernel.node))
    sizes = {"blockDim.x", *([block] if block else [])}
    plain = plain_index(parsed.text_of(stride))
    return any(plain in (f"gridDim.x*{b}", f"{b}*gridDim.x") for b in sizes)


def _not_an_if(parsed: Parsed, function, loop, counter: str) -> str | None:
    text = parsed.text_of(function)
    body = loop.child_by_field_name("body")
    if _COOPERATIVE.search(text):
        return "the kernel uses __shared__ memory, a barrier or warp intrinsics"
    if _MULTI_DIM.search(text):
        return "the kernel indexes a 2-D or 3-D grid or block"
    if "gridDim" in parsed.text_of(body):
        return "the body reads gridDim, which the removal changes"
    others = [f for f in for_loops(function) if f != loop and "gridDim" in parsed.text_of(
        f.child_by_field_name("update") or f)]
    if others:
        return "the kernel has another grid-stride loop"
    elsewhere = _grid_read_elsewhere(function, loop)
    if elsewhere is not None:
        return f"the kernel reads gridDim at line {parsed.site(elsewhere).start_line}, which the removal " \
               "changes"
    outer = _outer_write([body])
    if outer:
        return f"the body writes {outer}, declared outside it"
    for node in walk(body):
        if node.type in ("break_statement", "continue_statement") and _own_jump(node, loop):
            return f"the body has a {node.type.split('_')[0]} of the loop's own"
    if any(s.type == "declaration" and counter in {innermost_name(d) for d in s.children_by_field_name(
            "declarator")} for s in loop.parent.named_children):
        return f"its block declares another {counter}: the counter cannot move out of the loop"
    return None


def _grid_read_elsewhere(function, loop):
    """A use of gridDim outside the loop's stride (and the local holding it), if any."""
    update = loop.child_by_field_name("update")
    stride = uncast(update.child_by_field_name("right"))
    holder = stride.text.decode() if stride.type == "identifier" else None
    for use in (n for n in walk(function) if n.type == "identifier" and n.text == b"gridDim"):
        if not any(a == update or (a.type == "init_declarator" and innermost_name(
                a.child_by_field_name("declarator")) == holder) for a in ancestors(use)):
            return use
    return None


def _own_jump(jump, loop) -> bool:
    for above in ancestors(jump):
        if above == loop:
            return True
        if above.type in ("for_statement", "while_statement", "do_statement") or (
                above.type == "switch_statement" and jump.type == "break_statement"):
            return False
    return False


def _host_terms(kernel: KernelFacts, node, seen: frozenset = frozenset()):
    """(the bound with const locals expanded, the parameters it names), or why it is not one."""
    pieces, params, cursor, base = [], [], node.start_byte, node.start_byte
    text = node.text.decode()
    for name in (n for n in walk(node) if n.type == "identifier"):
        value = name.text.decode()
        if param_kind(kernel, value) == "int":
            params.append(value)
            continue
        init = kernel.locals_.get(value)
        if init is None or value in seen or init.child_by_field_name("value") is None:
            return f"its bound names {value}, not an integer parameter or a const local of them"
        inner = _host_terms(kernel, init.child_by_field_name("value"), seen | {value})
        if isinstance(inner, str):
            return inner
        pieces += [text[cursor - base:name.start_byte - base], f"({inner[0]})"]
        params += inner[1]
        cursor = name.end_byte
    pieces.append(text[cursor - base:])
    if any(n.type not in ("identifier", "number_literal", "binary_expression", "parenthesized_expression",
                          "cast_expression", "type_descriptor", "primitive_type", "type_identifier",
                          "sized_type_specifier", "+", "-", "*", "/", "(", ")")
           for n in walk(node)):
        return "its bound is not arithmetic on integer parameters and literals"
    return "".join(pieces), list(dict.fromkeys(params))


def remove_grid_stride_loop(parsed: Parsed, hits: list) -> str | None:
    """Each removable loop becomes an ``if``; its launches cover the bound (module docstring)."""
    splice = Splice(parsed.data)
    loops = {loop.start_byte: loop for loop in for_loops(parsed.root)}
    for h in hits:
        loop = loops.get(h.site.start_byte)
        plan = stride_removal(parsed, loop) if loop is not None else "no loop at the site"
        if isinstance(plan, str):
            continue
        bound, kernel, launches = plan
        init = parsed.text_of(loop.child_by_field_name("initializer")).rstrip(";")
        splice.replace(loop.start_byte, loop.end_byte,
                       f"{init};\n{indent_of(parsed, loop)}if "
                       f"({parsed.text_of(loop.child_by_field_name('condition'))}) "
                       f"{parsed.text_of(loop.child_by_field_name('body'))}")
        for launch in launches:
            _uncap_launch(parsed, splice, launch, kernel, bound)
        _drop_stride_local(parsed, splice, kernel, loop)
    return splice.apply()


def _drop_stride_local(parsed: Parsed, splice: Splice, kernel: KernelFacts, loop) -> None:
    """The local that held the stride, when the loop's update was its only reader."""
    stride = uncast(loop.child_by_field_name("update").child_by_field_name("right"))
    init = kernel.locals_.get(stride.text.decode()) if stride.type == "identifier" else None
    if init is None or init.parent.type != "declaration" or len(init.parent.children_by_field_name(
            "declarator")) != 1 or len(mentions_of(kernel.node, stride.text.decode())) != 2:
        return
    splice.delete_lines(init.parent.start_byte, init.parent.end_byte)


def _uncap_launch(parsed: Parsed, splice: Splice, launch, kernel: KernelFacts, bound: str) -> None:
    statement = launch.parent
    block = statement.parent
    mine = _CAP.fullmatch(parsed.text_of(block)) if block.type == "compound_statement" else None
    if mine and [c for c in block.named_children if c.type != "comment"][2:] == [statement]:
        restored = mine.group("launch").strip().replace("\n  ", "\n").replace(
            "<<<kl_grid,", f"<<<{mine.group('grid')},", 1)
        splice.replace(block.start_byte, block.end_byte, restored)
        return
    config = next(c for c in launch.children if c.type == "kernel_call_syntax").named_children
    arguments = launch.child_by_field_name("arguments").named_children
    values = {}
    for (name, _), argument in zip(kernel.params, arguments, strict=False):
        value = parsed.text_of(argument)
        values[name] = value if re.fullmatch(r"\w+", value) else f"({value})"
    count = re.sub(r"\b\w+\b", lambda m: values.get(m.group(0), m.group(0)), bound)
    threads = parsed.text_of(config[1])
    grid = config[0]
    splice.replace(grid.start_byte, grid.end_byte, f"(unsigned)(({count} + {threads} - 1) / {threads})")
    _drop_grid_variable(parsed, splice, launch, uncast(grid))


def _drop_grid_variable(parsed: Parsed, splice: Splice, launch, grid) -> None:
    """The launch's old grid variable, its declaration and its ``if (g > C) g = C;`` caps, when
    nothing else reads it."""
    launcher = enclosing_function_node(launch)
    if grid.type != "identifier" or launcher is None:
        return
    name = grid.text.decode()
    cap = re.compile(rf"if\s*\(\s*{name}\s*>\s*\w+\s*\)\s*\{{?\s*{name}\s*=\s*\w+;\s*}}?")
    caps = [n for n in walk(launcher) if n.type == "if_statement" and cap.fullmatch(parsed.text_of(n))]
    declarations = [n for n in walk(launcher) if n.type == "declaration" and [
        innermost_name(d) for d in n.children_by_field_name("declarator")] == [name]]
    if len(declarations) != 1:
        return
    spans = [(n.start_byte, n.end_byte) for n in (*caps, *declarations, grid)]
    for use in mentions_of(launcher, name):
        if not any(start <= use.start_byte < end for start, end in spans):
            return
    for node in (*caps, *declarations):
        splice.delete_lines(node.start_byte, node.end_byte)
