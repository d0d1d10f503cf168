from __future__ import annotations

import concurrent.futures
import multiprocessing

from conftest import FIXTURES
from klineage.backends.cpu import CpuBackend
from klineage.workload import load_kernel, load_workload


def _build_in_process(cache: str) -> str:
    import os

    os.environ["KLINEAGE_CACHE_DIR"] = cache
    workload = load_workload(FIXTURES / "axpy")
    result = CpuBackend().build(load_kernel(workload, "plain"))
    assert result.ok, result.log
    return str(result.artifact)


def test_concurrent_builds_share_one_artifact(tmp_path):
    cache = str(tmp_path / "cache")
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(4, mp_context=context) as pool:
        artifacts = list(pool.map(_build_in_process, [cache] * 4))
    assert len(set(artifacts)) == 1


def test_build_cache_key_follows_source(axpy_copy):
    workload = load_workload(axpy_copy)
    kernel = load_kernel(workload, "plain")
    first = CpuBackend().build(kernel)
    again = CpuBackend().build(kernel)
    assert again.cached and again.fingerprint == first.fingerprint
    source = kernel.source
    source.write_text(source.read_text() + "\n/* changed */\n")
    changed = CpuBackend().build(kernel)
    assert changed.fingerprint != first.fingerprint and not changed.cached


def test_compile_error_is_a_result(axpy_copy):
    source = axpy_copy / "kernels" / "plain" / "kernel.c"
    source.write_text(source.read_text().replace("return 0;", "return undeclared_name;"))
    workload = load_workload(axpy_copy)
    result = CpuBackend().build(load_kernel(workload, "plain"))
    assert not result.ok and "undeclared_name" in result.log


def test_imported_symbols_are_listed(axpy):
    backend = CpuBackend()
    cheat = FIXTURES.parent / "gate" / "cheats" / "reads_a_file"
    result = backend.build(load_kernel(axpy, cheat))
    assert "fopen" in backend.imported_symbols(result.artifact)


def test_the_trusted_side_makes_each_runner_core_cold_and_comes_home(monkeypatch):
    # The runner flushed its own core once, after it was continued and before its clock started:
    # a helper thread of the kernel's ran untimed meanwhile. Now the trusted side does it while
    # the runner is stopped, on each of the runner's cores, and returns to its own.
    import os

    from klineage.backends._cpu_machine import runner_cores
    from klineage.backends.cpu import CpuBackend

    moves = []
    real = os.sched_setaffinity
    monkeypatch.setattr(os, "sched_setaffinity",
                        lambda pid, cores: moves.append(set(cores)) or real(pid, cores))
    home = os.sched_getaffinity(0)
    device = CpuBackend().open_device(threads=2)
    device.flush_cache()
    cores = runner_cores(2)
    assert moves == [{core} for core in sorted(cores)] + [home]
    assert os.sched_getaffinity(0) == home
