"""Timing the candidate cannot forge: its own clock, believed only within what ours allows.

The candidate's clock (the runner's, inside its process) is precise but its own; ours, the
round trip seen by the trusted side, includes the pipe and the scheduler. Our calibration
kernel, in a runner of its own and called the way timed calls are, measures how far an honest
kernel's clock reads short of ours (the gap). The candidate's clock is believed when its median
gap is no larger than the calibration's, within what the two medians' own noise allows; that
margin bounds what a forged clock can gain, because everything in the runner's process, its
clock included, can be patched.
"""

from __future__ import annotations

import math

import numpy as np

from klineage.gate.report import ClockCheck
from klineage.gate.sandbox import CallResult, CandidateFailed

__all__ = ["alone_times", "calibration_calls", "calibration_seconds", "modeled_times", "paired_times",
           "trusted_times"]

CALIBRATION_CALLS = (11, 41)
CALIBRATION_S = 0.5
"""The calibration kernel is called 41 times, fewer when that would take over ``CALIBRATION_S``
(never under 11): the margin's standard errors matter for short calls; for a long one its 2%
share is far larger (a 213 ms naive sgemm would otherwise spend 9 s calibrating)."""


def calibration_calls(seconds: float) -> int:
    low, high = CALIBRATION_CALLS
    return int(min(high, max(low, CALIBRATION_S / max(seconds, 1e-9))))

FORGED_CLOCK = 0.25
"""Where a short clock means hidden work (a GPU's other streams), a clock reading under this
share of what ours allows is a cheat; a forged clock reads near zero."""
BELIEF_SIGMAS = 3.0
BELIEF_SHARE = 0.02
"""The margin by which a candidate's median gap may exceed the calibration's and its clock still
be believed: 3 standard errors of the difference of the two medians, plus 2% of its reading.
The 90th percentile of the calibration gaps, the bar before 2026-12-01, was about twice their
median on 2 cores, and a kernel that moved its own end reading back by 100 us of a 0.5 ms call
was believed (held-out red team); a fixed 10 us margin made an honest 0.14 ms GPU kernel's
clock believed in one measurement and not the next (re-measure spread 10.7%)."""
CPU_SLACK = 1.25
CPU_OVERHEAD_S = 3e-4
"""An honest runner's CPU per call is at most its threads x its clock x ``CPU_SLACK``, plus
reading the command and writing the reply (2 cores: 2.09x a 2-thread expert's clock, 1.0x a
1-thread naive kernel's). On a GPU the runner spins while it waits, so its CPU time is the whole
round trip whenever it was running."""


def calibration_seconds(calls: list[CallResult]) -> float:
    """How long each calibration call spins: as long as the candidate's calls take, by its clock
    if that is plausible, else by ours."""
    reported = float(np.median([c.reported_s for c in calls]))
    wall = float(np.median([c.wall_s for c in calls]))
    return reported if reported >= 0.5 * wall else 0.9 * wall


def trusted_times(calls: list[CallResult], gaps: np.ndarray, threads: int,
                  short_clock_is_cheat: bool) -> tuple[list[float], ClockCheck]:
    """The calls' times, as neither side's clock alone would give them.

    ``gaps`` are the calibration kernel's (our clock - its clock) per call. When the candidate's
    median gap is within the margin of the calibration's, its readings are the times; otherwise
    ours take over (each call's time is at least its round trip less the calibration's median
    gap), so a clock that reads short gains at most the margin.

    ``short_clock_is_cheat`` (a GPU, where work can run on streams the candidate's clock does not
    see): a clock that reads under a quarter of ours is a cheat, unless the runner's CPU time,
    read from outside it, agrees with its clock; then the round trips were long while it was not
    running (another process loading the machine). On a CPU the runner is stopped between
    calls, so a short clock is time it waited for a core (behind its own spinning threads, or
    other processes) or tampering, which our clock already neutralises: never a verdict.
    """
    reported, ours, check = _judge(calls, gaps, threads, short_clock_is_cheat)
    return _timed_by(reported, ours, check, check.believed)


def paired_times(calls: tuple[list[CallResult], list[CallResult]],
                 gaps: tuple[np.ndarray, np.ndarray], threads: int, short_clock_is_cheat: bool
                 ) -> tuple[tuple[list[float], list[float]], tuple[ClockCheck, ClockCheck]]:
    """Both sides of a paired comparison timed by one clock: the runners' own when both were
    believed, else ours for both. Judged apart, an honest kernel compared with itself was timed
    by its own clock on one side and by ours on the other, one measurement in two (re-measure
    spread 12% for a 0.14 ms GPU kernel)."""
    judged = [_judge(c, g, threads, short_clock_is_cheat) for c, g in zip(calls, gaps, strict=True)]
    believed = all(check.believed for *_, check in judged)
    (times_a, check_a), (times_b, check_b) = (_timed_by(*j, believed) for j in judged)
    return (times_a, times_b), (check_a, check_b)


def alone_times(calls: list[CallResult], gaps: np.ndarray, threads: int, short_clock_is_cheat: bool,
                by_own_clocks: bool) -> list[float]:
    """A comparison's baseline timed alone, by the clock its pairs were timed by: its own only
    where the pairs were timed by the runners' own clocks and its clock is believed alone too,
    else ours (each call at least its round trip less the calibration gap), so that its median
    alone and its median beside the candidate compare like with like."""
    reported, ours, check = _judge(calls, gaps, threads, short_clock_is_cheat)
    return _timed_by(reported, ours, check, by_own_clocks and check.believed)[0]


def modeled_times(calls: list[CallResult]) -> tuple[list[float], ClockCheck]:
    """A modeled backend's times: its runner is klineage's own model (it runs no candidate code)
    and reads out the model's time, which is the time."""
    reported = [c.reported_s for c in calls]
    gap = float(np.median([c.wall_s - c.reported_s for c in calls]))
    return reported, ClockCheck(gap_s=gap, calibration_gap_s=None, allowance_s=None, believed=True,
                                raised_share=0.0)


def _judge(calls: list[CallResult], gaps: np.ndarray, threads: int,
           short_clock_is_cheat: bool) -> tuple[np.ndarray, np.ndarray, ClockCheck]:
    """Each call's reading, its time by our clock, and whether its clock is believed."""
    walls = np.asarray([c.wall_s for c in calls])
    reported = np.asarray([c.reported_s for c in calls])
    typical = float(np.median(reported))
    gap = float(np.median(gaps))
    own = walls - reported
    noise = math.hypot(_median_error(np.asarray(gaps)), _median_error(own))
    allowance = gap + BELIEF_SIGMAS * noise + BELIEF_SHARE * typical
    ours = np.maximum(walls - gap, 0.0)
    seen = float(np.median(ours))
    burned = float(np.median([c.cpu_s for c in calls]))
    if (short_clock_is_cheat and typical < FORGED_CLOCK * seen - 2e-5
            and burned > threads * CPU_SLACK * typical + CPU_OVERHEAD_S):
        raise CandidateFailed("rejected_cheat", (
            f"the candidate's clock read {typical * 1e3:.3f} ms per call where ours, less the "
            f"{gap * 1e3:.3f} ms an honest kernel's clock reads short, saw "
            f"{seen * 1e3:.3f} ms, and it used {burned * 1e3:.3f} ms of CPU: its timer does not "
            f"measure the call (work escaped the timed stream)"))
    own_gap = float(np.median(own))
    check = ClockCheck(gap_s=own_gap, calibration_gap_s=gap, allowance_s=allowance,
                       believed=own_gap <= allowance, raised_share=0.0)
    return reported, ours, check


def _timed_by(reported: np.ndarray, ours: np.ndarray, check: ClockCheck,
              own_clock: bool) -> tuple[list[float], ClockCheck]:
    times = reported if own_clock else np.maximum(reported, ours)
    return times.tolist(), check.model_copy(update={"raised_share": float(np.mean(times > reported))})


def _median_error(samples: np.ndarray) -> float:
    """Standard error of a sample's median, from its median absolute deviation (robust to the
    scheduler's outliers)."""
    if len(samples) < 2:
        return 0.0
    sigma = 1.4826 * float(np.median(np.abs(samples - np.median(samples))))
    return 1.2533 * sigma / math.sqrt(len(samples))
