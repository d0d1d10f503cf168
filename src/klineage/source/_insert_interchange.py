"""loop_interchange insertion: swap the two loops of a perfect nest so that the inner loop walks
memory at unit stride, where a dependence check proves that every result stays the same.

What it proves, on the body with the file's function-like macros expanded (``AT(x, i, j)`` is
often how a 2-D access is written):
- the nest is perfect (the outer body is the inner loop alone), both loops are canonical
  (``for (T c = lo; c < hi; c++)``, their own counters) and rectangular (neither header names the
  other counter);
- profitable: some access multiplies the inner counter by a stride and none uses it unscaled,
  while some access uses the outer counter unscaled (the column-order nest of a row-major grid);
- no exits (break, continue, return, goto), no calls but pure math functions, scalars written
  only if declared inside the body, no writes through ``*p``;
- every written array is written at one subscript and read only at that subscript, and that
  subscript names one counter alone (``y[i]``: its updates keep their order after the swap) or
  is ``s * M + u`` over both counters with ``u`` running over ``0 <= u < M`` (a distinct element
  for every iteration: nothing is carried from one iteration to another);
- no written array may alias another array of the body: each is a ``restrict`` pointer or a
  kl_launch buffer cast from its own ``inputs[k]`` / ``outputs[k]`` (the ABI's buffers never
  overlap).
Anything else is left alone; an LLM brain can still interchange it.
"""

from __future__ import annotations

import re
from itertools import permutations

from klineage.source._insert_loops import _locals_of
from klineage.source._insert_qualifiers import Inserted, Refusals, Refused
from klineage.source.parse import (
    Parsed,
    Splice,
    ancestors,
    for_loops,
    function_name,
    parse,
    sole_loop,
    walk,
)

__all__ = ["function_macros", "insert_loop_interchange", "loop_counter", "read_nest", "scaled_use",
           "subscripts", "why_dependent"]

PURE_CALLS = frozenset({
    "expf", "exp", "logf", "log", "sqrtf", "sqrt", "fabsf", "fabs", "fmaxf", "fmax", "fminf", "fmin",
    "sinf", "sin", "cosf", "cos", "tanhf", "tanh", "powf", "pow", "floorf", "floor", "ceilf", "ceil"})
_EXITS = ("break_statement", "continue_statement", "return_statement", "goto_statement")
_MACRO = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)\(([^)]*)\)[ \t]+(.+?)[ \t]*$", re.M)
_BUFFER = re.compile(r"\b(inputs|outputs)\s*\[\s*(\d+)\s*\]")


def insert_loop_interchange(parsed: Parsed, params: dict) -> Inserted | Refused:
    if parsed.language == "cuda":
        return Refused("CUDA: a GPU nest maps its loops to threads, there is no such swap")
    macros = function_macros(parsed.text)
    splice, sites, taken, why = Splice(parsed.data), [], [], Refusals(parsed)
    for outer in for_loops(parsed.root):
        if any(start <= outer.start_byte < end for start, end in taken):
            continue
        inner = sole_loop(outer)
        if inner is None:
            continue
        reason = _why_not_swappable(parsed, outer, inner, macros)
        if reason:
            why.add(outer, reason)
            continue
        outer_head, inner_head = loop_header(outer), loop_header(inner)
        splice.replace(*outer_head, parsed.data[inner_head[0]:inner_head[1]])
        splice.replace(*inner_head, parsed.data[outer_head[0]:outer_head[1]])
        taken.append((outer.start_byte, outer.end_byte))
        sites.append(parsed.site(outer))
    if not sites:
        return why.refused("no perfect nest: no loop whose body is one for loop alone")
    return Inserted(splice.apply(), sites, {})


def loop_header(loop) -> tuple[int, int]:
    """The span ``for (init; cond; update)``."""
    close = next(c for c in loop.children if c.type == ")")
    return loop.start_byte, close.end_byte


def loop_counter(loop) -> tuple[str, str, str] | None:
    """(name, lower bound, upper bound) of a canonical ``for (T c = lo; c < hi; c++)``."""
    init, cond, update = (loop.child_by_field_name(k) for k in ("initializer", "condition", "update"))
    if init is None or init.type != "declaration" or cond is None or update is None:
        return None
    declarators = init.children_by_field_name("declarator")
    if len(declarators) != 1 or declarators[0].type != "init_declarator":
        return None
    name = declarators[0].child_by_field_name("declarator").text.decode()
    low = declarators[0].child_by_field_name("value").text.decode()
    if (cond.type != "binary_expression" or cond.child_by_field_name("left").text.decode() != name
            or cond.child_by_field_name("operator").text != b"<"):
        return None
    if re.sub(r"\s", "", update.text.decode()) not in (f"{name}++", f"++{name}", f"{name}+=1"):
        return None
    return name, low, cond.child_by_field_name("right").text.decode()


def _names(node) -> set[str]:
    return {n.text.decode() for n in walk(node) if n.type == "identifier"}


def _why_not_swappable(parsed: Parsed, outer, inner, macros: dict) -> str | None:
    nest = read_nest(parsed, outer, inner, macros)
    if isinstance(nest, str):
        return nest
    a, b, body = nest
    if not _profitable(body, outer=a[0], inner=b[0]):
        return (f"nothing to gain: the inner counter {b[0]} does not stride memory while the outer "
                f"{a[0]} walks it at unit stride")
    return why_dependent(parsed, outer, body, {a[0]: a, b[0]: b})


def read_nest(parsed: Parsed, outer, inner, macros: dict) -> tuple[tuple, tuple, object] | str:
    """(outer counter, inner counter, the inner body parsed with ``macros`` expanded), each
    counter as (name, lower bound, upper bound); or why the nest is not one the checks read."""
    a, b = loop_counter(outer), loop_counter(inner)
    if a is None or b is None:
        return "a loop of the nest is not canonical ('for (T c = lo; c < hi; c++)')"
    inner_header = [inner.child_by_field_name(k) for k in ("initializer", "condition", "update")]
    if any(a[0] in _names(part) for part in inner_header):
        return "triangular: the inner loop's range depends on the outer counter"
    body_text = parsed.text_of(inner.child_by_field_name("body"))
    expanded = parse("void kl_nest(void) {\n" + _expand(body_text, macros) + "\n}\n", parsed.language)
    if any(n.type == "ERROR" for n in walk(expanded.root)):
        return "the body does not parse once its macros are expanded"
    return a, b, expanded.root


def why_dependent(parsed: Parsed, outer, body, bounds: dict[str, tuple[str, str, str]]) -> str | None:
    """Why running the nest's iterations in another order could change a result, if it could
    (``body`` and ``bounds`` as read_nest gives them): the interchange's proof, and a tiling's."""
    return (_side_channel(body) or _dependence(body, bounds)
            or (None if _unaliased(parsed, outer, body) else
                "a written array may alias another array of the body (neither restrict nor its "
                "own kl_launch buffer)"))


# ---------------------------------------------------------------------------- macros


def function_macros(text: str) -> dict[str, tuple[list[str], str]]:
    return {m.group(1): ([p.strip() for p in m.group(2).split(",")], m.group(3))
            for m in _MACRO.finditer(text)}


def _expand(text: str, macros: dict, rounds: int = 4) -> str:
    for _ in range(rounds):
        changed = False
        for name, (names, body) in macros.items():
            out, cursor = [], 0
            for match in re.finditer(rf"\b{re.escape(name)}\s*\(", text):
                if match.start() < cursor:
                    continue
                args, end = _arguments(text, match.end())
                if args is None or len(args) != len(names):
                    continue
                replaced = body
                for param, arg in zip(names, args, strict=True):
                    replaced = re.sub(rf"\b{re.escape(param)}\b", lambda _m, a=arg: a.strip(), replaced)
                out += [text[cursor:match.start()], replaced]
                cursor, changed = end, True
            text = "".join(out) + text[cursor:]
        if not changed:
            break
    return text


def _arguments(text: str, start: int) -> tuple[list[str] | None, int]:
    """The comma-separated arguments from ``start`` (just after '(') to the matching ')'."""
    depth, args, current = 0, [], start
    for index in range(start, len(text)):
        char = text[index]
        if char in "([{":
            depth += 1
        elif char in ")]}":
            if depth == 0:
                args.append(text[current:index])
                return args, index + 1
            depth -= 1
        elif char == "," and depth == 0:
            args.append(text[current:index])
            current = index + 1
    return None, len(text)


# ---------------------------------------------------------------------------- the checks


def _unwrap(node):
    while node is not None and node.type == "parenthesized_expression":
        node = next(iter(node.named_children), None)
    return node


def subscripts(body) -> list[tuple[str, object]]:
    """(array name, index node) for every ``name[index]`` of the body (parentheses dropped)."""
    found = []
    for node in walk(body):
        if node.type == "subscript_expression":
            base = _unwrap(node.child_by_field_name("argument"))
            index = node.child_by_field_name("index")
            if index is None:  # tree-sitter-cuda nests the index in subscript_argument_list
                index = next((c for c in node.named_children if c.type == "subscript_argument_list"), None)
                index = next(iter(index.named_children), None) if index is not None else None
            if base is not None and base.type == "identifier" and index is not None:
                found.append((base.text.decode(), _unwrap(index)))
    return found


def scaled_use(index, counter: str) -> tuple[bool, bool]:
    """(the counter appears multiplied by something, it appears as an additive term)."""
    scaled = unscaled = False

    def visit(node, in_product: bool) -> None:
        nonlocal scaled, unscaled
        node = _unwrap(node)
        if node is None:
            return
        if node.type == "identifier" and node.text.decode() == counter:
            scaled, unscaled = scaled or in_product, unscaled or not in_product
            return
        product = node.type == "binary_expression" and node.child_by_field_name("operator").text == b"*"
        for child in node.named_children:
            visit(child, in_product or product)

    visit(index, False)
    return scaled, unscaled


def _profitable(body, outer: str, inner: str) -> bool:
    inner_seen = [scaled_use(index, inner) for _, index in subscripts(body)]
    outer_seen = [scaled_use(index, outer) for _, index in subscripts(body)]
    return (any(s for s, _ in inner_seen) and not any(u for _, u in inner_seen)
            and any(u for _, u in outer_seen))


def _declared_names(node) -> set[str]:
    return {name.decode() for name in _locals_of(node)}


def _targets(body) -> list:
    """What every assignment and increment of the body writes (parentheses dropped)."""
    return [_unwrap(node.child_by_field_name("left" if node.type == "assignment_expression"
                                             else "argument"))
            for node in walk(body) if node.type in ("assignment_expression", "update_expression")]


def _side_channel(body) -> str | None:
    """What the body does besides writing its own array elements, if anything."""
    own = _declared_names(body)
    for node in walk(body):
        if node.type in _EXITS:
            return f"a {node.type.removesuffix('_statement')} leaves the nest early"
        callee = node.child_by_field_name("function") if node.type == "call_expression" else None
        if callee is not None and callee.text.decode() not in PURE_CALLS:
            return f"the call to {callee.text.decode()} may have effects (only pure math calls are known)"
    for target in _targets(body):
        if target is None or target.type not in ("identifier", "subscript_expression"):
            return "it writes through a pointer or a field, which the check does not follow"
        if target.type == "identifier" and target.text.decode() not in own:
            return f"it writes {target.text.decode()}, declared outside the nest"
    return None


def _written(body) -> dict[str, set[str]] | None:
    """array -> the subscripts it is written at; None when a written element is not name[index]."""
    written: dict[str, set[str]] = {}
    for target in _targets(body):
        if target is not None and target.type == "subscript_expression":
            element = subscripts(target)[:1]
            if not element or _unwrap(target.child_by_field_name("argument")).type != "identifier":
                return None
            (name, index), = element
            written.setdefault(name, set()).add(_plain(index))
    return written


def _dependence(body, bounds: dict[str, tuple[str, str, str]]) -> str | None:
    """Why the swap could reorder dependent updates, if it could."""
    written = _written(body)
    if written is None:
        return "a written element is not a plain array[index]"
    for name, indices in written.items():
        if len(indices) != 1:
            return f"{name} is written at more than one index"
        if any(other == name and _plain(index) not in indices for other, index in subscripts(body)):
            return (f"a carried dependence: {name} is read at another element than the one this "
                    "iteration writes")
        uses = sum(1 for n in walk(body) if n.type == "identifier" and n.text.decode() == name)
        if uses != sum(1 for other, _ in subscripts(body) if other == name):
            return f"{name} is used other than by subscript (passed on or offset): not followed"
        index = next(iter(indices))
        if not _one_element_per_iteration(index, bounds):
            return f"two iterations may write the same element {name}[{index}]"
    return None


def _plain(node) -> str:
    """An index's text without spaces and parentheses: the form the checks compare."""
    return re.sub(r"[\s()]", "", node.text.decode() if hasattr(node, "text") else node)


def _one_element_per_iteration(index: str, bounds: dict[str, tuple[str, str, str]]) -> bool:
    """``c`` alone, or ``s*M+u`` / ``u+s*M`` with {s, u} the two counters and u in [0, M)."""
    counters = set(bounds)
    if index in counters:
        return True
    if index.count("+") != 1:
        return False
    for term, unit in permutations(index.split("+"), 2):
        factors = term.split("*")
        if unit not in counters or len(factors) != 2:
            continue
        _, low, high = bounds[unit]
        for scaled, stride in (factors, factors[::-1]):
            if (scaled in counters - {unit} and low == "0" and _plain(high) == stride
                    and not counters & set(re.findall(r"\w+", stride))):
                return True
    return False


def _unaliased(parsed: Parsed, outer, body) -> bool:
    """Every written array is restrict, or a kl_launch buffer that no other array of the body
    can be (each read array restrict or another buffer)."""
    function = next((a for a in ancestors(outer) if a.type == "function_definition"), None)
    if function is None:
        return False
    restrict, buffers = set(), {}
    for node in walk(function):
        if node.type not in ("declaration", "parameter_declaration"):
            continue
        text, names = node.text.decode(), _declared_names(node)
        if re.search(r"\b(restrict|__restrict__|__restrict)\b", text):
            restrict.update(names)
        found = _BUFFER.search(text)
        if found and len(names) == 1 and function_name(function) == "kl_launch":
            buffers[next(iter(names))] = found.groups()
    arrays = {name for name, _ in subscripts(body)}
    for name in _written(body) or {}:
        if name in restrict:
            continue
        if name not in buffers or any(other != name and other not in restrict
                                      and buffers.get(other) in (None, buffers[name])
                                      for other in arrays):
            return False
    return True
