"""Speed of light: a result against the platform's measured ceilings, and the cheat bound."""

from __future__ import annotations

from klineage.backends.base import Ceilings
from klineage.gate.report import SpeedOfLight
from klineage.workload.model import Workload

__all__ = ["COMPUTE_SLACK", "MEMORY_SLACK", "speed_of_light", "too_fast"]

MEMORY_SLACK = 1.25
"""How far past the measured copy bandwidth a result may go before it is called a cheat: the
ceiling is a copy (read + write); read-heavy kernels honestly beat it by a few percent, and a
ceiling measured on a busy machine can be low."""
COMPUTE_SLACK = 1.10
"""The arithmetic peak is a hard limit; this covers clock variation between measurements."""


def speed_of_light(workload: Workload, median_s: float, ceilings: Ceilings,
                   footprint_bytes: int) -> SpeedOfLight:
    """Achieved rates and the share of the bound, at the benchmark sizes."""
    bytes_, flops = workload.cost.evaluate(dict(workload.axes))
    memory_enforced = footprint_bytes >= 2 * ceilings.cache_bytes
    memory_s = bytes_ / (ceilings.bandwidth_gbps * 1e9) if bytes_ else None
    compute_s = flops / (ceilings.compute_gflops * 1e9) if flops else None
    terms = {k: v for k, v in (("memory", memory_s), ("compute", compute_s)) if v}
    limiter = max(terms, key=terms.get) if terms else None
    bound = terms[limiter] if limiter else None
    return SpeedOfLight(
        bytes=bytes_,
        flops=flops,
        bandwidth_gbps=ceilings.bandwidth_gbps,
        compute_gflops=ceilings.compute_gflops,
        achieved_gbps=bytes_ / median_s / 1e9 if bytes_ else None,
        achieved_gflops=flops / median_s / 1e9 if flops else None,
        bound_s=bound,
        fraction=bound / median_s if bound else None,
        limiter=limiter,
        memory_enforced=memory_enforced,
    )


def too_fast(sol: SpeedOfLight) -> str | None:
    """A reason when the result beats a ceiling by more than measurement slack."""
    if sol.achieved_gflops and sol.achieved_gflops > COMPUTE_SLACK * sol.compute_gflops:
        return (f"{sol.achieved_gflops:.1f} GFLOP/s is above the measured peak "
                f"{sol.compute_gflops:.1f} GFLOP/s: faster than speed of light")
    if (sol.memory_enforced and sol.achieved_gbps
            and sol.achieved_gbps > MEMORY_SLACK * sol.bandwidth_gbps):
        return (f"{sol.achieved_gbps:.1f} GB/s is above the measured copy bandwidth "
                f"{sol.bandwidth_gbps:.1f} GB/s: faster than speed of light")
    return None
