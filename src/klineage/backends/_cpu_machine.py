"""Facts about this CPU that the CPU backend needs: its instruction sets, caches, clock, the
theoretical bounds its ceilings are held to, and the ceiling probe (``_cpu_probe.c``) run in a
worker process."""

from __future__ import annotations

import hashlib
import json
import os
import platform as _platform
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

from klineage.errors import ToolchainError

__all__ = ["FMA_UNITS", "PROBE", "clock_ghz", "cpu_flags", "cpu_model", "fma_bound_gflops",
           "last_level_cache_bytes", "machine_key", "per_core_cache_bytes", "probe_key",
           "run_probe", "runner_cores", "simd_level", "theoretical_peak"]

PROBE = Path(__file__).with_name("_cpu_probe.c")


@cache
def cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    line = next((ln for ln in text.splitlines() if ln.startswith(("flags", "Features"))), "")
    return set(line.partition(":")[2].split())


def simd_level() -> str:
    flags = cpu_flags()
    for name in ("avx512f", "avx2", "avx", "sse2", "asimd"):
        if name in flags:
            return {"avx512f": "avx512", "asimd": "neon"}.get(name, name)
    return "scalar"


@cache
def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return _platform.processor() or "unknown"


def machine_key() -> str:
    return hashlib.sha256(f"{_platform.node()}|{cpu_model()}".encode()).hexdigest()[:10]


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


FMA_UNITS = 2
"""FMA units per core at the build's vector width, for the bound the probe is tested against:
two on most cores of today. Cores that split a vector in halves (Zen 1 with AVX2, Zen 4 with
AVX-512, some Xeons with AVX-512) reach half of it, which the test allows for."""


def theoretical_peak(threads: int) -> tuple[float, float]:
    """Generous upper bounds (GB/s copied, GFLOP/s fp32) no CPU core of today exceeds: 50 GB/s
    of copy per thread; the widest vectors the CPU has, on two FMA units (four on ARM, as
    Neoverse V1 and Apple cores have), at 5 GHz or the fastest clock the system reports.
    A file claiming more is not believed, and a result above it is a cheat even where the
    ceiling could not be measured quietly."""
    clock = clock_ghz()
    ghz = max(5.0, clock[0] if clock else 0.0)
    units = 4 if _platform.machine() in ("aarch64", "arm64") else 2
    return 50.0 * threads, threads * ghz * 2 * units * _cpu_lanes()


def fma_bound_gflops(threads: int, lanes: int) -> float:
    """The fp32 FMA peak of ``lanes``-wide vectors on this machine: lanes x 2 flops x
    ``FMA_UNITS`` x the clock the system reports (5 GHz where it reports none)."""
    clock = clock_ghz()
    return threads * lanes * 2.0 * FMA_UNITS * (clock[0] if clock else 5.0)


def _cpu_lanes() -> int:
    """fp32 lanes of the widest vectors the CPU has. SVE: the architecture's 2048 bits, since
    a process may choose its own vector length."""
    if "sve" in cpu_flags():
        return 64
    return {"avx512": 16, "avx2": 8, "avx": 8}.get(simd_level(), 4)


@cache
def clock_ghz() -> tuple[float, str] | None:
    """The fastest a core may clock, and where that was read: cpufreq's maximum (boost
    included) where the kernel has it, else /proc/cpuinfo's "cpu MHz" (a VM reports the host's
    nominal clock there, which boost may pass); None where neither says."""
    khz = []
    for path in Path("/sys/devices/system/cpu").glob("cpu[0-9]*/cpufreq/cpuinfo_max_freq"):
        try:
            khz.append(int(path.read_text()))
        except (OSError, ValueError):
            continue
    if khz and max(khz) > 0:
        return max(khz) / 1e6, "cpufreq cpuinfo_max_freq"
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
        mhz = [float(ln.partition(":")[2]) for ln in lines if ln.startswith("cpu MHz")]
    except (OSError, ValueError):
        mhz = []
    return (max(mhz) / 1e3, "/proc/cpuinfo cpu MHz") if mhz and max(mhz) > 0 else None


@cache
def probe_key() -> str:
    return hashlib.sha256(PROBE.read_bytes()).hexdigest()[:10]


_PROBE_SCRIPT = """
import ctypes, json, sys
lib = ctypes.CDLL(sys.argv[1])
lib.kl_copy_gbps.restype = lib.kl_fma_gflops.restype = ctypes.c_double
lib.kl_copy_gbps.argtypes = [ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int]
lib.kl_fma_gflops.argtypes = [ctypes.c_double, ctypes.c_int]
plain = max(lib.kl_copy_gbps(128 << 20, 3, 12, 0) for _ in range(2))
streaming = max(lib.kl_copy_gbps(128 << 20, 3, 12, 1) for _ in range(2))
# Many short runs, the best kept: a neighbour can only slow a run down.
fma = [[lib.kl_fma_bytes(n), lib.kl_fma_chains(n), max(lib.kl_fma_gflops(2e9, n) for _ in range(9))]
       for n in (0, 1) if lib.kl_fma_bytes(n)]
print(json.dumps({"memcpy_gbps": plain, "streaming_copy_gbps": streaming, "fma": fma}))
"""


def run_probe(artifact: Path, threads: int) -> tuple[dict[str, Any], float | None]:
    """The probe's rates, measured in a worker process with the kernels' thread count, and the
    cores' worth of CPU other processes used meanwhile (None: unknown)."""
    from klineage.gate._load import LoadProbe  # here: the gate imports the backends

    count = str(threads)
    env = {**os.environ, "OMP_NUM_THREADS": count, "OPENBLAS_NUM_THREADS": count}
    # The probe's own CPU time counts as ours once it has been waited for (its children times).
    load = LoadProbe(lambda: os.times().children_user + os.times().children_system)
    proc = subprocess.run([sys.executable, "-c", _PROBE_SCRIPT, str(artifact)], env=env,
                          capture_output=True, text=True, timeout=600)
    other_cores = load.other_cores()
    if proc.returncode != 0:
        raise ToolchainError(f"the CPU ceiling probe failed: {proc.stderr.strip()[-500:]}")
    return json.loads(proc.stdout), other_cores


def last_level_cache_bytes() -> int:
    return _cache_size(3, 0) or _cache_size(2, 8 << 20)


def per_core_cache_bytes() -> int:
    return _cache_size(2, 2 << 20)


def runner_cores(threads: int) -> set[int]:
    """The cores a runner of ``threads`` threads is pinned to: the first of ours."""
    available = sorted(os.sched_getaffinity(0))
    return set(available[:max(1, min(threads, len(available)))])
