"""KernelBench-format problems imported and gated with CUDA kernels on a GPU: the reference runs
the problem's Model in torch on the device, and an fp32 problem refuses a kernel that sums in
fp16. Skipped without a GPU; run on the device with ``pytest -m gpu``."""

from __future__ import annotations

import pytest

from conftest import FIXTURES
from klineage.gate import run_gate
from klineage.workload import load_kernel, load_workload
from klineage.workload.kernelbench import import_kernelbench

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

PROBLEMS = FIXTURES / "kernelbench"
KERNELS = FIXTURES / "kernelbench_kernels_cuda"
CASES = [("1_relu", "relu_naive", "accepted"), ("2_row_softmax", "softmax_naive", "accepted"),
         ("4_rmsnorm", "rmsnorm_naive", "accepted"), ("4_rmsnorm", "rmsnorm_half", "incorrect")]


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    out = tmp_path_factory.mktemp("kb")
    problems = sorted({PROBLEMS / f"{name}.py" for name, _, _ in CASES})
    outcomes = import_kernelbench(problems, out)
    assert all(o.ok for o in outcomes), [o for o in outcomes if not o.ok]
    return out


@pytest.mark.parametrize(("problem", "kernel", "verdict"), CASES, ids=[c[1] for c in CASES])
def test_imported_problems_gate_cuda_kernels_on_the_gpu(imported, problem, kernel, verdict, gpu_quick):
    workload = load_workload(imported / problem)
    report = run_gate(workload, load_kernel(workload, KERNELS / kernel), options=gpu_quick)
    assert report.verdict.value == verdict, report.reason
    assert report.platform.startswith("nvidia-sm")
