"""What the packing pass reads in a loop nest: each array read, the element it reads as an index
in the nest's counters, and whether the array is read-only for the whole call.

A read is one of
- a subscript ``B[k * N + j]`` of a name;
- an accessor call ``b(k, j)`` (or ``x.at(i, j)``, or a function-like macro ``AT(B, k, j)``) whose
  body is one ``return BASE[INDEX];``: a lambda of the function, a function of the file, or the
  operator() / method of a view struct initialised ``View<const float> b{ptr, cols}`` (its fields
  bound in order); index helpers inside the index (``B[idx2(k, j, N)]``) are inlined the same way;
- a pointer walk: ``*p`` where ``p = B + OFF`` is declared in the nest and stepped once per
  iteration of the loop that reads it by ``p += S`` after the reads (the element read at
  iteration t is ``B[OFF + t * S]``).
The index is read as a sum of terms, each a counter times counter-free factors or counter-free
(``linear_terms``); a counter anywhere else (a division, a call, a product of two counters) makes
it not affine.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from klineage.source._blocking_nest import compared_bound, declared, flat
from klineage.source._insert_blocking import _counter_type
from klineage.source._insert_interchange import _expand, function_macros
from klineage.source.parse import Parsed, ancestors, function_definitions, function_name, parse, walk

__all__ = ["Loop", "Read", "Walk", "address_taken", "base_name", "counted", "declarations", "declared_at",
           "element_type", "expression", "index_of", "input_cast", "linear_terms", "nest_reads", "parens",
           "root_name", "write_target"]

_INPUT = re.compile(r"^(?:static_cast<|reinterpret_cast<|\()\s*(const\s+)?[\w:]+(\s+const)?\s*\*\s*[>)]\s*"
                    r"\(?\s*inputs\s*\[\s*\d+\s*\]\s*\)?$")
_WRAPPERS = ("parenthesized_expression", "cast_expression")


@dataclass(frozen=True)
class Loop:
    """A counted loop: ``for (T name = low; name < high; name++)`` (the increment may step other
    names beside the counter; the body never writes the counter)."""
    node: object
    name: str
    low: str
    high: str
    type: str


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


def counted(loop) -> Loop | None:
    if loop.type != "for_statement":
        return None
    counter = declared(loop)
    bound = compared_bound(loop, counter[0]) if counter else None
    update = loop.child_by_field_name("update")
    if bound is None or update is None:
        return None
    parts = update.named_children if update.type == "comma_expression" else [update]
    steps = [p for p in parts if _steps(p, counter[0])]
    others = [p for p in parts if p not in steps]
    if len(steps) != 1 or any(counter[0] in _written_names(p) for p in others):
        return None
    if counter[0] in _written_names(loop.child_by_field_name("body")):
        return None
    return Loop(loop, counter[0], counter[1].text.decode(), bound.text.decode(), _counter_type(loop))


def _steps(node, name: str) -> bool:
    return re.sub(r"\s", "", node.text.decode()) in (f"{name}++", f"++{name}", f"{name}+=1")


def _written_names(node) -> set[str]:
    return {root_name(t) for t in _targets(node)} - {None}


def _targets(node) -> list:
    found = []
    for n in walk(node):
        if n.type == "assignment_expression":
            found.append(n.child_by_field_name("left"))
        elif n.type == "update_expression":
            found.append(n.child_by_field_name("argument"))
    return found


def root_name(node) -> str | None:
    """The name under subscripts, fields, dereferences and parentheses: ``B`` of ``B[i].x``."""
    while node is not None and node.type in ("subscript_expression", "field_expression",
                                             "pointer_expression", *_WRAPPERS):
        key = {"subscript_expression": "argument", "field_expression": "argument",
               "pointer_expression": "argument", "cast_expression": "value"}.get(node.type)
        node = node.child_by_field_name(key) if key else next(iter(node.named_children), None)
    return node.text.decode() if node is not None and node.type == "identifier" else None


def write_target(node) -> bool:
    """``node`` is assigned or incremented."""
    node = _outermost_parens(node)
    parent = node.parent
    if parent is None:
        return False
    if parent.type == "assignment_expression":
        return parent.child_by_field_name("left") == node
    return parent.type == "update_expression"


def address_taken(node) -> bool:
    parent = _outermost_parens(node).parent
    return parent is not None and parent.type == "pointer_expression" and parent.children[0].type == "&"


def _outermost_parens(node):
    while node.parent is not None and node.parent.type == "parenthesized_expression":
        node = node.parent
    return node


# ---------------------------------------------------------------------------- expressions


def expression(text: str, language: str):
    """``text`` parsed as one expression (its node), or None where it does not parse."""
    parsed = parse(f"void kl_e(void) {{ kl_e = ({text.strip()}); }}\n", language)
    if any(n.type == "ERROR" for n in walk(parsed.root)):
        return None
    assignment = next(n for n in walk(parsed.root) if n.type == "assignment_expression")
    return assignment.child_by_field_name("right").named_children[0]


def parens(node):
    """``node`` without the parentheses around it."""
    while node is not None and node.type == "parenthesized_expression" and node.named_children:
        node = node.named_children[0]
    return node


def _unwrap(node):
    while node is not None and node.type in _WRAPPERS:
        node = node.child_by_field_name("value") if node.type == "cast_expression" \
            else next(iter(node.named_children), None)
    return node


def index_of(subscript):
    index = subscript.child_by_field_name("index")
    if index is None:  # tree-sitter-cuda nests the index in subscript_argument_list
        arguments = next((c for c in subscript.named_children if c.type == "subscript_argument_list"), None)
        index = next(iter(arguments.named_children), None) if arguments is not None else None
    return index


def linear_terms(node, counters: set[str]) -> list[tuple[str | None, list[str], int]] | None:
    """The index as (counter or None, its counter-free factors, sign) terms; None when a counter
    appears other than as a term times counter-free factors."""
    node = _unwrap(node)
    names = {n.text.decode() for n in walk(node) if n.type == "identifier"} & counters
    if not names:
        return [(None, [node.text.decode()], 1)]
    if node.type == "identifier":
        return [(node.text.decode(), [], 1)]
    if node.type == "unary_expression" and node.children[0].type in ("-", "+"):
        inner = linear_terms(node.child_by_field_name("argument"), counters)
        sign = -1 if node.children[0].type == "-" else 1
        return None if inner is None else [(c, f, s * sign) for c, f, s in inner]
    if node.type != "binary_expression":
        return None
    operator = node.child_by_field_name("operator").type
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    if operator in ("+", "-"):
        a, b = linear_terms(left, counters), linear_terms(right, counters)
        if a is None or b is None:
            return None
        return a + [(c, f, s * (-1 if operator == "-" else 1)) for c, f, s in b]
    if operator == "*":
        for scaled, factor in ((left, right), (right, left)):
            if not {n.text.decode() for n in walk(factor) if n.type == "identifier"} & counters:
                terms = linear_terms(scaled, counters)
                return None if terms is None else [(c, [*f, factor.text.decode()], s) for c, f, s in terms]
    return None


# ---------------------------------------------------------------------------- declarations


def declarations(function, name: str) -> list:
    """The declarations and parameters of ``function`` (lambdas included) that declare ``name``."""
    found = []
    for node in walk(function):
        if node.type in ("declaration", "parameter_declaration", "field_declaration"):
            for declarator in node.children_by_field_name("declarator"):
                if _declared_name(declarator) == name:
                    found.append(node)
    return found


def declared_at(node, name: str):
    """The declaration (or parameter) of ``name`` in scope at ``node``: the nearest enclosing
    block's last one before it, a loop header's, or the function's parameter."""
    child = node
    for scope in ancestors(node):
        if scope.type == "compound_statement":
            found = [s for s in scope.named_children if s.type == "declaration"
                     and s.end_byte <= child.start_byte and _declares(s, name)]
            if found:
                return found[-1]
        elif scope.type in ("for_statement", "function_definition", "lambda_expression"):
            headers = [scope.child_by_field_name("initializer")] if scope.type == "for_statement" \
                else [n for n in walk(scope.child_by_field_name("declarator"))
                      if n.type == "parameter_declaration"]
            for header in (h for h in headers if h is not None and h != child):
                if _declares(header, name):
                    return header
            if scope.type == "function_definition":
                return None
        child = scope
    return None


def _declares(declaration, name: str) -> bool:
    return any(_declared_name(d) == name for d in declaration.children_by_field_name("declarator"))


def _declared_name(declarator) -> str | None:
    while declarator is not None and declarator.type not in ("identifier", "field_identifier"):
        declarator = declarator.child_by_field_name("declarator")
    return declarator.text.decode() if declarator is not None else None


def _declarator_of(declaration, name: str):
    return next(d for d in declaration.children_by_field_name("declarator") if _declared_name(d) == name)


def _value_of(declaration, name: str):
    declarator = _declarator_of(declaration, name)
    return declarator.child_by_field_name("value") if declarator.type == "init_declarator" else None


def base_name(text: str) -> str | None:
    return text if re.fullmatch(r"[A-Za-z_]\w*", text) else None


def input_cast(text: str) -> bool:
    """``(const T*)inputs[k]`` or ``static_cast<const T*>(inputs[k])``: a kl_launch input buffer."""
    return bool(_INPUT.match(re.sub(r"\s+", " ", text.strip())))


def element_type(function, base: str) -> str | None:
    """The type of one element of ``base`` (const and restrict dropped): ``float`` for ``const
    float* B`` or ``static_cast<const float*>(...)``."""
    name = base_name(base)
    if name is None:
        return _cast_pointee(base)
    found = declarations(function, name)
    if len(found) != 1:
        return None
    declaration = found[0]
    declarator = _declarator_of(declaration, name)
    pointer = declarator.child_by_field_name("declarator") if declarator.type == "init_declarator" \
        else declarator
    if pointer is None or pointer.type != "pointer_declarator" \
            or pointer.child_by_field_name("declarator").type != "identifier":
        return None
    kind = declaration.child_by_field_name("type").text.decode()
    if kind == "auto":
        value = _value_of(declaration, name)
        return _cast_pointee(value.text.decode()) if value is not None else None
    return kind if re.fullmatch(r"[\w:]+", kind) else None


def _cast_pointee(text: str) -> str | None:
    found = re.match(r"^\(?\s*(?:static_cast<|reinterpret_cast<|\()\s*(?:const\s+)?([\w:]+)(?:\s+const)?"
                     r"\s*\*\s*[>)]", text.strip())
    return found.group(1) if found else None


# ---------------------------------------------------------------------------- accessors


class Accessors:
    """Resolves accessor calls of one function to the ``BASE[INDEX]`` they read."""

    def __init__(self, parsed: Parsed, function) -> None:
        self.parsed, self.function = parsed, function
        self.macros = function_macros(parsed.text)
        self.functions = {function_name(f): f for f in function_definitions(parsed.root)}

    def inline(self, call) -> tuple[str, str, str] | str:
        """(base, index, name) of what ``call`` reads, or why it is not followed."""
        text = self._expanded(call, call)
        if isinstance(text, str) and text.startswith("!"):
            return text[1:]
        node = parens(expression(text, self.parsed.language)) if text else None
        if node is None or node.type != "subscript_expression":
            return f"{call.text.decode()} is not a plain read of one element (not followed)"
        index = self.inline_index(index_of(node))
        if index is None:
            return f"the index of {call.text.decode()} calls a helper that is not one return (not followed)"
        base = parens(node.child_by_field_name("argument")).text.decode()
        callee = call.child_by_field_name("function")
        name = base if base_name(base) else root_name(callee) or callee.text.decode()
        return base, index, name

    def inline_index(self, node) -> str | None:
        """The index text with every helper call in it inlined (None if one is not followed)."""
        anchor, text = node, node.text.decode()
        for _ in range(4):
            node = expression(text, self.parsed.language)
            calls = [n for n in walk(node) if n.type == "call_expression"] if node is not None else []
            if not calls:
                return text if node is not None else None
            first = calls[0]
            inlined = self._expanded(first, anchor)
            if not isinstance(inlined, str) or inlined.startswith("!"):
                return None
            text = text[:first.start_byte - node.start_byte] + f"({inlined})" \
                + text[first.end_byte - node.start_byte:]
        return None

    def _expanded(self, call, anchor) -> str | None:
        """The call's return expression with its arguments (and a view's fields) in place, or
        '!why' when the callee is not a one-return accessor (names looked up where ``anchor`` is)."""
        callee = call.child_by_field_name("function")
        arguments = [a.text.decode() for a in call.child_by_field_name("arguments").named_children]
        name = callee.text.decode()
        if callee.type == "identifier" and name in self.macros:
            return _expand(call.text.decode(), {name: self.macros[name]})
        body = self._body(anchor, callee)
        if isinstance(body, str):
            return "!" + body
        params, returned, fields = body
        if len(params) != len(arguments):
            return f"!{name} takes {len(params)} arguments, the call passes {len(arguments)}"
        mapping = {**fields, **{p: f"({a})" for p, a in zip(params, arguments, strict=True)}}
        return _substituted(returned, mapping)

    def _body(self, call, callee) -> tuple[list[str], object, dict[str, str]] | str:
        """(parameters, the returned expression, field -> bound text) of the accessor called."""
        name = callee.text.decode()
        if callee.type == "field_expression":
            target = callee.child_by_field_name("argument").text.decode()
            method = callee.child_by_field_name("field").text.decode()
            return self._view(call, target, method)
        if callee.type != "identifier":
            return f"the call to {name} is not followed"
        local = declared_at(call, name)
        if local is not None and local.type == "declaration":
            value = _value_of(local, name)
            if value is not None and value.type == "lambda_expression":
                return _one_return(value, name)
            return self._view(call, name, "operator()")
        if name in self.functions:
            return _one_return(self.functions[name], name)
        return f"the call to {name} is not followed (no lambda, view or one-return function of that name)"

    def _view(self, call, target: str, method: str) -> tuple[list[str], object, dict[str, str]] | str:
        local = declared_at(call, target)
        if local is None or local.type != "declaration":
            return f"{target} is not a local view"
        kind = local.child_by_field_name("type")
        kind = kind.child_by_field_name("name") or kind if kind.type == "template_type" else kind
        struct = next((n for n in walk(self.parsed.root) if n.type in ("struct_specifier", "class_specifier")
                       and (n.child_by_field_name("name") or n).text == kind.text
                       and n.child_by_field_name("body") is not None), None)
        value = _value_of(local, target)
        if struct is None or value is None or value.type != "initializer_list":
            return f"{target} is not a view initialised field by field"
        members = struct.child_by_field_name("body").named_children
        fields = [_declared_name(d) for m in members if m.type == "field_declaration"
                  for d in m.children_by_field_name("declarator")]
        if None in fields or len(fields) != len(value.named_children):
            return f"{target} is not a view initialised field by field"
        methods = [m for m in members if m.type == "function_definition" and _method_name(m) == method]
        if len(methods) != 1:
            return f"{target}'s {method} is not one method of its view"
        body = _one_return(methods[0], f"{target}.{method}")
        if isinstance(body, str):
            return body
        bound = {f: f"({v.text.decode()})" for f, v in zip(fields, value.named_children, strict=True)}
        return body[0], body[1], bound


def _method_name(function) -> str:
    declarator = next((n for n in walk(function.child_by_field_name("declarator"))
                       if n.type == "function_declarator"), None)
    name = declarator.child_by_field_name("declarator") if declarator is not None else None
    return re.sub(r"\s", "", name.text.decode()) if name is not None else ""


def _one_return(function, name: str) -> tuple[list[str], object, dict] | str:
    body = function.child_by_field_name("body")
    statements = [c for c in body.named_children if c.type != "comment"] if body is not None else []
    if len(statements) != 1 or statements[0].type != "return_statement" or not statements[0].named_children:
        return f"{name} is not one return statement (not followed)"
    declarator = function.child_by_field_name("declarator")
    parameters = next((n for n in walk(declarator) if n.type == "parameter_list"), None) \
        if declarator is not None else None
    params = [_declared_name(p.child_by_field_name("declarator")) for p in parameters.named_children] \
        if parameters is not None else []
    if None in params:
        return f"{name} has a parameter without a name"
    return params, statements[0].named_children[0], {}


def _substituted(node, mapping: dict[str, str]) -> str:
    """The text of ``node`` with each identifier named in ``mapping`` replaced (at once)."""
    out, cursor = [], node.start_byte
    for n in walk(node):
        if n.type == "identifier" and n.text.decode() in mapping and n.start_byte >= cursor:
            out += [node.text[cursor - node.start_byte:n.start_byte - node.start_byte].decode(),
                    mapping[n.text.decode()]]
            cursor = n.end_byte
    return "".join(out) + node.text[cursor - node.start_byte:].decode()


# ---------------------------------------------------------------------------- reads of a nest


def nest_reads(parsed: Parsed, function, nest) -> tuple[list[Read], list[tuple[str, object, str]]]:
    """Every read of an element in ``nest`` that the pass follows, and (array, node, why) for the
    reads of arrays it cannot follow (an index helper it cannot inline, a pointer walk it cannot
    count). Calls that do not come down to one element (``expf``, a lambda with a loop) are no
    reads; an array they read is not packed through them, and it needs no rewrite there: it is
    read-only, and its own elements stay what they were."""
    accessors, reads, unknown = Accessors(parsed, function), [], []
    stepped = {parens(t).text.decode() for t in _targets(nest) if parens(t).type == "identifier"}
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
    pointer = _unwrap(deref.child_by_field_name("argument"))
    if pointer is None or pointer.type != "identifier":
        return None
    name = pointer.text.decode()
    found = declared_at(deref, name)
    value = _value_of(found, name) if found is not None and found.type == "declaration" else None
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
    value = _unwrap(value)
    candidates = []
    if value.type == "identifier":
        candidates.append((value, "0"))
    elif value.type == "pointer_expression" and value.children[0].type == "&":
        element = _unwrap(value.child_by_field_name("argument"))
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
        use = _outermost_parens(node)
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
    bumps = [t.parent for t in _targets(declaration.parent) if t is not None
             and _unwrap(t).type == "identifier" and _unwrap(t).text.decode() == pointer
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
    condition = _unwrap(condition)
    if condition is None or condition.type != "binary_expression" \
            or condition.child_by_field_name("operator").type not in ("!=", "<"):
        return None, "the loop that walks it is neither counted nor 'q != end' over another walk"
    q, end = (condition.child_by_field_name(k).text.decode() for k in ("left", "right"))
    starts, ends = declared_at(condition, q), declared_at(condition, end)
    first = _value_of(starts, q) if starts is not None and starts.type == "declaration" else None
    last = _unwrap(_value_of(ends, end)) if ends is not None and ends.type == "declaration" else None
    if first is None or last is None or starts.parent not in (loop, loop.parent):
        return None, f"the walk {q} != {end} does not start afresh before each run of its loop"
    bumps = [t for t in _targets(starts.parent) if root_name(t) == q and declared_at(t, q) == starts] + \
        [t for t in _targets(ends.parent) if root_name(t) == end and declared_at(t, end) == ends]
    if len(bumps) != 1 or root_name(bumps[0]) != q or not _steps(bumps[0].parent, q) \
            or not _once_per_iteration(bumps[0].parent, loop):
        return None, f"{q} is not stepped by one once per iteration (or {end} is written)"
    if last.type != "binary_expression" or last.child_by_field_name("operator").type != "+" \
            or flat(last.child_by_field_name("left").text.decode()) not in (flat(first.text.decode()), q):
        return None, f"{end} is not {q}'s start plus a count"
    return last.child_by_field_name("right").text.decode(), ""
