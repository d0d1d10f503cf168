"""Number and value formatting shared by the HTML and Markdown renderers (jinja2 filters)."""

from __future__ import annotations

from typing import Any

__all__ = ["FILTERS"]


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g} ms"


def _times(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def _ci(bounds: Any) -> str:
    if not bounds or len(bounds) != 2 or None in bounds:
        return "-"
    return f"[{bounds[0]:.2f}, {bounds[1]:.2f}]"


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.0f}%"


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
    "ms": _ms,
    "times": _times,
    "ci": _ci,
    "percent": _percent,
    "number": _number,
    "describe": _describe,
    "codes": _codes,
}
