"""Pieces both backends use: the ceilings cache."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from klineage.backends.base import Ceilings

__all__ = ["cached_ceilings", "measured_quietly"]

_READ: dict[Path, Ceilings] = {}
_LOADED: dict[Path, Ceilings] = {}
"""Ceilings measured on a loaded machine, kept by this process only, where no quiet ones exist:
the next gate run reuses them rather than probing again; they are never written."""


def measured_quietly(ceilings: Ceilings) -> bool:
    """Whether the probe ran with the machine quiet. A backend whose probe does not read the
    load (``details`` without ``quiet``: the GPU's probe times the GPU) is believed."""
    return ceilings.details.get("quiet") is not False


def cached_ceilings(path: Path, measure: Callable[[], Ceilings], remeasure: bool,
                    peak: tuple[float, float] = (float("inf"), float("inf"))) -> Ceilings:
    """Ceilings are measured once per machine (and thread count) and kept as JSON.

    They are trusted state: only klineage's own probes (processes that never load a candidate)
    measure them, a process reads the file once and keeps what it read, and a file that does
    not parse, claims more than ``peak`` (bandwidth GB/s, compute GFLOP/s: the hardware's
    theoretical limits, generously rounded up) or says it was measured loaded is not believed
    and is measured again.
    A re-measurement keeps the best rates ever seen: a ceiling is an upper bound, and one
    measured while neighbours loaded the machine is too low (it once made honest kernels look
    faster than light). So a probe that ran loaded is never written: it is returned for the
    decision at hand, with its load in ``details``, and whoever decides must not accuse a
    kernel on its word (``gate.sol.judge``).
    """
    previous = _READ.get(path) or _believable(path, peak)
    if previous is not None and not remeasure:
        _READ[path] = previous
        return previous
    if previous is None and not remeasure and path in _LOADED:
        return _LOADED[path]
    fresh = measure()
    if not measured_quietly(fresh):
        loaded = _best_of(fresh, previous or _LOADED.get(path))
        if previous is None:
            _LOADED[path] = loaded
        return loaded
    ceilings = _best_of(fresh, previous)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(ceilings.__dict__, indent=1))
    os.replace(tmp, path)
    _READ[path] = ceilings
    _LOADED.pop(path, None)
    return ceilings


def _best_of(fresh: Ceilings, previous: Ceilings | None) -> Ceilings:
    """The fresh measurement (its details, its load) with the best rates of both."""
    if previous is None:
        return fresh
    return replace(fresh,
                   bandwidth_gbps=max(fresh.bandwidth_gbps, previous.bandwidth_gbps),
                   compute_gflops=max(fresh.compute_gflops, previous.compute_gflops))


def _believable(path: Path, peak: tuple[float, float]) -> Ceilings | None:
    try:
        ceilings = Ceilings(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError):
        return None
    rates = (ceilings.bandwidth_gbps, ceilings.compute_gflops)
    if not all(isinstance(r, int | float) and 0 < r <= limit for r, limit in zip(rates, peak, strict=True)):
        return None
    if not isinstance(ceilings.details, dict) or not measured_quietly(ceilings):
        return None
    return ceilings
