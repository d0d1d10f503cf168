"""How every number a run shows is written: one function per quantity, used by the report's
templates (as jinja2 filters) and by the terminal tables (``klineage.cli``), so the terminal,
the HTML and the Markdown print a record's value the same way.

Which value a label shows is decided once, here and in the docstrings of the records:

- a speedup (``Nx``) is always a value of the run's record, printed with ``speedup``: a paired
  comparison's number, never a ratio of two medians taken from different timings;
- a share of speed of light is always printed beside (or for) the time it was computed from;
- the naive → expert speedup of a mine run is named by ``lineage_span``: a walk that stopped
  before naive measured the simplest state it reached, never naive.
"""

from __future__ import annotations

from typing import Any

__all__ = ["FILTERS", "lineage_span", "ms", "ratio", "share", "speedup"]


def ms(value: float | None) -> str:
    """A median time in milliseconds: four significant digits."""
    return "-" if value is None else f"{value:.4g} ms"


def speedup(value: float | None) -> str:
    """A speedup (time before / time after): ``2.38x``."""
    return "-" if value is None else f"{value:.2f}x"


def ratio(value: float | None) -> str:
    """A paired time ratio (time after / time before), three decimals: ``0.466``."""
    return "-" if value is None else f"{value:.3f}"


def share(fraction: float | None) -> str:
    """A share of speed of light (bound / median): ``57%``."""
    return "-" if fraction is None else f"{fraction * 100:.0f}%"


def lineage_span(naive_reached: bool) -> str:
    """What a mine run's end-to-end speedup measured: from naive, or from the simplest state
    the walk reached when it stopped before naive."""
    return "naive → expert" if naive_reached else "simplest reached → expert"


def _ci(bounds: Any) -> str:
    if not bounds or len(bounds) != 2 or None in bounds:
        return "-"
    return f"[{bounds[0]:.2f}, {bounds[1]:.2f}]"


def _number(value: float | int | None, digits: int = 4) -> str:
    if value is None:
        return "-"
    return str(value) if isinstance(value, int) else f"{value:.{digits}g}"


def _describe(value: Any) -> str:
    """A budget, machine or failure entry in one line: dicts as 'key=value, …'."""
    if value is None or value == "" or value == {}:
        return "-"
    if isinstance(value, dict):
        return ", ".join(f"{key}={_describe(item)}" for key, item in value.items())
    if isinstance(value, list | tuple):
        return ", ".join(_describe(item) for item in value) or "-"
    return str(value)


def _codes(items: list[str]) -> str:
    return ", ".join(items) if items else "none"


FILTERS = {
    "ms": ms,
    "times": speedup,
    "ratio": ratio,
    "ci": _ci,
    "percent": share,
    "number": _number,
    "describe": _describe,
    "codes": _codes,
    "span": lineage_span,
}
