"""How loaded the machine was while something was timed: the CPU that processes other than
the gate's own used (and, on a VM, the time the hypervisor stole), in cores.

Read from ``/proc/stat`` (every CPU's busy time) less the gate's own CPU time (the trusted
process and the runners it timed), over the same wall time. On a machine without
``/proc/stat`` the load is unknown (None) and only the timings' own spread speaks.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

__all__ = ["LoadProbe", "others_load", "wait_until_quiet"]


def _busy_seconds() -> float | None:
    try:
        with open("/proc/stat") as handle:
            fields = handle.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu":
        return None
    # user nice system idle iowait irq softirq steal (guest time is inside user already)
    ticks = [int(v) for v in fields[1:9]]
    busy = ticks[0] + ticks[1] + ticks[2] + ticks[5] + ticks[6] + ticks[7]
    return busy / os.sysconf("SC_CLK_TCK")


class LoadProbe:
    """Started before a timed phase, read after it; ``own`` gives the CPU seconds of the gate's
    runners so far (their process CPU clocks)."""

    def __init__(self, own: Callable[[], float]):
        self._own = own
        self._wall = time.perf_counter()
        self._busy = _busy_seconds()
        self._mine = time.process_time() + own()

    def other_cores(self) -> float | None:
        """Cores' worth of CPU others used since the probe started (None: unknown)."""
        busy = _busy_seconds()
        wall = time.perf_counter() - self._wall
        if busy is None or self._busy is None or wall <= 0:
            return None
        mine = time.process_time() + self._own() - self._mine
        # /proc/stat counts in clock ticks: a short phase reads up to a tick per CPU off.
        return max(0.0, (busy - self._busy - mine) / wall)


def others_load(seconds: float = 1.0) -> float | None:
    """Cores' worth of CPU that processes other than this one use, over ``seconds`` from now."""
    probe = LoadProbe(lambda: 0.0)
    time.sleep(seconds)
    return probe.other_cores()


def wait_until_quiet(limit: float, deadline: float, say: Callable[[str], None],
                     window_s: float = 2.0) -> bool:
    """Wait until others use at most ``limit`` cores over a whole ``window_s``, or until
    ``deadline`` (``time.monotonic``); whether the machine became quiet. Says what it waits
    for at each window."""
    while time.monotonic() + window_s <= deadline:
        load = others_load(window_s)
        if load is None or load <= limit:
            return True
        say(f"waiting for a quieter machine: other processes use {load:.1f} cores, at most "
            f"{limit:.2f} lets it time ({deadline - time.monotonic():.0f} s of patience left)")
    return False
