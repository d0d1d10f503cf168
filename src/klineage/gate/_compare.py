"""Comparing a kernel's outputs with the reference, on whatever array library the device uses.

Both arguments are the device's "native" arrays (numpy on the CPU, torch tensors on a GPU):
floats as float64, integers as they are, bools as their raw bytes so the 0xAB poison shows.
Only operators both libraries share are used, so one comparison serves every backend.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from klineage.workload.reference import to_numpy

__all__ = ["float_errors", "output_mismatch", "rows_sorted", "selection_mismatch"]


def output_mismatch(name: str, got: Any, want: Any, rtol: float, atol: float, kind: str) -> str | None:
    """None when ``got`` matches ``want``; else one line saying what is wrong and where.

    ``kind`` is 'float', 'int' or 'bool'.
    """
    if tuple(got.shape) != tuple(want.shape):
        return f"output {name!r}: shape {tuple(got.shape)}, expected {tuple(want.shape)}"
    if kind == "bool":
        unwritten = int((got > 1).sum())
        if unwritten:
            return f"output {name!r}: {unwritten} of {_size(got)} elements never written (poison left)"
        bad = (got != 0) != (want != 0)
        return _describe(name, bad, got, want, "exact match") if int(bad.sum()) else None
    if kind == "int":
        bad = got != want
        return _describe(name, bad, got, want, "exact match") if int(bad.sum()) else None
    difference = abs(got - want)
    want_finite = (want - want) == 0  # False for NaN and Inf
    got_finite = (got - got) == 0
    # Where the reference is finite: within tolerance, and finite. Where it is infinite: the same
    # infinity (rtol * |inf| would let any finite number pass). Where it is NaN nothing passes:
    # outputs are poisoned with NaN, so a NaN there cannot be told from an element never written.
    close = ((difference <= atol + rtol * abs(want)) & got_finite & want_finite) | (
        ~want_finite & (got == want))
    bad = ~close
    count = int(bad.sum())
    if not count:
        return None
    nan_count = int((~(got == got) & (want == want)).sum())
    line = _describe(name, bad, got, want, f"|out-ref| <= {atol:g} + {rtol:g}*|ref|",
                     worst=difference, finite=got_finite & want_finite)
    if nan_count:
        line += f"; {nan_count} NaN (poisoned outputs are NaN: unwritten elements show as NaN)"
    return line


def _size(array: Any) -> int:
    size = 1
    for dim in array.shape:
        size *= int(dim)
    return size


def _unravel(flat_index: int, shape: tuple[int, ...]) -> list[int]:
    index = []
    for dim in reversed(shape):
        flat_index, rest = divmod(flat_index, int(dim))
        index.append(rest)
    return index[::-1]


def _describe(name: str, bad: Any, got: Any, want: Any, rule: str, worst: Any = None,
              finite: Any = None) -> str:
    count = int(bad.sum())
    flat = int((bad.reshape(-1) * 1).argmax())  # the first offending element
    where = _unravel(flat, tuple(bad.shape))
    got_value = got.reshape(-1)[flat]
    want_value = want.reshape(-1)[flat]
    text = f"output {name!r}: {count} of {_size(bad)} elements off ({rule})"
    if worst is not None:
        finite_bad = bad & finite
        if int(finite_bad.sum()):
            text += f", max abs error {float(worst[finite_bad].max()):.3g}"
    return f"{text}; first at {where}: got {_value(got_value)}, want {_value(want_value)}"


def _value(x: Any) -> str:
    number = float(x)
    return str(int(number)) if number.is_integer() and abs(number) < 1e15 else f"{number:.6g}"


def float_errors(got: Any, want: Any) -> tuple[float, float]:
    """(max |out-ref|, max |out-ref|/|ref|) over the elements where both are finite; the relative
    error over those where the reference is not zero. (0, 0) when there are none."""
    finite = ((got - got) == 0) & ((want - want) == 0)
    if not int(finite.sum()):
        return 0.0, 0.0
    difference = abs(got - want)[finite]
    scale = abs(want)[finite]
    nonzero = scale > 0
    relative = float((difference[nonzero] / scale[nonzero]).max()) if int(nonzero.sum()) else 0.0
    return float(difference.max()), relative


def rows_sorted(array: Any) -> Any:
    """Each row (the last dim) in ascending order: an output whose order is free, compared as a
    multiset (NaN sorts last in both libraries, and still matches nothing)."""
    return array.sort(dim=-1).values if hasattr(array, "dim") else np.sort(array, axis=-1)


def selection_mismatch(name: str, indices: Any, values: Any, source: Any, values_name: str,
                       source_name: str) -> str | None:
    """None when every row of ``indices`` holds distinct positions in the same row of ``source``
    at which ``source`` equals ``values`` beside them (a top-k's indices, ties picking any); the
    values themselves are compared with the reference's elsewhere. On the host: a few rows."""
    picks = to_numpy(indices).astype(np.int64)
    width = picks.shape[-1] if picks.ndim else 1
    picks = picks.reshape(-1, width)
    rows = picks.shape[0]
    flat_source = to_numpy(source).astype(np.float64)
    if flat_source.size % max(rows, 1):
        return f"output {name!r}: {rows} rows of indices, but {source_name!r} has no row for each"
    flat_source = flat_source.reshape(rows, -1)
    length = flat_source.shape[1]
    outside = (picks < 0) | (picks >= length)
    if outside.any():
        row, col = np.argwhere(outside)[0]
        return (f"output {name!r}: {int(outside.sum())} indices outside [0, {length}); first at "
                f"[{row}, {col}]: {int(picks[row, col])}")
    ordered = np.sort(picks, axis=1)
    repeated = (ordered[:, 1:] == ordered[:, :-1]).any(axis=1)
    if repeated.any():
        row = int(np.argmax(repeated))
        return (f"output {name!r}: {int(repeated.sum())} rows name one position twice; first row "
                f"{row}")
    picked = np.take_along_axis(flat_source, picks, axis=1)
    beside = to_numpy(values).astype(np.float64).reshape(rows, width)
    wrong = ~(picked == beside)  # NaN equals nothing
    if wrong.any():
        row, col = np.argwhere(wrong)[0]
        return (f"output {name!r}: {int(wrong.sum())} indices point at an element of "
                f"{source_name!r} other than the {values_name!r} beside them; first at [{row}, "
                f"{col}]: {source_name}[{row}, {int(picks[row, col])}] = {_value(picked[row, col])}, "
                f"{values_name} = {_value(beside[row, col])}")
    return None
