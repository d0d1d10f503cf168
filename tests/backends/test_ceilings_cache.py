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


def test_a_file_that_does_not_parse_or_beats_the_hardware_is_measured_again(tmp_path):
    # Ceilings are trusted state: a file someone else wrote is not believed on its word.
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"bandwidth_bytes_per_s": 1e18, "peak_flops": 1e21}))
    assert cached_ceilings(path, lambda: _ceilings(10.0, 100.0), False, (50.0, 500.0)).bandwidth_gbps == 10.0
    other = tmp_path / "d.json"
    other.write_text(json.dumps(_ceilings(1e9, 100.0).__dict__))
    assert cached_ceilings(other, lambda: _ceilings(12.0, 100.0), False, (50.0, 500.0)).bandwidth_gbps == 12.0


def test_a_process_keeps_what_it_read(tmp_path):
    path = tmp_path / "c.json"
    first = cached_ceilings(path, lambda: _ceilings(10.0, 100.0), remeasure=False)
    path.write_text(json.dumps(_ceilings(40.0, 400.0).__dict__))  # rewritten behind its back
    assert cached_ceilings(path, lambda: _ceilings(99.0, 999.0), remeasure=False) == first
