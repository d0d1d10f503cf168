"""What the GPU tests share."""

from __future__ import annotations

from dataclasses import replace

import pytest


@pytest.fixture
def gpu_quick(quick):
    # A cold start (torch import, CUDA context) may take longer than a CPU stall limit.
    return replace(quick, target_trial_s=0.02, max_sets=3, limits=replace(quick.limits, stall_s=60))
