"""A small library of hand-built cards and the dot fixture (a reduction omp simd speeds up)."""

from __future__ import annotations

import pytest

from conftest import FIXTURES
from klineage.skills.library import Library
from klineage.workload import load_kernel, load_workload
from optimize.cards import card


@pytest.fixture
def dot():
    return load_workload(FIXTURES / "dot")


@pytest.fixture
def dot_naive(dot):
    return load_kernel(dot, "naive")


@pytest.fixture
def library(tmp_path):
    """An unroll card whose factor does not compile (ranked first: largest recorded effect),
    omp_simd, and restrict."""
    lib = Library.open(tmp_path / "library", create=True)
    lib.add(card("omp_simd", ratio=3.0))
    lib.add(card("restrict", category="tuning", ratio=1.1))
    lib.add(card("unroll", category="tuning", ratio=8.0, params={"factor": "bogus"},
                 anchor="the reduction loop"))
    return lib
