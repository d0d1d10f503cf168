"""Seeded, dtype-aware input generation and output poisoning."""

from __future__ import annotations

import numpy as np

from klineage.workload.dtypes import dtype_info
from klineage.workload.model import TensorSpec, Workload

__all__ = ["allocate_outputs", "check_init", "draw_values", "generate_array", "generate_inputs",
           "parse_init", "poison_value"]

_INTEGER_RANGE = {"int8": (-100, 100), "int32": (-1000, 1000), "int64": (-1000, 1000), "uint8": (0, 256)}


def check_init(init: str, dtype: str) -> None:
    """Raise ValueError if ``init`` is unknown, unsuited to ``dtype`` or gives all zeros."""
    kind, args = parse_init(init, dtype)
    if kind == "randint":
        lo, hi = args
        if hi <= lo:
            raise ValueError(f"randint:LO:HI needs LO < HI, got {init!r}")
        if (lo, hi) == (0, 1):
            raise ValueError(f"{init!r} gives all zeros; inputs must never be all zeros")
    if kind == "uniform" and args[1] <= args[0]:
        raise ValueError(f"uniform:LO:HI needs LO < HI, got {init!r}")
    if kind == "bernoulli" and dtype != "bool":
        raise ValueError("bernoulli is for bool inputs")
    if dtype == "bool" and kind != "bernoulli":
        raise ValueError("bool inputs take init = 'bernoulli'")
    if not dtype_info(dtype).is_float and kind in ("normal", "uniform"):
        raise ValueError(f"{kind!r} is for float dtypes; use randint:LO:HI for {dtype}")


def parse_init(init: str, dtype: str) -> tuple[str, tuple[float, ...]]:
    if not init:
        if dtype == "bool":
            return "bernoulli", ()
        if not dtype_info(dtype).is_float:
            return "randint", _INTEGER_RANGE[dtype]
        return "normal", ()
    kind, *rest = init.split(":")
    if kind in ("normal", "bernoulli") and not rest:
        return kind, ()
    if kind == "uniform" and not rest:
        return kind, (-1.0, 1.0)
    if kind in ("uniform", "randint") and len(rest) == 2:
        try:
            numbers = tuple(float(x) if kind == "uniform" else int(x) for x in rest)
        except ValueError:
            raise ValueError(f"bad bounds in init {init!r}") from None
        return kind, numbers
    raise ValueError(
        f"unknown init {init!r} (normal | uniform | uniform:LO:HI | randint:LO:HI | bernoulli)"
    )


def generate_array(spec: TensorSpec, dims: tuple[int, ...], seed: int, index: int) -> np.ndarray:
    """One input on the host; the same (seed, index, dims) always gives the same values."""
    rng = np.random.default_rng([seed, index])  # each input draws its own stream
    array = draw_values(spec, dims, rng)
    if array.size and not array.any():  # tiny tensors can draw all zeros: never hand those out
        array.reshape(-1)[0] = 1
    return array


def draw_values(spec: TensorSpec, dims: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Values of an input's declared distribution and dtype, from ``rng``."""
    kind, args = parse_init(spec.init, spec.dtype)
    if kind == "normal":
        values = rng.standard_normal(dims)
    elif kind == "uniform":
        values = rng.uniform(args[0], args[1], dims)
    elif kind == "randint":
        values = rng.integers(int(args[0]), int(args[1]), dims)
    else:
        values = rng.random(dims) < 0.5
    return np.ascontiguousarray(values.astype(dtype_info(spec.dtype).numpy))


def generate_inputs(workload: Workload, axes: dict[str, int], seed: int) -> dict[str, np.ndarray]:
    """Fresh inputs for one size; the same (seed, axes) always gives the same values."""
    return {
        spec.name: generate_array(spec, spec.dims(axes), seed, index)
        for index, spec in enumerate(workload.inputs)
    }


def poison_value(dtype: str, round_index: int) -> float | int:
    """What outputs are filled with before a call, so unwritten elements fail the comparison.

    Floats get NaN. Integers alternate between two sentinels so a reference value that happens
    to equal one sentinel is still caught by the other round. Bools get byte 0xAB, which is
    neither True (1) nor False (0), checked bytewise.
    """
    if dtype_info(dtype).is_float:
        return float("nan")
    if dtype == "bool":
        return 0xAB
    sentinels = {"int8": (-77, 91), "uint8": (0xA5, 0x5A)}.get(dtype, (-0x5A5A5A5, 0x3C3C3C3))
    return sentinels[round_index % 2]


def allocate_outputs(workload: Workload, axes: dict[str, int]) -> dict[str, np.ndarray]:
    """Uninitialised host output buffers of the declared shapes and dtypes."""
    return {
        spec.name: np.empty(spec.dims(axes), dtype=dtype_info(spec.dtype).numpy)
        for spec in workload.outputs
    }
