"""Timing the candidate cannot forge: its own clock, believed only within what ours allows.

The candidate's clock (the runner's, inside its process) is precise but its own; ours, the
round trip seen by the trusted side, includes the pipe and the scheduler. Our calibration
kernel, in a runner of its own and called the way timed calls are, measures how far an honest
kernel's clock reads short of ours (the gap). The candidate's clock is believed when its median
gap is within a small margin of the calibration's median gap; the margin bounds what a forged
clock can gain, because everything in the runner's process, its clock included, can be patched.
"""

from __future__ import annotations

import numpy as np

from klineage.gate.sandbox import CallResult, CandidateFailed

__all__ = ["CALIBRATION_CALLS", "calibration_seconds", "trusted_times"]

CALIBRATION_CALLS = 21
FORGED_CLOCK = 0.25
"""A clock reading under this share of what ours allows is a cheat. Between it and 1 our clock
times the calls instead: two multithreaded runners taking turns on 2 cores once read half of
ours honestly, so a bar at one half accused honest kernels; a forged clock reads near zero."""
BELIEF_MARGIN_S = 1e-5
BELIEF_SHARE = 0.02
"""How much further than our calibration kernel a candidate's clock may read short of ours and
still be believed: 10 us + 2% of its reading. The 90th percentile of the calibration gaps,
the margin before 2026-12-01, was about twice the median on 2 cores, and a kernel that moved
its own end reading back by 100 us of a 0.5 ms call was believed (held-out red team)."""
CPU_SLACK = 1.25
CPU_OVERHEAD_S = 3e-4
"""An honest runner's CPU per call is at most its threads x its clock x ``CPU_SLACK``, plus
reading the command and writing the reply (2 cores: 2.09x a 2-thread expert's clock, 1.0x a
1-thread naive kernel's). On a GPU the runner spins while it waits, so its CPU time is the whole
round trip and never excuses a clock that reads short."""


def calibration_seconds(calls: list[CallResult]) -> float:
    """How long each calibration call spins: as long as the candidate's calls take, by its clock
    if that is plausible, else by ours."""
    reported = float(np.median([c.reported_s for c in calls]))
    wall = float(np.median([c.wall_s for c in calls]))
    return reported if reported >= 0.5 * wall else 0.9 * wall


def trusted_times(calls: list[CallResult], gaps: np.ndarray,
                  threads: int) -> tuple[list[float], dict[str, float]]:
    """The calls' times, as neither side's clock alone would give them.

    ``gaps`` are the calibration kernel's (our clock - its clock) per call. When the candidate's
    clock reads short of ours by no more than the calibration's median gap plus the margin, on
    the median call, its readings are the times; otherwise ours take over (each call's time is
    at least its round trip less the median gap), so a clock that reads short gains at most the
    margin. One that reads under a quarter
    of what ours allows is a cheat, unless the runner's CPU time (read from outside it) agrees
    with its clock: then the round trips were long while it was not running, which is another
    process loading the machine, not a forged clock, and ours still time the calls.
    """
    walls = np.asarray([c.wall_s for c in calls])
    reported = np.asarray([c.reported_s for c in calls])
    typical = float(np.median(reported))
    gap = float(np.median(gaps))
    allowance = gap + BELIEF_MARGIN_S + BELIEF_SHARE * typical
    ours = np.maximum(walls - gap, 0.0)
    seen = float(np.median(ours))
    burned = float(np.median([c.cpu_s for c in calls]))
    if typical < FORGED_CLOCK * seen - 2e-5 and burned > threads * CPU_SLACK * typical + CPU_OVERHEAD_S:
        raise CandidateFailed("rejected_cheat", (
            f"the candidate's clock read {typical * 1e3:.3f} ms per call where ours, less the "
            f"{gap * 1e3:.3f} ms an honest kernel's clock reads short, saw "
            f"{seen * 1e3:.3f} ms, and it used {burned * 1e3:.3f} ms of CPU: its timer does not "
            f"measure the call (on a GPU: work escaped the timed stream)"))
    believed = float(np.median(walls - reported)) <= allowance
    times = reported if believed else np.maximum(reported, ours)
    info = {"allowance_s": allowance, "raised_share": float(np.mean(times > reported))}
    return times.tolist(), info
