"""What a ModelNew kernel.py asks to have compiled, read from its syntax tree alone.

kernel.py is candidate code: klineage never imports it outside the sandbox. Its
``load_inline(...)`` call is found in the tree and its sources must be string literals or
module-level constants bound once to string literals; anything computed (an f-string, a file
read, a concatenation of unknowns) is refused with the reason, because what we compile must be
exactly what the static checks and the fingerprint saw. ``ast`` is enough here (nothing is
rewritten), and it is in the standard library.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Extension", "ExtensionError", "extension_of"]

_SOURCES = ("cpp_sources", "cuda_sources")
_ACCEPTED = {"name", *_SOURCES, "functions", "extra_cflags", "extra_cuda_cflags", "verbose",
             "with_cuda"}
_POSITIONAL = ("name", "cpp_sources", "cuda_sources", "functions", "extra_cflags",
               "extra_cuda_cflags")  # load_inline's parameter order


class ExtensionError(ValueError):
    """kernel.py's extension cannot be compiled as written; the message says why."""


@dataclass(frozen=True)
class Extension:
    """One ``load_inline`` call's arguments, as the literals they are."""

    name: str
    cpp_sources: tuple[str, ...]
    cuda_sources: tuple[str, ...]
    functions: tuple[str, ...]
    extra_cflags: tuple[str, ...]
    extra_cuda_cflags: tuple[str, ...]


def extension_of(source: Path) -> Extension | None:
    """The extension kernel.py builds with ``load_inline``, None if it builds none."""
    tree = ast.parse(source.read_text(), filename=source.name)
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and _callee(n) == "load_inline"]
    if not calls:
        return None
    if len(calls) > 1:
        raise ExtensionError(f"{source.name}:{calls[1].lineno}: a second load_inline call "
                             f"(one extension per kernel is supported)")
    call = calls[0]
    constants = _string_constants(tree)
    where = f"{source.name}:{call.lineno}"
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        raise ExtensionError(f"{where}: load_inline's arguments must be written out (no * or **)")
    given = dict(zip(_POSITIONAL, call.args, strict=False))
    for keyword in call.keywords:
        if keyword.arg not in _ACCEPTED:
            raise ExtensionError(f"{where}: load_inline argument {keyword.arg!r} is not supported "
                                 f"(supported: {', '.join(sorted(_ACCEPTED))})")
        given[keyword.arg] = keyword.value
    if "name" not in given:
        raise ExtensionError(f"{where}: load_inline needs a name")
    name = _strings(given["name"], constants, where, "name")
    if len(name) != 1 or not name[0].isidentifier():
        raise ExtensionError(f"{where}: load_inline's name must be one identifier, got {name!r}")
    values = {k: _strings(given[k], constants, where, k) if k in given else ()
              for k in (*_SOURCES, "functions", "extra_cflags", "extra_cuda_cflags")}
    if not values["cpp_sources"] and not values["cuda_sources"]:
        raise ExtensionError(f"{where}: load_inline has no sources")
    return Extension(name=name[0], **values)


def _callee(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _string_constants(tree: ast.Module) -> dict[str, ast.expr]:
    """Module-level names bound exactly once, by a plain assignment."""
    bound: dict[str, list[ast.expr]] = {}
    for node in ast.walk(tree):
        targets = (node.targets if isinstance(node, ast.Assign)
                   else [node.target] if isinstance(node, ast.AugAssign | ast.AnnAssign) else [])
        for target in targets:
            if isinstance(target, ast.Name):
                value = node.value if isinstance(node, ast.Assign) and node in tree.body else None
                bound.setdefault(target.id, []).append(value)
    return {k: v[0] for k, v in bound.items() if len(v) == 1 and v[0] is not None}


def _strings(node: ast.expr, constants: dict[str, ast.expr], where: str, what: str,
             depth: int = 0) -> tuple[str, ...]:
    """A string literal, a list or tuple of them, or a module constant that is one."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return (node.value,)
    if isinstance(node, ast.List | ast.Tuple):
        return tuple(s for item in node.elts for s in _strings(item, constants, where, what, depth))
    if isinstance(node, ast.Name) and node.id in constants and depth < 4:
        return _strings(constants[node.id], constants, where, what, depth + 1)
    raise ExtensionError(
        f"{where}: load_inline's {what} must be string literals or module-level constants "
        f"assigned once from string literals, so that what is compiled is what was checked; "
        f"got `{ast.unparse(node)}`")
