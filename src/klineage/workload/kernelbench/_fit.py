"""Dimension expressions from probe runs: which axes drive a tensor dimension, and how.

Every observation holds the axis values one run used and the dimension it produced. The runs
vary one axis at a time from a base, so the axes a dimension depends on are the ones whose
variation changed it; equal values are never matched. The expression is then the first of a
few shapes that reproduces every observation: ``(c1*A + c2*B + ... + b)//s + e`` with small
integer coefficients (a copy, a halving, a convolution's ``(H - K)//stride + 1``), then a
product ``c*A*B`` (a flatten), then a quotient ``A//B`` (channels per group).
"""

from __future__ import annotations

import itertools
import math

__all__ = ["Observation", "drivers", "fit_dim"]

Observation = tuple[dict[str, int], int]
"""(axis values of one probe run, the dimension that run produced)."""

_COEFFICIENTS = tuple(c for k in range(1, 9) for c in (k, -k))  # strides, dilations up to 8
_FEW_COEFFICIENTS = (1, -1, 2, -2)  # over three axes
_DIVISORS = range(1, 17)


def drivers(base: Observation, varied: dict[str, list[Observation]]) -> list[str]:
    """The axes whose variation (others at the base) changed the dimension, in axis order."""
    return [axis for axis, runs in varied.items() if any(dim != base[1] for _, dim in runs)]


def fit_dim(observations: list[Observation], driving: list[str]) -> str | int | None:
    """An expression over ``driving`` that gives every observed dimension; None if none fits.

    No driving axis means a literal: the dimension itself.
    """
    if not driving:
        return observations[0][1]
    if len(driving) <= 3:
        found = _linear_floor(observations, driving)
        if found is not None:
            return found
    return _product(observations, driving) or _quotient(observations, driving)


def _quotient(observations: list[Observation], driving: list[str]) -> str | None:
    """A//B: channels per group."""
    if len(driving) != 2:
        return None
    for a, b in (driving, driving[::-1]):
        if all(axes[b] and axes[a] // axes[b] == dim for axes, dim in observations):
            return f"{a}//{b}"
    return None


def _linear_floor(observations: list[Observation], driving: list[str]) -> str | None:
    """(sum c_i*A_i + b)//s + e, smallest coefficients and divisor first."""
    (base, dim0), rest = observations[0], observations[1:]
    choices = _COEFFICIENTS if len(driving) < 3 else _FEW_COEFFICIENTS
    combos = sorted(itertools.product(choices, repeat=len(driving)),
                    key=lambda cs: sum(abs(c) for c in cs))
    for divisor in _DIVISORS:
        for coefficients in combos:
            linear0 = sum(c * base[a] for c, a in zip(coefficients, driving, strict=True))
            for extra in (0, 1) if divisor > 1 else (0,):
                # b such that (linear0 + b)//s + e == dim0: s consecutive values
                low = divisor * (dim0 - extra) - linear0
                for offset in range(low, low + divisor):
                    if all((sum(c * axes[a] for c, a in zip(coefficients, driving, strict=True))
                            + offset) // divisor + extra == dim for axes, dim in rest):
                        return _format(coefficients, driving, offset, divisor, extra)
    return None


def _product(observations: list[Observation], driving: list[str]) -> str | None:
    base, dim0 = observations[0]
    product = math.prod(base[a] for a in driving)
    if dim0 % product:
        return None
    scale = dim0 // product
    if all(scale * math.prod(axes[a] for a in driving) == dim for axes, dim in observations):
        names = "*".join(driving)
        return names if scale == 1 else f"{scale}*{names}"
    return None


def _format(coefficients: tuple[int, ...], driving: list[str], offset: int, divisor: int,
            extra: int) -> str:
    text = ""
    terms = sorted(zip(coefficients, driving, strict=True), key=lambda term: term[0] < 0)
    for c, axis in terms:  # positive terms first: H-K, not -K+H
        term = axis if abs(c) == 1 else f"{abs(c)}*{axis}"
        text += (term if c > 0 else f"-{term}") if not text else (f"+{term}" if c > 0 else f"-{term}")
    text = _with_offset(text, offset)
    if divisor > 1:
        text = f"({text})//{divisor}" if not text.isidentifier() else f"{text}//{divisor}"
    return _with_offset(text, extra)


def _with_offset(term: str, offset: int) -> str:
    if offset == 0:
        return term
    return f"{term}+{offset}" if offset > 0 else f"{term}-{-offset}"
