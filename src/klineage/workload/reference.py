"""Running the reference and refusing degenerate workloads."""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from klineage.errors import DegenerateWorkloadError, WorkloadError
from klineage.workload.inputs import generate_inputs
from klineage.workload.model import Workload

__all__ = ["check_not_degenerate", "host_float64", "run_reference", "to_numpy"]


def to_numpy(value: Any) -> np.ndarray:
    """A reference's returned array (numpy or torch) as a host numpy array."""
    if hasattr(value, "detach"):  # torch.Tensor, without importing torch
        tensor = value.detach().cpu()
        if str(tensor.dtype) in ("torch.bfloat16", "torch.float16"):
            tensor = tensor.float()
        return tensor.numpy()
    return np.asarray(value)


def run_reference(
    workload: Workload,
    reference: Callable[..., dict[str, Any]],
    inputs: dict[str, Any],
    axes: dict[str, int],
    torch_device: str = "cpu",
) -> dict[str, Any]:
    """Call the reference; check it returned every declared output with its declared shape.

    Values come back as the reference made them (numpy arrays or torch tensors): the caller's
    device turns them into what it compares with. Host numpy inputs are handed to
    torch-framework references as tensors on ``torch_device``.
    """
    path = workload.reference_path
    if workload.framework == "torch":
        inputs = _as_torch(inputs, torch_device)
    # An axis the reference names as a parameter is passed too (a top-k's K: no input's shape
    # says it); axis, param and tensor names never collide (the loader refuses that).
    named = _parameters(reference)
    sizes = {name: size for name, size in axes.items() if name in named}
    try:
        result = reference(**inputs, **workload.params, **sizes)
    except Exception as exc:  # the user's reference: report it as a workload mistake
        raise WorkloadError(f"{path}: reference raised {type(exc).__name__}: {exc}") from exc
    if not isinstance(result, dict):
        raise WorkloadError(f"{path}: reference must return a dict of outputs, got {type(result).__name__}")
    declared = [o.name for o in workload.outputs]
    if sorted(result) != sorted(declared):
        raise WorkloadError(
            f"{path}: reference returned outputs {sorted(result)}; workload.toml declares {declared}"
        )
    for spec in workload.outputs:
        got, want = tuple(getattr(result[spec.name], "shape", ())), spec.dims(axes)
        if got != want:
            raise WorkloadError(
                f"{path}: output {spec.name!r} has shape {got}; workload.toml says {want} at {axes}"
            )
    return result


def _parameters(reference: Callable[..., Any]) -> set[str]:
    try:
        return set(inspect.signature(reference).parameters)
    except (TypeError, ValueError):  # a builtin or C callable: no names to offer
        return set()


def host_float64(value: Any) -> np.ndarray:
    """A reference value on the host, floats as float64 (integers and bools as they are)."""
    array = to_numpy(value)
    return array.astype(np.float64) if _is_float(array) else array


def _is_float(array: np.ndarray) -> bool:
    # ml_dtypes' bfloat16 is not kind "f" to numpy, but it is a float
    return array.dtype.kind == "f" or array.dtype.name == "bfloat16"


def _as_torch(inputs: dict[str, Any], device: str) -> dict[str, Any]:
    import torch  # only torch-framework workloads need it

    def convert(array: Any) -> Any:
        if not isinstance(array, np.ndarray):
            return array
        if array.dtype.name == "bfloat16":
            return torch.from_numpy(array.view(np.int16).copy()).view(torch.bfloat16).to(device)
        return torch.from_numpy(array.copy()).to(device)

    return {name: convert(value) for name, value in inputs.items()}


def _small_but_telling_shape(workload: Workload) -> dict[str, int]:
    """The cheapest size whose outputs all have at least 16 elements (else the largest)."""
    def elements(axes: dict[str, int]) -> list[int]:
        return [math.prod(o.dims(axes)) for o in workload.outputs]

    ordered = sorted(workload.shapes(), key=lambda axes: sum(elements(axes)))
    return next((a for a in ordered if min(elements(a)) >= 16), ordered[-1])


def check_not_degenerate(workload: Workload, reference: Callable[..., dict[str, Any]]) -> None:
    """Refuse workloads whose reference output no wrong kernel could miss.

    On the smallest size: an output that is constant, ~zero everywhere, or unchanged when any
    single input is redrawn makes the correctness check toothless (zeros passed some bf16
    tasks elsewhere), so it is refused with a reason.
    """
    axes = _small_but_telling_shape(workload)
    base_inputs = generate_inputs(workload, axes, seed=101)
    base = {k: host_float64(v) for k, v in run_reference(workload, reference, base_inputs, axes).items()}
    for name, out in base.items():
        flat = out.astype(np.float64).ravel()
        if flat.size > 1 and np.all(flat == flat[0]):
            raise DegenerateWorkloadError(
                f"{workload.reference_path}: output {name!r} is constant ({flat[0]}) "
                f"at {axes}: a kernel writing that constant would pass"
            )
        _, atol = workload.tolerance_for(next(o for o in workload.outputs if o.name == name))
        if np.all(np.abs(flat) <= atol):
            raise DegenerateWorkloadError(
                f"{workload.reference_path}: output {name!r} is within tolerance of zero "
                f"everywhere at {axes}: a kernel writing zeros would pass"
            )
    other = generate_inputs(workload, axes, seed=202)
    for spec in workload.inputs:
        changed = dict(base_inputs, **{spec.name: other[spec.name]})
        outputs = run_reference(workload, reference, changed, axes)
        if all(np.array_equal(host_float64(outputs[k]), base[k]) for k in base):
            raise DegenerateWorkloadError(
                f"{workload.reference_path}: outputs do not change when input {spec.name!r} "
                f"is redrawn: the reference ignores it"
            )


def reference_ms(workload: Workload, device: str, calls: int = 5) -> float:
    """Median milliseconds of one reference call at the workload's timed sizes on ``device``
    ("cpu" or "cuda"), after one warm-up call: the eager time FlashInfer-Bench traces and
    KernelBench-style results compare a kernel with. Wall clock around each call (synchronized
    on a GPU), so on a loaded machine it is as noisy as the machine."""
    import statistics
    import time

    from klineage.workload.loader import load_reference

    reference = load_reference(workload)
    inputs = generate_inputs(workload, workload.axes, seed=0)
    if workload.framework == "torch":  # on the device once, so only the reference is timed
        inputs = _as_torch(inputs, device)
    synchronize = _synchronizer(device)
    seconds = []
    for _ in range(calls + 1):
        synchronize()
        started = time.perf_counter()
        run_reference(workload, reference, inputs, workload.axes, torch_device=device)
        synchronize()
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds[1:]) * 1e3


def _synchronizer(device: str) -> Callable[[], None]:
    if device != "cuda":
        return lambda: None
    import torch

    return torch.cuda.synchronize
