"""Tunables: the parameters an insertion pass takes, the values a sweep tries, and where a removal
finds the expert's value.

  unroll, unroll_pragma  factor        2, 4, 8          the expert's '#pragma ... unroll N'
  vectorized_access      vector_bytes  8, 16            the expert's widest vector type
  omp_parallel           schedule      static, dynamic  the expert's schedule(...) clause
  cache_blocking         tile          32, 64, 128      the value of the #define (or const) that
                                                        a block loop steps by
  grid_stride_loop       max_blocks    1024, 2048, 4096 (not mined: the cap sits in the launch)
  (packing has none: it packs the whole operand once; see _insert_packing.py)

klineage materializes a card with the values its expert used (the card's ``rewrite.params``),
then tries the neighbouring values of each (the two-stage tuner: mined values first, a small
sweep around them); the ``none`` baseline draws each value at random instead.
"""

from __future__ import annotations

import random
import re
from typing import Any

__all__ = ["TUNABLES", "drawn", "mined", "neighbours", "tunables_of"]

TUNABLES: dict[str, dict[str, tuple[Any, ...]]] = {
    "unroll": {"factor": (2, 4, 8)},
    "unroll_pragma": {"factor": (2, 4, 8)},
    "vectorized_access": {"vector_bytes": (8, 16)},
    "omp_parallel": {"schedule": ("static", "dynamic")},
    "cache_blocking": {"tile": (32, 64, 128)},
    "grid_stride_loop": {"max_blocks": (1024, 2048, 4096)},
}
DEFAULTS: dict[str, dict[str, Any]] = {
    "unroll": {"factor": 4}, "unroll_pragma": {"factor": 4}, "vectorized_access": {"vector_bytes": 16},
    "omp_parallel": {"schedule": "static"}, "cache_blocking": {"tile": 64},
    "grid_stride_loop": {"max_blocks": 2048},
}
_TYPE_BYTES = {"float": 4, "int": 4, "uint": 4, "longlong": 8, "ulonglong": 8, "double": 8}


def neighbours(feature: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    """The parameter sets one step from ``params`` (or from the pass's default), one tunable
    changed at a time; none for a feature without tunables."""
    found = []
    for name, choices in TUNABLES.get(feature, {}).items():
        value = params.get(name, DEFAULTS[feature][name])
        if value not in choices:
            continue  # a value outside the sweep's range (a CUDA full unroll): kept as mined
        at = choices.index(value)
        found += [{**params, name: choices[k]} for k in (at - 1, at + 1) if 0 <= k < len(choices)]
    return found


def drawn(feature: str, rng: random.Random) -> dict[str, Any]:
    """One value of each tunable at random (the ``none`` baseline's parameters)."""
    return {name: rng.choice(choices) for name, choices in TUNABLES.get(feature, {}).items()}


def tunables_of(feature: str, params: dict[str, Any]) -> dict[str, Any]:
    """The tunables among an edit's ``params`` (a removal's also carry ``also_removes``, which is
    no value a pass takes: a card's carrier and its sweep keys showed it)."""
    return {k: v for k, v in params.items() if k in TUNABLES.get(feature, {})}


def mined(feature: str, texts: list[str]) -> dict[str, Any]:
    """The expert's values, read from the text of the sites a removal takes away."""
    text = "\n".join(texts)
    if feature in ("unroll", "unroll_pragma"):
        factors = [int(f) for f in re.findall(r"unroll\s+(\d+)", text)]
        return {"factor": max(set(factors), key=factors.count)} if factors else {}
    if feature == "omp_parallel":
        schedule = re.search(r"schedule\s*\(\s*(\w+)", text)
        return {"schedule": schedule.group(1)} if schedule and schedule.group(1) in ("static",
                                                                                     "dynamic") else {}
    if feature == "vectorized_access":
        widths = [int(n) * _TYPE_BYTES.get(base, 4) for base, n in
                  re.findall(r"\b(float|int|uint|longlong|ulonglong|double)(\d)\b", text)]
        widths += [16 for _ in re.findall(r"\buint4\b", text)]
        return {"vector_bytes": max(widths)} if widths and max(widths) in (8, 16) else {}
    if feature == "cache_blocking":
        return _tile(text)
    return {}


def _tile(text: str) -> dict[str, Any]:
    """The most common value among the tile sizes that a block loop of ``text`` steps by."""
    defined = re.findall(r"#\s*define\s+(\w+)\s+\(?(\d+)\)?", text)
    defined += re.findall(r"\b(?:const|constexpr)\s+[\w:]+\s+(\w+)\s*=\s*(\d+)\s*;", text)
    tiles = [int(value) for name, value in defined if re.search(rf"\+=\s*{name}\b", text)]
    return {"tile": max(set(tiles), key=tiles.count)} if tiles else {}
