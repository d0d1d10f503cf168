"""The phases of a timed job that follow the session's calls: the calibration calls spread among
timed calls (``Calibration``), a comparison's baseline alone (``Alone``) and its interleaved pairs
(``Pairs``), and the reservoir that keeps a few timed calls for verification (``Reservoir``).
They drive a ``TrustedSession``'s calls; every decision is still the session's. ``profile`` and
``compare`` are the two timed jobs built from them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from klineage.gate._clocks import (
    alone_times,
    calibration_calls,
    calibration_seconds,
    modeled_times,
    paired_times,
    trusted_times,
)
from klineage.gate._layout import InputSet, TimingPlan, footprint, inputs_of
from klineage.gate._load import LoadProbe
from klineage.gate.sandbox import Arena, CallResult, Candidate, CandidateFailed
from klineage.gate.stats import summarize_trials

if TYPE_CHECKING:
    from klineage.gate._trusted import Failure, TrustedSession

__all__ = ["ALONE_SHARE", "KEPT_TIMED_CALLS", "Alone", "Calibration", "Pairs", "Reservoir",
           "calls_per_trial", "compare", "profile", "seconds_per_call"]

KEPT_TIMED_CALLS = 8
ALONE_SHARE = 1 / 16
"""A comparison's baseline alone is timed for this share of the pairs' time (``compare_s``), and
as long again for our kernel that stands in for the other side: an eighth more. At least half
of ``min_pairs`` calls and at least 12 (with 6, a 2-thread expert on 2 cores, whose calls read
0.9 or 7 ms, ran "1.26x slower beside its successor" in 2 comparisons of 6 and stopped honest
runs), at most an eighth of ``max_pairs``: short kernels
reach ``max_pairs``, where our own work per call, not ``compare_s``, is the cost (on the CPU
here, about 5 ms a call for a 1 ms axpy of 1M elements)."""


def seconds_per_call(warm: list[CallResult]) -> float:
    """How long a call takes, to plan how many to time: by our clock (its round trip), never the
    candidate's, which would choose how many calls it is timed on."""
    return max(float(np.median([c.wall_s for c in warm])), 1e-9)


def calls_per_trial(timing: TimingPlan, warm: list[CallResult]) -> int:
    """Calls in each profile trial: ``target_trial_s`` of them by our clock, odd (a trial's
    median is one call's time, never the mean of two: a forged call would move it) and at least
    3 (one forged call is never the median), up to ``max_reps``."""
    reps = max(3, int(min(timing.max_reps, round(timing.target_trial_s / seconds_per_call(warm)))))
    return reps if reps % 2 else reps - 1


class Reservoir:
    """Keeps ``size`` of the calls offered, uniformly at random, at the same cost per call."""

    def __init__(self, size: int, rng: np.random.Generator):
        self.size, self.rng, self.seen = size, rng, 0
        self.kept: list[Any] = [None] * size

    def slot(self) -> int | None:
        index = self.seen
        self.seen += 1
        if index < self.size:
            return index
        pick = int(self.rng.integers(0, index + 1))
        return pick if pick < self.size else None


class Pairs:
    """A comparison's interleaved pairs (ABBA), each on fresh inputs both sides see, with the
    calibration calls spread among them."""

    def __init__(self, session: TrustedSession, sides: tuple[Candidate, Candidate],
                 sets: list[InputSet], timing: TimingPlan, warm_a: list[CallResult]) -> None:
        self.session, self.sides = session, sides
        load = LoadProbe(session._runners_cpu)
        warm = [warm_a, warm_up(session, sides[1], sets, timing)]
        each = sum(seconds_per_call(w) for w in warm)
        pairs = int(min(timing.max_pairs, max(timing.min_pairs, timing.compare_s / each)))
        self.calibration = Calibration(session, sets, pairs, [] if timing.modeled else
                                        [calibration_seconds(w) for w in warm])
        self.reservoirs = [Reservoir(KEPT_TIMED_CALLS // 2, session._rng) for _ in sides]
        self.asides = [session._aside(sets[0]) for _ in sides]
        self.calls: list[list[CallResult]] = [[], []]
        for index in range(pairs):
            if index % 10 == 0:
                session._settle()
                session.progress("compare", f"pair {index + 1}/{pairs}")
            bufs = sets[index % len(sets)]
            drawn = session._freshen(bufs)
            for side in (0, 1) if index % 2 == 0 else (1, 0):
                self.calls[side].append(session._timed(
                    sides[side], bufs, drawn, self.reservoirs[side], self.asides[side], index, "compare"))
            self.calibration.after(index)
        session._settle()
        self.other_cores = load.other_cores()

    def verify(self) -> Failure | None:
        for role, side in (("baseline", 0), ("candidate", 1)):
            failure = verify_kept(self.session, self.sides[side], self.reservoirs[side], self.asides[side],
                                  lambda i, role=role: f"the {role} kernel, timed pair {i}")
            if failure:
                return failure
        return None


class Alone:
    """A comparison's baseline timed before the candidate's runner exists. A baseline that
    behaves otherwise beside its successor (it may learn of it through whatever the machine
    shares: caches, and once a shared input arena) shows it against these calls; to hide, it
    must be as slow alone, and then it is slow beside too, and the pairs judge what it is.

    Calls follow a paired phase's order (ABBA) with our calibration kernel taking the other
    side's turns, as long as the baseline's calls: the switches between runners cost what they
    cost in the pairs (40-50 us of round trip on the H200), and an identical successor and our
    stand-in look alike from inside. A stand-in right after another is a calibration call (its
    gap measured as ``Calibration``'s are): the clock check of these calls has its own minutes."""

    def __init__(self, session: TrustedSession, baseline: Candidate, sets: list[InputSet],
                 timing: TimingPlan, warm: list[CallResult]) -> None:
        self.session, self.baseline, self.warm = session, baseline, warm
        estimate = seconds_per_call(warm)
        low = max(12, timing.min_pairs // 2)
        count = int(min(max(low, timing.max_pairs // 8), max(low, ALONE_SHARE * timing.compare_s / estimate)))
        self.seconds = None if timing.modeled else calibration_seconds(warm)
        # Its times can only keep a comparison from deciding: fewer are verified than of the pairs.
        self.reservoir = Reservoir(KEPT_TIMED_CALLS // 4, session._rng)
        self.aside = session._aside(sets[0])
        self.calls: list[CallResult] = []
        self.gaps: list[float] = []
        session.progress("compare", "timing the baseline alone")
        for index in range(count):
            bufs = sets[index % len(sets)]
            if self.seconds is not None and index % 2:  # after the last stand-in: a calibration
                self.gaps.append(session._calibration_gap(self.seconds, bufs))
            self.calls.append(session._timed(baseline, bufs, session._freshen(bufs), self.reservoir,
                                             self.aside, index, "compare"))
            if self.seconds is not None and not index % 2:
                session._calibration_gap(self.seconds, bufs)  # after the baseline's: a stand-in
            if index % 10 == 9:
                session._settle()
        session._settle()

    def times(self, by_own_clocks: bool, paired_gaps: list[np.ndarray]) -> list[float]:
        """The times on the clock the pairs were timed by."""
        if self.seconds is None:
            return modeled_times(self.calls)[0]
        gaps = np.asarray(self.gaps) if self.gaps else paired_gaps[0]
        return alone_times(self.calls, gaps, self.session.threads, self.session.device.async_streams,
                           by_own_clocks)

    def verify(self) -> Failure | None:
        return verify_kept(self.session, self.baseline, self.reservoir, self.aside,
                           lambda i: f"the baseline kernel alone, timed call {i}")


class Calibration:
    """Calibration calls spread evenly among the timed calls, one series per duration, so the
    gap they measure is the gap of the same minutes: measured after the timed calls, it drifted
    from theirs by up to 30 us on the H200 (a 0.14 ms kernel's clock was believed in one
    re-measurement and not in the next). Each is preceded by a call that is not measured: on
    the H200 a calibration call right after another runner's read 40-50 us more gap than one
    after its own, which the timed calls, following each other, do not pay, and which would
    have widened what a shortened clock could hide by as much."""

    def __init__(self, session: TrustedSession, sets: list[InputSet], timed_calls: int,
                 durations: list[float]) -> None:
        self.session, self.sets, self.durations = session, sets, durations
        self.gaps: list[np.ndarray] = [np.empty(0) for _ in durations]
        self.switch_gaps: list[list[float]] = [[] for _ in durations]
        spaced = (np.linspace(0, timed_calls - 1, calibration_calls(s, timed_calls)).round()
                  for s in durations)
        self.due = [Counter(points.astype(int).tolist()) for points in spaced]
        self.made = 0

    def after(self, index: int) -> None:
        """The calibration calls due after timed call (or pair) ``index``."""
        for series, (seconds, due) in enumerate(zip(self.durations, self.due, strict=True)):
            for _ in range(due.get(index, 0)):
                bufs = self.sets[self.made % len(self.sets)]
                self.made += 1
                # The switch from the timed runner, then a call after one of its own.
                self.switch_gaps[series].append(self.session._calibration_gap(0.0, bufs))
                gap = self.session._calibration_gap(seconds, bufs)
                self.gaps[series] = np.append(self.gaps[series], gap)

    def switch_s(self, series: int) -> float:
        """How much more gap a call right after another runner's has than one after its own,
        by our kernel's calls: a timed call after a calibration call pays it (40-50 us on the
        H200), and a call's own belief allows it."""
        if not len(self.gaps[series]) or not self.switch_gaps[series]:
            return 0.0
        return max(0.0, float(np.median(self.switch_gaps[series]) - np.median(self.gaps[series])))


def profile(session: TrustedSession, candidate: Candidate, timing: TimingPlan) -> dict[str, Any] | Failure:
    """``candidate`` timed alone: rotated sets, a warm-up, then ``timing.trials`` trials of an
    odd number of calls with calibration calls spread among them; a few calls are verified."""
    load = LoadProbe(session._runners_cpu)
    try:
        session.progress("profile", "laying out rotated input sets")
        sets = session.timing_sets(timing)
        warm = warm_up(session, candidate, sets, timing)
        reps = calls_per_trial(timing, warm)
        calibration = Calibration(session, sets, timing.trials * reps,
                                   [] if timing.modeled else [calibration_seconds(warm)])
        reservoir = Reservoir(KEPT_TIMED_CALLS, session._rng)
        aside = session._aside(sets[0])
        calls: list[CallResult] = []
        for trial in range(timing.trials):
            session.progress("profile", f"trial {trial + 1}/{timing.trials} x {reps} calls")
            for rep in range(reps):
                index = trial * reps + rep
                bufs = sets[index % len(sets)]
                calls.append(session._timed(candidate, bufs, session._freshen(bufs), reservoir, aside,
                                         index, "profile"))
                calibration.after(index)
            session._settle()
        times, clock = (modeled_times(calls) if timing.modeled else trusted_times(
            calls, calibration.gaps[0], session.threads, session.device.async_streams, reps,
            calibration.switch_s(0)))
        failure = verify_kept(session, candidate, reservoir, aside, lambda i: f"timed call {i}")
        if failure:
            return failure
        trials = [times[t * reps:(t + 1) * reps] for t in range(timing.trials)]
    except CandidateFailed as exc:
        return exc.outcome, exc.reason
    median, spread, medians = summarize_trials(trials)
    return {"median_s": median, "spread": spread, "trial_medians_s": medians,
            "reps_per_trial": reps, "samples": len(calls),
            "min_s": min(min(t) for t in trials),
            "wall_median_s": float(np.median([c.wall_s for c in calls])),
            "input_sets": len(sets), "footprint_bytes": footprint(session.workload, sets),
            "threads": session.threads, "clock": clock.model_dump(),
            "other_cores": load.other_cores()}


def compare(session: TrustedSession, a: Candidate, make_b: Callable[[Arena, Arena], Candidate],
            timing: TimingPlan) -> Any:
    """The baseline ``a`` against the kernel ``make_b`` starts, each runner with its own copy
    of the inputs and its own outputs: the baseline alone first (the other runner does not
    exist yet), then interleaved pairs (ABBA) on the same fresh inputs. Returns ((times a,
    times b), (clock a, clock b), the CPU other processes used during the pairs (in cores),
    the baseline's times alone on the clock its pairs were timed by), or a failure. The
    calls to verify are kept by reservoirs over each side's calls."""
    try:
        session.progress("compare", "laying out rotated input sets")
        sets = session.timing_sets(timing)
        alone = Alone(session, a, sets, timing, warm_up(session, a, sets, timing))
        session.progress("sandbox", "starting the kernel's runner")
        paired = Pairs(session, (a, session.load(make_b)), sets, timing, alone.warm)
        if timing.modeled:
            (times_a, clock_a), (times_b, clock_b) = (modeled_times(c) for c in paired.calls)
            times, clocks = (times_a, times_b), (clock_a, clock_b)
        else:
            times, clocks = paired_times(tuple(paired.calls), tuple(paired.calibration.gaps),
                                         session.threads, session.device.async_streams,
                                         tuple(paired.calibration.switch_s(i) for i in (0, 1)))
        solo = alone.times(all(clock.believed for clock in clocks), paired.calibration.gaps)
        failure = alone.verify() or paired.verify()
        if failure:
            return failure
    except CandidateFailed as exc:
        return exc.outcome, exc.reason
    return times, clocks, paired.other_cores, solo


def warm_up(session: TrustedSession, candidate: Candidate, sets: list[InputSet],
            timing: TimingPlan) -> list[CallResult]:
    """Untimed calls (``warmup_s`` of them by our clock, 2 to 50), whose round trips plan the
    timed ones."""
    spent, calls = 0.0, []
    while len(calls) < 2 or (spent < timing.warmup_s and len(calls) < 50):
        bufs = sets[len(calls) % len(sets)]
        session._freshen(bufs)
        calls.append(session._call(candidate, bufs, "profile", "warm-up", deferred=True))
        spent += calls[-1].wall_s
    session._settle()
    return calls


def verify_kept(session: TrustedSession, candidate: Candidate, reservoir: Reservoir,
                aside: list[list[Any]], describe: Callable[[Any], str]) -> Failure | None:
    """The calls ``reservoir`` kept, checked on the inputs each saw (rebuilt from its draw)."""
    session.progress("profile", f"verifying {sum(k is not None for k in reservoir.kept)} timed calls")
    inputs = session._input_arena[id(candidate)]
    for slot, entry in enumerate(reservoir.kept):
        if entry is None:
            continue
        tag, bufs, drawn = entry
        problem = session._verify(bufs, inputs_of(session.device, bufs, drawn, inputs), aside[slot])
        if problem:
            return "incorrect", f"{describe(tag)}: {problem}"
    return None
