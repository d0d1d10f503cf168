"""warp_shuffle_reduction (CUDA): shuffle butterflies to a shared-memory warp exchange and back.

Removal. Each statement holding ``__shfl_xor_sync(MASK, v, o)`` or ``__shfl_down_sync(MASK, v, o)``
(the butterfly step of ``for (int o = 16; o > 0; o >>= 1) v += ...`` or ``v = fmaxf(v, ...)``)
becomes the same exchange through a per-thread ``__shared__`` slot::

    {
      kl_exchange[kl_tid] = v;
      __syncwarp();
      v += kl_exchange[((kl_tid & 31u) ^ o) < 32u ? (kl_tid ^ o) : kl_tid];
      __syncwarp();
    }

with ``__shared__ T kl_exchange[1024]`` (a slot per thread of a block of up to 1024) and
``kl_tid`` (the linear thread index: warps are made of consecutive ones) declared at the top of
the function. Every lane reads what the shuffle gave it, so each lane's value is the original's,
bit for bit: xor reads lane ``l ^ o``, down reads lane ``l + o``, and a source past lane 31 gives
the lane its own value, as the shuffle does. The second ``__syncwarp`` keeps the next write from
overtaking a slower lane's read. The loop, its ``#pragma unroll`` and the rest of the statement stay.

A call is rewritten only where it is one full warp: MASK is 0xffffffff, no width (or 32), the
value is a plain local or parameter of a known scalar type, the call is not inside a ``?:``, ``&&``
or ``||``, and every condition, loop and early exit on the way to it (in its function and, for a
``__device__`` helper, at each of its call sites up to the kernels) is warp-uniform: it depends on
blockIdx, blockDim, gridDim, kernel parameters, file-scope constants and the warp index
(``(threadIdx.x + whole warps) >> 5``, ``/ 32`` or ``/ warpSize``, whole warps being literals that
are multiples of 32 or products with blockDim.x; blocks are taken to be whole warps, as the full mask
already requires), never on the lane. ``__shfl_sync(MASK, v, src)`` (a broadcast: the
slot of lane ``src & 31``) is rewritten the same way; ``return __shfl_sync(...);`` reads into
``kl_value`` before the second ``__syncwarp`` and returns it after. ``__shfl_up_sync`` and
``__reduce_*_sync`` are left alone (their hits stay ``removable=False`` with the reason).

Insertion. The inverse: each exchange block of that exact shape becomes the statement with the
shuffle (mask 0xffffffffu) in place of the slot read, and the declarations go with the last
exchange of their function. ``remove`` then ``insert`` gives the expert's helper back byte for byte
where it wrote ``for (...) v OP= __shfl_*_sync(0xffffffffu, v, o);`` on one line.
"""

from __future__ import annotations

import re

from klineage.source._cuda_kernel import (
    indent_of,
    innermost_name,
    plain_index,
    plus_terms,
    read_kernel,
    uncast,
)
from klineage.source._detect_cuda import SHUFFLES
from klineage.source._insert_qualifiers import Inserted, Refusals, Refused
from klineage.source.parse import (
    Parsed,
    Splice,
    ancestors,
    callee_name,
    calls,
    enclosing_function_node,
    function_definitions,
    function_name,
    is_cuda_kernel,
    walk,
    writes,
)

_EXCHANGED = "__shfl_xor_sync|__shfl_down_sync|__shfl_sync"
_SCALARS = {"float", "double", "int", "unsigned", "unsigned int", "long long", "int64_t", "uint32_t",
            "int32_t", "unsigned long long", "uint64_t"}
_TID = "threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)"
_PARTNER = {"__shfl_xor_sync": "((kl_tid & 31u) ^ {o}) < 32u ? (kl_tid ^ {o}) : kl_tid",
            "__shfl_down_sync": "(kl_tid & 31u) + {o} < 32u ? kl_tid + {o} : kl_tid",
            "__shfl_sync": "(kl_tid & ~31u) | ((unsigned){o} & 31u)"}
_LOOPS = ("for_statement", "while_statement", "do_statement")
_PURE = {"min", "max", "fminf", "fmaxf", "fmin", "fmax", "abs", "umin", "umax", "llmin", "llmax"}
_JUMPS = ("return_statement", "break_statement", "continue_statement", "goto_statement")


def shuffle_removal(parsed: Parsed, call):
    """(statement, value name, value type) for a full-warp butterfly call, or why not."""
    name = callee_name(call)
    if not re.fullmatch(_EXCHANGED, name):
        return f"{name}: only xor, down and index shuffles (__shfl_xor_sync, __shfl_down_sync, " \
               "__shfl_sync) are rewritten"
    arguments = call.child_by_field_name("arguments").named_children
    if len(arguments) not in (3, 4) or not _full_mask(arguments[0].text.decode()):
        return f"{name}: its mask is not 0xffffffff: not every lane of the warp takes part"
    if len(arguments) == 4 and arguments[3].text.decode() not in ("32", "warpSize"):
        return f"{name}: width {arguments[3].text.decode()}: a sub-warp shuffle"
    value = arguments[1]
    function = enclosing_function_node(call)
    kind = _scalar_type(function, value.text.decode()) if value.type == "identifier" else None
    if kind is None:
        return f"{name}: its value {value.text.decode()} is not a local or parameter of a scalar type"
    values = [c.child_by_field_name("arguments").named_children[1:2] for c in calls(function, _EXCHANGED)]
    if len({_scalar_type(function, v[0].text.decode()) for v in values if v}) > 1:
        return f"{name}: its function shuffles values of more than one type (one exchange array each)"
    statement = _statement(call)
    if statement is None:
        return f"{name}: not in an expression statement of its own block, outside ?:, && and ||"
    if len(calls(statement, SHUFFLES)) > 1:
        return f"{name}: its statement holds another shuffle"
    why = _diverges(parsed, statement, function, depth=0)
    if why:
        return f"{name}: {why}"
    return statement, value.text.decode(), kind


def _full_mask(text: str) -> bool:
    digits = re.fullmatch(r"(0[xX][0-9a-fA-F]+|\d+)[uU]?", text)
    return digits is not None and int(digits.group(1), 0) == 0xFFFFFFFF


def _scalar_type(function, name: str) -> str | None:
    for node in walk(function):
        if node.type in ("parameter_declaration", "declaration") and any(
                d.type in ("identifier", "init_declarator") and innermost_name(d) == name
                for d in node.children_by_field_name("declarator")):
            kind = re.sub(r"\s+", " ", node.child_by_field_name("type").text.decode())
            return kind if kind in _SCALARS else None
    return None


def _statement(call):
    for above in ancestors(call):
        if _evaluated_conditionally(above):
            return None
        if above.type == "expression_statement":
            return above if above.parent.type in ("compound_statement", *_LOOPS, "if_statement") else None
        if above.type == "return_statement":  # only ``return <the call>;``: the read comes first
            return above if call.parent == above and above.parent.type == "compound_statement" else None
        if above.type.endswith("statement") or above.type == "declaration":
            return None
    return None


def _evaluated_conditionally(node) -> bool:
    """A ?: or a short-circuit &&/||: what is under it may run in some lanes only."""
    return node.type == "conditional_expression" or (
        node.type == "binary_expression" and node.child_by_field_name("operator").type in ("&&", "||"))


def _diverges(parsed: Parsed, node, function, depth: int) -> str | None:
    """Why some lanes of a warp might not reach ``node`` together (None: all do)."""
    why = _local_divergence(parsed, node, function)
    if why:
        return why
    enclosing = [a for a in ancestors(node) if a.type in _LOOPS]
    for jump in (n for n in walk(function) if n.type in _JUMPS):
        loop = next((a for a in ancestors(jump) if a.type in _LOOPS), None)
        if jump.type in ("break_statement", "continue_statement") and loop not in enclosing:
            continue  # leaves a loop the call is not in
        if jump.start_byte > node.start_byte and not any(a in enclosing for a in ancestors(jump)):
            continue  # after the call, and no loop brings the lanes back to it
        if _local_divergence(parsed, jump, function):
            return f"line {parsed.site(jump).start_line}: an exit some lanes may take keeps them from it"
    if is_cuda_kernel(function):
        return None
    if depth >= 4:
        return f"{function_name(function)} is called through more than four helpers"
    for caller in (c for c in calls(parsed.root) if callee_name(c) == function_name(function)):
        outer = enclosing_function_node(caller)
        if outer is None:
            return f"{function_name(function)} is called at file scope"
        why = _diverges(parsed, caller, outer, depth + 1)
        if why:
            return f"where {function_name(outer)} calls {function_name(function)}: {why}"
    return None


def _local_divergence(parsed: Parsed, node, function) -> str | None:
    """A condition between ``node`` and its function's body that may differ between lanes."""
    body = function.child_by_field_name("body")
    for above in ancestors(node):
        if above == body:
            return None
        parts = []
        if above.type in ("if_statement", "switch_statement", "while_statement", "do_statement"):
            parts = [above.child_by_field_name("condition")]
        elif above.type == "for_statement":
            parts = [above.child_by_field_name(f) for f in ("initializer", "condition", "update")]
        elif _evaluated_conditionally(above):
            return f"line {parsed.site(above).start_line}: inside a ?:, && or ||"
        for part in (p for p in parts if p is not None):
            if not _uniform(function, part, frozenset()):
                return f"line {parsed.site(part).start_line}: {part.text.decode()} may differ between lanes"
    return None


def _uniform(function, node, seen: frozenset) -> bool:
    """Whether ``node`` has one value across a warp (module docstring: what counts)."""
    if node.type == "field_expression":
        argument = node.child_by_field_name("argument")
        return argument.text.decode() in ("blockIdx", "blockDim", "gridDim") or (
            argument.text.decode() != "threadIdx" and _uniform(function, argument, seen))
    if node.type == "binary_expression":
        operator, right = node.child_by_field_name("operator").type, node.child_by_field_name("right")
        if (operator, right.text.decode()) in (("/", "32"), ("/", "warpSize"), (">>", "5")):
            return _warp_index(function, node.child_by_field_name("left"), seen)
    if node.type == "identifier":
        return _uniform_name(function, node.text.decode(), seen)
    if node.type == "call_expression" and callee_name(node) not in _PURE:
        return False  # an atomic, a shuffle or a helper may give each lane its own value
    return all(_uniform(function, c, seen) for c in node.named_children)


def _warp_index(function, numerator, seen: frozenset) -> bool:
    """Whether ``numerator / 32`` is one value per warp: threadIdx.x plus uniform multiples of 32
    (a product with blockDim.x counts: blocks are whole warps)."""
    terms, locals_ = plus_terms(uncast(numerator)), read_kernel(function).locals_
    lanes = [t for t in terms if plain_index(t.text.decode()) == "threadIdx.x" or (
        t.type == "identifier" and t.text.decode() in locals_ and plain_index(
            locals_[t.text.decode()].child_by_field_name("value").text.decode()) == "threadIdx.x")]
    whole = [t for t in terms if t not in lanes and _uniform(function, t, seen) and (
        "blockDim.x" in plain_index(t.text.decode()).split("*")
        or (re.fullmatch(r"\d+", t.text.decode()) and int(t.text.decode()) % 32 == 0))]
    return len(lanes) == 1 and len(lanes) + len(whole) == len(terms)


def _uniform_name(function, name: str, seen: frozenset) -> bool:
    """A name is uniform when every value it is given is (a kernel parameter or a file-scope
    constant is; a helper's parameter is not known to be)."""
    if name in seen:
        return True
    values, declared = [], False
    for node in walk(function):
        if node.type == "parameter_declaration" and innermost_name(node.child_by_field_name(
                "declarator")) == name:
            return is_cuda_kernel(function)
        if node.type == "declaration":
            for declarator in node.children_by_field_name("declarator"):
                if innermost_name(declarator) == name:
                    declared = True
                    if declarator.type == "init_declarator":
                        values.append(declarator.child_by_field_name("value"))
    if any(n.type == "pointer_expression" and n.children[0].type == "&" and
           n.child_by_field_name("argument").text.decode() == name for n in walk(function)):
        return False  # written through its address, out of sight
    for expression, target in writes(function):
        if target is None or target.text.decode() != name or expression.type == "update_expression":
            continue
        values.append(expression.child_by_field_name("right"))
        if not _under_uniform_ifs(function, expression, seen | {name}):
            return False
    return not declared or all(v is not None and _uniform(function, v, seen | {name}) for v in values)


def _under_uniform_ifs(function, node, seen: frozenset) -> bool:
    """Whether every if around ``node`` in its function tests a uniform condition."""
    return all(_uniform(function, a.child_by_field_name("condition"), seen) for a in ancestors(node)
               if a.type == "if_statement" and a.start_byte >= function.start_byte)


def remove_warp_shuffle(parsed: Parsed, hits: list) -> str | None:
    splice, declared = Splice(parsed.data), {}
    shuffles = {c.start_byte: c for c in calls(parsed.root, _EXCHANGED)}
    for h in hits:
        call = shuffles.get(h.site.start_byte)
        plan = shuffle_removal(parsed, call) if call is not None else "no shuffle at the site"
        if isinstance(plan, str):
            continue
        statement, value, kind = plan
        declared[enclosing_function_node(call).start_byte] = kind
        arguments = call.child_by_field_name("arguments").named_children
        offset = arguments[2].text.decode()
        offset = offset if re.fullmatch(r"\w+", offset) else f"({offset})"
        slot = f"kl_exchange[{_PARTNER[callee_name(call)].format(o=offset)}]"
        text = parsed.text_of(statement)
        at = call.start_byte - statement.start_byte
        exchanged, returned = text[:at] + slot + text[at + call.end_byte - call.start_byte:], ""
        indent = indent_of(parsed, statement)
        indent = re.match(r"\s*", parsed.data[parsed.data.rfind(b"\n", 0, statement.start_byte) + 1:]
                          .decode()).group(0) if statement.parent.type in _LOOPS else indent
        if statement.type == "return_statement":  # read, wait for every lane's read, then return
            exchanged, returned = f"const {kind} kl_value = {slot};", f"\n{indent}  return kl_value;"
        splice.replace(statement.start_byte, statement.end_byte,
                       f"{{\n{indent}  kl_exchange[kl_tid] = {value};\n{indent}  __syncwarp();\n"
                       f"{indent}  {exchanged}\n{indent}  __syncwarp();{returned}\n{indent}}}")
    for function in function_definitions(parsed.root):
        if function.start_byte in declared:
            _declare(parsed, splice, function, declared[function.start_byte])
    return splice.apply()


def _declare(parsed: Parsed, splice: Splice, function, kind: str) -> None:
    body = function.child_by_field_name("body")
    first = body.named_children[0] if body.named_children else None
    indent = indent_of(parsed, first) if first is not None else "  "
    splice.replace(body.start_byte + 1, body.start_byte + 1,
                   f"\n{indent}__shared__ {kind} kl_exchange[1024];  // warp exchanges: a slot per thread"
                   f"\n{indent}const unsigned kl_tid = {_TID};")


# ---------------------------------------------------------------------------- insertion

_EXCHANGE = re.compile(
    r"\{\n(?P<indent>[ \t]*)  kl_exchange\[kl_tid\] = (?P<value>\w+);\n(?P=indent)  __syncwarp\(\);\n"
    r"(?P=indent)  (?P<statement>[^\n]*)\n(?P=indent)  __syncwarp\(\);\n"
    r"(?P<returned>(?P=indent)  return kl_value;\n)?(?P=indent)\}")
_RETURNED = re.compile(r"const [\w ]+ kl_value = (?P<read>kl_exchange\[.*\]);")
_SLOTS = {re.escape(form.format(o="PLACEHOLDER")).replace("PLACEHOLDER", r"(?P<o>\w+|\([^()]*\))", 1)
          .replace("PLACEHOLDER", "(?P=o)"): name for name, form in _PARTNER.items()}
_DECLARATIONS = re.compile(r"\n[ \t]*__shared__ [\w ]+ kl_exchange\[1024\];[^\n]*\n[ \t]*const unsigned "
                           r"kl_tid = [^\n]*;")


def insert_warp_shuffle(parsed: Parsed, params: dict) -> Inserted | Refused:
    """Each shared-memory warp exchange of the removal's shape becomes its shuffle again."""
    if parsed.language != "cuda":
        return Refused("not CUDA: warp shuffles are CUDA intrinsics")
    text, pieces, cursor, sites, why = parsed.text, [], 0, [], Refusals(parsed)
    for match in _EXCHANGE.finditer(text):
        statement = match.group("statement")
        if match.group("returned"):
            read = _RETURNED.fullmatch(statement)
            statement = f"return {read.group('read')};" if read else ""
        found = [(m, name) for pattern, name in _SLOTS.items()
                 for m in re.finditer(r"kl_exchange\[" + pattern + r"\]", statement)]
        start, end = (len(text[:at].encode()) for at in match.span())
        if len(found) != 1:
            why.add(parsed.root.descendant_for_byte_range(start, start),
                    "the exchange does not read one partner slot of the xor, down or index form")
            continue
        slot, name = found[0]
        shuffle = f"{name}(0xffffffffu, {match.group('value')}, {slot.group('o')})"
        pieces += [text[cursor:match.start()], statement[:slot.start()] + shuffle + statement[slot.end():]]
        cursor = match.end()
        sites.append(parsed.root.descendant_for_byte_range(start, end))
    if not sites:
        return why.refused("no shared-memory warp exchange (kl_exchange[kl_tid] = v; __syncwarp(); "
                           "... kl_exchange[partner] ...; __syncwarp();)")
    pieces.append(text[cursor:])
    new = "".join(pieces)
    if "kl_exchange[" not in _DECLARATIONS.sub("", new):
        new = _DECLARATIONS.sub("", new)
    return Inserted(new, [parsed.site(n) for n in sites])
