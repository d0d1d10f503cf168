from __future__ import annotations

import json
from dataclasses import replace

from klineage.backends._shared import cached_ceilings, measured_quietly
from klineage.backends.base import Ceilings
from klineage.backends.cpu import CpuBackend
from klineage.gate import SpeedOfLight, Verdict, run_gate
from klineage.gate.sol import judge
from klineage.workload import load_kernel


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


def _probed(compute: float, other_cores: float | None, theoretical: float = 1e6) -> Ceilings:
    """Ceilings as the CPU probe writes them: its load, and the hardware's theoretical bound."""
    quiet = other_cores is None or other_cores < 0.5
    return replace(_ceilings(10.0, compute), details={
        "other_cores": other_cores, "quiet": quiet,
        "theoretical_gflops": theoretical, "theoretical_gbps": 1e6})


def test_a_probe_that_ran_loaded_is_never_written(tmp_path):
    path, calls = tmp_path / "c.json", []

    def measure(ceilings):
        calls.append(ceilings)
        return ceilings

    loaded = cached_ceilings(path, lambda: measure(_probed(12.0, 1.2)), remeasure=False)
    assert not measured_quietly(loaded) and not path.exists()
    # This process reuses it rather than probing before every gate run...
    assert cached_ceilings(path, lambda: measure(_probed(13.0, 1.2)), remeasure=False) == loaded
    assert len(calls) == 1
    # ...and a quiet re-measurement is written, without the loaded rates.
    quiet = cached_ceilings(path, lambda: measure(_probed(46.0, 0.0)), remeasure=True)
    assert measured_quietly(quiet) and json.loads(path.read_text())["compute_gflops"] == 46.0


def test_a_loaded_remeasurement_leaves_the_quiet_file_and_says_it_was_loaded(tmp_path):
    # The re-measurement before a verdict decides whether it may accuse: if it ran loaded, the
    # ceiling it returns is not quiet, though its rates keep the best seen.
    path = tmp_path / "c.json"
    cached_ceilings(path, lambda: _probed(46.0, 0.1), remeasure=False)
    again = cached_ceilings(path, lambda: _probed(30.0, 1.5), remeasure=True)
    assert again.compute_gflops == 46.0 and not measured_quietly(again)
    assert json.loads(path.read_text())["details"]["other_cores"] == 0.1


def test_a_file_that_says_it_was_measured_loaded_is_not_believed(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps(_probed(12.0, 1.5).__dict__))
    assert cached_ceilings(path, lambda: _probed(46.0, 0.0), False).compute_gflops == 46.0


def _sol(achieved_gflops: float, compute_gflops: float) -> SpeedOfLight:
    return SpeedOfLight(bytes=None, flops=1.0, bandwidth_gbps=10.0, compute_gflops=compute_gflops,
                        achieved_gbps=None, achieved_gflops=achieved_gflops, bound_s=None,
                        fraction=None, limiter="compute", memory_enforced=False)


def test_above_a_quiet_ceiling_is_a_cheat_above_a_loaded_one_unmeasurable():
    assert judge(_sol(40.0, 46.0), _probed(46.0, 1.5)) is None
    verdict, reason = judge(_sol(49.4, 12.3), _probed(12.3, 0.0))
    assert verdict is Verdict.REJECTED_CHEAT and "faster than speed of light" in reason
    verdict, reason = judge(_sol(49.4, 12.3), _probed(12.3, 1.5))
    assert verdict is Verdict.UNMEASURABLE
    assert reason.startswith("the ceiling could not be measured quietly") and "1.5" in reason
    # The hardware's theoretical bound needs no quiet machine.
    verdict, reason = judge(_sol(500.0, 12.3), _probed(12.3, 1.5, theoretical=320.0))
    assert verdict is Verdict.REJECTED_CHEAT and "theoretical peak 320.0" in reason


def test_a_result_above_a_loaded_only_ceiling_is_unmeasurable(axpy, quick, monkeypatch):
    # Every probe ran loaded (here: said to), so the gate measures again and, loaded again,
    # does not accuse an honest kernel that beats the low ceiling.
    asked = []

    def ceilings(self, threads, remeasure=False):
        asked.append(remeasure)
        return replace(_probed(1e-6, 1.3, theoretical=1e6), bandwidth_gbps=1e6)

    monkeypatch.setattr(CpuBackend, "ceilings", ceilings)
    report = run_gate(axpy, load_kernel(axpy, "plain"), options=quick)
    assert report.verdict is Verdict.UNMEASURABLE, report.reason
    assert report.reason.startswith("the ceiling could not be measured quietly")
    assert True in asked and report.stages[-1].name == "speed_of_light"
