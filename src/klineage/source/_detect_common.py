"""Detectors shared by C and CUDA (restrict, unroll pragmas) and the helpers every detector uses."""

from __future__ import annotations

import re

from klineage.source.model import FeatureHit
from klineage.source.parse import Parsed, ancestors, for_loops, pragma_text, pragmas, walk

RESTRICT_WORDS = (b"restrict", b"__restrict", b"__restrict__")
_UNROLL_PRAGMA = re.compile(r"(GCC unroll|unroll|clang loop unroll)\b.*")
_LOOP_OFFSET = re.compile(r"\b{var}\s*\+\s*(\d+)\b")


def hit(parsed: Parsed, feature: str, node_or_span, detail: str = "", removable: bool = True,
        ) -> FeatureHit:
    return FeatureHit(feature, parsed.site(node_or_span), detail, removable)


def restrict_qualifiers(parsed: Parsed) -> list:
    """Every restrict / __restrict / __restrict__ qualifier node."""
    return [n for n in walk(parsed.root) if n.type == "type_qualifier" and n.text in RESTRICT_WORDS]


def detect_restrict(parsed: Parsed) -> list[FeatureHit]:
    hits = []
    for qualifier in restrict_qualifiers(parsed):
        declaration = next((p for p in ancestors(qualifier)
                            if p.type in ("parameter_declaration", "declaration", "field_declaration")),
                           qualifier)
        hits.append(hit(parsed, "restrict", qualifier, f"on: {_one_line(parsed.text_of(declaration))}"))
    return hits


def unroll_pragmas(parsed: Parsed) -> list:
    return [p for p in pragmas(parsed.root) if _UNROLL_PRAGMA.fullmatch(pragma_text(p))]


def detect_unroll_pragmas(parsed: Parsed, feature: str) -> list[FeatureHit]:
    return [hit(parsed, feature, p, f"#pragma {pragma_text(p)}") for p in unroll_pragmas(parsed)]


def detect_manual_unroll(parsed: Parsed) -> list[FeatureHit]:
    """Loops stepping by a literal S whose body touches i, i+S/k, ..., i+(k-1)S/k (k >= 2): an
    unrolled body with k independent chains. Not mechanically re-rollable: removable=False."""
    hits = []
    for loop in for_loops(parsed.root):
        var, step = _literal_step(loop)
        body = loop.child_by_field_name("body")
        if var is None or step < 2 or body is None:
            continue
        text = parsed.text_of(body)
        offsets = {int(m) for m in re.findall(_LOOP_OFFSET.pattern.format(var=re.escape(var)), text)}
        offsets = sorted(o for o in offsets if 0 < o < step)
        ways = len(offsets) + 1
        if ways >= 2 and step % ways == 0 and offsets == [step // ways * i for i in range(1, ways)]:
            hits.append(hit(parsed, "unroll", loop, f"manual {ways}-way unroll (step {step})",
                            removable=False))
    return hits


def _literal_step(loop) -> tuple[str | None, int]:
    update = loop.child_by_field_name("update")
    if update is None or update.type != "assignment_expression":
        return None, 0
    left, right = update.child_by_field_name("left"), update.child_by_field_name("right")
    operator = update.child_by_field_name("operator")
    if operator is None or operator.text != b"+=" or left.type != "identifier":
        return None, 0
    if right.type != "number_literal" or not right.text.decode().isdigit():
        return None, 0
    return left.text.decode(), int(right.text)


def _one_line(text: str, limit: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def asm_strings(parsed: Parsed) -> list[tuple[object, str]]:
    """(gnu_asm_expression node, its assembly text) pairs."""
    found = []
    for node in walk(parsed.root):
        if node.type == "gnu_asm_expression":
            template = node.child_by_field_name("assembly_code")
            text = "".join(parsed.text_of(s) for s in walk(template) if s.type == "string_content") \
                if template is not None else parsed.text_of(node)
            found.append((node, text))
    return found


def identifiers(parsed: Parsed, names: set[str] | None = None, pattern: str | None = None) -> list:
    regex = re.compile(pattern) if pattern else None
    return [n for n in walk(parsed.root)
            if n.type in ("identifier", "type_identifier", "field_identifier", "namespace_identifier")
            and (names is None or n.text.decode() in names)
            and (regex is None or regex.fullmatch(n.text.decode()))]
