"""When a timing is no measurement: the rules that turn a loaded or noisy timed phase into
``unmeasurable`` rather than a decision (docs/gate.md, "the load")."""

from __future__ import annotations

import math
import os

from klineage.gate.report import Comparison, TimingStats

__all__ = ["LOADED_CORES", "MAX_INTERVAL", "MAX_SPREAD", "comparison_noise", "contention", "free_threads",
           "quiet_limit", "timing_noise"]

LOADED_CORES = 0.5
"""A timed phase during which other processes used at least half a core (or a hypervisor stole
it) ran on a loaded machine: its noise has a cause outside the kernels."""
FREE_CORE_SLACK = 0.1
"""Others' load beyond the free cores that still leaves the kernel's own cores to it: one process
keeping a core busy read 1.000-1.005 cores here, the system's own work 0.00-0.01; two of them
beside a 1-thread kernel read 1.19 (its core shared), which must not pass."""
MAX_SPREAD = 0.5
"""On a loaded machine, trial medians further apart than half their median are no measurement
(a 2-core machine loaded by another process spread an honest kernel's over 107%, 0.43 ms timed
as 7.5 ms, and the gate still said accepted). Spread alone is no sign: on a quiet 2-core VM
(other processes under 0.01 core) honest experts' trial medians were up to 333% apart while
their median held, so noise is called only where the load says why."""
MAX_INTERVAL = 0.25
"""On a loaded machine, a comparison that decided nothing ('same') with its 95% interval wider
than ±25% could not have told a 25% difference from none: noise decided it, not the kernels."""


def timing_noise(timing: TimingStats, modeled: bool = False) -> str | None:
    """Why a profile is no measurement, or None: it ran while other processes used cores the
    kernel claimed (``contention``), or its trial medians were ``MAX_SPREAD`` apart while they
    loaded the machine (``LOADED_CORES``). A modeled backend's times do not depend on the load."""
    contended = None if modeled else contention(timing.other_cores, timing.threads)
    if contended or timing.spread <= MAX_SPREAD or not _loaded(timing.other_cores):
        return contended
    return f"its trial medians were {timing.spread:.0%} apart{_load(timing.other_cores)}"


def comparison_noise(comparison: Comparison, threads: int | None = None,
                     modeled: bool = False) -> str | None:
    """Why a comparison decided nothing for noise, or None: it ran while other processes used
    cores the kernels claimed (``contention``, whatever it decided), or it said 'same' with its
    95% interval wider than ``MAX_INTERVAL`` either side on a loaded machine, so it could not
    have told a difference that matters."""
    contended = None if modeled else contention(comparison.other_cores, threads)
    if contended:
        return contended
    half_width = math.sqrt(comparison.ci_high / comparison.ci_low) - 1
    if comparison.decision != "same" or half_width <= MAX_INTERVAL or not _loaded(comparison.other_cores):
        return None
    return (f"its 95% interval was ±{half_width:.0%} after {comparison.pairs} pairs"
            f"{_load(comparison.other_cores)}")


def contention(other_cores: float | None, threads: int | None) -> str | None:
    """Why a timed phase measured the machine rather than the kernel, or None: other processes
    used more than ``quiet_limit`` cores. On 2 cores a threaded expert went from 1.25 ms to
    16.05 ms under 1.4 cores of other load and was still judged faster with a tight interval
    (0.51-0.81): a decision that depends on cores another process holds is no decision,
    whatever its interval or spread."""
    if other_cores is None or other_cores <= quiet_limit(threads):
        return None
    cores = len(os.sched_getaffinity(0))
    free = max(0, cores - (threads or 1))
    return (f"other processes used {other_cores:.1f} of the machine's {cores} cores while it was "
            f"timed, more than the {free} its {threads or 1} thread(s) left free")


def quiet_limit(threads: int | None) -> float:
    """The most cores other processes may use while a kernel of ``threads`` threads is timed:
    the cores its threads leave free, plus ``FREE_CORE_SLACK`` where there are some, and never
    less than ``LOADED_CORES``."""
    free = max(0, len(os.sched_getaffinity(0)) - (threads or 1))
    return max(LOADED_CORES, free + FREE_CORE_SLACK if free else 0.0)


def free_threads(others: float | None) -> int:
    """The threads a kernel can be timed with while others use ``others`` cores (None: unknown,
    every core): the cores they leave, a core they use less than ``LOADED_CORES`` of counted
    free (``quiet_limit`` then tolerates them), at least 1."""
    cores = len(os.sched_getaffinity(0))
    busy = 0 if others is None else max(0, math.ceil(others - LOADED_CORES))
    return max(1, cores - busy)


def _loaded(other_cores: float | None) -> bool:
    """Where the load cannot be read (no /proc/stat), noise cannot be told from the kernel's own
    variation, and the medians stand."""
    return other_cores is not None and other_cores >= LOADED_CORES


def _load(other_cores: float | None) -> str:
    if other_cores is None:
        return ""
    return f" (other processes used {other_cores:.1f} of the machine's {os.cpu_count()} cores)"
