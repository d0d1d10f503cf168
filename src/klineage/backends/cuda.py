"""CUDA backend: kernels built by nvcc into shared objects, loaded with ctypes, fed device
memory allocated by torch, timed with CUDA events on a dedicated stream.

Building needs only nvcc (CI compiles on a machine without a GPU); running needs torch with a
visible device.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any, ClassVar

from klineage import settings
from klineage.backends._build_cache import (
    SANDBOX_SOURCES,
    CandidateBuild,
    cached_build,
    candidate_source,
    imported_symbols,
    refused_build,
    run_tool,
    system_call_sites,
    toolchain_roots,
    trusted_build,
)
from klineage.backends._cuda_device import CudaDevice
from klineage.backends._flags import refused_flag
from klineage.backends._runner_view import CUDA_WRITES, cuda_runner_view
from klineage.backends._shared import cached_ceilings
from klineage.backends.base import BuildResult, Ceilings, RunnerSpec
from klineage.errors import BackendUnavailableError, ToolchainError
from klineage.workload.model import KernelSpec, Workload

__all__ = ["CudaBackend", "CudaDevice", "parse_ptxas_report", "sass"]

_BASE_FLAGS = ("-O3", "-std=c++17", "-Xcompiler", "-fPIC", "-shared", "-Xptxas", "-v",
               "-cudart", "shared", "-lineinfo")
_DEFAULT_ARCH = "sm_90a"
_THEORETICAL_PEAK = (20_000.0, 5_000_000.0)  # GB/s, GFLOP/s: above any GPU made so far

DENIED_SYMBOLS = {
    "work on a stream other than the one the harness times": (
        "cudaStreamCreate*", "cuStreamCreate*", "*_ptsz", "*_ptds", "cuGraph*",
    ),
    "host code run by the GPU's queue, outside any GPU activity": (
        "cudaLaunchHostFunc", "cudaStreamAddCallback", "cudaGraphAddHostNode",
        "cudaGraphHostNode*", "cudaGraphExecHostNode*", "cudaGraphAddNode*", "cudaGraphNodeSetParams",
        "cudaGraphExecNodeSetParams",
    ),
    "the gate's own record of GPU activity": ("cupti*",),
}
"""A first filter only: the runner times every GPU activity of the process, on any stream, graph or
context (CUPTI; gate/_runner.c), so work these would hide is timed anyway. Graphs captured from
and launched on the harness stream are honest (cudaStreamBeginCapture, cudaGraphInstantiate,
cudaGraphLaunch); host nodes are not (``cudaGraphAddNode`` and the generic setters make them too).
"""
# The runtime API and nvcc's registration code. cudaGetDriverEntryPoint stays allowed (experts
# reach cuTensorMapEncodeTiled through it); a stream made through the driver is timed all the same.
ALLOWED_SYMBOLS = ("cuda*", "__cuda*", "exit")
"""The CUDA runtime, and ``exit``: nvcc gives every non-inline ``__device__`` function a host-side
body of ``::exit(1)`` (a kernel with a device helper imports it; found by the style corpus). A
kernel that calls it kills its runner mid-call, which the sandbox reports as a crash."""


_NO_CUPTI = ("CUPTI, which times every GPU activity of a candidate, was found neither beside nvcc's "
             "toolkit nor as a package (pip install nvidia-cuda-cupti, or set CUPTI_HOME)")


def _gencode(arch: str) -> list[str]:
    number = arch.removeprefix("sm_")
    return [f"-gencode=arch=compute_{number},code=sm_{number}"]


class CudaBackend:
    """nvcc + ctypes + torch-allocated device memory."""

    name = "cuda"
    modeled = False
    base_flags = _BASE_FLAGS
    denied_symbols: ClassVar[dict[str, tuple[str, ...]]] = DENIED_SYMBOLS
    allowed_symbols: ClassVar[tuple[str, ...]] = ALLOWED_SYMBOLS
    runner_name: ClassVar[str] = "kl_runner_cuda"
    runner_flags: ClassVar[tuple[str, ...]] = ()
    """``_runner.c`` built with ``-DKL_CUDA`` and these (``-DKL_PYTHON``: an embedded interpreter)."""

    def sandbox_env(self, threads: int | None, workload: Workload) -> dict[str, str]:
        env = {"PATH": "/usr/bin:/bin", "LC_ALL": "C", "CUDA_MODULE_LOADING": "EAGER",
               "CUDA_CACHE_DISABLE": "1"}
        if "CUDA_VISIBLE_DEVICES" in os.environ:
            env["CUDA_VISIBLE_DEVICES"] = os.environ["CUDA_VISIBLE_DEVICES"]
        return env

    def sandbox_files(self, workload: Workload) -> tuple[Path, ...]:
        return ()

    def sandbox_runner(self) -> RunnerSpec:
        include, cupti = self.cupti()
        path, sha = trusted_build(SANDBOX_SOURCES / "_runner.c", self.runner_name,
                                  [settings.nvcc(), "-O2", "-DKL_CUDA", *self.runner_flags, "-cudart",
                                   "shared", "-Xcompiler", "-pthread", "-ldl", f"-I{include}",
                                   f"-L{cupti.parent}", f"-l:{cupti.name}", "-Xlinker",
                                   f"-rpath={cupti.parent}"])
        toolkit = Path(settings.nvcc()).resolve().parent.parent
        reads, devices = cuda_runner_view("-DKL_PYTHON" in self.runner_flags, toolkit)
        reads = (*reads, cupti.parent)
        # No cache flush here: the L2 is flushed from the trusted side (one per GPU).
        return RunnerSpec(path, sha, reads, devices, CUDA_WRITES)

    def cupti(self) -> tuple[Path, Path]:
        """CUPTI's headers and the library the runner links (gate/_runner.c times with it)."""
        found = settings.cupti()
        if found is None:
            raise BackendUnavailableError(_NO_CUPTI)
        return found

    def calibration_kernel(self) -> tuple[Path, str]:
        return trusted_build(SANDBOX_SOURCES / "_spin.cu", "spin.so",
                             [settings.nvcc(), *_BASE_FLAGS, *_gencode(self.arch())])

    def unavailable_reason(self) -> str | None:
        if not _runs(settings.nvcc()):
            return f"nvcc not found or broken ({settings.nvcc()})"
        try:
            import torch
        except ImportError:
            return "torch is not installed (pip install 'klineage[cuda]')"
        if settings.cupti() is None:
            return _NO_CUPTI
        if not torch.cuda.is_available():
            # Where a machine has no GPU the kernel is the user's mistake or the machine's, not
            # torch's: say which, and what still works without one.
            return ("this machine has no NVIDIA GPU that CUDA can use (none, no driver, or hidden by "
                    "CUDA_VISIBLE_DEVICES): a .cu kernel is gated on a GPU machine (`klineage "
                    "features` still reads it here)")
        return None

    def arch(self) -> str:
        explicit = settings.cuda_arch()
        if explicit:
            return explicit
        capability = _device_capability()
        if capability is None:
            return _DEFAULT_ARCH
        major, minor = capability
        # Hopper's wgmma/setmaxnreg need the arch-specific 'a' target.
        return f"sm_{major}{minor}{'a' if major == 9 else ''}"

    def platform(self) -> str:
        version = self.toolchain().get("cuda", "unknown")
        return f"nvidia-{self.arch().removesuffix('a')}-cuda{version}"

    def toolchain(self) -> dict[str, str]:
        return _nvcc_version(settings.nvcc())

    def build(self, kernel: KernelSpec) -> BuildResult:
        if kernel.language != "cuda":
            raise ToolchainError(f"the cuda backend builds .cu kernels, not {kernel.language}")
        arch = self.arch()
        key = hashlib.sha256("\0".join(
            [kernel.source_hash(), json.dumps(self.toolchain()), arch, *_BASE_FLAGS]).encode()
        ).hexdigest()
        refused = refused_flag(kernel.flags, "nvcc")
        if refused:
            return refused_build(key, refused)

        def command(out: Path) -> list[str]:
            return [settings.nvcc(), *_BASE_FLAGS, *_gencode(arch), *kernel.flags,
                    str(candidate_source(out, kernel.source)), "-o", str(out)]

        jail = CandidateBuild(reads=toolchain_roots(settings.nvcc(), settings.cxx_compiler()),
                              sources=kernel.folder)
        return cached_build(self.name, key, command, parse_ptxas_report, candidate=jail)

    def imported_symbols(self, artifact: Path) -> set[str]:
        return imported_symbols(artifact)

    def system_call_sites(self, artifact: Path) -> list[str]:
        return system_call_sites(artifact)

    def default_threads(self, kernel: KernelSpec) -> int | None:
        return None

    def address_space_limit_ok(self) -> bool:
        return False  # the CUDA driver reserves far more address space than it uses

    def device_key(self) -> str:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0]
        return f"cuda-{visible}"

    def open_device(self, threads: int | None) -> CudaDevice:
        return CudaDevice()

    def ceilings(self, threads: int | None, remeasure: bool = False) -> Ceilings:
        reason = self.unavailable_reason()
        if reason:
            raise BackendUnavailableError(f"cannot measure CUDA ceilings: {reason}")
        name = re.sub(r"[^A-Za-z0-9]+", "-", _device_name())
        path = settings.cache_dir() / "ceilings" / f"{self.platform()}-{name}.json"
        return cached_ceilings(path, self._measure, remeasure, _THEORETICAL_PEAK)

    def _measure(self) -> Ceilings:
        proc = subprocess.run([sys.executable, "-m", "klineage.backends._cuda_probe"],
                              capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            raise ToolchainError(f"the CUDA ceiling probe failed: {proc.stderr.strip()[-800:]}")
        data = json.loads(proc.stdout)
        return Ceilings(platform=self.platform(), bandwidth_gbps=data["copy_gbps"],
                        compute_gflops=data["bf16_gflops"], cache_bytes=data["l2_bytes"],
                        measured_at=datetime.now(UTC).isoformat(timespec="seconds"),
                        details={"device": _device_name(), **data["details"]})


def _runs(tool: str) -> bool:
    try:
        return run_tool([tool, "--version"]).returncode == 0
    except ToolchainError:
        return False


@cache
def _nvcc_version(nvcc: str) -> dict[str, str]:
    proc = run_tool([nvcc, "--version"])
    if proc.returncode != 0:
        raise ToolchainError(f"{nvcc} --version failed: {proc.stderr.strip()}")
    match = re.search(r"release (\d+\.\d+)", proc.stdout)
    return {"nvcc": proc.stdout.strip().splitlines()[-1],
            "cuda": match.group(1) if match else "unknown"}


@cache
def _device_capability() -> tuple[int, int] | None:
    try:
        import torch
    except ImportError:
        return None
    return torch.cuda.get_device_capability(0) if torch.cuda.is_available() else None


@cache
def _device_name() -> str:
    import torch

    return torch.cuda.get_device_name(0)


_PTXAS_FUNCTION = re.compile(r"Compiling entry function '([^']+)'")
_PTXAS_NUMBERS = {
    "registers": re.compile(r"Used (\d+) registers"),
    "stack_bytes": re.compile(r"(\d+) bytes stack frame"),
    "spill_store_bytes": re.compile(r"(\d+) bytes spill stores"),
    "spill_load_bytes": re.compile(r"(\d+) bytes spill loads"),
    "shared_bytes": re.compile(r"(\d+) bytes smem"),
}


def parse_ptxas_report(log: str) -> dict[str, Any]:
    """Per-kernel registers, stack, spills and static shared memory from ``-Xptxas -v``."""
    kernels: dict[str, dict[str, int]] = {}
    current = None
    for line in log.splitlines():
        match = _PTXAS_FUNCTION.search(line)
        if match:
            current = kernels.setdefault(match.group(1), {})
            continue
        if current is None:
            continue
        for key, pattern in _PTXAS_NUMBERS.items():
            found = pattern.search(line)
            if found:
                current[key] = int(found.group(1))
    spills = sum(k.get("spill_store_bytes", 0) + k.get("spill_load_bytes", 0) for k in kernels.values())
    return {"kernels": kernels, "total_spill_bytes": spills}


def sass(artifact: Path) -> str:
    """The SASS of a built kernel (cuobjdump), for compiled-output feature checks."""
    tool = settings.cuobjdump()
    if tool is None:
        raise ToolchainError("cuobjdump not found (pip install nvidia-cuda-cuobjdump)")
    disassembler = settings.nvdisasm()
    env = None
    if disassembler:  # cuobjdump finds nvdisasm only on PATH
        env = {"PATH": f"{Path(disassembler).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    proc = run_tool([tool, "--dump-sass", str(artifact)], env=env)
    if proc.returncode != 0:
        raise ToolchainError(f"cuobjdump failed on {artifact}: {proc.stderr.strip()}")
    return proc.stdout


BACKEND = CudaBackend
