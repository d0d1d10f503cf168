"""The dtypes a workload may declare, their numpy types and default tolerances."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

__all__ = ["DTYPES", "DTypeInfo", "dtype_info"]


@dataclass(frozen=True)
class DTypeInfo:
    """One declarable dtype."""

    name: str
    numpy: np.dtype
    is_float: bool
    rtol: float
    """Default elementwise relative tolerance: |out - ref| <= atol + rtol * |ref|."""
    atol: float


def _bfloat16() -> type:
    # Imported on first use: ml_dtypes 0.7 takes 0.7 s to import, which every gate job and null
    # runner paid (a fresh install's suite ran 300 s longer); only bfloat16 workloads need it.
    import ml_dtypes

    return ml_dtypes.bfloat16


# Float tolerances sit a few ulps above each format's rounding of a float64 answer; integers
# and bools must match exactly. A workload can loosen them per output, with a reason.
_TABLE = {
    "float64": (np.float64, True, 1e-9, 1e-12),
    "float32": (np.float32, True, 1e-4, 1e-5),
    "float16": (np.float16, True, 5e-3, 1e-3),
    "bfloat16": (_bfloat16, True, 1.6e-2, 1e-2),
    "int8": (np.int8, False, 0.0, 0.0),
    "int32": (np.int32, False, 0.0, 0.0),
    "int64": (np.int64, False, 0.0, 0.0),
    "uint8": (np.uint8, False, 0.0, 0.0),
    "bool": (np.bool_, False, 0.0, 0.0),
}
DTYPES: tuple[str, ...] = tuple(_TABLE)
"""The dtype names a workload may declare."""


@cache
def dtype_info(name: str) -> DTypeInfo:
    """Look a declared dtype name up; raises KeyError for unknown names."""
    kind, is_float, rtol, atol = _TABLE[name]
    return DTypeInfo(name, np.dtype(kind() if kind is _bfloat16 else kind), is_float, rtol, atol)
