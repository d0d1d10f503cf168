"""Which symbols of a ModelNew's extension are the framework (judged by the op trace), which step
around that trace, and which reach an ATen kernel below the dispatcher, where the trace cannot
see it."""

from __future__ import annotations

import fnmatch
import re
from functools import cache
from pathlib import Path

from klineage.backends._modelnew_torch import torch_paths

__all__ = ["ALLOWED_SYMBOLS", "BELOW_THE_DISPATCHER", "DENIED_SYMBOLS", "FRAMEWORK", "below_the_dispatcher",
           "op_entry_points"]

FRAMEWORK = (*(f"{prefix}{space}::*" for space in ("at", "c10", "torch", "pybind11", "caffe2")
                for prefix in ("", "* ", "typeinfo for ", "vtable for ")), "Py*", "_Py*", "THP*")
"""Symbols of the framework an extension is written against: their ops are judged by the trace."""
_LEAVES_THE_TRACE = ("PyRun_*", "Py_Compile*", "PyEval_Eval*", "PyImport_*", "c10::impl::tls_*",
                     "*PythonTLSSnapshot*", "*TorchDispatchMode*", "*_set_dispatch_mode*",
                     "*RecordFunction*", "*record_function*", "at::add*Callback*", "at::remove*Callback*",
                     "at::clear*Callbacks*", "at::disable*Callback*", "at::reenable*Callback*",
                     "torch::Library::*", "c10::RegisterOperators*")
"""Framework symbols that run Python, change dispatch state (a kernel of the extension's own
for a torch op, too) or stop the op recorder (torch's RecordFunction callbacks): torch's own
headers never make an honest extension import these (the guards they do inline are caught in
the source instead)."""
BELOW_THE_DISPATCHER = "an ATen kernel called below the dispatcher, where the op trace cannot see it"
_BELOW = ("at::native::*", "at::meta::*", "at::composite*::*", "at::redispatch::*",
          "at::_ops::*::redispatch*", "c10::Dispatcher::*", "c10::OperatorHandle::*",
          "c10::impl::OperatorEntry::*", "c10::KernelFunction::*", "c10::BoxedKernel::*", "at::cuda::blas::*")
"""ATen's static entry points to a kernel (its native functions, the per-key namespaces, the
redispatching ones), an op's kernel by its handle, and torch's BLAS wrappers: they run without
entering the dispatcher, where the recorder sees ops. ``at::cpu::`` and ``at::cuda::`` are
matched by op name (``op_entry_points``): they also hold helpers such as
``at::cuda::getCurrentCUDAStream``."""
DENIED_SYMBOLS = {
    "running Python or stepping outside torch's dispatcher (the op trace) from C++": _LEAVES_THE_TRACE,
}
ALLOWED_SYMBOLS = ("_GLOBAL_OFFSET_TABLE_", "DW.ref.*", "__dso_handle", "VTT for std::*", "strdup")
"""An object file's C++ plumbing (the checks read the objects, before they are linked)."""


def below_the_dispatcher(symbol: str) -> bool:
    """Whether a demangled symbol is one of ATen's ways to a kernel below the dispatcher."""
    name = _qualified_name(symbol)
    entry = re.fullmatch(r"at::(?:cpu|cuda)::(\w+)", name)
    if entry:
        return entry.group(1) in op_entry_points()
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in _BELOW)


def _qualified_name(symbol: str) -> str:
    """What a demangled symbol names, without its return type and parameters:
    ``void at::native::f<float>(float*)`` -> ``at::native::f<float>``."""
    for prefix in ("typeinfo name for ", "typeinfo for ", "vtable for ", "VTT for ", "guard variable for "):
        symbol = symbol.removeprefix(prefix)
    if "operator" in symbol:  # its own brackets would confuse the count below
        symbol = symbol[:symbol.index("operator")] + "operator"
    depth, start = 0, 0
    for index, char in enumerate(symbol):
        depth += {"<": 1, ">": -1}.get(char, 0)
        if depth == 0 and char == " ":
            start = index + 1  # a return type (or a const) came first
        elif depth == 0 and char == "(":
            return symbol[start:index]
    return symbol[start:]


@cache
def op_entry_points() -> frozenset[str]:
    """The functions ATen declares to run one dispatch key's kernel of an op without the
    dispatcher (``at::cpu::relu``, ``at::cuda::_softmax_out``, ``at::compositeexplicitautograd::
    relu_out``, ...): the names its generated ``ATen/ops/*_dispatch.h`` headers declare. They
    are the ops' names too, which ``at::native::`` uses for its kernels."""
    declared = re.compile(r"TORCH_API\s[^;(]*?\b(\w+)\s*\(")
    names: set[str] = set()
    for folder in torch_paths("cpu")[0]:
        for header in sorted((Path(folder) / "ATen" / "ops").glob("*_dispatch.h")):
            names.update(declared.findall(header.read_text(errors="replace")))
    return frozenset(names)
