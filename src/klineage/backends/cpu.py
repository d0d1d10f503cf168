"""CPU backend: C/C++ kernels built by gcc/clang into shared objects, called through ctypes."""

from __future__ import annotations

import hashlib
import json
import os
import platform as _platform
import subprocess
import sys
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from klineage import settings
from klineage.backends._arenas import HostArena, word_bytes
from klineage.backends._build_cache import (
    SANDBOX_SOURCES,
    cached_build,
    imported_symbols,
    run_tool,
    system_call_sites,
    trusted_build,
)
from klineage.backends._shared import cached_ceilings
from klineage.backends.base import BuildResult, Ceilings, RunnerSpec
from klineage.errors import ToolchainError
from klineage.workload.dtypes import dtype_info
from klineage.workload.inputs import draw_values, generate_array
from klineage.workload.model import KernelSpec, TensorSpec, Workload
from klineage.workload.reference import to_numpy

__all__ = ["CpuBackend", "CpuDevice"]

_BASE_FLAGS = ("-O3", "-march=native", "-fPIC", "-shared")
_STD = {"c": "-std=gnu11", "cpp": "-std=gnu++17"}
_ALIGN = 64  # a cache line: what an AVX-512 kernel may reasonably expect of its buffers
_PROBE = Path(__file__).with_name("_cpu_probe.c")


class CpuBackend:
    """Builds C and C++ kernels for this CPU; timing threads are explicit and recorded."""

    name = "cpu"
    modeled = False
    base_flags = _BASE_FLAGS
    denied_symbols: ClassVar[dict[str, tuple[str, ...]]] = {}
    allowed_symbols: ClassVar[tuple[str, ...]] = ()
    runner_name: ClassVar[str] = "kl_runner"
    runner_flags: ClassVar[tuple[str, ...]] = ()
    """``_runner.c`` built with these too (``-DKL_PYTHON``: the profile of an embedded interpreter)."""

    def unavailable_reason(self) -> str | None:
        try:
            self.toolchain()
        except ToolchainError as exc:
            return str(exc)
        return None

    def platform(self) -> str:
        return f"cpu-{_platform.machine()}-{_simd_level()}"

    def toolchain(self) -> dict[str, str]:
        return _toolchain(settings.c_compiler(), settings.cxx_compiler())

    def build(self, kernel: KernelSpec) -> BuildResult:
        if kernel.language not in _STD:
            raise ToolchainError(f"the cpu backend builds C and C++ kernels, not {kernel.language}")
        compiler = settings.c_compiler() if kernel.language == "c" else settings.cxx_compiler()
        key = hashlib.sha256(
            "\0".join([kernel.source_hash(), json.dumps(self.toolchain()), self.platform(),
                       _cpu_model(), *_BASE_FLAGS]).encode()
        ).hexdigest()

        def command(out: Path) -> list[str]:
            return [compiler, *_BASE_FLAGS, _STD[kernel.language], *kernel.flags,
                    str(kernel.source), "-o", str(out), "-lm"]

        return cached_build(self.name, key, command)

    def imported_symbols(self, artifact: Path) -> set[str]:
        return imported_symbols(artifact)

    def system_call_sites(self, artifact: Path) -> list[str]:
        return system_call_sites(artifact)

    def default_threads(self, kernel: KernelSpec) -> int | None:
        return kernel.threads or len(os.sched_getaffinity(0))

    def sandbox_files(self, workload: Workload) -> tuple[Path, ...]:
        return ()

    def sandbox_runner(self) -> RunnerSpec:
        path, sha = trusted_build(SANDBOX_SOURCES / "_runner.c", self.runner_name,
                                  [settings.c_compiler(), "-O2", "-std=gnu11", *self.runner_flags,
                                   "-pthread", "-ldl"])
        # The runner writes this much of its own memory before each call: private caches cold.
        return RunnerSpec(path, sha, (str(2 * _per_core_cache_bytes()),))

    def calibration_kernel(self) -> tuple[Path, str]:
        return trusted_build(SANDBOX_SOURCES / "_spin.c", "spin.so",
                             [settings.c_compiler(), "-O2", "-fPIC", "-shared"])

    def sandbox_env(self, threads: int | None, workload: Workload) -> dict[str, str]:
        # OpenMP keeps libgomp's defaults (a team spins a while after a region before it sleeps):
        # the runner is stopped between calls, so the spin costs only the calls themselves. A
        # passive team made the rmsnorm and softmax experts 1.4x slower (measured 2026-12-01).
        return {"OMP_NUM_THREADS": str(threads or 1), "PATH": "/usr/bin:/bin", "LC_ALL": "C"}

    def address_space_limit_ok(self) -> bool:
        return True

    def device_key(self) -> str:
        return f"cpu-{_machine_key()}"

    def open_device(self, threads: int | None) -> CpuDevice:
        return CpuDevice()

    def ceilings(self, threads: int | None, remeasure: bool = False) -> Ceilings:
        count = threads or 1
        path = settings.cache_dir() / "ceilings" / f"{self.platform()}-{_machine_key()}-t{count}.json"
        return cached_ceilings(path, lambda: self._measure(count), remeasure, _theoretical_peak(count))

    def _measure(self, threads: int) -> Ceilings:
        probe = KernelSpec(name="probe", source=_PROBE, language="c", flags=("-fopenmp",))
        built = self.build(probe)
        if not built.ok:
            raise ToolchainError(f"could not build the CPU ceiling probe:\n{built.log}")
        script = (
            "import ctypes, json, sys\n"
            "lib = ctypes.CDLL(sys.argv[1])\n"
            "lib.kl_copy_gbps.restype = lib.kl_fma_gflops.restype = ctypes.c_double\n"
            "lib.kl_copy_gbps.argtypes = [ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int]\n"
            "lib.kl_fma_gflops.argtypes = [ctypes.c_long]\n"
            "plain = max(lib.kl_copy_gbps(128 << 20, 3, 12, 0) for _ in range(2))\n"
            "streaming = max(lib.kl_copy_gbps(128 << 20, 3, 12, 1) for _ in range(2))\n"
            "fl = max(lib.kl_fma_gflops(4_000_000) for _ in range(3))\n"
            "print(json.dumps([plain, streaming, fl]))\n"
        )
        count = str(threads)
        env = {**os.environ, "OMP_NUM_THREADS": count, "OPENBLAS_NUM_THREADS": count}
        proc = subprocess.run([sys.executable, "-c", script, str(built.artifact)], env=env,
                              capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            raise ToolchainError(f"the CPU ceiling probe failed: {proc.stderr.strip()[-500:]}")
        memcpy_gbps, streaming_gbps, gflops = json.loads(proc.stdout)
        return Ceilings(
            platform=self.platform(),
            bandwidth_gbps=max(memcpy_gbps, streaming_gbps),
            compute_gflops=gflops,
            cache_bytes=_last_level_cache_bytes(),
            threads=threads,
            measured_at=datetime.now(UTC).isoformat(timespec="seconds"),
            details={"cpu": _cpu_model(), "memcpy_gbps": memcpy_gbps,
                     "streaming_copy_gbps": streaming_gbps,
                     "copy": "best of memcpy and a streaming-store copy, 3 x 128 MiB pairs rotated",
                     "compute": "fp32 FMA, 12 chains x 16 lanes per thread"},
        )


class CpuDevice:
    """The trusted side's host memory: 64-byte aligned numpy arrays, and the memfd arenas the
    runner shares (inputs reach it read-only, so ``inputs_protected``)."""

    torch_device = "cpu"
    inputs_protected = True
    async_streams = False
    helper_threads = 0

    def arena(self, nbytes: int, name: str) -> HostArena:
        return HostArena(nbytes, name)

    def generator(self, rng: np.random.Generator) -> np.random.Generator:
        return rng

    def draw(self, spec: TensorSpec, dims: tuple[int, ...], generator: np.random.Generator) -> np.ndarray:
        return draw_values(spec, dims, generator)

    def put(self, view: np.ndarray, values: np.ndarray) -> None:
        view[...] = values

    def clone(self, view: np.ndarray) -> np.ndarray:
        return view.copy()

    def copy_into(self, sink: np.ndarray, view: np.ndarray) -> None:
        np.copyto(sink, view)


    def random(self, spec: TensorSpec, dims: tuple[int, ...], seed: int, index: int) -> np.ndarray:
        array = generate_array(spec, dims, seed, index)
        buffer = self.empty(array.shape, array.dtype)
        buffer[...] = array
        return buffer

    def pick_blocks(self, count: int, share: int, generator: np.random.Generator) -> np.ndarray:
        windows = max(1, count // share)
        width = count // windows
        return np.arange(windows) * width + generator.integers(0, width, windows)

    def words_differ(self, a: np.ndarray, b: np.ndarray) -> int:
        word = np.dtype(f"u{word_bytes(a.nbytes)}")
        return int(np.count_nonzero(a.reshape(-1).view(word) != b.reshape(-1).view(word)))

    def bytes_not(self, buffer: np.ndarray, byte: int) -> int:
        return int(np.count_nonzero(buffer.view(np.uint8) != byte))

    def counts(self, pending: list[Any]) -> list[int]:
        return [int(c) for c in pending]

    def reference_input(self, buffer: np.ndarray, framework: str) -> np.ndarray:
        return buffer.copy()

    def native(self, value: Any, dtype: str) -> np.ndarray:
        array = to_numpy(value)
        if dtype == "bool":
            # Raw bytes: astype(bool) would turn the 0xAB poison into a plausible True.
            return array.view(np.uint8) if array.dtype == np.bool_ else array.astype(np.uint8)
        return array.astype(np.float64) if dtype_info(dtype).is_float else array

    def download(self, buffer: np.ndarray) -> np.ndarray:
        return buffer.copy()

    def empty(self, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        dtype = np.dtype(dtype)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        raw = np.empty(nbytes + _ALIGN, dtype=np.uint8)
        start = -raw.ctypes.data % _ALIGN
        return raw[start:start + nbytes].view(dtype).reshape(shape)

    def fill(self, buffer: np.ndarray, value: float | int, bytewise: bool = False) -> None:
        if bytewise:
            buffer.view(np.uint8).fill(value)
        else:
            buffer.fill(value)

    def synchronize(self) -> None:
        pass

    def flush_cache(self) -> None:
        # The runner flushes its core's private caches itself (RunnerSpec.extra_args); the shared
        # last-level cache is defeated by rotating input sets.
        pass


@cache
def _toolchain(cc: str, cxx: str) -> dict[str, str]:
    versions = {}
    for role, tool in (("cc", cc), ("cxx", cxx)):
        proc = run_tool([tool, "--version"])
        versions[role] = proc.stdout.splitlines()[0] if proc.returncode == 0 else "unavailable"
    if versions["cc"] == "unavailable":
        raise ToolchainError(f"C compiler {cc!r} does not run")
    return versions


@cache
def _cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    line = next((ln for ln in text.splitlines() if ln.startswith(("flags", "Features"))), "")
    return set(line.partition(":")[2].split())


def _simd_level() -> str:
    flags = _cpu_flags()
    for name in ("avx512f", "avx2", "avx", "sse2", "asimd"):
        if name in flags:
            return {"avx512f": "avx512", "asimd": "neon"}.get(name, name)
    return "scalar"


@cache
def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return _platform.processor() or "unknown"


def _machine_key() -> str:
    return hashlib.sha256(f"{_platform.node()}|{_cpu_model()}".encode()).hexdigest()[:10]


def _cache_size(level: int, default: int) -> int:
    base = Path("/sys/devices/system/cpu/cpu0/cache")
    for index in sorted(base.glob("index*")) if base.is_dir() else []:
        try:
            data_cache = "Instruction" not in (index / "type").read_text()
            if int((index / "level").read_text()) == level and data_cache:
                text = (index / "size").read_text().strip()
                scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1], 1)
                return int(text.rstrip("KMG")) * scale
        except (OSError, ValueError):
            continue
    return default


def _theoretical_peak(threads: int) -> tuple[float, float]:
    """Generous upper bounds (GB/s copied, GFLOP/s fp32) no CPU core of today exceeds: 5 GHz,
    two FMA units of the widest vectors it has, 50 GB/s of copy per thread."""
    lanes = {"avx512": 16, "avx2": 8, "avx": 8}.get(_simd_level(), 4)
    return 50.0 * threads, threads * 5.0 * 2 * 2 * lanes


def _last_level_cache_bytes() -> int:
    return _cache_size(3, 0) or _cache_size(2, 8 << 20)


def _per_core_cache_bytes() -> int:
    return _cache_size(2, 2 << 20)


BACKEND = CpuBackend
