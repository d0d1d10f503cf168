"""From one Definition and its Workloads to what the workload folder will say, or one line
saying why klineage cannot run it (docs/workloads.md, "Imported from FlashInfer-Bench").

* axes: every axis, in the Definition's order (the order the kernel receives them); const axes
  at their value, var axes at the **first** Workload's values: that Workload is the timed one.
* check shapes: every Workload, the timed one included, in file order: all are checked.
* quick sizes: the Workload with the fewest elements in its var axes' product.
* tensors (shape a list) are inputs and outputs; inputs with shape ``null`` (Python scalars) are
  params, at the value the Workloads give as ``scalar``: they must all give the same value.
* a tensor input every Workload gives as ``random`` gets the dtype's default init (``normal``
  floats, ``randint`` integers, ``bernoulli`` bools); ``safetensors`` or any other source is
  refused, naming the Workload, since klineage draws its own inputs.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from klineage.workload import _expr
from klineage.workload.dtypes import DTYPES
from klineage.workload.flashinfer._format import Definition, WorkloadRecord

__all__ = ["Plan", "PlanError", "plan", "workload_name"]


class PlanError(Exception):
    """The Definition cannot become a klineage workload; the message says why, in one line."""


@dataclass
class Plan:
    name: str
    axes: dict[str, int]
    quick_axes: dict[str, int]
    check_shapes: list[dict[str, int]]
    timed: str
    """The timed Workload's uuid (the first)."""
    tensors_in: dict[str, tuple[list[str], str]]
    outputs: dict[str, tuple[list[str], str]]
    params: dict[str, tuple[float, str]] = field(default_factory=dict)
    """scalar input -> (value, its dtype in the Definition)."""


def workload_name(definition: str) -> str:
    return re.sub(r"\W+", "_", definition).strip("_").lower() or "definition"


def plan(definition: Definition, records: list[WorkloadRecord]) -> Plan:
    if not records:
        raise PlanError("no workloads: a definition needs at least one Workload for its var axes")
    _check_names(definition)
    tensors_in = {n: (t.shape, t.dtype) for n, t in definition.inputs.items() if t.shape is not None}
    scalars = {n: t.dtype for n, t in definition.inputs.items() if t.shape is None}
    outputs = {}
    for name, tensor in definition.outputs.items():
        if tensor.shape is None:
            raise PlanError(f"output {name!r} is a Python scalar; klineage outputs are tensors")
        outputs[name] = (tensor.shape, tensor.dtype)
    for kind, table in (("input", tensors_in), ("output", outputs)):
        for name, (shape, dtype) in table.items():
            _check_tensor(definition, kind, name, shape, dtype)
    shapes = [_axes_of(definition, r) for r in records]
    for record, shape in zip(records, shapes, strict=True):
        _check_sources(record, tensors_in, scalars)
        _check_constraints(definition, record, shape)
    params = {n: (_scalar_value(n, records), dtype) for n, dtype in scalars.items()}
    var = [a for a, axis in definition.axes.items() if axis.type == "var"]
    smallest = min(range(len(shapes)), key=lambda i: math.prod(shapes[i][a] for a in var))
    return Plan(name=workload_name(definition.name), axes=shapes[0], quick_axes=shapes[smallest],
                check_shapes=shapes, timed=records[0].workload.uuid, tensors_in=tensors_in,
                outputs=outputs, params=params)


def _check_names(definition: Definition) -> None:
    names = [*definition.axes, *definition.inputs, *definition.outputs]
    for name in names:
        if not name.isidentifier():
            raise PlanError(f"{name!r} is not an identifier; klineage names axes and tensors so")
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise PlanError(f"{', '.join(repeated)} named twice among axes, inputs and outputs")


def _check_tensor(definition: Definition, kind: str, name: str, shape: list[str], dtype: str) -> None:
    if dtype not in DTYPES:
        raise PlanError(f"{kind} {name!r} has dtype {dtype}, which klineage workloads do not support "
                        f"({' '.join(DTYPES)})")
    unknown = [d for d in shape if d not in definition.axes]
    if unknown:
        raise PlanError(f"{kind} {name!r}: shape names {', '.join(unknown)}, which are not axes")


def _axes_of(definition: Definition, record: WorkloadRecord) -> dict[str, int]:
    given, uuid = record.workload.axes, record.workload.uuid
    var = [a for a, axis in definition.axes.items() if axis.type == "var"]
    missing = [a for a in var if a not in given]
    extra = [a for a in given if a not in var]
    if missing or extra:
        problem = f"misses var axes {', '.join(missing)}" if missing else \
            f"sets {', '.join(extra)}, which are not var axes"
        raise PlanError(f"workload {uuid} {problem}")
    shape = {}
    for name, axis in definition.axes.items():
        value = axis.value if axis.type == "const" else given[name]
        if not isinstance(value, int) or value < 1:
            raise PlanError(f"workload {uuid}: axis {name} = {value!r}; klineage sizes are positive")
        shape[name] = value
    return shape


def _check_sources(record: WorkloadRecord, tensors: dict, scalars: dict) -> None:
    uuid, inputs = record.workload.uuid, record.workload.inputs
    for name in [*tensors, *scalars]:
        source = inputs.get(name)
        if source is None:
            raise PlanError(f"workload {uuid} gives no source for input {name!r}")
        wanted = "scalar" if name in scalars else "random"
        if source.type != wanted:
            why = ("klineage draws its own inputs and cannot load recorded tensors"
                   if source.type == "safetensors" else f"klineage supports only {wanted!r} here")
            raise PlanError(f"workload {uuid}: input {name!r} comes from {source.type!r}; {why}")
        if name in scalars and source.value is None:
            raise PlanError(f"workload {uuid}: scalar input {name!r} has no value")


def _scalar_value(name: str, records: list[WorkloadRecord]) -> float:
    values = {r.workload.uuid: r.workload.inputs[name].value for r in records}
    first = next(iter(values.values()))
    for uuid, value in values.items():
        if value != first:
            raise PlanError(f"workload {uuid} gives {name} = {value!r} but the first gives {first!r}; "
                            f"a klineage param has one value for every check shape")
    return float(first)  # type: ignore[arg-type]


def _check_constraints(definition: Definition, record: WorkloadRecord, shape: dict[str, int]) -> None:
    for constraint in definition.constraints:
        sides = constraint.split("==")
        if len(sides) != 2:
            raise PlanError(f"constraint {constraint!r} is not of the form A == B, which klineage checks")
        try:
            values = [_expr.evaluate(side.strip(), shape) for side in sides]
        except Exception as exc:  # a constraint klineage's arithmetic cannot read
            raise PlanError(f"constraint {constraint!r} cannot be checked: {exc}") from exc
        if values[0] != values[1]:
            raise PlanError(f"workload {record.workload.uuid} breaks the constraint {constraint!r}")
