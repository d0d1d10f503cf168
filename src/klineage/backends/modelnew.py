"""ModelNew backends: KernelBench's ``ModelNew`` in kernel.py, with its custom code through
``torch.utils.cpp_extension.load_inline``, made to look like any kernel to the gate. This file
holds what the CPU and CUDA backends share, and the CPU one (C++ only); ``modelnew_cuda``
adds nvcc for ``cuda_sources``.

The build is ours and never imports kernel.py: its ``load_inline`` sources are read from the
syntax tree (``_modelnew_parse``) and compiled here, with torch's headers, into objects (cached
by those sources alone: many kernel.py share one extension). They are linked with a C shim
(``_modelnew_shim.c``) into one ``kernel.so`` exporting ``kl_launch``; the shim embeds kernel.py
and the host (``_modelnew_host.py``), which run only in the sandboxed runner. The runner is
``_runner.c`` built with ``KL_PYTHON``: the profile an interpreter needs (docs/gate.md).

Static checks look at the candidate's objects, not at the shim: symbols of torch, c10, pybind11
and Python are the framework, whose ops the dispatch trace judges (``gate/_optrace``); the
rest meets the usual allow- and deny-lists, and the ways out of that trace are denied here.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import shutil
import sys
import sysconfig
from collections.abc import Callable
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any, ClassVar

from klineage import settings
from klineage.backends._build_cache import (
    cached_build,
    defined_symbols,
    imported_symbols,
    system_call_sites,
)
from klineage.backends._modelnew_parse import Extension, ExtensionError, extension_of
from klineage.backends.base import SANDBOX_WORKLOAD, BuildResult
from klineage.backends.cpu import CpuBackend
from klineage.errors import ToolchainError
from klineage.workload.model import KernelSpec, Workload

__all__ = ["ALLOWED_SYMBOLS", "DENIED_SYMBOLS", "TRACE_ENV", "ModelNewBackend", "ModelNewBuild",
           "embedded_python", "torch_compile_flags"]

TRACE_ENV = "KL_MODELNEW_TRACE"
"""Set in a runner's environment to a secret token: the host records the forward's aten ops and
prints them after the token (``gate/_optrace``)."""
_HERE = Path(__file__).parent
_HOST = _HERE / "_modelnew_host.py"
_SHIM = _HERE / "_modelnew_shim.c"
_LINK_RECIPE = "2: the shim after the extension"
"""Part of kernel.so's cache key: a change to how it is linked rebuilds what was linked before."""
_FRAMEWORK = (*(f"{prefix}{space}::*" for space in ("at", "c10", "torch", "pybind11", "caffe2")
                for prefix in ("", "* ", "typeinfo for ", "vtable for ")), "Py*", "_Py*", "THP*")
"""Symbols of the framework an extension is written against: their ops are judged by the trace."""
_LEAVES_THE_TRACE = ("PyRun_*", "Py_Compile*", "PyEval_Eval*", "PyImport_*", "c10::impl::tls_*",
                     "*PythonTLSSnapshot*", "*TorchDispatchMode*", "*_set_dispatch_mode*")
"""Framework symbols that run Python or change dispatch state: torch's own headers never make an
honest extension import these (the guards they do inline are caught in the source instead)."""
DENIED_SYMBOLS = {
    "running Python or stepping outside torch's dispatcher (the op trace) from C++": _LEAVES_THE_TRACE,
}
ALLOWED_SYMBOLS = ("_GLOBAL_OFFSET_TABLE_", "DW.ref.*", "__dso_handle", "VTT for std::*", "strdup")
"""An object file's C++ plumbing (the checks read the objects, before they are linked)."""
_CONFIG = "modelnew_config.h"
"""What the shim is built with; beside a kernel.so, it marks a ModelNew build."""
_OBJECTS = "ext*.o"
"""The candidate's objects, kept beside the linked kernel.so for the static checks."""


class ModelNewBuild:
    """The build both ModelNew backends share; mixed in before the device's backend class."""

    name: str
    language: ClassVar[str]
    denied_symbols: ClassVar[dict[str, tuple[str, ...]]]
    device_type: ClassVar[str]
    """torch's device for the ModelNew's tensors, and for its include and library paths."""
    device_libraries: ClassVar[tuple[str, ...]] = ()
    """Linked besides torch's CPU libraries."""

    def unavailable_reason(self) -> str | None:
        try:
            import torch  # noqa: F401 - only whether it is there
        except ImportError:
            return "torch is not installed (pip install 'klineage[cuda]' or torch==2.13.0)"
        return super().unavailable_reason()

    def build(self, kernel: KernelSpec) -> BuildResult:
        if kernel.language != self.language:  # the device backend's own (the CPU's ceiling probe)
            return super().build(kernel)
        try:
            toolchain = self.toolchain()
        except ToolchainError as exc:  # a compiler this kernel needs is missing
            return _failed(kernel.source_hash(), str(exc))
        key = _key(kernel.source_hash(), _HOST.read_bytes(), _SHIM.read_bytes(), _LINK_RECIPE,
                   json.dumps(embedded_python()), json.dumps(toolchain), self.platform())
        try:
            extension = extension_of(kernel.source)
        except (ExtensionError, SyntaxError) as exc:
            return _failed(key, str(exc))
        refused = self._refused(extension)
        if refused:
            return _failed(key, refused)
        objects = self._objects(extension) if extension else []
        failed = next((o for o in objects if not o.ok), None)
        if failed is not None:
            return failed
        key = _key(key, *(o.artifact.read_bytes() for o in objects if o.artifact))
        name = extension.name if extension else ""

        def command(out: Path) -> list[str]:
            (out.parent / _CONFIG).write_text(_config(kernel.source.read_text(), name))
            kept = [out.parent / o.artifact.name for o in objects if o.artifact]
            for obj, copy in zip(objects, kept, strict=True):  # kept beside the shim for the checks
                shutil.copyfile(obj.artifact, copy)
            python = embedded_python()
            # The shim last: the loader runs a library's constructors in link order, and the
            # shim's runs the ModelNew, so the extension's own (its static initializers, nvcc's
            # registration of its GPU kernels) must have run before it.
            return [settings.cxx_compiler(), "-O2", "-fPIC", "-shared", f"-I{out.parent}",
                    f"-I{python['include']}", *map(str, kept), "-x", "c", str(_SHIM), "-x", "none",
                    "-o", str(out), *self._torch_link(), python["library"],
                    f"-Wl,-rpath,{python['libdir']}", "-ldl"]

        linked = cached_build(self.name, key, command)
        resources = {k: v for o in objects for k, v in o.resources.items()}  # nvcc's ptxas report
        return replace(linked, resources=resources) if resources else linked

    def _refused(self, extension: Extension | None) -> str | None:
        """Why this backend cannot build the extension at all, if it cannot."""
        return None

    def _objects(self, extension: Extension) -> list[BuildResult]:
        """The extension compiled as load_inline would: its C++ (and, on CUDA, its CUDA)."""
        flags = ["-O3", "-fPIC", "-std=c++17", *torch_compile_flags(extension.name, self.device_type),
                 *extension.extra_cflags]
        return [self._compiled(settings.cxx_compiler(), "main.cpp", _main_cpp(extension), flags, "ext.o")]

    def _compiled(self, compiler: str, unit: str, text: str, flags: list[str], artifact: str,
                  report: Callable[[str], dict[str, Any]] | None = None) -> BuildResult:
        """One translation unit compiled to an object, cached by its text, flags and toolchain
        alone (kernels sharing an extension compile it once)."""
        key = _key(text.encode(), compiler, *flags, json.dumps(self.toolchain()),
                   embedded_python()["version"])

        def command(out: Path) -> list[str]:
            source = out.parent / unit
            source.write_text(text)
            return [compiler, "-c", *flags, str(source), "-o", str(out)]

        return cached_build(f"{self.name}-extension", key, command, report, timeout=900,
                            artifact_name=artifact)

    def _torch_link(self) -> list[str]:
        _, libraries, _ = _torch_paths(self.device_type)
        return [*(f"-L{p}" for p in libraries), *(f"-Wl,-rpath,{p}" for p in libraries),
                "-lc10", "-ltorch", "-ltorch_cpu", "-ltorch_python", *self.device_libraries]

    def imported_symbols(self, artifact: Path) -> set[str]:
        """The candidate's objects' undefined symbols, less those one of them defines (the
        bindings call the CUDA part's functions) and the framework's (but never the framework's
        denied ones); none when kernel.py builds no extension."""
        if not (artifact.parent / _CONFIG).is_file():  # a native kernel (the CPU's ceiling probe)
            return super().imported_symbols(artifact)
        denied = [p for patterns in self.denied_symbols.values() for p in patterns]
        objects = sorted(artifact.parent.glob(_OBJECTS))
        own = set().union(*(defined_symbols(obj) for obj in objects))
        kept = set()
        for obj in objects:
            for symbol in imported_symbols(obj, dynamic=False) - own:
                framework = any(fnmatch.fnmatchcase(symbol, p) for p in _FRAMEWORK)
                if not framework or any(fnmatch.fnmatchcase(symbol, p) for p in denied):
                    kept.add(symbol)
        return kept

    def system_call_sites(self, artifact: Path) -> list[str]:
        if not (artifact.parent / _CONFIG).is_file():
            return super().system_call_sites(artifact)
        return [site for obj in sorted(artifact.parent.glob(_OBJECTS)) for site in system_call_sites(obj)]

    def sandbox_files(self, workload: Workload) -> tuple[Path, ...]:
        """The reference and the Python files beside it (an imported problem's original, which
        it runs): the host builds the models from them."""
        root, reference = workload.root.resolve(), workload.reference_path
        found = {reference, *reference.parent.glob("*.py")}
        # a link out of the workload (x.py -> a key) would be copied where the kernel reads it
        return tuple(sorted(p for p in found if p.resolve().is_relative_to(root) and p.resolve().is_file()))

    def sandbox_env(self, threads: int | None, workload: Workload) -> dict[str, str]:
        """The device runner's environment and what the host needs: the workload's tensors, the
        sizes the gate calls (a ModelNew is built for each before the final filter), the
        reference (its seeded init inputs build ModelNew), the device."""
        shapes = [{"axes": axes, "inputs": [list(t.dims(axes)) for t in workload.inputs],
                   "outputs": [list(t.dims(axes)) for t in workload.outputs]}
                  for axes in _unique(workload.shapes())]
        spec = {"reference": f"{SANDBOX_WORKLOAD}/{workload.reference_path.name}",
                "threads": threads or 1,
                "device": self.device_type,
                "inputs": [[t.name, t.dtype] for t in workload.inputs],
                "outputs": [[t.name, t.dtype] for t in workload.outputs],
                "axis_names": list(workload.axes), "params": dict(workload.params), "shapes": shapes}
        # HOME and USER: else torch (expanduser, getpass) asks the password database, by a socket
        return {**super().sandbox_env(threads, workload), "HOME": "/nonexistent",
                "USER": "nobody", "KL_MODELNEW": json.dumps(spec)}


class ModelNewBackend(ModelNewBuild, CpuBackend):
    """Builds a ModelNew kernel.py with its C++ ``load_inline`` extension for this CPU."""

    name = "modelnew"
    language = "python"
    device_type = "cpu"
    denied_symbols: ClassVar[dict[str, tuple[str, ...]]] = DENIED_SYMBOLS
    allowed_symbols: ClassVar[tuple[str, ...]] = ALLOWED_SYMBOLS
    runner_name = "kl_runner_python"
    runner_flags = ("-DKL_PYTHON",)

    def _refused(self, extension: Extension | None) -> str | None:
        if extension is not None and extension.cuda_sources:
            return ('load_inline has cuda_sources, which build for the GPU: say language = "python_cuda" '
                    "in kernel.toml (backend modelnew_cuda); this backend builds C++ for the CPU")
        return None


def _failed(key: str, reason: str) -> BuildResult:
    return BuildResult(ok=False, artifact=None, log=f"error: {reason}", command=(), fingerprint=key)


def _unique(shapes: list[dict[str, int]]) -> list[dict[str, int]]:
    seen: dict[tuple[int, ...], dict[str, int]] = {}
    for axes in shapes:
        seen.setdefault(tuple(axes.values()), axes)
    return list(seen.values())


def _key(*parts: bytes | str) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode() if isinstance(part, str) else part)
        digest.update(b"\0")
    return digest.hexdigest()


def _main_cpp(extension: Extension) -> str:
    """The translation unit load_inline writes: torch's header, the sources, the bindings."""
    bindings = "".join(f'  m.def("{f}", torch::wrap_pybind_function({f}), "{f}");\n'
                       for f in extension.functions)
    return ("#include <torch/extension.h>\n" + "\n".join(extension.cpp_sources)
            + f"\n\nPYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {{\n{bindings}}}\n")


def _c_bytes(text: str) -> str:
    """A C initializer for a NUL-terminated string (any bytes, no escaping to get wrong)."""
    data = text.encode() + b"\0"
    return "{" + ",".join(str(b) for b in data) + "}"


def _config(kernel_source: str, extension: str) -> str:
    python = embedded_python()
    values = {"KL_HOST_SOURCE": _HOST.read_text(), "KL_KERNEL_SOURCE": kernel_source,
              "KL_EXTENSION": extension, "KL_PYTHON_HOME": python["home"],
              "KL_SEARCH_PATH": "\n".join(python["path"]),
              "KL_LIBPYTHON": python["library"]}
    lines = [f"static const char {k}_BYTES[] = {_c_bytes(v)};\n#define {k} {k}_BYTES"
             for k, v in values.items() if k != "KL_SEARCH_PATH"]
    # strtok writes into it: the shim copies it into a local array first
    lines.append(f"#define KL_SEARCH_PATH {_c_bytes(values['KL_SEARCH_PATH'])}")
    return "\n".join(lines) + "\n"


@cache
def embedded_python() -> dict:
    """This interpreter, which the runner embeds: its headers, shared library and module path
    (the trusted side's own, without the working directory)."""
    libdir = Path(sysconfig.get_config_var("LIBDIR") or sys.base_prefix)
    # its configured names first; a distribution may ship the shared library beside a static build
    names = [sysconfig.get_config_var(k) or "" for k in ("INSTSONAME", "LDLIBRARY")]
    found = [libdir / n for n in names if ".so" in n]
    found += sorted(libdir.glob(f"libpython{sysconfig.get_config_var('LDVERSION')}.so*"))
    library = next((p for p in found if p.is_file()), None)
    if library is None:
        raise ToolchainError(f"ModelNew kernels embed Python, and {sys.executable} has no shared "
                             f"libpython in {libdir} (a Python built with --enable-shared has one)")
    return {"include": sysconfig.get_paths()["include"], "libdir": str(libdir), "library": str(library),
            "home": sys.base_prefix, "version": sys.version,
            "path": [p for p in sys.path if p and Path(p).exists()]}


@cache
def _torch_paths(device_type: str) -> tuple[list[str], list[str], bool]:
    """torch's include and library paths for an extension on this device (CUDA: the toolkit's
    too), and its C++ ABI."""
    import torch
    from torch.utils import cpp_extension

    return (cpp_extension.include_paths(device_type), cpp_extension.library_paths(device_type),
            bool(torch._C._GLIBCXX_USE_CXX11_ABI))


def torch_compile_flags(name: str, device_type: str) -> list[str]:
    """The flags load_inline gives both of an extension's compilers (g++ and nvcc)."""
    includes, _, abi = _torch_paths(device_type)
    return [*(arg for path in (*includes, embedded_python()["include"]) for arg in ("-isystem", path)),
            f"-DTORCH_EXTENSION_NAME={name}", "-DTORCH_API_INCLUDE_EXTENSION_H",
            f"-D_GLIBCXX_USE_CXX11_ABI={int(abi)}"]


BACKEND = ModelNewBackend
