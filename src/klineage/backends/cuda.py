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

import numpy as np

from klineage import settings
from klineage.backends._arenas import CudaArena, word_bytes
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
from klineage.backends._flags import refused_flag
from klineage.backends._runner_view import CUDA_WRITES, cuda_runner_view
from klineage.backends._shared import cached_ceilings
from klineage.backends.base import BuildResult, Ceilings, RunnerSpec
from klineage.errors import BackendUnavailableError, ToolchainError
from klineage.workload.dtypes import dtype_info
from klineage.workload.inputs import parse_init, shaping
from klineage.workload.model import KernelSpec, TensorSpec, Workload

__all__ = ["CudaBackend", "CudaDevice", "parse_ptxas_report", "sass"]

_BASE_FLAGS = ("-O3", "-std=c++17", "-Xcompiler", "-fPIC", "-shared", "-Xptxas", "-v",
               "-cudart", "shared", "-lineinfo")
_DEFAULT_ARCH = "sm_90a"
_FLUSH_FACTOR = 2  # flush writes twice the L2 size
_THEORETICAL_PEAK = (20_000.0, 5_000_000.0)  # GB/s, GFLOP/s: above any GPU made so far

DENIED_SYMBOLS = {
    "work on a stream other than the one the harness times": (
        "cudaStreamCreate*", "cuStreamCreate*", "cudaLaunchHostFunc", "cudaStreamAddCallback",
        "cudaGraph*", "cuGraph*", "cudaStreamBeginCapture*", "*_ptsz", "*_ptds",
    ),
}
# The runtime API and nvcc's registration code. cudaGetDriverEntryPoint stays allowed (experts
# reach cuTensorMapEncodeTiled through it); a stream made through the driver is caught at run time.
ALLOWED_SYMBOLS = ("cuda*", "__cuda*", "exit")
"""The CUDA runtime, and ``exit``: nvcc gives every non-inline ``__device__`` function a host-side
body of ``::exit(1)`` (a kernel with a device helper imports it; found by the style corpus). A
kernel that calls it kills its runner mid-call, which the sandbox reports as a crash."""


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
        path, sha = trusted_build(SANDBOX_SOURCES / "_runner.c", self.runner_name,
                                  [settings.nvcc(), "-O2", "-DKL_CUDA", *self.runner_flags, "-cudart",
                                   "shared", "-Xcompiler", "-pthread", "-ldl"])
        toolkit = Path(settings.nvcc()).resolve().parent.parent
        reads, devices = cuda_runner_view("-DKL_PYTHON" in self.runner_flags, toolkit)
        # No cache flush here: the L2 is flushed from the trusted side (one per GPU).
        return RunnerSpec(path, sha, reads, devices, CUDA_WRITES)

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
        if not torch.cuda.is_available():
            return "no CUDA device is visible to torch"
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


class CudaDevice:
    """The trusted side's GPU memory: torch tensors, and the device arenas the runner shares by
    IPC handle (the runner can write them, so inputs are compared with a copy after each call).
    The L2 is flushed from here: it is one per GPU, whichever context writes it."""

    torch_device = "cuda"
    inputs_protected = False
    async_streams = True
    helper_threads = 2
    """The driver's threads: one honest layernorm call on the H200 used 2.0 ms of CPU in 0.5 ms
    (1 call in about 5,000; 2026-12-01), more than the spinning main thread alone can."""

    def arena(self, nbytes: int, name: str) -> CudaArena:
        return CudaArena(nbytes, name, self._torch)

    def _upload(self, values: np.ndarray) -> Any:
        if values.dtype.name == "bfloat16":
            tensor = self._torch.from_numpy(values.view(np.int16)).view(self._torch.bfloat16)
        else:
            tensor = self._torch.from_numpy(np.ascontiguousarray(values))
        return tensor.to("cuda")

    def put(self, view: Any, values: Any) -> None:
        view.copy_(self._upload(values) if isinstance(values, np.ndarray) else values)

    def clone(self, view: Any) -> Any:
        return view.clone()

    def copy_into(self, sink: Any, view: Any) -> None:
        sink.copy_(view)

    def __init__(self) -> None:
        import torch

        self._torch = torch
        l2 = torch.cuda.get_device_properties(0).L2_cache_size
        self._flush = torch.empty(_FLUSH_FACTOR * l2 // 4, dtype=torch.int32, device="cuda")
        self._starts: dict[tuple[int, int], Any] = {}

    def _torch_dtype(self, dtype: np.dtype) -> Any:
        t = self._torch
        return {"bfloat16": t.bfloat16, "float16": t.float16, "float32": t.float32,
                "float64": t.float64, "int8": t.int8, "int32": t.int32, "int64": t.int64,
                "uint8": t.uint8, "bool": t.bool}[np.dtype(dtype).name]

    def random(self, spec: TensorSpec, dims: tuple[int, ...], seed: int, index: int) -> Any:
        """Drawn on the device by torch's generator: host generation of GiB-sized inputs
        dominated GPU gate time. Same (seed, index, dims): same values, on this device."""
        generator = self._torch.Generator(device="cuda")
        generator.manual_seed((seed * 1_000_003 + index) % (1 << 63))
        buffer = self._generate(spec, dims, generator)
        if buffer.numel() and not bool(buffer.any()):  # never hand out all zeros
            buffer.view(-1)[0] = 1
        self._torch.cuda.synchronize()
        return buffer

    def generator(self, rng: np.random.Generator) -> Any:
        generator = self._torch.Generator(device="cuda")
        generator.manual_seed(int(rng.integers(0, 1 << 62)))
        return generator

    def draw(self, spec: TensorSpec, dims: tuple[int, ...], generator: Any) -> Any:
        return self._generate(spec, dims, generator)

    def _generate(self, spec: TensorSpec, dims: tuple[int, ...], generator: Any) -> Any:
        torch = self._torch
        kind, args = parse_init(spec.init, spec.dtype)
        shape = tuple(dims)
        if kind == "normal":
            values = torch.randn(shape, generator=generator, device="cuda")
            values = values * args[1] + args[0] if args else values
        elif kind == "uniform":
            values = torch.rand(shape, generator=generator, device="cuda") * (args[1] - args[0]) + args[0]
        elif kind == "randint":
            values = torch.randint(int(args[0]), int(args[1]), shape, generator=generator, device="cuda")
        else:
            values = torch.rand(shape, generator=generator, device="cuda") < 0.5
        how = shaping(spec.init)
        if how and shape:  # as inputs.draw_values shapes them on the host
            if how == "sorted":
                values = torch.sort(values, dim=-1).values
            elif how == "constant_rows":
                values = values[..., :1].expand(shape)
            else:
                pool = values.reshape(-1)[:8]
                values = pool[torch.randint(0, pool.numel(), shape, generator=generator, device="cuda")]
        return values.to(self._torch_dtype(dtype_info(spec.dtype).numpy)).contiguous()

    def download(self, buffer: Any) -> np.ndarray:
        self._torch.cuda.synchronize()
        if buffer.dtype == self._torch.bfloat16:
            import ml_dtypes

            return buffer.view(self._torch.int16).cpu().numpy().view(ml_dtypes.bfloat16)
        return buffer.cpu().numpy()

    def pick_blocks(self, count: int, share: int, generator: Any) -> Any:
        # On the device: an upload from host memory would wait for all the work queued before it.
        torch = self._torch
        windows = max(1, count // share)
        width = count // windows
        starts = self._starts.get((windows, width))
        if starts is None:
            starts = self._starts[(windows, width)] = torch.arange(0, windows * width, width,
                                                                   device="cuda")
        return starts + torch.randint(0, width, (windows,), generator=generator, device="cuda")

    def words_differ(self, a: Any, b: Any) -> Any:
        word = {8: self._torch.int64, 4: self._torch.int32, 2: self._torch.int16,
                1: self._torch.uint8}[word_bytes(a.numel() * a.element_size())]
        return self._torch.count_nonzero(a.reshape(-1).view(word) != b.reshape(-1).view(word))

    def bytes_not(self, buffer: Any, byte: int) -> Any:
        return self._torch.count_nonzero(buffer.reshape(-1).view(self._torch.uint8) != byte)

    def counts(self, pending: list[Any]) -> list[int]:
        return self._torch.stack(pending).tolist() if pending else []

    def reference_input(self, buffer: Any, framework: str) -> Any:
        return buffer.clone() if framework == "torch" else self.download(buffer)

    def native(self, value: Any, dtype: str) -> Any:
        torch = self._torch
        if isinstance(value, np.ndarray):
            if value.dtype.name == "bfloat16":
                value = value.astype(np.float32)
            value = torch.from_numpy(np.ascontiguousarray(value))
        tensor = value.to("cuda")
        if dtype == "bool":
            # Raw bytes: a bool view would turn the 0xAB poison into a plausible True.
            return tensor.view(torch.uint8) if tensor.dtype == torch.bool else tensor.to(torch.uint8)
        return tensor.double() if dtype_info(dtype).is_float else tensor

    def empty(self, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        return self._torch.empty(tuple(shape), dtype=self._torch_dtype(dtype), device="cuda")

    def fill(self, buffer: Any, value: float | int, bytewise: bool = False) -> None:
        # No synchronize: the session synchronizes once before each call it hands the runner.
        (buffer.view(self._torch.uint8) if bytewise else buffer).fill_(value)

    def synchronize(self) -> None:
        self._torch.cuda.synchronize()

    def flush_cache(self) -> None:
        self._flush.fill_(0x5A)


BACKEND = CudaBackend
