"""Running a KernelBench problem's code (inside the probe subprocess only: it imports torch and
executes the problem file)."""

from __future__ import annotations

import ast
import inspect
import keyword
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from klineage.workload.loader import module_from_source

__all__ = ["ProblemError", "Run", "build", "default_state", "forward", "input_names", "int_constants", "load",
           "observe", "param_names", "sanitize", "stats", "torch_dtype_name"]

_DTYPES = {torch.float16: "float16", torch.bfloat16: "bfloat16", torch.float32: "float32",
           torch.float64: "float64", torch.int8: "int8", torch.int32: "int32", torch.int64: "int64",
           torch.uint8: "uint8", torch.bool: "bool"}


class ProblemError(Exception):
    """The problem cannot be imported; the message says why, in one line."""


def load(path: Path) -> ModuleType:
    """Execute the problem file as a module and check it has what KernelBench problems have."""
    try:
        module = module_from_source(path, f"kernelbench_problem_{abs(hash(path))}")
    except OSError as exc:
        raise ProblemError(f"cannot be read: {exc}") from exc
    except SyntaxError as exc:
        raise ProblemError(f"syntax error at line {exc.lineno}: {exc.msg}") from exc
    except Exception as exc:
        raise ProblemError(f"running the file raised {type(exc).__name__}: {exc}") from exc
    if not isinstance(getattr(module, "Model", None), type):
        raise ProblemError("defines no class Model")
    for name in ("get_inputs", "get_init_inputs"):
        if not callable(getattr(module, name, None)):
            raise ProblemError(f"defines no function {name}()")
    return module


def int_constants(path: Path, module: ModuleType) -> dict[str, int]:
    """Module-level ``NAME = ...`` assignments whose value is an int (not a bool), in file order."""
    found: dict[str, int] = {}
    for node in ast.parse(path.read_text()).body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        for target in targets:
            value = getattr(module, target.id, None) if isinstance(target, ast.Name) else None
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                found[target.id] = value
    return found


class Run:
    """One run of the problem at some constant values: inputs, init inputs, the Model."""

    def __init__(self, module: ModuleType, values: dict[str, int], device: str, seed: int = 0):
        for name, value in values.items():
            setattr(module, name, value)
        torch.manual_seed(seed)
        with torch.device(device):
            self.inputs = list(module.get_inputs())
            self.init = list(module.get_init_inputs())
            self.model = module.Model(*self.init)
        for index, value in enumerate(self.inputs):
            if not isinstance(value, torch.Tensor):
                raise ProblemError(f"get_inputs() item {index} is a {type(value).__name__}; "
                                   f"only tensors can be forward inputs")
        self.device = device


def build(module: ModuleType, values: dict[str, int], device: str = "cpu", seed: int = 0) -> Run:
    return Run(module, values, device, seed)


def default_state(module: ModuleType, values: dict[str, int], seed: int) -> dict[str, torch.Tensor]:
    """The Model's default-initialised state dict at ``values`` (no inputs drawn)."""
    for name, value in values.items():
        setattr(module, name, value)
    torch.manual_seed(seed)
    return module.Model(*module.get_init_inputs()).state_dict()


def forward(run: Run, inputs: list[torch.Tensor] | None = None) -> list[torch.Tensor]:
    """The Model's outputs as a list of tensors (a single tensor becomes a list of one)."""
    with torch.no_grad(), torch.device(run.device):
        result = run.model(*[t.clone() for t in (inputs if inputs is not None else run.inputs)])
    outputs = list(result) if isinstance(result, tuple | list) else [result]
    for index, value in enumerate(outputs):
        if not isinstance(value, torch.Tensor):
            what = "forward returned" if len(outputs) == 1 else f"forward's output {index} is"
            raise ProblemError(f"{what} a {type(value).__name__}, not a tensor")
    return outputs


def observe(module: ModuleType, values: dict[str, int]) -> dict[str, Any]:
    """Shapes and dtypes of inputs, weights and outputs at ``values``, plus the init inputs.

    Runs on torch's meta device first (shapes without computing anything, so any size is
    cheap) and on the CPU when the problem needs real values.
    """
    try:
        return _observe(module, values, "meta")
    except Exception:  # an op meta tensors cannot run: compute for real
        return _observe(module, values, "cpu")


def _observe(module: ModuleType, values: dict[str, int], device: str) -> dict[str, Any]:
    run = build(module, values, device)
    outputs = forward(run)
    tensors = {f"in:{i}": t for i, t in enumerate(run.inputs)}
    tensors.update({f"w:{k}": t for k, t in run.model.state_dict().items()})
    tensors.update({f"out:{i}": t for i, t in enumerate(outputs)})
    return {"shapes": {k: list(t.shape) for k, t in tensors.items()},
            "dtypes": {k: torch_dtype_name(t.dtype, k) for k, t in tensors.items()},
            "init": [_plain(v) for v in run.init]}


def _plain(value: Any) -> Any:
    """An init input as JSON: scalars as they are, a tuple or list of scalars as
    {"tuple": [...]} or {"list": [...]}, anything else as "<type name>"."""
    if isinstance(value, bool | int | float | str) or value is None:
        return value
    if isinstance(value, tuple | list) and all(isinstance(v, int | float) for v in value):
        return {type(value).__name__: list(value)}
    return f"<{type(value).__name__}>"


def torch_dtype_name(dtype: torch.dtype, what: str) -> str:
    if dtype not in _DTYPES:
        raise ProblemError(f"{what} has dtype {dtype}, which klineage workloads do not support")
    return _DTYPES[dtype]


def stats(tensor: torch.Tensor) -> dict[str, float]:
    values = tensor.detach().double().flatten()
    return {"min": float(values.min()), "max": float(values.max()), "mean": float(values.mean()),
            "std": float(values.std()) if values.numel() > 1 else 0.0}


def sanitize(name: str) -> str:
    """A state-dict key or argument name as an identifier: ``fc.0.weight`` -> ``fc_0_weight``."""
    text = re.sub(r"\W", "_", name)
    if not text or text[0].isdigit() or keyword.iskeyword(text):
        text = f"t_{text}"
    return text


def input_names(model: type, count: int) -> list[str]:
    """The forward's argument names, or ``input0``... where the signature does not give them."""
    return _names(model.forward, count, "input", skip_self=True)


def param_names(model: type, count: int) -> list[str]:
    """The constructor's argument names for each init input position."""
    return _names(model.__init__, count, "init", skip_self=True)


def _names(function: Any, count: int, prefix: str, skip_self: bool) -> list[str]:
    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        parameters = []
    if skip_self and parameters and parameters[0].name == "self":
        parameters = parameters[1:]
    positional = [p.name for p in parameters
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    names = [sanitize(n) for n in positional[:count]]
    names += [f"{prefix}{i}" for i in range(len(names), count)]
    return names
