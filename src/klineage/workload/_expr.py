"""Safe integer/float arithmetic over axis names, for shapes and [cost] expressions."""

from __future__ import annotations

import ast
import operator
from collections.abc import Mapping

_BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_CALLS = {"min": min, "max": max, "ceil_div": lambda a, b: -(-a // b)}


class ExpressionError(ValueError):
    """The expression uses something other than numbers, names and + - * / // % ** min max."""


def names_in(text: str) -> set[str]:
    """The variable names an expression refers to."""
    tree = _parse(text)
    return {
        n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id not in _CALLS
    }


def evaluate(text: str, values: Mapping[str, float]) -> float:
    """Evaluate ``text`` with ``values`` bound to names."""
    return _eval(_parse(text).body, values)


def _parse(text: str) -> ast.Expression:
    try:
        return ast.parse(str(text), mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"not an arithmetic expression: {text!r}") from exc


def _eval(node: ast.AST, values: Mapping[str, float]) -> float:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in values:
            raise ExpressionError(f"unknown name {node.id!r}")
        return values[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _BINARY[type(node.op)](_eval(node.left, values), _eval(node.right, values))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_eval(node.operand, values)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _CALLS
        and not node.keywords
    ):
        return _CALLS[node.func.id](*(_eval(a, values) for a in node.args))
    raise ExpressionError(f"unsupported syntax: {ast.unparse(node)!r}")
