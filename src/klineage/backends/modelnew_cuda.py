"""CUDA ModelNew backend: a KernelBench ``ModelNew`` whose ``load_inline`` carries
``cuda_sources`` (kernel.toml ``language = "python_cuda"``), run on the GPU in the CUDA runner.

The build is the CPU ModelNew's (``modelnew.ModelNewBuild``) with the CUDA part load_inline
adds: ``cuda.cu`` (torch's types, ``cuda.h``, ``cuda_runtime.h``, the sources) compiled by
nvcc with torch's CUDA include paths and load_inline's flags, the C++ part with the same
paths, and torch's CUDA libraries and the CUDA runtime linked into ``kernel.so``. It runs in
``_runner.c`` built with ``KL_CUDA`` and ``KL_PYTHON`` (the union of the two profiles,
docs/gate.md), where the host wraps the gate's device arenas as CUDA tensors and runs forward
on the gate's timed stream.

A separate language, not ``python`` switching by content: the backend (device, ceilings,
runner, device lock) is chosen from the language before any kernel is built, and one run keeps
one backend, so an edit cannot move a run between the CPU and the GPU.
"""

from __future__ import annotations

import importlib.util
import os
import stat
import sysconfig
from functools import cache
from pathlib import Path
from typing import ClassVar

from klineage import settings
from klineage.backends._flags import refused_flag
from klineage.backends._modelnew_parse import Extension
from klineage.backends.base import BuildResult
from klineage.backends.cpu import CpuBackend
from klineage.backends.cuda import ALLOWED_SYMBOLS, DENIED_SYMBOLS, CudaBackend, _gencode, parse_ptxas_report
from klineage.backends.modelnew import ALLOWED_SYMBOLS as MODELNEW_ALLOWED
from klineage.backends.modelnew import DENIED_SYMBOLS as MODELNEW_DENIED
from klineage.backends.modelnew import ModelNewBuild, embedded_python, torch_compile_flags
from klineage.errors import ToolchainError
from klineage.workload.model import Workload

__all__ = ["ModelNewCudaBackend", "cuda_unit", "nvcc_flags"]

_LOAD_INLINE_NVCC = ("-D__CUDA_NO_HALF_OPERATORS__", "-D__CUDA_NO_HALF_CONVERSIONS__",
                     "-D__CUDA_NO_BFLOAT16_CONVERSIONS__", "-D__CUDA_NO_HALF2_OPERATORS__",
                     "--expt-relaxed-constexpr", "-Xcompiler", "-fPIC")
"""What torch's load_inline gives nvcc besides the include paths and the target."""
_CUDA_HEADERS = ("#include <torch/types.h>", "#include <cuda.h>", "#include <cuda_runtime.h>")
"""What load_inline puts before the cuda_sources."""
_OTHER_STREAMS_THROUGH_TORCH = {
    "work on a stream other than the one the harness times, through torch": (
        "c10::cuda::getStreamFromPool*", "c10::cuda::getStreamFromExternal*",
        "c10::cuda::setCurrentCUDAStream*", "at::cuda::CUDAGraph*", "* at::cuda::CUDAGraph*",
    ),
}
"""Framework symbols that reach another stream or a graph: the CUDA deny-list's own, in torch."""


class ModelNewCudaBackend(ModelNewBuild, CudaBackend):
    """Builds a ModelNew kernel.py with its CUDA ``load_inline`` extension for this GPU."""

    name = "modelnew_cuda"
    language = "python_cuda"
    device_type = "cuda"
    device_libraries = ("-lc10_cuda", "-ltorch_cuda", "-lcudart")
    denied_symbols: ClassVar[dict[str, tuple[str, ...]]] = {
        **DENIED_SYMBOLS, **_OTHER_STREAMS_THROUGH_TORCH, **MODELNEW_DENIED}
    # atexit: nvcc's registration code in an object file (it becomes __cxa_atexit when linked)
    allowed_symbols: ClassVar[tuple[str, ...]] = (*MODELNEW_ALLOWED, *ALLOWED_SYMBOLS, "atexit")
    runner_name = "kl_runner_cuda_python"

    def cupti(self) -> tuple[Path, Path]:
        # torch preloads its own CUPTI by path, as its runtime: one copy in the runner, torch's.
        include, library = super().cupti()
        return include, _torch_loaded("libcupti.so") or library

    @property
    def runner_flags(self) -> tuple[str, ...]:
        # One CUDA runtime in the runner, torch's: torch preloads its own by path
        # (torch._load_global_deps), so a runner linked to the toolkit's would hold two, each
        # starting the driver on its first call, the second under the filters.
        return ("-DKL_PYTHON", "-Xlinker", f"-rpath={_torch_cuda_runtime_dir()}")

    def unavailable_reason(self) -> str | None:
        reason = super().unavailable_reason()
        if reason is None and os.geteuid() == 0:
            try:
                unreadable = _first_unreadable_by_others(_interpreter_paths())
            except (ToolchainError, OSError) as exc:
                return str(exc)
            if unreadable:
                return (f"the CUDA ModelNew runner runs as nobody (as root, the CUDA driver changes "
                        f"/dev nodes, and the CUDA filters are a deny-list), and nobody cannot read "
                        f"{unreadable}: install Python and torch where other users can read them")
        return reason

    def toolchain(self) -> dict[str, str]:
        """nvcc's version, and the host compilers' (the C++ part and the shim)."""
        return {**super().toolchain(), **CpuBackend().toolchain()}

    def _refused(self, extension: Extension | None) -> str | None:
        if extension is None:
            return None
        return super()._refused(extension) or refused_flag(extension.extra_cuda_cflags, "nvcc")

    def _objects(self, extension: Extension) -> list[BuildResult]:
        objects = super()._objects(extension)
        return [*objects, self._cuda_object(extension)] if extension.cuda_sources else objects

    def _cuda_object(self, extension: Extension) -> BuildResult:
        return self._compiled(settings.nvcc(), "cuda.cu", cuda_unit(extension),
                              nvcc_flags(extension, self.arch()), "ext_cuda.o", parse_ptxas_report)

    def sandbox_env(self, threads: int | None, workload: Workload) -> dict[str, str]:
        # Lazy: eager loading would put all of libtorch_cuda's kernels on the GPU at every runner
        # start; the host's warm-up launches every kernel the calls use before the final filter.
        return {**super().sandbox_env(threads, workload), "CUDA_MODULE_LOADING": "LAZY"}


@cache
def _torch_cuda_runtime_dir() -> str:
    """The folder of the CUDA runtime torch has loaded into this process."""
    loaded = _torch_loaded("libcudart.so")
    if loaded is None:
        raise ToolchainError("torch loaded no CUDA runtime (a CPU build of torch?)")
    return str(loaded.parent)


def _torch_loaded(library: str) -> Path | None:
    """Where the library torch has loaded into this process lives (None: it has not)."""
    import torch

    torch.cuda.init()
    for line in Path("/proc/self/maps").read_text().splitlines():
        fields = line.split(maxsplit=5)
        if len(fields) == 6 and f"/{library}" in fields[5]:
            return Path(fields[5])
    return None


def _interpreter_paths() -> list[Path]:
    """What the runner's embedded interpreter must read: libpython, the standard library, torch,
    numpy (behind the CUDA array interface) and the CUDA runtime torch loads."""
    import torch

    python = embedded_python()
    paths = [Path(python["library"]), Path(sysconfig.get_paths()["stdlib"]), Path(torch.__file__).parent,
             Path(_torch_cuda_runtime_dir())]
    numpy = importlib.util.find_spec("numpy")  # torch runs without it
    return [*paths, Path(numpy.origin).parent] if numpy and numpy.origin else paths


def _first_unreadable_by_others(paths: list[Path]) -> str | None:
    """The first of these (or a folder above one, along the path as given and as resolved) that
    a user owning none of them cannot read: a folder without search permission for others, or
    the path itself without read permission (and search, for a folder). Group bits are not
    counted: nobody's group owns nothing here."""
    for given in paths:
        for path in dict.fromkeys((given.absolute(), given.resolve())):
            for folder in reversed(path.parents):
                if not folder.stat().st_mode & stat.S_IXOTH:
                    return f"{folder} (others may not enter it)"
            mode = path.stat().st_mode
            needed = stat.S_IROTH | (stat.S_IXOTH if stat.S_ISDIR(mode) else 0)
            if mode & needed != needed:
                return f"{path} (others may not read it)"
    return None


def cuda_unit(extension: Extension) -> str:
    """The CUDA translation unit load_inline writes (``cuda.cu``)."""
    return "\n".join((*_CUDA_HEADERS, *extension.cuda_sources))


def nvcc_flags(extension: Extension, arch: str) -> list[str]:
    """load_inline's nvcc flags: its defines, ours for the report (``-Xptxas -v``), the target
    unless extra_cuda_cflags name one, then extra_cuda_cflags (a standard or an optimisation
    level given there replaces ours: nvcc refuses a second standard)."""
    given = extension.extra_cuda_cflags
    defaults = [flag for flag, kind in (("-O3", "-O"), ("-std=c++17", "-std="))
                if not any(g.startswith(kind) for g in given)]
    target = [] if any("arch" in g for g in given) else _gencode(arch)
    return [*defaults, *_LOAD_INLINE_NVCC, "-Xptxas", "-v", *target,
            *torch_compile_flags(extension.name, "cuda"), *given]


BACKEND = ModelNewCudaBackend
