"""Shared fixtures: the small axpy workload and gate options sized for tests."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from klineage.gate import GateOptions, Limits
from klineage.workload import load_workload

FIXTURES = Path(__file__).parent / "fixtures"
REPO = Path(__file__).parent.parent


def pytest_collection_modifyitems(config, items):
    """GPU tests run only where a CUDA device is visible."""
    if _gpu_visible():
        return
    skip = pytest.mark.skip(reason="no CUDA GPU visible")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def _gpu_visible() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Builds and ceilings go to a per-session cache, never the user's."""
    monkeypatch.setenv("KLINEAGE_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))


@pytest.fixture
def spool_key(monkeypatch):
    """The secret a spool's run and workers share (subprocesses inherit it)."""
    key = "test-spool-key-7f3a9c1e5b"
    monkeypatch.setenv("KLINEAGE_SPOOL_KEY", key)
    return key.encode()


@pytest.fixture
def axpy():
    return load_workload(FIXTURES / "axpy")


@pytest.fixture
def axpy_copy(tmp_path):
    """A private copy of the axpy workload a test may edit."""
    target = tmp_path / "axpy"
    shutil.copytree(FIXTURES / "axpy", target)
    return target


@pytest.fixture
def null_gate():
    """The null backend (no compiler, exact modeled times): for tests of what a pipeline stage
    decides and records, not of the gate."""
    return GateOptions(backend="null", limits=Limits(stall_s=10, memory_bytes=2 << 30))


@pytest.fixture
def quick():
    """Short timing and tight limits: tests check verdicts, never speeds."""
    # compare_s: 0.25 s of pairs decides every comparison these tests make (the fixtures' effects
    # are 2x and more); min_pairs keeps the statistical floor of slow kernels.
    return GateOptions(trials=3, target_trial_s=0.005, warmup_s=0.01, max_sets=3, compare_s=0.25,
                       min_pairs=12, limits=Limits(stall_s=10, memory_bytes=2 << 30))
