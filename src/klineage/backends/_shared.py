"""Pieces both backends use: the ceilings cache."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from klineage.backends.base import Ceilings

__all__ = ["cached_ceilings"]

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
