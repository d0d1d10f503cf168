"""Seeded, dtype-aware input generation and output poisoning."""

from __future__ import annotations

import numpy as np

from klineage.workload.dtypes import dtype_info
from klineage.workload.model import TensorSpec, Workload

__all__ = ["SHAPINGS", "allocate_outputs", "check_init", "check_rounds", "draw_values", "generate_array",
           "generate_inputs", "parse_init", "poison_value", "shaping"]

_INTEGER_RANGE = {"int8": (-100, 100), "int32": (-1000, 1000), "int64": (-1000, 1000), "uint8": (0, 256)}


SHAPINGS = ("sorted", "constant_rows", "duplicates")
"""What a check init may do to its drawn values (``INIT|SHAPING``): sort each row (the last
axis), give each row one value, or draw every element from 8 values."""


def shaping(init: str) -> str:
    """The shaping after ``|`` in an init ('' for none)."""
    return init.partition("|")[2].strip()


def check_init(init: str, dtype: str, shaped: bool = False) -> None:
    """Raise ValueError if ``init`` is unknown, unsuited to ``dtype`` or gives all zeros;
    ``shaped``: a shaping is allowed (check inits only)."""
    kind, args = parse_init(init, dtype)
    how = shaping(init)
    if how and not shaped:
        # Timing redraws single elements at random places, which would break a row's order or
        # its one value: a shaped distribution is for correctness (check_inits) only.
        raise ValueError(f"{init!r}: a shaping ('|{how}') is for check_inits only")
    if how and how not in SHAPINGS:
        raise ValueError(f"unknown shaping {how!r} in {init!r} (known: {', '.join(SHAPINGS)})")
    if kind == "normal" and args and args[1] <= 0:
        raise ValueError(f"normal:MEAN:STD needs STD > 0, got {init!r}")
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
    """(distribution, its arguments) of an init, its shaping aside."""
    init = init.partition("|")[0].strip()
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
    if kind in ("normal", "uniform", "randint") and len(rest) == 2:
        try:
            numbers = tuple(int(x) if kind == "randint" else float(x) for x in rest)
        except ValueError:
            raise ValueError(f"bad bounds in init {init!r}") from None
        return kind, numbers
    raise ValueError(
        f"unknown init {init!r} (normal | normal:MEAN:STD | uniform | uniform:LO:HI | randint:LO:HI"
        " | bernoulli)"
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
        values = rng.normal(args[0], args[1], dims) if args else rng.standard_normal(dims)
    elif kind == "uniform":
        values = rng.uniform(args[0], args[1], dims)
    elif kind == "randint":
        values = rng.integers(int(args[0]), int(args[1]), dims)
    else:
        values = rng.random(dims) < 0.5
    values = _shaped(values, shaping(spec.init), rng)
    return np.ascontiguousarray(values.astype(dtype_info(spec.dtype).numpy))


def _shaped(values: np.ndarray, how: str, rng: np.random.Generator) -> np.ndarray:
    if not how or values.ndim == 0:
        return values
    if how == "sorted":
        return np.sort(values, axis=-1)
    if how == "constant_rows":
        return np.broadcast_to(values[..., :1], values.shape)
    pool = values.reshape(-1)[:8]
    return pool[rng.integers(0, pool.size, values.shape)]


def check_rounds(workload: Workload) -> list[tuple[tuple[TensorSpec, ...], str]]:
    """The correctness rounds the inputs' ``check_inits`` ask for: round k draws each input from
    its k-th check init (its own init where it has fewer); per round, (inputs, what changed)."""
    rounds = []
    for k in range(max((len(s.check_inits) for s in workload.inputs), default=0)):
        specs = tuple(s.model_copy(update={"init": s.check_inits[k]}) if k < len(s.check_inits) else s
                      for s in workload.inputs)
        named = ", ".join(f"{s.name} = {s.check_inits[k]!r}"
                          for s in workload.inputs if k < len(s.check_inits))
        rounds.append((specs, named))
    return rounds


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
