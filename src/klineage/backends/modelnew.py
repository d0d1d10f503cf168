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
and Python are the framework, whose ops the op trace judges (``gate/_optrace``); the rest meets
the usual allow- and deny-lists, and the ways out of that trace are denied here: what stops or
steps around its recorder, and ATen's kernels called below the dispatcher (``_optrace`` refuses
them, and definitions that would take the place of what the shim and its recorder call).
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

from klineage import settings
from klineage.backends._build_cache import (
    CandidateBuild,
    cached_build,
    defined_symbols,
    imported_symbols,
    refused_build,
    system_call_sites,
    toolchain_roots,
)
from klineage.backends._flags import refused_flag
from klineage.backends._modelnew_parse import Extension, ExtensionError, extension_of
from klineage.backends._modelnew_symbols import (
    ALLOWED_SYMBOLS,
    BELOW_THE_DISPATCHER,
    DENIED_SYMBOLS,
    FRAMEWORK,
    below_the_dispatcher,
    op_entry_points,
)
from klineage.backends._modelnew_torch import embedded_python, torch_compile_flags, torch_paths
from klineage.backends.base import CAUGHT_IN_PROCESS_RC, SANDBOX_WORKLOAD, BuildResult
from klineage.backends.cpu import CpuBackend
from klineage.errors import ToolchainError
from klineage.workload.model import KernelSpec, Workload

__all__ = ["ALLOWED_SYMBOLS", "BELOW_THE_DISPATCHER", "DENIED_SYMBOLS", "TRACED_CALLS", "TRACE_ENV",
           "ModelNewBackend", "ModelNewBuild", "below_the_dispatcher", "build_objects", "embedded_python",
           "op_entry_points", "torch_compile_flags"]

TRACE_ENV = "KL_MODELNEW_TRACE"
"""Set in a runner's environment to a secret token and call count: the host prints what the op
recorder saw of the forward after the token (``gate/_optrace``)."""
TRACED_CALLS = 8
"""The most forward calls per size a runner makes while it loads (each draws 2 to this many, a
traced one in secret): the trace sees the calls every runner makes."""
_HERE = Path(__file__).parent
_HOST = _HERE / "_modelnew_host.py"
_SHIM = _HERE / "_modelnew_shim.c"
_LINK_RECIPE = "3: the recorder, the extension, the shim"
"""Part of kernel.so's cache key: a change to how it is linked rebuilds what was linked before."""
_CONFIG = "modelnew_config.h"
"""What the shim is built with; beside a kernel.so, it marks a ModelNew build."""
_OBJECTS = "ext*.o"
"""The candidate's objects, kept beside the linked kernel.so for the static checks."""
_OURS = ("kl_recorder.o", "kl_shim.o")
"""Ours, kept beside them: what they call must not be the candidate's."""


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
            return refused_build(kernel.source_hash(), str(exc))
        key = _key(kernel.source_hash(), _HOST.read_bytes(), _SHIM.read_bytes(), _LINK_RECIPE,
                   json.dumps(embedded_python()), json.dumps(toolchain), self.platform())
        try:
            extension = extension_of(kernel.source)
        except (ExtensionError, SyntaxError) as exc:
            return refused_build(key, str(exc))
        refused = self._refused(extension)
        if refused:
            return refused_build(key, refused)
        objects = self._objects(extension) if extension else []
        config = _config(kernel.source.read_text(), extension)
        failed = next((o for o in objects if not o.ok), None)
        ours = [self._recorder(), self._shim(config)] if failed is None else []
        failed = failed or next((o for o in ours if not o.ok), None)
        if failed is not None:
            return failed
        key = _key(key, *(o.artifact.read_bytes() for o in (*objects, *ours) if o.artifact))

        def command(out: Path) -> list[str]:
            (out.parent / _CONFIG).write_text(config)  # marks a ModelNew build
            kept = [out.parent / o.artifact.name for o in (*objects, *ours) if o.artifact]
            for obj, copy in zip((*objects, *ours), kept, strict=True):  # beside kernel.so, for the checks
                shutil.copyfile(obj.artifact, copy)
            *candidate, recorder, shim = kept
            python = embedded_python()
            # The loader runs a library's constructors in link order, and the shim's runs the
            # ModelNew, so the extension's own (its static initializers, nvcc's registration of its
            # GPU kernels) must have run before it: the shim last. The recorder first: where it
            # and the extension hold the same template instance, the linker keeps the first.
            return [settings.cxx_compiler(), "-fPIC", "-shared", str(recorder), *map(str, candidate),
                    str(shim), "-o", str(out), *self._torch_link(), python["library"],
                    f"-Wl,-rpath,{python['libdir']}", "-ldl"]

        linked = cached_build(self.name, key, command, candidate=self._jail(settings.cxx_compiler()))
        resources = {k: v for o in objects for k, v in o.resources.items()}  # nvcc's ptxas report
        return replace(linked, resources=resources) if resources else linked

    def _recorder(self) -> BuildResult:
        """The op recorder, the shim's C++ half: compiled once, with torch's headers only."""
        includes, _, abi = torch_paths(self.device_type)
        flags = ["-x", "c++", "-O2", "-fPIC", "-std=c++17", *(a for p in includes for a in ("-isystem", p)),
                 f"-D_GLIBCXX_USE_CXX11_ABI={int(abi)}"]
        key = _key(_SHIM.read_bytes(), settings.cxx_compiler(), *flags, json.dumps(self.toolchain()))
        return cached_build(f"{self.name}-recorder", key,
                            lambda out: [settings.cxx_compiler(), "-c", *flags, str(_SHIM), "-o", str(out)],
                            artifact_name=_OURS[0])

    def _shim(self, config: str) -> BuildResult:
        """The shim, compiled as C with this kernel's config (kernel.py and the host, as bytes)."""
        include = embedded_python()["include"]
        key = _key(_SHIM.read_bytes(), config, settings.cxx_compiler(), include, json.dumps(self.toolchain()))

        def command(out: Path) -> list[str]:
            (out.parent / _CONFIG).write_text(config)
            return [settings.cxx_compiler(), "-x", "c", "-c", "-O2", "-fPIC", f"-I{out.parent}",
                    f"-I{include}", str(_SHIM), "-o", str(out)]

        return cached_build(f"{self.name}-shim", key, command, artifact_name=_OURS[1])

    def _refused(self, extension: Extension | None) -> str | None:
        """Why this backend cannot build the extension at all, if it cannot: a flag in
        ``extra_cflags`` off the allow-list (they reach the compiler as a kernel.toml's do)."""
        return refused_flag(extension.extra_cflags, "gcc") if extension is not None else None

    def _jail(self, compiler: str) -> CandidateBuild:
        """What a build of the candidate's extension may read: the toolchain, torch's headers and
        libraries, the interpreter's headers and library (its sources are written beside the
        output, the one folder it may write)."""
        includes, libraries, _ = torch_paths(self.device_type)
        python = embedded_python()
        folders = (*includes, *libraries, python["include"], python["libdir"])
        return CandidateBuild(reads=(*toolchain_roots(compiler, settings.cxx_compiler()),
                                     *map(Path, folders)))

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
                            artifact_name=artifact, candidate=self._jail(compiler))

    def _torch_link(self) -> list[str]:
        _, libraries, _ = torch_paths(self.device_type)
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
                framework = any(fnmatch.fnmatchcase(symbol, p) for p in FRAMEWORK)
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
                "threads": threads or 1, "traced_calls": TRACED_CALLS, "caught_rc": CAUGHT_IN_PROCESS_RC,
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
        return super()._refused(extension)


def build_objects(artifact: Path) -> tuple[list[Path], list[Path]] | None:
    """The objects a ModelNew's kernel.so was linked from, kept beside it: the candidate's
    extension's, and ours (the recorder, the shim); None for a native kernel."""
    folder = artifact.parent
    if not (folder / _CONFIG).is_file():
        return None
    return sorted(folder.glob(_OBJECTS)), [folder / name for name in _OURS]


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


def _config(kernel_source: str, extension: Extension | None) -> str:
    python = embedded_python()
    values = {"KL_HOST_SOURCE": _HOST.read_text(), "KL_KERNEL_SOURCE": kernel_source,
              "KL_EXTENSION": extension.name if extension else "", "KL_PYTHON_HOME": python["home"],
              "KL_LIBPYTHON": python["library"]}
    lines = [f"static const char {k}_BYTES[] = {_c_bytes(v)};\n#define {k} {k}_BYTES"
             for k, v in values.items()]
    # strtok writes into these: the shim copies each into a local array first
    lists = {"KL_SEARCH_PATH": python["path"], "KL_FUNCTIONS": extension.functions if extension else ()}
    lines += [f"#define {k} {_c_bytes(chr(10).join(v))}" for k, v in lists.items()]
    return "\n".join(lines) + "\n"


BACKEND = ModelNewBackend
