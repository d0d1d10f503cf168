"""CUDA ModelNew kernels (KernelBench's kernel.py with a ``load_inline`` CUDA extension) through
the whole gate on a GPU, for an imported KernelBench problem: an honest one is accepted; each
hostile one gets the verdict of the check that stops it. Skipped without a GPU; run on the
device with ``pytest -m gpu``."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import FIXTURES
from klineage.backends.modelnew_cuda import ModelNewCudaBackend
from klineage.gate import run_gate
from klineage.workload import load_kernel, load_workload
from klineage.workload.kernelbench import import_kernelbench

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

KERNELS = FIXTURES / "modelnew_cuda"
CASES = [
    ("honest_relu", "accepted", ""),
    ("torch_relu", "rejected_cheat", "aten::relu"),  # the op trace, run on the GPU
    ("half_precision", "incorrect", "out"),  # correctness, decided outside the process
    ("own_stream", "rejected_cheat", "imports 'cudaStreamCreate'"),  # the object's symbols
]
LOADING = pytest.mark.xfail(reason=(
    "not yet passed on the H200: on 2026-12-02 every runner that loads torch's CUDA trapped "
    "unlink while loading (libcuda's cuInit as root removes /dev/char nodes); the runner now "
    "links torch's own CUDA runtime, not yet run on a GPU (own_stream passed: it stops before "
    "loading); strict, so the run that passes them says to remove this mark"), strict=True)
"""The three kernels that reach the runner (own_stream is refused before it)."""


@pytest.fixture(scope="module")
def relu(tmp_path_factory):
    out = tmp_path_factory.mktemp("kb")
    outcomes = import_kernelbench([FIXTURES / "kernelbench" / "1_relu.py"], out)
    assert all(o.ok for o in outcomes), outcomes
    workload = load_workload(out / "1_relu")
    # Their three extensions compile at once, not one after another (g++ and nvcc over torch's
    # headers each), into the session's cache (conftest's), where the gate finds them.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KLINEAGE_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))
        backend = ModelNewCudaBackend()
        with ThreadPoolExecutor(len(CASES)) as pool:
            list(pool.map(lambda case: backend.build(load_kernel(workload, KERNELS / case[0])), CASES))
    return workload


@pytest.mark.parametrize(("name", "verdict", "words"), [
    pytest.param(*case, id=case[0], marks=() if case[0] == "own_stream" else LOADING) for case in CASES])
def test_cuda_modelnews_get_the_verdict_of_the_check_that_stops_them(relu, name, verdict, words, gpu_quick):
    report = run_gate(relu, load_kernel(relu, KERNELS / name), options=gpu_quick)
    assert report.verdict == verdict and words in report.reason, report.reason
    assert report.backend == "modelnew_cuda" and report.platform.startswith("nvidia-sm")
    if verdict == "accepted":
        stages = {s.name: s.ok for s in report.stages}
        assert stages["op_trace"] and stages["correctness"], stages
