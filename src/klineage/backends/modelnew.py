"""ModelNew backend (CPU): KernelBench's ``ModelNew`` in kernel.py, with C++ through
``torch.utils.cpp_extension.load_inline``, made to look like any kernel to the gate.

The build is ours and never imports kernel.py: its ``load_inline`` sources are read from the
syntax tree (``_modelnew_parse``) and compiled here, with torch's headers, into an object
(cached by those sources alone: many kernel.py share one extension). That object is linked with
a C shim (``_modelnew_shim.c``) into one ``kernel.so`` exporting ``kl_launch``; the shim embeds
kernel.py and the host (``_modelnew_host.py``), which run only in the sandboxed runner. The
runner is ``_runner.c`` built with ``KL_PYTHON``: the profile an interpreter needs (docs/gate.md).

Static checks look at the candidate's object, not at the shim: symbols of torch, c10, pybind11
and Python are the framework, whose ops the dispatch trace judges (``gate/_optrace``); the
rest meets the usual allow- and deny-lists, and the ways out of that trace are denied here.
A CUDA extension fits the same seam (its sources compiled by nvcc into the object, the runner
built with ``KL_CUDA``) but is not written yet: no GPU was available to run it.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import shutil
import sys
import sysconfig
from functools import cache
from pathlib import Path
from typing import ClassVar

from klineage import settings
from klineage.backends._build_cache import (
    SANDBOX_SOURCES,
    cached_build,
    imported_symbols,
    system_call_sites,
    trusted_build,
)
from klineage.backends._modelnew_parse import Extension, ExtensionError, extension_of
from klineage.backends.base import BuildResult, RunnerSpec
from klineage.backends.cpu import CpuBackend, _per_core_cache_bytes
from klineage.errors import ToolchainError
from klineage.workload.model import KernelSpec, Workload

__all__ = ["TRACE_ENV", "ModelNewBackend"]

TRACE_ENV = "KL_MODELNEW_TRACE"
"""Set in a runner's environment to a secret token: the host records the forward's aten ops and
prints them after the token (``gate/_optrace``)."""
_HERE = Path(__file__).parent
_HOST = _HERE / "_modelnew_host.py"
_SHIM = _HERE / "_modelnew_shim.c"
_FRAMEWORK = (*(f"{prefix}{space}::*" for space in ("at", "c10", "torch", "pybind11", "caffe2")
                for prefix in ("", "* ", "typeinfo for ", "vtable for ")), "Py*", "_Py*", "THP*")
"""Symbols of the framework an extension is written against: their ops are judged by the trace."""
_LEAVES_THE_TRACE = ("PyRun_*", "Py_Compile*", "PyEval_Eval*", "PyImport_*", "c10::impl::tls_*",
                     "*PythonTLSSnapshot*", "*TorchDispatchMode*", "*_set_dispatch_mode*")
"""Framework symbols that run Python or change dispatch state: torch's own headers never make an
honest extension import these (the guards they do inline are caught in the source instead)."""


class ModelNewBackend(CpuBackend):
    """Builds a ModelNew kernel.py with its C++ ``load_inline`` extension for this CPU."""

    name = "modelnew"
    denied_symbols: ClassVar[dict[str, tuple[str, ...]]] = {
        "running Python or stepping outside torch's dispatcher (the op trace) from C++": _LEAVES_THE_TRACE,
    }
    allowed_symbols: ClassVar[tuple[str, ...]] = ("_GLOBAL_OFFSET_TABLE_", "DW.ref.*", "__dso_handle",
                                                  "VTT for std::*", "strdup")  # an object file's C++ plumbing

    def unavailable_reason(self) -> str | None:
        try:
            import torch  # noqa: F401 - only whether it is there
        except ImportError:
            return "torch is not installed (pip install 'klineage[cuda]' or torch==2.13.0)"
        return super().unavailable_reason()

    def build(self, kernel: KernelSpec) -> BuildResult:
        if kernel.language != "python":  # the CPU's own: its ceiling probe
            return super().build(kernel)
        key = _key(kernel.source_hash(), _HOST.read_bytes(), _SHIM.read_bytes(), json.dumps(_python()),
                   json.dumps(self.toolchain()), self.platform())
        try:
            extension = extension_of(kernel.source)
        except (ExtensionError, SyntaxError) as exc:
            return BuildResult(ok=False, artifact=None, log=f"error: {exc}", command=(), fingerprint=key)
        if extension is not None and extension.cuda_sources:
            return BuildResult(ok=False, artifact=None, command=(), fingerprint=key,
                               log="error: load_inline cuda_sources need a CUDA ModelNew backend, "
                                   "which is not written yet (this one builds C++ for the CPU)")
        objects: list[Path] = []
        if extension is not None:
            built = self._extension(extension)
            if not built.ok:
                return built
            objects.append(built.artifact)
        name = extension.name if extension else ""
        key = _key(key, *(o.read_bytes() for o in objects))

        def command(out: Path) -> list[str]:
            (out.parent / "modelnew_config.h").write_text(_config(kernel.source.read_text(), name))
            for obj in objects:  # kept beside the shim for the static checks
                shutil.copyfile(obj, out.parent / "ext.o")
            python = _python()
            return [settings.cxx_compiler(), "-O2", "-fPIC", "-shared", f"-I{out.parent}",
                    f"-I{python['include']}", "-x", "c", str(_SHIM), "-x", "none",
                    *(str(out.parent / "ext.o") for _ in objects), "-o", str(out),
                    *_torch_link(), f"-L{python['libdir']}", f"-Wl,-rpath,{python['libdir']}",
                    f"-l{python['library']}", "-ldl"]

        return cached_build(self.name, key, command)

    def _extension(self, extension: Extension) -> BuildResult:
        """The candidate's C++ compiled to an object, as load_inline would compose it."""
        main = _main_cpp(extension)
        flags = ["-O3", "-fPIC", "-std=c++17", *_torch_compile_flags(extension.name), *extension.extra_cflags]
        python = _python()
        key = _key(main.encode(), json.dumps(flags), json.dumps(self.toolchain()), python["include"],
                   python["version"])

        def command(out: Path) -> list[str]:
            source = out.parent / "main.cpp"
            source.write_text(main)
            return [settings.cxx_compiler(), "-c", *flags, str(source), "-o", str(out)]

        return cached_build(f"{self.name}-extension", key, command, timeout=900, artifact_name="ext.o")

    def imported_symbols(self, artifact: Path) -> set[str]:
        """The candidate extension's undefined symbols, less the framework's (but never those
        that leave the trace); none when kernel.py builds no extension."""
        obj = artifact.parent / "ext.o"
        if not obj.is_file():
            return set()
        kept = set()
        for symbol in imported_symbols(obj, dynamic=False):
            framework = any(fnmatch.fnmatchcase(symbol, p) for p in _FRAMEWORK)
            if not framework or any(fnmatch.fnmatchcase(symbol, p) for p in _LEAVES_THE_TRACE):
                kept.add(symbol)
        return kept

    def system_call_sites(self, artifact: Path) -> list[str]:
        obj = artifact.parent / "ext.o"
        return system_call_sites(obj) if obj.is_file() else []

    def sandbox_runner(self) -> RunnerSpec:
        path, sha = trusted_build(SANDBOX_SOURCES / "_runner.c", "kl_runner_python",
                                  [settings.c_compiler(), "-O2", "-std=gnu11", "-DKL_PYTHON", "-pthread",
                                   "-ldl"])
        return RunnerSpec(path, sha, (str(2 * _per_core_cache_bytes()),))

    def sandbox_env(self, threads: int | None, workload: Workload) -> dict[str, str]:
        """The CPU runner's environment and what the host needs: the workload's tensors, the sizes
        the gate calls (a ModelNew is built for each before the final filter), the reference
        (its seeded init inputs build ModelNew)."""
        shapes = [{"axes": axes, "inputs": [list(t.dims(axes)) for t in workload.inputs],
                   "outputs": [list(t.dims(axes)) for t in workload.outputs]}
                  for axes in _unique(workload.shapes())]
        spec = {"reference": str(workload.reference_path), "threads": threads or 1,
                "inputs": [[t.name, t.dtype] for t in workload.inputs],
                "outputs": [[t.name, t.dtype] for t in workload.outputs],
                "axis_names": list(workload.axes), "params": dict(workload.params), "shapes": shapes}
        # HOME and USER: else torch (expanduser, getpass) asks the password database, by a socket
        return {**super().sandbox_env(threads, workload), "HOME": "/nonexistent", "USER": "nobody",
                "KL_MODELNEW": json.dumps(spec)}


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
    python = _python()
    values = {"KL_HOST_SOURCE": _HOST.read_text(), "KL_KERNEL_SOURCE": kernel_source,
              "KL_EXTENSION": extension, "KL_PYTHON_HOME": python["home"],
              "KL_SEARCH_PATH": "\n".join(python["path"]),
              "KL_LIBPYTHON": str(Path(python["libdir"]) / python["ldlibrary"])}
    lines = [f"static const char {k}_BYTES[] = {_c_bytes(v)};\n#define {k} {k}_BYTES"
             for k, v in values.items() if k != "KL_SEARCH_PATH"]
    # strtok writes into it: the shim copies it into a local array first
    lines.append(f"#define KL_SEARCH_PATH {_c_bytes(values['KL_SEARCH_PATH'])}")
    return "\n".join(lines) + "\n"


@cache
def _python() -> dict:
    """This interpreter, which the runner embeds: its headers, library and module path (the
    trusted side's own, without the working directory)."""
    ldlibrary = sysconfig.get_config_var("LDLIBRARY") or ""
    if not sysconfig.get_config_var("Py_ENABLE_SHARED"):
        raise ToolchainError("ModelNew kernels need a Python built with --enable-shared "
                             f"({sys.executable} is not)")
    return {"include": sysconfig.get_paths()["include"], "libdir": sysconfig.get_config_var("LIBDIR"),
            "ldlibrary": ldlibrary, "library": ldlibrary.removeprefix("lib").removesuffix(".so"),
            "home": sys.base_prefix, "version": sys.version,
            "path": [p for p in sys.path if p and Path(p).exists()]}


@cache
def _torch_paths() -> tuple[list[str], list[str], bool]:
    import torch
    from torch.utils import cpp_extension

    return cpp_extension.include_paths(), cpp_extension.library_paths(), bool(torch._C._GLIBCXX_USE_CXX11_ABI)


def _torch_compile_flags(name: str) -> list[str]:
    includes, _, abi = _torch_paths()
    return [*(f"-isystem{p}" for p in includes), f"-isystem{_python()['include']}",
            f"-DTORCH_EXTENSION_NAME={name}", "-DTORCH_API_INCLUDE_EXTENSION_H",
            f"-D_GLIBCXX_USE_CXX11_ABI={int(abi)}"]


def _torch_link() -> list[str]:
    _, libraries, _ = _torch_paths()
    return [*(f"-L{p}" for p in libraries), *(f"-Wl,-rpath,{p}" for p in libraries),
            "-lc10", "-ltorch", "-ltorch_cpu", "-ltorch_python"]


BACKEND = ModelNewBackend
