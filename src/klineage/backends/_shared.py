"""Pieces both backends use: binding kl_launch through ctypes, and the ceilings cache."""

from __future__ import annotations

import ctypes
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from klineage.backends.base import Ceilings

__all__ = ["bind_launch", "cached_ceilings"]

Bind = Callable[[Sequence[int], Sequence[int], Sequence[int], Sequence[float]], Callable[[], int]]


def bind_launch(artifact: Path, entry: str, stream: int | None) -> Bind:
    """Load ``entry`` from a built kernel; the returned bind() prepares one call's arguments
    outside any timed region and returns the zero-argument call."""
    function = getattr(ctypes.CDLL(str(artifact)), entry)
    function.argtypes = [ctypes.c_void_p] * 5
    function.restype = ctypes.c_int
    stream_arg = ctypes.c_void_p(stream) if stream is not None else None

    def bind(ins: Sequence[int], outs: Sequence[int], axes: Sequence[int],
             params: Sequence[float]) -> Callable[[], int]:
        args = ((ctypes.c_void_p * max(len(ins), 1))(*ins),
                (ctypes.c_void_p * max(len(outs), 1))(*outs),
                (ctypes.c_int64 * max(len(axes), 1))(*axes),
                (ctypes.c_double * max(len(params), 1))(*params), stream_arg)
        return lambda: function(*args)

    return bind


_READ: dict[Path, Ceilings] = {}


def cached_ceilings(path: Path, measure: Callable[[], Ceilings], remeasure: bool,
                    peak: tuple[float, float] = (float("inf"), float("inf"))) -> Ceilings:
    """Ceilings are measured once per machine (and thread count) and kept as JSON.

    They are trusted state: only klineage's own probes (processes that never load a candidate)
    measure them, a process reads the file once and keeps what it read, and a file that does
    not parse or claims more than ``peak`` (bandwidth GB/s, compute GFLOP/s: the hardware's
    theoretical limits, generously rounded up) is not believed and is measured again.
    A re-measurement keeps the best rates ever seen: a ceiling is an upper bound, and one
    measured while neighbours loaded the machine is too low (it once made honest kernels look
    faster than light).
    """
    previous = _READ.get(path) or _believable(path, peak)
    if previous is not None and not remeasure:
        _READ[path] = previous
        return previous
    ceilings = measure()
    if previous is not None:
        ceilings = replace(ceilings,
                           bandwidth_gbps=max(ceilings.bandwidth_gbps, previous.bandwidth_gbps),
                           compute_gflops=max(ceilings.compute_gflops, previous.compute_gflops))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(ceilings.__dict__, indent=1))
    os.replace(tmp, path)
    _READ[path] = ceilings
    return ceilings


def _believable(path: Path, peak: tuple[float, float]) -> Ceilings | None:
    try:
        ceilings = Ceilings(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError):
        return None
    rates = (ceilings.bandwidth_gbps, ceilings.compute_gflops)
    if not all(isinstance(r, int | float) and 0 < r <= limit for r, limit in zip(rates, peak, strict=True)):
        return None
    return ceilings
