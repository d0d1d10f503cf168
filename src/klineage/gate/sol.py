"""Speed of light: a result against the platform's measured ceilings, and the cheat bound."""

from __future__ import annotations

import os

from klineage.backends._shared import measured_quietly
from klineage.backends.base import Ceilings
from klineage.gate.report import SpeedOfLight, Verdict
from klineage.workload.model import Workload

__all__ = ["COMPUTE_SLACK", "MEMORY_SLACK", "judge", "speed_of_light", "too_fast"]

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
    above = _above(sol, sol.compute_gflops, sol.bandwidth_gbps, "measured")
    return f"{above}: faster than speed of light" if above else None


def judge(sol: SpeedOfLight, ceilings: Ceilings) -> tuple[Verdict, str] | None:
    """The verdict of a result against the ceilings it was measured with; None within them.

    Beating a ceiling is a cheat only where the ceiling is believed: measured with the machine
    quiet, or the hardware's theoretical bound (``details['theoretical_gflops']`` and
    ``['theoretical_gbps']``). A ceiling probed while other processes loaded the machine may
    simply be low, so a result above it alone is ``unmeasurable``, never an accusation.
    """
    reason = too_fast(sol)
    if reason is None:
        return None
    if measured_quietly(ceilings):
        return Verdict.REJECTED_CHEAT, reason
    details = ceilings.details
    hard = _above(sol, details.get("theoretical_gflops"), details.get("theoretical_gbps"),
                  "hardware's theoretical")
    if hard:
        return Verdict.REJECTED_CHEAT, f"{hard}: faster than speed of light"
    other = details.get("other_cores")
    load = ("" if other is None else
            f" (other processes used {other:.1f} of the machine's {os.cpu_count()} cores)")
    return Verdict.UNMEASURABLE, (
        f"the ceiling could not be measured quietly: it was probed on a loaded machine{load}, "
        f"and {_above(sol, sol.compute_gflops, sol.bandwidth_gbps, 'probed')}, which proves "
        f"nothing; re-run it on a quiet machine")


def _above(sol: SpeedOfLight, gflops: float | None, gbps: float | None, kind: str) -> str | None:
    """What the result beats by more than the slack, among these rates (None: no such bound)."""
    if sol.achieved_gflops and gflops and sol.achieved_gflops > COMPUTE_SLACK * gflops:
        return f"{sol.achieved_gflops:.1f} GFLOP/s is above the {kind} peak {gflops:.1f} GFLOP/s"
    if (sol.memory_enforced and sol.achieved_gbps and gbps
            and sol.achieved_gbps > MEMORY_SLACK * gbps):
        return (f"{sol.achieved_gbps:.1f} GB/s is above the {kind} copy bandwidth "
                f"{gbps:.1f} GB/s")
    return None
