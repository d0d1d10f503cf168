"""CUDA ModelNew kernels (KernelBench's kernel.py with a ``load_inline`` CUDA extension) through
the whole gate on a GPU, for imported KernelBench problems: honest ones (ReLU, row softmax,
RMSNorm with its weight) are accepted; each hostile one gets the verdict of the check that stops
it. Skipped without a GPU; run on the device with ``pytest -m gpu`` (passed on the H200,
2026-12-02; ``detects_the_trace`` and ``below_dispatcher``, with the op recorder in C++, not yet
run there)."""

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
    ("1_relu", "honest_relu", "accepted", ""),
    ("1_relu", "torch_relu", "rejected_cheat", "aten::relu"),  # the op trace, run on the GPU
    ("1_relu", "half_precision", "incorrect", "out"),  # correctness, decided outside the process
    ("1_relu", "own_stream", "rejected_cheat", "imports 'cudaStreamCreate'"),  # the object's symbols
    # torch's relu where it believes it is not traced: it cannot tell, so the trace sees it
    ("1_relu", "detects_the_trace", "rejected_cheat", "outside the custom extension: aten::relu"),
    # ATen's CUDA relu kernel below the dispatcher, behind macros: the object's symbols show it
    ("1_relu", "below_dispatcher", "rejected_cheat", "imports 'at::cuda::relu(at::Tensor const&)' (an ATen"),
    ("2_row_softmax", "honest_softmax", "accepted", ""),
    ("4_rmsnorm", "honest_rmsnorm", "accepted", ""),  # its weight comes from the gate's inputs
]


@pytest.fixture(scope="module")
def problems(tmp_path_factory):
    out = tmp_path_factory.mktemp("kb")
    names = sorted({problem for problem, *_ in CASES})
    outcomes = import_kernelbench([FIXTURES / "kernelbench" / f"{name}.py" for name in names], out)
    assert all(o.ok for o in outcomes), outcomes
    workloads = {name: load_workload(out / name) for name in names}
    # The extensions compile at once, not one after another (g++ and nvcc over torch's headers
    # each), into the session's cache (conftest's), where the gate finds them.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KLINEAGE_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))
        backend = ModelNewCudaBackend()
        with ThreadPoolExecutor(len(CASES)) as pool:
            list(pool.map(lambda case: backend.build(load_kernel(workloads[case[0]], KERNELS / case[1])),
                          CASES))
    return workloads


@pytest.mark.parametrize(("problem", "name", "verdict", "words"), CASES, ids=[case[1] for case in CASES])
def test_cuda_modelnews_get_the_verdict_of_the_check_that_stops_them(problems, problem, name, verdict, words,
                                                                     gpu_quick):
    workload = problems[problem]
    report = run_gate(workload, load_kernel(workload, KERNELS / name), options=gpu_quick)
    assert report.verdict == verdict and words in report.reason, report.reason
    assert report.backend == "modelnew_cuda" and report.platform.startswith("nvidia-sm")
    if verdict == "accepted":
        stages = {s.name: s.ok for s in report.stages}
        assert stages["op_trace"] and stages["correctness"], stages
