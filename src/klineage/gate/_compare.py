"""Comparing a kernel's outputs with the reference, and its inputs with their snapshot."""

from __future__ import annotations

import numpy as np

__all__ = ["inputs_changed", "output_mismatch"]


def output_mismatch(
    name: str, got: np.ndarray, want: np.ndarray, rtol: float, atol: float, is_bool: bool
) -> str | None:
    """None when ``got`` matches ``want``; else one line saying what is wrong and where."""
    if got.shape != want.shape:
        return f"output {name!r}: shape {got.shape}, expected {want.shape}"
    if is_bool:
        raw = got.view(np.uint8)
        unwritten = int(np.count_nonzero(raw > 1))
        if unwritten:
            return f"output {name!r}: {unwritten} of {raw.size} elements never written (poison left)"
        bad = raw.astype(bool) != want.astype(bool)
        return _describe(name, bad, got, want, "exact match") if bad.any() else None
    if got.dtype.kind in "iu":
        bad = got != want
        return _describe(name, bad, got, want, "exact match") if bad.any() else None
    got64 = got.astype(np.float64)
    want64 = np.asarray(want, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        close = np.abs(got64 - want64) <= atol + rtol * np.abs(want64)
    close |= got64 == want64  # equal infinities
    close &= np.isfinite(got64) | ~np.isfinite(want64)  # NaN/Inf where the reference is finite
    if close.all():
        return None
    bad = ~close
    nan_count = int(np.count_nonzero(np.isnan(got64) & ~np.isnan(want64)))
    rule = f"|out-ref| <= {atol:g} + {rtol:g}*|ref|"
    line = _describe(name, bad, got64, want64, rule)
    if nan_count:
        line += f"; {nan_count} NaN (poisoned outputs are NaN: unwritten elements show as NaN)"
    return line


def _describe(name: str, bad: np.ndarray, got: np.ndarray, want: np.ndarray, rule: str) -> str:
    count = int(np.count_nonzero(bad))
    index = tuple(int(i) for i in np.unravel_index(int(np.argmax(bad)), bad.shape))
    diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
    finite = diff[bad & np.isfinite(diff)]
    worst = f", max abs error {finite.max():.3g}" if finite.size else ""
    return (
        f"output {name!r}: {count} of {bad.size} elements off ({rule}){worst}; "
        f"first at {list(index)}: got {_value(got[index])}, want {_value(want[index])}"
    )


def inputs_changed(before: dict[str, np.ndarray], after: dict[str, np.ndarray]) -> str | None:
    """None when every input is bit-identical to its snapshot."""
    for name, snapshot in before.items():
        now = after[name]
        if snapshot.tobytes() != now.tobytes():
            changed = np.count_nonzero(snapshot.view(np.uint8) != now.view(np.uint8))
            return f"input {name!r} was modified by the kernel ({changed} bytes changed)"
    return None


def _value(x: object) -> str:
    return f"{float(x):.6g}" if isinstance(x, np.floating | float) else str(x)
