"""Timing statistics: median of trial medians, the paired A/B decision, and whether a
comparison's baseline ran as fast beside the candidate as alone."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["ALONE_FLOOR", "ALONE_SIGMAS", "beside_and_alone", "comparison_record", "paired_decision",
           "summarize_trials"]

_BOOTSTRAP = 2000
ALONE_FLOOR = 0.20
"""A baseline may run up to 20% slower beside the candidate than alone before the comparison
stops deciding, whatever its samples' spread. Honest neighbours differ from our stand-in: a
real kernel's memory traffic leaves the shared caches otherwise (little is left to lose: input
sets rotate past twice the last-level cache and a GPU's L2 is flushed before every call), and
on Intel CPUs with AVX-512 a neighbour's heavy 512-bit work can keep the core's clock lower (the
AVX licences) for up to a couple of milliseconds after it, by up to about a fifth. Honest pairs
of the axpy fixture's kernels on a 2-core EPYC VM read up to 1.15x (6 to 50 calls alone; a 60 ms
baseline beside a 1 ms candidate, 1.07-1.11x every time). Much below this, honest
comparisons would stop on such machines; much above it, a baseline could make identical code
look a quarter faster unseen. A shared input arena let a baseline run 1.47x slower beside its
successor (held-out review, 2026-12-03)."""
ALONE_SIGMAS = 3.0
"""Beyond the floor, the bound grows with the noise of the two medians: 3 standard errors of
the difference of their logarithms."""


def summarize_trials(trials: Sequence[Sequence[float]]) -> tuple[float, float, list[float]]:
    """(median of trial medians, spread = (max - min) / median across trials, trial medians)."""
    medians = [float(np.median(t)) for t in trials if len(t)]
    if not medians:
        raise ValueError("no timing samples")
    center = float(np.median(medians))
    spread = (max(medians) - min(medians)) / center if center > 0 else 0.0
    return center, spread, medians


def paired_decision(
    baseline: Sequence[float], candidate: Sequence[float], confidence: float = 0.95, seed: int = 0
) -> tuple[float, float, float, str]:
    """Decide whether the candidate is faster from interleaved pairs of times.

    Works on per-pair log ratios log(candidate/baseline): pairing cancels the drift both
    kernels see (frequency, neighbours), and the bootstrap interval of their median makes the
    call. Returns (ratio, ci_low, ci_high, decision) with ratio = candidate / baseline time.
    """
    a = np.asarray(baseline, dtype=np.float64)
    b = np.asarray(candidate, dtype=np.float64)
    if a.size != b.size or a.size < 3:
        raise ValueError("need at least 3 matched pairs")
    if not (np.all(np.isfinite(a) & (a > 0)) and np.all(np.isfinite(b) & (b > 0))):
        raise ValueError("paired times must be positive and finite")  # a NaN ratio decides nothing
    logs = np.log(b / a)
    rng = np.random.default_rng(seed)
    resampled = np.median(rng.choice(logs, size=(_BOOTSTRAP, logs.size), replace=True), axis=1)
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(resampled, [tail, 1.0 - tail])
    decision = "faster" if high < 0 else "slower" if low > 0 else "same"
    return float(np.exp(np.median(logs))), float(np.exp(low)), float(np.exp(high)), decision


def beside_and_alone(beside: Sequence[float], alone: Sequence[float]) -> str | None:
    """Why a comparison cannot decide because its baseline ran slower beside the candidate
    (``beside``: its paired times) than alone (``alone``: its times before the candidate's
    runner existed, on the same clock), beyond what noise allows; None where it did not. The
    bound is ``ALONE_FLOOR`` or ``ALONE_SIGMAS`` standard errors of the log-medians'
    difference, the larger."""
    if not len(alone):
        return None
    paired, solo = float(np.median(beside)), float(np.median(alone))
    ratio = paired / solo if solo > 0 else math.inf
    noise = math.hypot(_log_median_error(alone), _log_median_error(beside))
    bound = max(1.0 + ALONE_FLOOR, math.exp(ALONE_SIGMAS * noise))
    if ratio <= bound:
        return None
    return (f"the baseline ran {ratio:.2f}x slower beside the candidate than alone ({paired * 1e3:.3f} "
            f"ms a call beside it, {solo * 1e3:.3f} ms alone; noise allows {bound:.2f}x): something "
            f"reached it from the other side, so the pairs cannot decide")


def _log_median_error(samples: Sequence[float]) -> float:
    """Standard error of the median of a sample's logarithms, from their median absolute
    deviation (robust to the scheduler's outliers)."""
    if len(samples) < 2:
        return 0.0
    logs = np.log(np.maximum(np.asarray(samples, dtype=np.float64), 1e-12))
    sigma = 1.4826 * float(np.median(np.abs(logs - np.median(logs))))
    return 1.2533 * sigma / math.sqrt(len(logs))


def comparison_record(times_a: Sequence[float], times_b: Sequence[float], seed: int,
                      alone: Sequence[float] = ()) -> dict[str, float | int | str | None]:
    """What a paired comparison reports: the decision and each side's centre and spread.

    The paired ratio (the median of the per-pair ratios) is the one measurement; the candidate's
    time is the baseline's median times it, so two times shown side by side always give the
    ratio shown beside them (the candidate's own median gave a card 1.008x beside a 1.06x).
    ``alone``: the baseline's times alone; where it ran slower beside the candidate
    (``beside_and_alone``) the decision is 'unmeasurable', never 'faster'."""
    ratio, low, high, decision = paired_decision(times_a, times_b, seed=seed)
    baseline = summarize_trials([times_a])[0]
    if beside_and_alone(times_a, alone):
        decision = "unmeasurable"
    return {"ratio": ratio, "ci_low": low, "ci_high": high, "pairs": len(times_a),
            "decision": decision, "baseline_median_s": baseline,
            "candidate_median_s": baseline * ratio,
            "baseline_solo_s": float(np.median(alone)) if len(alone) else None,
            "baseline_spread": float(np.std(np.log(times_a))),
            "candidate_spread": float(np.std(np.log(times_b)))}
