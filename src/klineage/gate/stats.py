"""Timing statistics: median of trial medians, and the paired A/B decision."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["comparison_record", "paired_decision", "summarize_trials"]

_BOOTSTRAP = 2000


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
    logs = np.log(b / a)
    rng = np.random.default_rng(seed)
    resampled = np.median(rng.choice(logs, size=(_BOOTSTRAP, logs.size), replace=True), axis=1)
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(resampled, [tail, 1.0 - tail])
    decision = "faster" if high < 0 else "slower" if low > 0 else "same"
    return float(np.exp(np.median(logs))), float(np.exp(low)), float(np.exp(high)), decision


def comparison_record(times_a: Sequence[float], times_b: Sequence[float],
                      seed: int) -> dict[str, float | int | str]:
    """What a paired comparison reports: the decision and each side's centre and spread.

    The paired ratio (the median of the per-pair ratios) is the one measurement; the candidate's
    time is the baseline's median times it, so two times shown side by side always give the
    ratio shown beside them (the candidate's own median gave a card 1.008x beside a 1.06x)."""
    ratio, low, high, decision = paired_decision(times_a, times_b, seed=seed)
    baseline = summarize_trials([times_a])[0]
    return {"ratio": ratio, "ci_low": low, "ci_high": high, "pairs": len(times_a),
            "decision": decision, "baseline_median_s": baseline,
            "candidate_median_s": baseline * ratio,
            "baseline_spread": float(np.std(np.log(times_a))),
            "candidate_spread": float(np.std(np.log(times_b)))}
