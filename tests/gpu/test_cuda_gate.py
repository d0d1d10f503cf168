"""The gate on a real GPU. Skipped without one; run on the device with ``pytest -m gpu``."""

from __future__ import annotations

import pytest

from conftest import FIXTURES, REPO
from klineage.backends.cuda import CudaBackend
from klineage.gate import Verdict, run_gate
from klineage.workload import load_kernel, load_workload

pytestmark = pytest.mark.gpu

CHEATS = FIXTURES.parent / "gate" / "cuda_cheats"
CUDA_EXAMPLES = sorted(p for p in (REPO / "examples" / "workloads" / "cuda").glob("*")
                       if (p / "workload.toml").is_file())


def test_ceilings_are_plausible():
    ceilings = CudaBackend().ceilings(None)
    assert ceilings.bandwidth_gbps > 500 and ceilings.compute_gflops > 10_000
    assert ceilings.cache_bytes > 1 << 20


@pytest.mark.parametrize("variant", ["plain", "vectorized"])
def test_honest_cuda_kernels_are_accepted(variant, gpu_quick):
    workload = load_workload(FIXTURES / "axpy_cuda")
    report = run_gate(workload, load_kernel(workload, variant), options=gpu_quick)
    assert report.verdict is Verdict.ACCEPTED, report.reason
    assert report.platform.startswith("nvidia-sm")
    assert report.sol is not None and report.sol.achieved_gbps > 0


@pytest.mark.parametrize(("name", "verdict", "reason"), [
    ("writes_nothing", Verdict.INCORRECT, "NaN"),
    ("lazy_view_of_input", Verdict.INCORRECT, "elements off"),
    ("own_stream", Verdict.REJECTED_CHEAT, "cudaStreamCreateWithFlags"),
])
def test_cuda_cheats(name, verdict, reason, gpu_quick):
    workload = load_workload(FIXTURES / "axpy_cuda")
    report = run_gate(workload, load_kernel(workload, CHEATS / name), options=gpu_quick)
    assert report.verdict is verdict, report.reason
    assert reason in report.reason


def test_default_stream_work_is_timed_as_the_calls(gpu_quick):
    # Work on the legacy default stream does not order with the harness's non-blocking stream:
    # the stream's events miss it, the runner's activity records (CUPTI) do not. It was rejected
    # as work that escaped the timed stream; now its time is the work's.
    workload = load_workload(FIXTURES / "axpy_cuda")
    report = run_gate(workload, load_kernel(workload, CHEATS / "default_stream"), options=gpu_quick)
    assert report.verdict is Verdict.ACCEPTED, report.reason


def test_work_after_the_harness_end_event_is_timed(gpu_quick):
    # The held-out mechanism with a tail of known length: the GPU works at least 400 + 40 us a
    # call, the harness stream's events see about 400, and 40 us is within what the round trip
    # can tell on the H200 (the calibration gap's margin), so only a clock that sees every
    # stream times it. Its time may not be less than its GPU work.
    workload = load_workload(FIXTURES / "axpy_cuda")
    report = run_gate(workload, load_kernel(workload, CHEATS / "timed_tail"), options=gpu_quick)
    assert report.verdict is Verdict.ACCEPTED, report.reason
    assert report.timing.median_s >= 0.99 * 440e-6, report.timing


@pytest.mark.parametrize("folder", CUDA_EXAMPLES, ids=lambda p: p.name)
def test_cuda_examples_accepted_and_expert_faster(folder, gpu_quick):
    workload = load_workload(folder)
    naive, expert = load_kernel(workload, "naive"), load_kernel(workload, "expert")
    first = run_gate(workload, naive, options=gpu_quick)
    assert first.verdict is Verdict.ACCEPTED, first.reason
    second = run_gate(workload, expert, options=gpu_quick, against=naive)
    assert second.verdict is Verdict.ACCEPTED, second.reason


@pytest.mark.parametrize("name", ["add_rmsnorm", "gemm_bf16", "layernorm", "row_sum", "softmax",
                                  "silu_and_mul", "heldout/scale_flat", "heldout/rmsnorm_2dgrid"])
def test_vectorized_access_insertion_passes_the_gate_on_naive_kernels(name, gpu_quick, tmp_path):
    # Every check shape runs: the sizes the guard sends to the general kernel and those it
    # vectorizes. The held-out ones are other styles: flat index, 2-D grid, grid-stride.
    from klineage.source import insertion_edits
    from source._kernels import write_kernel

    folder = (REPO / "examples" / "heldout" / "cuda" / name.removeprefix("heldout/")
              if name.startswith("heldout/") else REPO / "examples" / "workloads" / "cuda" / name)
    workload = load_workload(folder)
    naive = load_kernel(workload, "naive")
    (edit,) = insertion_edits(naive.source.read_text(), "cuda", "vectorized_access")
    kernel = write_kernel(tmp_path / "vec", workload, edit.new_source, "cuda", naive.flags)
    report = run_gate(workload, kernel, options=gpu_quick)
    assert report.verdict is Verdict.ACCEPTED, report.reason


STYLES = REPO / "tests" / "source" / "styles" / "cuda"


@pytest.mark.parametrize("label", sorted(f"{p.parent.parent.name}/{p.parent.name}"
                                         for p in STYLES.glob("*/*/kernel.toml")))
def test_every_cuda_style_passes_the_gate_as_written_and_with_every_insertion(label, gpu_quick,
                                                                              tmp_path):
    from source._kernels import write_kernel
    from source.test_styles import CUDA_PASSES, _all_passes

    workload = load_workload(REPO / "examples" / "workloads" / "cuda" / label.split("/")[0])
    spec = load_kernel(workload, STYLES / label)
    plain = run_gate(workload, spec, options=gpu_quick)
    assert plain.verdict is Verdict.ACCEPTED, f"{label}: {plain.reason}"
    text, flags, applied = _all_passes(spec, spec.source.read_text(), CUDA_PASSES)
    assert "vectorized_access" in applied and "read_only_cache" in applied, applied
    kernel = write_kernel(tmp_path / "inserted", workload, text, "cuda", flags)
    report = run_gate(workload, kernel, options=gpu_quick)
    assert report.verdict is Verdict.ACCEPTED, f"{label} with {applied}: {report.reason}"


def test_gate_jobs_give_their_device_memory_back(gpu_quick):
    # Torch keeps a shared allocation until every consumer says it is done; the runners never
    # do, and a run of ~50 gate jobs ran the H200 out of memory before the arenas released it.
    import gc

    import torch

    workload = load_workload(FIXTURES / "axpy_cuda")
    run_gate(workload, load_kernel(workload, "plain"), options=gpu_quick)  # warm: context, caches
    gc.collect()
    before = torch.cuda.memory_allocated()
    for _ in range(3):
        assert run_gate(workload, load_kernel(workload, "plain"), options=gpu_quick).accepted
    gc.collect()
    assert torch.cuda.memory_allocated() - before < 64 << 20, "each job's arenas stay allocated"


def _grid_stride_cases():
    """(label, workload folder, kernel source path, direction) for every grid-stride rewrite."""
    heldout = REPO / "examples" / "heldout" / "cuda"
    cases = [(f"{p.name}/naive", p, p / "kernels" / "naive" / "kernel.cu", "insert") for p in CUDA_EXAMPLES
             if p.name != "gemm_bf16"]
    cases += [(f"heldout/{n}", heldout / n, heldout / n / "kernels" / "naive" / "kernel.cu", "insert")
              for n in ("scale_flat", "stencil1d_cuda")]
    cases += [(f"style/{p.parent.parent.name}/flat", REPO / "examples" / "workloads" / "cuda" /
               p.parent.parent.name, p, "insert") for p in sorted(STYLES.glob("*/flat/kernel.cu"))]
    cases += [(f"style/{p.parent.parent.name}/gridstride", REPO / "examples" / "workloads" / "cuda" /
               p.parent.parent.name, p, "remove") for p in sorted(STYLES.glob("*/gridstride/kernel.cu"))]
    cases.append(("heldout/rowmax_gridstride", heldout / "rowmax_gridstride",
                  heldout / "rowmax_gridstride" / "kernels" / "naive" / "kernel.cu", "remove"))
    cases.append(("heldout/scale_flat/expert", heldout / "scale_flat",  # its general kernel's loop
                  heldout / "scale_flat" / "kernels" / "expert" / "kernel.cu", "remove"))
    return cases


GRID_STRIDE_CASES = _grid_stride_cases()


@pytest.mark.parametrize(("label", "folder", "source", "direction"), GRID_STRIDE_CASES,
                         ids=[case[0] for case in GRID_STRIDE_CASES])
def test_grid_stride_rewrites_pass_the_gate(label, folder, source, direction, gpu_quick, tmp_path):
    # Two blocks at most: every thread walks several elements, so a wrong stride or bound shows.
    from klineage.source import insertion, removal_edits
    from source._kernels import write_kernel

    workload = load_workload(folder)
    text = source.read_text()
    if direction == "insert":
        edit = insertion(text, "cuda", "grid_stride_loop", {"max_blocks": 2})
    else:
        (edit,) = [e for e in removal_edits(text, "cuda") if e.feature == "grid_stride_loop"]
    kernel = write_kernel(tmp_path / "rewritten", workload, edit.new_source, "cuda", ())
    report = run_gate(workload, kernel, options=gpu_quick)
    assert report.verdict is Verdict.ACCEPTED, f"{label}: {report.reason}"


_EXPERTS = sorted([*(REPO / "examples" / "workloads" / "cuda").glob("*/kernels/expert/kernel.cu"),
                   *(REPO / "examples" / "heldout" / "cuda").glob("*/kernels/expert/kernel.cu")])
SHUFFLE_CASES = [(f"{p.parts[-4]}/expert", p.parents[2], p, "expert") for p in _EXPERTS
                 if "__shfl_" in p.read_text()]
SHUFFLE_CASES += [(f"style/{p.parent.parent.name}/row_per_warp",
                   REPO / "examples" / "workloads" / "cuda" / p.parent.parent.name, p, p.parent)
                  for p in sorted(STYLES.glob("*/row_per_warp/kernel.cu"))]


@pytest.mark.parametrize(("label", "folder", "source", "variant"), SHUFFLE_CASES,
                         ids=[case[0] for case in SHUFFLE_CASES])
def test_warp_shuffle_removal_passes_the_gate(label, folder, source, variant, gpu_quick, tmp_path):
    # Every lane must read what its shuffle gave it: the removal is exact, so any error is a bug.
    from klineage.source import removal_edits
    from source._kernels import write_kernel

    workload = load_workload(folder)
    spec = load_kernel(workload, variant)
    (edit,) = [e for e in removal_edits(source.read_text(), "cuda") if e.feature == "warp_shuffle_reduction"]
    kernel = write_kernel(tmp_path / "exchange", workload, edit.new_source, "cuda", spec.flags)
    report = run_gate(workload, kernel, options=gpu_quick)
    assert report.verdict is Verdict.ACCEPTED, f"{label}: {report.reason}"
