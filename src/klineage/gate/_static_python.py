"""The static check of a ModelNew kernel.py: what it may import and touch.

The op trace (``gate/_optrace``) is taken inside the candidate's process, where code
that reaches torch's dispatch internals, the interpreter's module table or the host could
switch the recorder off or rewrite what it saw. So kernel.py may import only torch's public
modules and a few harmless ones, and may not name what leads there: private attributes (but
on ``self``), torch's internals and the standard modules torch's modules re-export
(``torch.nn.functional.importlib``), dunders other than a class's own set-up (as attributes,
definitions or strings), ``exec``/``eval``/``open`` and their kin, or ``getattr``-style calls
whose name is not a literal (a hidden ``getattr(torch, name)``), nor torch's other streams
and graphs (all work goes on the stream the gate times). No standard module is reachable
either (any attribute named like one: ``torch.serialization.pickle`` would load any object,
``torch.cuda.traceback`` read the stack), nor a frame (``gen.gi_frame.f_back``): with them a
forward could tell the runner's loading, where it is traced, from the gate's calls. Each finding
is a line naming the place; any finding is ``rejected_cheat``.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterable
from pathlib import Path

from klineage.backends._modelnew_parse import ExtensionError, extension_of

__all__ = ["forbidden_in_python"]

_IMPORTS = ("torch", "torch.nn", "torch.nn.functional", "torch.utils.cpp_extension", "math",
            "typing", "__future__")
"""Modules kernel.py may import (and their submodules only where listed)."""
_NAMES = {"exec", "eval", "compile", "open", "__import__", "globals", "locals", "vars",
          "breakpoint", "input", "memoryview", "__builtins__", "__loader__", "__spec__"}
_REFLECTION = {"getattr", "setattr", "delattr", "hasattr"}
_DUNDERS = {"__init__", "__name__", "__doc__"}
_INTERNALS = {
    # torch's parts that reach dispatch, code loading or processes (load_inline is imported by name)
    "ops", "library", "overrides", "compile", "jit", "fx", "func", "export", "autograd", "utils",
    "hub", "backends", "multiprocessing", "distributed", "package", "profiler", "monitor",
    # modules of the standard library that any torch module re-exports as an attribute
    "sys", "os", "importlib", "builtins", "ctypes", "subprocess", "inspect", "modules", "threading",
    "signal", "socket", "shutil", "pathlib", "io", "gc", "types", "functools", "warnings",
}
"""Attribute names kernel.py may not use on anything but ``self``: the ways from a public torch
module to its internals or to the interpreter (``torch.nn.functional.importlib``, ...)."""
_STANDARD = frozenset(sys.stdlib_module_names) - {"math", "random", "chunk", "select", "trace"}
"""So are the standard library's modules' names, but for torch's ops and modules of the same name
(``x.chunk``, ``torch.select``, ``x.trace``, ``torch.random``) and ``math``, which kernel.py may
import anyway: torch's modules re-export dozens (``pickle``, ``operator``, ``traceback``, ...)."""
_INTROSPECTION = re.compile(r"^(gi|cr|ag|f|tb|co)_\w+$")
"""Frames and code objects (``gi_frame``, ``f_back``, ``f_globals``, ``co_name``): the stack."""
_OTHER_STREAMS = {"Stream", "ExternalStream", "StreamContext", "stream", "set_stream", "default_stream",
                  "CUDAGraph", "graph", "graphs", "make_graphed_callables"}
"""torch's ways to work off the stream the gate times (another stream, the default one, a graph):
the CUDA deny-list of native kernels, in Python (on anything but ``self``)."""
_DUNDER = re.compile(r"^__\w+__$")


def forbidden_in_python(source: Path, allowed: Iterable[str] = (),
                        extra: dict[str, tuple[str, ...]] | None = None) -> list[str]:
    """Findings in kernel.py, and in its extension's sources by the C checks with the backend's
    ``extra`` denials (the CUDA one's: other streams, graphs)."""
    try:
        tree = ast.parse(source.read_text(), filename=source.name)
    except SyntaxError as exc:
        return [f"{source.name}:{exc.lineno}: does not parse ({exc.msg})"]
    found = []
    for node in ast.walk(tree):
        problem = _problem(node)
        if problem:
            found.append((node.lineno, f"{source.name}:{node.lineno}: {problem}"))
    return [text for _, text in sorted(found)] + _in_extension(source, allowed, extra)


_CPP_WAYS_OUT = re.compile(
    r"##|\b(Py\w*|_Py\w*|pybind11|py::\w+|\w*DispatchKey\w*|AutoDispatch\w*|PythonTLSSnapshot|"
    r"impl::\w+|dlopen|dlsym|syscall|asm|__asm__|TORCH_LIBRARY\w*|\w*RecordFunction\w*|"
    r"\w*record_function\w*|RECORD_\w+|(?:add|remove|clear|disable|reenable)\w*Callbacks?|klineage\w*)\b")
"""In the extension's C++: Python's API and pybind11 (we write the bindings), dispatch-key guards
and TLS, kernels of its own for torch's ops, and what stops torch's RecordFunction callbacks
(all of which would hide ops from the trace, whose recorder is such a callback), loading code,
and token pasting that would spell any of these from pieces."""
_HANDLES = re.compile(r"\bredispatch\w*|\b(?:Dispatcher|OperatorHandle|OperatorEntry|KernelFunction|"
                      r"BoxedKernel|findSchema\w*|findOp)\b")
"""Redispatching, and an op's kernel reached by its handle: below the dispatcher, by any name."""
_ENTRY = re.compile(r"\b(?:at\s*::\s*)?(?:cpu|cuda|native|meta|composite\w*)\s*::\s*(\w+)")
"""``at::cpu::relu``, ``at::native::softmax``, ``at::compositeexplicitautograd::relu_out``: an
op's kernel for one dispatch key, or its native function, when the name is one ATen declares
for an op (``backends/modelnew.op_entry_points``): the same namespaces hold helpers
(``at::cuda::getCurrentCUDAStream``, ``at::native::cpu_kernel``), and a macro hides any of
these from this scan but not from the objects' symbols (``backends/modelnew._BELOW``)."""


def _in_extension(source: Path, allowed: Iterable[str],
                  extra: dict[str, tuple[str, ...]] | None) -> list[str]:
    """The C++ check of C kernels on each extension source (torch's API is the extension's to
    use: the trace judges its ops), and the ways out of the trace."""
    from klineage.gate.static import FRAMEWORK, forbidden_in_code  # static.py imports this module

    try:
        extension = extension_of(source)
    except (ExtensionError, SyntaxError):
        return []  # the compile stage says why
    found = []
    sources = (*extension.cpp_sources, *extension.cuda_sources) if extension else ()
    for index, text in enumerate(sources, 1):
        label = f"{source.name} (load_inline source {index})"
        found += forbidden_in_code(text.encode(), label, allowed, extra, ignore=(FRAMEWORK,))
        for number, line in enumerate(text.splitlines(), 1):
            found += [f"{label}:{number}: {problem}" for problem in _cpp_problems(line)]
    return found


def _cpp_problems(line: str) -> list[str]:
    from klineage.backends.modelnew import BELOW_THE_DISPATCHER, op_entry_points

    found = []
    match = _CPP_WAYS_OUT.search(line)
    if match:
        found.append(f"uses {match.group(0)} (the Python API, dispatch or recording state, or code "
                     f"loading, which could hide ops from the trace)")
    below = [m.group(0) for m in _HANDLES.finditer(line)]
    below += [m.group(0) for m in _ENTRY.finditer(line) if m.group(1) in op_entry_points()]
    if below:
        found.append(f"uses {below[0]} ({BELOW_THE_DISPATCHER})")
    return found


def _problem(node: ast.AST) -> str | None:
    if isinstance(node, ast.Import):
        bad = [a.name for a in node.names if a.name not in _IMPORTS]
        return f"imports {', '.join(bad)} (kernel.py may import {', '.join(_IMPORTS)})" if bad else None
    if isinstance(node, ast.ImportFrom):
        module = "." * node.level + (node.module or "")
        if module not in _IMPORTS:
            return f"imports from {module} (kernel.py may import {', '.join(_IMPORTS)})"
        if module == "torch.utils.cpp_extension" and any(a.name != "load_inline" for a in node.names):
            return "imports from torch.utils.cpp_extension something other than load_inline"
        private = [a.name for a in node.names if a.name.startswith("_") or a.name == "*"]
        return f"imports {', '.join(private)} from {module}" if private else None
    if isinstance(node, ast.Name) and node.id in _NAMES:
        return f"uses {node.id} (code loading, files or the interpreter's tables)"
    if isinstance(node, ast.Attribute):
        on_self = isinstance(node.value, ast.Name) and node.value.id == "self"
        return _attribute_name(node.attr, on_self)
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) \
            and _DUNDER.match(node.name) and node.name not in _DUNDERS:
        return f"defines {node.name} (a hook into the interpreter or torch's dispatch)"
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and _DUNDER.match(node.value) \
            and node.value not in _DUNDERS:
        return f"spells {node.value!r} in a string (it could name a hook or internal)"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _REFLECTION:
        name = node.args[1] if len(node.args) > 1 else None
        if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
            return f"calls {node.func.id}() with a name that is not a literal (it could hide any attribute)"
        return _attribute_name(name.value, False)
    return None


def _attribute_name(name: str, on_self: bool) -> str | None:
    if _DUNDER.match(name):
        return None if name in _DUNDERS else f"touches {name} (interpreter or dispatch internals)"
    if not on_self and (name.startswith("_") or name in _INTERNALS or name in _STANDARD):
        return f"touches .{name} (torch's dispatch, code loading, or the interpreter's modules)"
    if not on_self and _INTROSPECTION.match(name):
        return f"touches .{name} (a frame or code object: the interpreter's stack)"
    if not on_self and name in _OTHER_STREAMS:
        return f"touches .{name} (another stream or a graph: all work goes on the stream the gate times)"
    return None
