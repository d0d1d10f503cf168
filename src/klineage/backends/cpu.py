"""CPU backend: C/C++ kernels built by gcc/clang into shared objects, called through ctypes."""

from __future__ import annotations

import hashlib
import json
import os
import platform as _platform
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from klineage import settings
from klineage.backends._arenas import HostArena, word_bytes
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
from klineage.backends._cpu_machine import (
    PROBE,
    clock_ghz,
    cpu_model,
    fma_bound_gflops,
    last_level_cache_bytes,
    machine_key,
    per_core_cache_bytes,
    probe_key,
    run_probe,
    runner_cores,
    simd_level,
    theoretical_peak,
)
from klineage.backends._flags import refused_flag
from klineage.backends._runner_view import host_runner_view
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
        return f"cpu-{_platform.machine()}-{simd_level()}"

    def toolchain(self) -> dict[str, str]:
        return _toolchain(settings.c_compiler(), settings.cxx_compiler())

    def build(self, kernel: KernelSpec) -> BuildResult:
        if kernel.language not in _STD:
            raise ToolchainError(f"the cpu backend builds C and C++ kernels, not {kernel.language}")
        compiler = settings.c_compiler() if kernel.language == "c" else settings.cxx_compiler()
        key = hashlib.sha256(
            "\0".join([kernel.source_hash(), json.dumps(self.toolchain()), self.platform(),
                       cpu_model(), *_BASE_FLAGS]).encode()
        ).hexdigest()
        refused = refused_flag(kernel.flags, "gcc")
        if refused:
            return refused_build(key, refused)

        def command(out: Path) -> list[str]:
            return [compiler, *_BASE_FLAGS, _STD[kernel.language], *kernel.flags,
                    str(candidate_source(out, kernel.source)), "-o", str(out), "-lm"]

        jail = CandidateBuild(reads=toolchain_roots(compiler), sources=kernel.folder)
        return cached_build(self.name, key, command, candidate=jail)

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
        reads, devices = host_runner_view(python="-DKL_PYTHON" in self.runner_flags)
        # The runner writes this much of its own memory before each call: private caches cold.
        return RunnerSpec(path, sha, reads, devices)

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
        return f"cpu-{machine_key()}"

    def open_device(self, threads: int | None) -> CpuDevice:
        return CpuDevice(runner_cores(threads or 1), 2 * per_core_cache_bytes())

    def ceilings(self, threads: int | None, remeasure: bool = False) -> Ceilings:
        count = threads or 1
        # The probe's hash names the file: ceilings measured by another probe (the one whose
        # 64-byte chains spilled on AVX2 read a tenth of the peak) are never read as this one's.
        name = f"{self.platform()}-{machine_key()}-t{count}-{probe_key()}.json"
        return cached_ceilings(settings.cache_dir() / "ceilings" / name,
                               lambda: self._measure(count), remeasure, theoretical_peak(count))

    def _probe_artifact(self) -> Path:
        probe = KernelSpec(name="probe", source=PROBE, language="c", flags=("-fopenmp",))
        built = self.build(probe)
        if not built.ok:
            raise ToolchainError(f"could not build the CPU ceiling probe:\n{built.log}")
        return built.artifact

    def _measure(self, threads: int) -> Ceilings:
        # Imported here: the gate imports this backend (through modelnew), so a module-level
        # import would be circular.
        from klineage.gate._noise import LOADED_CORES

        rates, other_cores = run_probe(self._probe_artifact(), threads)
        fma = rates["fma"]  # [vector bytes, chains, GFLOP/s] per probed vector shape
        hard_gbps, hard_gflops = theoretical_peak(threads)
        clock = clock_ghz()
        return Ceilings(
            platform=self.platform(),
            bandwidth_gbps=max(rates["memcpy_gbps"], rates["streaming_copy_gbps"]),
            compute_gflops=max(gflops for _, _, gflops in fma),
            cache_bytes=last_level_cache_bytes(),
            threads=threads,
            measured_at=datetime.now(UTC).isoformat(timespec="seconds"),
            details={
                "cpu": cpu_model(), "memcpy_gbps": rates["memcpy_gbps"],
                "streaming_copy_gbps": rates["streaming_copy_gbps"],
                "copy": "best of memcpy and a streaming-store copy, 3 x 128 MiB pairs rotated",
                "compute": "fp32 FMA, the best of " + ", ".join(
                    f"{8 * size}-bit vectors x {chains} chains per thread: {gflops:.1f} GFLOP/s"
                    for size, chains, gflops in fma),
                "fma_bound_gflops": fma_bound_gflops(threads, fma[0][0] // 4),
                "clock_ghz": clock[0] if clock else None,
                "clock_from": clock[1] if clock else "not readable: 5 GHz assumed",
                "theoretical_gbps": hard_gbps, "theoretical_gflops": hard_gflops,
                "other_cores": None if other_cores is None else round(other_cores, 2),
                # Unknown load (no /proc/stat) is not called loaded, as for timed phases.
                "quiet": other_cores is None or other_cores < LOADED_CORES,
            },
        )


class CpuDevice:
    """The trusted side's host memory: 64-byte aligned numpy arrays, and the memfd arenas the
    runner shares (inputs reach it read-only, so ``inputs_protected``)."""

    torch_device = "cpu"
    inputs_protected = True
    async_streams = False
    helper_threads = 0

    def __init__(self, cores: set[int] | None = None, flush_bytes: int = 0):
        """``cores``: those the runners are pinned to, whose private caches ``flush_cache``
        writes over (``flush_bytes`` of ours on each); none for a modeled runner."""
        self._cores = sorted(cores or ())
        self._starts: dict[tuple[int, int], np.ndarray] = {}
        self._flush = np.zeros(flush_bytes if self._cores else 0, dtype=np.uint8)

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
        starts = self._starts.get((windows, width))
        if starts is None:
            starts = self._starts[(windows, width)] = np.arange(0, windows * width, width)
        # The narrowest offsets draw fastest (a share of every input, before every timed call).
        narrow = np.uint8 if width <= 256 else np.int64
        return starts + generator.integers(0, width, windows, dtype=narrow)

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
        """The runners' cores' private caches written over by this thread, moved onto each in
        turn while the runners are stopped (the shared last-level cache is defeated by rotating
        input sets). The runner did it itself once, after it was continued and before its clock
        started: 60-140 us in which a helper thread of the kernel's ran untimed."""
        if not self._flush.size:
            return
        home = os.sched_getaffinity(0)
        try:
            for core in self._cores:
                os.sched_setaffinity(0, {core})
                self._flush[::64] += 1
        finally:
            os.sched_setaffinity(0, home)


@cache
def _toolchain(cc: str, cxx: str) -> dict[str, str]:
    versions = {}
    for role, tool in (("cc", cc), ("cxx", cxx)):
        proc = run_tool([tool, "--version"])
        versions[role] = proc.stdout.splitlines()[0] if proc.returncode == 0 else "unavailable"
    if versions["cc"] == "unavailable":
        raise ToolchainError(f"C compiler {cc!r} does not run")
    return versions


BACKEND = CpuBackend
