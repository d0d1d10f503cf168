"""The phases of a timed job that follow the session's calls: the calibration calls spread among
timed calls (``Calibration``), a comparison's baseline alone (``Alone``) and its interleaved pairs
(``Pairs``), and the reservoir that keeps a few timed calls for verification (``Reservoir``).
They drive a ``TrustedSession``'s calls; every decision is still the session's."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

import numpy as np

from klineage.gate._clocks import alone_times, calibration_calls, calibration_seconds, modeled_times
from klineage.gate._layout import InputSet, TimingPlan
from klineage.gate._load import LoadProbe
from klineage.gate.sandbox import CallResult, Candidate

if TYPE_CHECKING:
    from klineage.gate._trusted import Failure, TrustedSession

__all__ = ["ALONE_SHARE", "KEPT_TIMED_CALLS", "Alone", "Calibration", "Pairs", "Reservoir",
           "calls_per_trial", "seconds_per_call"]

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
        warm = [warm_a, session._warm_up(sides[1], sets, timing)]
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
            failure = self.session._verify_kept(
                self.sides[side], self.reservoirs[side], self.asides[side],
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
        return self.session._verify_kept(self.baseline, self.reservoir, self.aside,
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
