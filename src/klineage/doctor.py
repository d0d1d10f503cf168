"""What this machine offers klineage: compilers, cores, SIMD, GPU, measured ceilings."""

from __future__ import annotations

import os
import platform
import shutil
from pathlib import Path
from typing import Any

from klineage import __version__, settings
from klineage.backends import get_backend
from klineage.errors import KlineageError

__all__ = ["doctor"]


def doctor(threads: int | None = None, remeasure: bool = False,
           config: Path | None = None) -> dict[str, Any]:
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
    facts["candidate confinement"] = _confinement()
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
    facts.update(_brains(config))
    return facts


def _confinement() -> str:
    """What jails a candidate's build and its runner here (docs/gate.md, 'Around the runner')."""
    from klineage.jail import Jail

    return Jail(read=(Path("/usr"),)).describe()


def _brains(path: Path | None) -> dict[str, Any]:
    """The default brain and each brain's usability (keys are reported as set, never shown)."""
    from klineage.config import load_config
    from klineage.editors._status import brain_status

    try:
        config = load_config(path)
    except KlineageError as exc:
        return {"brains": f"configuration error: {exc}"}
    facts = {"brain (default)": f"{config.brain.name} (config: {config.source})"}
    facts.update({f"brain {name}": status for name, status in brain_status(config).items()})
    return facts
