"""Dimension expressions from probe runs: which axes drive a tensor dimension, and how.

Every observation holds the axis values one run used and the dimension it produced. The runs
vary one axis at a time from a base, so the axes a dimension depends on are the ones whose
variation changed it; equal values are never matched. The expression is then the first of a few
shapes (``A``, ``c*A+b``, ``(A+b)//s``, ``c*A*B``, ``A+B+b``) that reproduces every observation.
"""

from __future__ import annotations

import math
from fractions import Fraction

from klineage.workload import _expr

__all__ = ["Observation", "drivers", "fit_dim"]

Observation = tuple[dict[str, int], int]
"""(axis values of one probe run, the dimension that run produced)."""


def drivers(base: Observation, varied: dict[str, list[Observation]]) -> list[str]:
    """The axes whose variation (others at the base) changed the dimension, in axis order."""
    return [axis for axis, runs in varied.items() if any(dim != base[1] for _, dim in runs)]


def fit_dim(observations: list[Observation], driving: list[str]) -> str | int | None:
    """An expression over ``driving`` that gives every observed dimension; None if none fits.

    No driving axis means a literal: the dimension itself.
    """
    if not driving:
        return observations[0][1]
    for candidate in _candidates(observations, driving):
        if all(_value(candidate, axes) == dim for axes, dim in observations):
            return candidate
    return None


def _value(expression: str, axes: dict[str, int]) -> float | None:
    try:
        return _expr.evaluate(expression, axes)
    except (ZeroDivisionError, _expr.ExpressionError):
        return None


def _candidates(observations: list[Observation], driving: list[str]) -> list[str]:
    if len(driving) == 1:
        return [*_affine(observations, driving[0]), *_floor_division(driving[0])]
    base_axes, base_dim = observations[0]
    product = math.prod(base_axes[a] for a in driving)
    names = "*".join(driving)
    found = []
    if base_dim % product == 0:
        scale = base_dim // product
        found.append(names if scale == 1 else f"{scale}*{names}")
    offset = base_dim - sum(base_axes[a] for a in driving)
    found.append(_with_offset("+".join(driving), offset))
    return found


def _affine(observations: list[Observation], axis: str) -> list[str]:
    """c*A + b through two observations with different A, when c and b are integers."""
    (axes0, dim0), *rest = observations
    other = next(((a, d) for a, d in rest if a[axis] != axes0[axis]), None)
    if other is None:
        return []
    slope = Fraction(other[1] - dim0, other[0][axis] - axes0[axis])
    offset = dim0 - slope * axes0[axis]
    if slope.denominator != 1 or offset.denominator != 1 or slope == 0:
        return []
    term = axis if slope == 1 else f"{slope.numerator}*{axis}"
    return [_with_offset(term, int(offset))]


def _floor_division(axis: str) -> list[str]:
    """(A + b)//s + c: strided windows, pooling, halving (s up to 16)."""
    return [_with_offset(f"{axis}//{s}" if b == 0 else f"({_with_offset(axis, b)})//{s}", c)
            for s in range(2, 17) for b in range(-2 * s, 2 * s + 1) for c in (0, 1)]


def _with_offset(term: str, offset: int) -> str:
    if offset == 0:
        return term
    return f"{term}+{offset}" if offset > 0 else f"{term}-{-offset}"
