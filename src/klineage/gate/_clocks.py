"""Timing the candidate cannot forge: its own clock, believed only within what ours allows.

The candidate's clock (the runner's, inside its process) is precise but its own; ours, the
round trip seen by the trusted side, includes the pipe and the scheduler. Our calibration
kernel, in a runner of its own and called the way timed calls are, measures how far an honest
kernel's clock reads short of ours (the gap), and how much that gap scatters. Every margin
comes from the calibration's noise alone: the candidate's clock is believed when its median gap
is within it, and then each call's reading is believed when that call's gap is; a trial (a
pair) with one call not believed is timed by our clock throughout. Everything in the runner's
process, its clock included, can be patched: a margin built from the candidate's own scatter
was one it could widen at will (padding every other call), and a forged call in each trial
moved every trial's median while the median gap stayed honest (held-out review, 2026-12-03).
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
or outnumber the timed calls (never under 11): the margin's standard errors matter for short
calls; for a long one its 2% share is far larger (a 213 ms naive sgemm would otherwise spend 9 s
calibrating), and a profile of 9 timed calls spent 15 times their time calibrating."""


def calibration_calls(seconds: float, timed_calls: int) -> int:
    low, high = CALIBRATION_CALLS
    return int(min(high, max(low, min(timed_calls, CALIBRATION_S / max(seconds, 1e-9)))))

FORGED_CLOCK = 0.25
"""Where a short clock means hidden work (a GPU's other streams), a clock reading under this
share of what ours allows is a cheat; a forged clock reads near zero."""
BELIEF_SIGMAS = 3.0
BELIEF_SHARE = 0.02
"""The margin by which a candidate's median gap may exceed the calibration's and its clock still
be believed: 3 standard errors of the difference of two medians each as noisy as the
calibration's, plus 2% of its reading.
The 90th percentile of the calibration gaps, the bar before 2026-12-01, was about twice their
median on 2 cores, and a kernel that moved its own end reading back by 100 us of a 0.5 ms call
was believed (held-out red team); a fixed 10 us margin made an honest 0.14 ms GPU kernel's
clock believed in one measurement and not the next (re-measure spread 10.7%)."""
CALL_SIGMAS = 4.0
"""One call's reading is believed when its gap exceeds the calibration's median by at most 4 of
the calibration gaps' standard deviations (robust), plus 2% of the reading: an honest call
fails it about once in 10^4 calls where gaps are normal, more often where the scheduler
preempts the runner between its clock and its reply; either way its trial is only timed by our
clock, never judged."""
OUR_RESOLUTION_S = 1e-6
"""Our clock resolves no less than the calibration gaps' scatter (and never under 1 us): a call
timed by ours is at least that. A round trip less the median gap was under zero for 10 us
calls on a loaded machine; pairs timed 0 s made a comparison's ratio NaN (CI, 2026-12-05).
Both sides of a pair are floored alike, so a floor only pulls a ratio toward 1."""
CPU_SLACK = 1.25
CPU_OVERHEAD_S = 3e-4
"""An honest runner's CPU per call is at most its threads x its clock x ``CPU_SLACK``, plus
reading the command and writing the reply (2 cores: 2.09x a 2-thread expert's clock, 1.0x a
1-thread naive kernel's). On a GPU the runner spins while it waits, so its CPU time is the whole
round trip whenever it was running."""


def calibration_seconds(calls: list[CallResult]) -> float:
    """How long each calibration call spins: as long as the candidate's calls take, by its clock
    if that is plausible (at least half of ours, never more: a reading longer than its round
    trip would have the calibration spin as long as the candidate liked), else by ours."""
    reported = float(np.median([c.reported_s for c in calls]))
    wall = float(np.median([c.wall_s for c in calls]))
    return min(reported, wall) if reported >= 0.5 * wall else 0.9 * wall


def trusted_times(calls: list[CallResult], gaps: np.ndarray, threads: int,
                  short_clock_is_cheat: bool, per_trial: int = 1, switch_s: float = 0.0
                  ) -> tuple[list[float], ClockCheck]:
    """The calls' times, as neither side's clock alone would give them.

    ``gaps`` are the calibration kernel's (our clock - its clock) per call. When the candidate's
    median gap is within the margin of the calibration's, its readings are the times, except in
    a trial (``per_trial`` consecutive calls) where one call's gap is beyond what the
    calibration's scatter allows one call: that trial is timed by ours. Otherwise ours time
    every call (each call's time is at least its round trip less the calibration's median gap,
    and never under ``OUR_RESOLUTION_S``), so a clock that reads short gains at most the margin.
    ``switch_s``: what our calibration kernel's calls right after another runner's read over its
    others; one call may read it too.

    ``short_clock_is_cheat`` (a GPU, where work can run on streams the candidate's clock does not
    see): a clock that reads under a quarter of ours is a cheat, unless the runner's CPU time,
    read from outside it, agrees with its clock; then the round trips were long while it was not
    running (another process loading the machine). On a CPU the runner is stopped between
    calls, so a short clock is time it waited for a core (behind its own spinning threads, or
    other processes) or tampering, which our clock already neutralises: never a verdict.
    """
    reported, ours, honest, check = _judge(calls, gaps, threads, short_clock_is_cheat, switch_s)
    return _timed_by(reported, ours, check, _trials_believed(honest, per_trial) & check.believed)


def paired_times(calls: tuple[list[CallResult], list[CallResult]],
                 gaps: tuple[np.ndarray, np.ndarray], threads: int, short_clock_is_cheat: bool,
                 switch_s: tuple[float, float] = (0.0, 0.0)
                 ) -> tuple[tuple[list[float], list[float]], tuple[ClockCheck, ClockCheck]]:
    """Both sides of a paired comparison timed by one clock: the runners' own when both were
    believed, else ours for both; and each pair by one clock: ours for both calls where either
    call's reading is not believed. Judged apart, an honest kernel compared with itself was
    timed by its own clock on one side and by ours on the other, one measurement in two
    (re-measure spread 12% for a 0.14 ms GPU kernel)."""
    judged = [_judge(c, g, threads, short_clock_is_cheat, switch)
              for c, g, switch in zip(calls, gaps, switch_s, strict=True)]
    believed = all(check.believed for *_, check in judged)
    pairs = judged[0][2] & judged[1][2] & believed
    (times_a, check_a), (times_b, check_b) = (_timed_by(reported, ours, check, pairs, floor=False)
                                              for reported, ours, _, check in judged)
    return (times_a, times_b), (check_a, check_b)


def alone_times(calls: list[CallResult], gaps: np.ndarray, threads: int, short_clock_is_cheat: bool,
                by_own_clocks: bool) -> list[float]:
    """A comparison's baseline timed alone, by the clock its pairs were timed by: its own only
    where the pairs were timed by the runners' own clocks and its clock is believed alone too,
    else ours (each call at least its round trip less the calibration gap), so that its median
    alone and its median beside the candidate compare like with like."""
    reported, ours, honest, check = _judge(calls, gaps, threads, short_clock_is_cheat)
    return _timed_by(reported, ours, check, honest & (by_own_clocks and check.believed))[0]


def modeled_times(calls: list[CallResult]) -> tuple[list[float], ClockCheck]:
    """A modeled backend's times: its runner is klineage's own model (it runs no candidate code)
    and reads out the model's time, which is the time."""
    reported = [c.reported_s for c in calls]
    gap = float(np.median([c.wall_s - c.reported_s for c in calls]))
    return reported, ClockCheck(gap_s=gap, calibration_gap_s=None, allowance_s=None, believed=True,
                                raised_share=0.0)


def _judge(calls: list[CallResult], gaps: np.ndarray, threads: int, short_clock_is_cheat: bool,
           switch_s: float = 0.0) -> tuple[np.ndarray, np.ndarray, np.ndarray, ClockCheck]:
    """Each call's reading, its time by our clock, whether the call's own gap is within what one
    calibration call's may be, and whether the candidate's clock is believed at all."""
    walls = np.asarray([c.wall_s for c in calls])
    reported = np.asarray([c.reported_s for c in calls])
    typical = float(np.median(reported))
    gaps = np.asarray(gaps)
    gap = float(np.median(gaps))
    own = walls - reported
    scatter = _robust_sigma(gaps)
    # Both medians as noisy as the calibration's: the candidate's own scatter is its to widen.
    allowance = gap + BELIEF_SIGMAS * math.sqrt(2) * _median_error(gaps) + BELIEF_SHARE * typical
    honest = own <= gap + switch_s + CALL_SIGMAS * scatter + BELIEF_SHARE * reported
    ours = np.maximum(walls - gap, max(scatter, OUR_RESOLUTION_S))
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
    return reported, ours, honest, check


def _trials_believed(honest: np.ndarray, per_trial: int) -> np.ndarray:
    """Per call: whether every call of its trial was believed."""
    trials = [honest[start:start + per_trial].all() for start in range(0, len(honest), per_trial)]
    return np.repeat(trials, per_trial)[:len(honest)]


def _timed_by(reported: np.ndarray, ours: np.ndarray, check: ClockCheck,
              own_clock: np.ndarray, floor: bool = True) -> tuple[list[float], ClockCheck]:
    """Per call: its reading where ``own_clock``, else ours; with ``floor``, never less than its
    reading. Not for pairs: the larger of two noisy readings is biased up, and a candidate that
    forged one call in three (its own a tenth, so ours) had its baseline timed by that larger
    one on the same pairs and was judged faster than identical work (0.94-0.99)."""
    times = np.where(own_clock, reported, np.maximum(reported, ours) if floor else ours)
    return times.tolist(), check.model_copy(update={"raised_share": float(np.mean(times > reported))})


def _robust_sigma(samples: np.ndarray) -> float:
    """A sample's standard deviation from its median absolute deviation (robust to the
    scheduler's outliers)."""
    if len(samples) < 2:
        return 0.0
    return 1.4826 * float(np.median(np.abs(samples - np.median(samples))))


def _median_error(samples: np.ndarray) -> float:
    """Standard error of a sample's median."""
    if len(samples) < 2:
        return 0.0
    return 1.2533 * _robust_sigma(samples) / math.sqrt(len(samples))
