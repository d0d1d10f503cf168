from __future__ import annotations

import json

from klineage.backends._shared import cached_ceilings
from klineage.backends.base import Ceilings


def _ceilings(bandwidth: float, compute: float) -> Ceilings:
    return Ceilings(platform="cpu-test", bandwidth_gbps=bandwidth, compute_gflops=compute,
                    cache_bytes=1 << 20)


def test_cached_until_asked_to_remeasure(tmp_path):
    path = tmp_path / "c.json"
    first = cached_ceilings(path, lambda: _ceilings(10.0, 100.0), remeasure=False)
    again = cached_ceilings(path, lambda: _ceilings(99.0, 999.0), remeasure=False)
    assert first == again and json.loads(path.read_text())["bandwidth_gbps"] == 10.0


def test_remeasuring_keeps_the_best_rates_seen(tmp_path):
    # A ceiling measured on a loaded machine is too low; a later, lower reading must not win.
    path = tmp_path / "c.json"
    cached_ceilings(path, lambda: _ceilings(30.0, 100.0), remeasure=False)
    mixed = cached_ceilings(path, lambda: _ceilings(20.0, 150.0), remeasure=True)
    assert (mixed.bandwidth_gbps, mixed.compute_gflops) == (30.0, 150.0)
