from __future__ import annotations

import numpy as np
import pytest

from klineage.gate.stats import paired_decision, summarize_trials


def test_median_of_trial_medians_and_spread():
    center, spread, medians = summarize_trials([[1.0, 2.0, 3.0], [2.0, 2.0, 9.0], [4.0]])
    assert medians == [2.0, 2.0, 4.0]
    assert center == 2.0
    assert spread == 1.0


def _pairs(ratio, noise, n=40, seed=0):
    rng = np.random.default_rng(seed)
    drift = 1 + 0.3 * np.sin(np.arange(n))  # shared drift that pairing must cancel
    base = drift * (1 + noise * rng.standard_normal(n))
    cand = drift * ratio * (1 + noise * rng.standard_normal(n))
    return base, cand


def test_clear_speedup_is_faster():
    ratio, _, high, decision = paired_decision(*_pairs(0.8, 0.02))
    assert decision == "faster" and high < 1 and abs(ratio - 0.8) < 0.05


def test_clear_slowdown_is_slower():
    assert paired_decision(*_pairs(1.3, 0.02))[3] == "slower"


def test_noise_alone_is_same():
    assert paired_decision(*_pairs(1.0, 0.05))[3] == "same"


def test_a_pair_timed_zero_is_refused_not_decided():
    base, cand = _pairs(1.0, 0.05)
    cand[3] = 0.0  # log(0 / x) and 0 / 0 made the ratio NaN, and NaN reached a mine's skill record
    with pytest.raises(ValueError, match="positive and finite"):
        paired_decision(base, cand)
