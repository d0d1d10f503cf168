"""What this machine offers klineage: compilers, cores, SIMD, GPU, measured ceilings."""

from __future__ import annotations

import os
import platform
import shutil
from typing import Any

from klineage import __version__, settings
from klineage.backends import get_backend
from klineage.errors import KlineageError

__all__ = ["doctor"]


def doctor(threads: int | None = None, remeasure: bool = False) -> dict[str, Any]:
    """Facts as a flat dict (the CLI renders it; ``--json`` prints it)."""
    cpu = get_backend("cpu")
    facts: dict[str, Any] = {
        "klineage": __version__,
        "python": platform.python_version(),
        "machine": f"{platform.machine()} {platform.node()}",
        "cores available": len(os.sched_getaffinity(0)),
        "cpu platform": cpu.platform(),
        "cache dir": str(settings.cache_dir()),
    }
    unavailable = cpu.unavailable_reason()
    facts["cpu backend"] = unavailable or "ok: " + "; ".join(cpu.toolchain().values())
    if not unavailable:
        count = threads or len(os.sched_getaffinity(0))
        ceilings = cpu.ceilings(count, remeasure=remeasure)
        facts[f"cpu ceilings ({count} threads)"] = {
            "copy GB/s": round(ceilings.bandwidth_gbps, 1),
            "fp32 GFLOP/s": round(ceilings.compute_gflops, 1),
            "last-level cache MiB": ceilings.cache_bytes >> 20,
            "measured": ceilings.measured_at,
        }
    facts["nvcc"] = shutil.which(settings.nvcc()) or "not found"
    try:
        cuda = get_backend("cuda")
        facts["cuda backend"] = cuda.unavailable_reason() or f"ok: {cuda.platform()}"
    except (KlineageError, ImportError) as exc:
        facts["cuda backend"] = f"unavailable: {exc}"
    return facts
