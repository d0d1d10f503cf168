"""The dtypes a workload may declare, their numpy types and default tolerances."""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
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


def _info(name: str, dt: object, is_float: bool, rtol: float, atol: float) -> DTypeInfo:
    return DTypeInfo(name, np.dtype(dt), is_float, rtol, atol)


# Float tolerances sit a few ulps above each format's rounding of a float64 answer; integers
# and bools must match exactly. A workload can loosen them per output, with a reason.
DTYPES: dict[str, DTypeInfo] = {
    info.name: info
    for info in (
        _info("float64", np.float64, True, 1e-9, 1e-12),
        _info("float32", np.float32, True, 1e-4, 1e-5),
        _info("float16", np.float16, True, 5e-3, 1e-3),
        _info("bfloat16", ml_dtypes.bfloat16, True, 1.6e-2, 1e-2),
        _info("int8", np.int8, False, 0.0, 0.0),
        _info("int32", np.int32, False, 0.0, 0.0),
        _info("int64", np.int64, False, 0.0, 0.0),
        _info("uint8", np.uint8, False, 0.0, 0.0),
        _info("bool", np.bool_, False, 0.0, 0.0),
    )
}


def dtype_info(name: str) -> DTypeInfo:
    """Look a declared dtype name up; raises KeyError for unknown names."""
    return DTYPES[name]
