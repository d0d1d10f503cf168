"""grid_stride_loop: the insertion on flat kernels, the removal, their round trip, and what each
refuses (nvcc builds: test_cuda_builds.py; the gate on a GPU: tests/gpu/test_cuda_gate.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from klineage.source import Refused, detect, insertion, present, removal_edits
from klineage.source.tunables import neighbours
from source._kernels import CUDA_WORKLOADS, source_of

REPO = Path(__file__).resolve().parents[2]
STYLES = Path(__file__).parent / "styles" / "cuda"
HELDOUT = REPO / "examples" / "heldout" / "cuda"
IF_FORM = [*sorted(STYLES.glob("*/flat/kernel.cu")), HELDOUT / "scale_flat/kernels/naive/kernel.cu"]
"""Flat kernels with ``if (i < n) BODY``: the removal writes that form back byte for byte."""
EARLY_RETURN = [HELDOUT / "stencil1d_cuda/kernels/naive/kernel.cu",
                *(REPO / f"examples/workloads/cuda/{n}/kernels/naive/kernel.cu" for n in CUDA_WORKLOADS
                  if n != "gemm_bf16")]
"""Flat kernels with ``if (i >= n) return;`` (or the naive row kernels): the removal writes the
``if (i < n) { ... }`` form, from which the insertion gives the same loop again."""
STRIDED = [*sorted(STYLES.glob("*/gridstride/kernel.cu")),
           HELDOUT / "rowmax_gridstride/kernels/naive/kernel.cu"]


def _removal(text: str):
    edits = [e for e in removal_edits(text, "cuda") if e.feature == "grid_stride_loop"]
    return edits[0] if edits else None


@pytest.mark.parametrize("path", IF_FORM, ids=lambda p: "/".join(p.parts[-4:-1]))
def test_removal_undoes_the_insertion_byte_for_byte(path):
    text = path.read_text()
    inserted = insertion(text, "cuda", "grid_stride_loop")
    assert not isinstance(inserted, Refused), inserted
    assert "gridDim.x * blockDim.x)" in inserted.new_source and "kl_grid.x = 2048u" in inserted.new_source
    assert inserted.params == {"max_blocks": 2048}
    assert _removal(inserted.new_source).new_source == text


@pytest.mark.parametrize("path", EARLY_RETURN, ids=lambda p: "/".join(p.parts[-4:-1]))
def test_an_early_return_comes_back_as_a_bounds_check_the_insertion_turns_into_the_same_loop(path):
    text = path.read_text()
    inserted = insertion(text, "cuda", "grid_stride_loop", {"max_blocks": 1024})
    assert not isinstance(inserted, Refused), inserted
    removed = _removal(inserted.new_source).new_source
    assert "grid_stride_loop" not in present(removed, "cuda") and "return;" not in removed.split(
        "__global__")[1].split("kl_launch")[0]
    again = insertion(removed, "cuda", "grid_stride_loop", {"max_blocks": 1024})
    assert again.new_source == inserted.new_source


def test_the_insertion_caps_every_launch_and_keeps_the_body():
    text = (HELDOUT / "scale_flat/kernels/naive/kernel.cu").read_text()
    new = insertion(text, "cuda", "grid_stride_loop", {"max_blocks": 4096}).new_source
    assert ("  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;\n"
            "       i += (long long)gridDim.x * blockDim.x) y[i] = alpha * x[i] + bias;\n") in new
    assert ("    dim3 kl_grid((unsigned)grid);\n"
            "    if (kl_grid.x > 4096u) kl_grid.x = 4096u;  // the grid-stride loop covers the rest\n"
            "    scale_naive<<<kl_grid, block, 0, (cudaStream_t)stream>>>(\n") in new


def test_the_grid_cap_is_a_tunable_the_sweep_moves_by_one_step():
    assert neighbours("grid_stride_loop", {}) == [{"max_blocks": 1024}, {"max_blocks": 4096}]
    refused = insertion(IF_FORM[0].read_text(), "cuda", "grid_stride_loop", {"max_blocks": 0})
    assert isinstance(refused, Refused) and "at least one block" in refused.reason


@pytest.mark.parametrize("path", STRIDED, ids=lambda p: "/".join(p.parts[-4:-1]))
def test_a_grid_stride_loop_becomes_a_bounds_check_and_the_launch_covers_the_bound(path):
    text = path.read_text()
    (loop,) = [h for h in detect(text, "cuda") if h.feature == "grid_stride_loop"]
    assert loop.removable, loop.detail
    edit = _removal(text)
    new = edit.new_source
    assert "grid_stride_loop" not in present(new, "cuda") and "gridDim" not in new
    assert edit.pass_name == "grid_stride_to_bounds_check"
    bound, threads = ("rows", "block") if "rowmax" in str(path) else (
        "(M * N)" if "silu" in str(path) else "M", "threads")
    assert f"<<<(unsigned)(({bound} + {threads} - 1) / {threads}), {threads}," in new
    assert "blocks" not in new.split("kl_launch")[1] and "grid >" not in new  # the capped variable goes
    assert _removal(new) is None


@pytest.mark.parametrize(("name", "why"), [
    ("silu_and_mul", "it does not start at blockIdx.x * blockDim.x + threadIdx.x"),  # a block per row
    ("row_sum", "it does not start at blockIdx.x * blockDim.x + threadIdx.x"),  # a warp per row
    ("gemm_bf16", "it does not start at blockIdx.x * blockDim.x + threadIdx.x"),  # persistent tiles
])
def test_expert_grid_stride_loops_stay_with_the_reason_in_the_hit(name, why):
    text, _ = source_of("cuda", name, "expert")
    hits = [h for h in detect(text, "cuda") if h.feature == "grid_stride_loop"]
    assert hits and all(not h.removable and why in h.detail for h in hits)


_KERNEL = """#include <cuda_runtime.h>
#include <stdint.h>
{prefix}
__global__ void scale(const float* x, float* y, {index_type} n, float a) {{
{before}  {index_type} i = ({index_type})blockIdx.x * blockDim.x + threadIdx.x;
  if ({guard}) {{
    {body}
  }}
}}

extern "C" int kl_launch(const void* const* inputs, void* const* outputs, const int64_t* axes,
                         const double* params, void* stream) {{
  const int64_t n = axes[0];
  {launch}
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}}
"""
_LAUNCH = ("scale<<<(unsigned)((n + 255) / 256), 256, 0, (cudaStream_t)stream>>>((const float*)inputs[0], "
           "(float*)outputs[0], n, (float)params[0]);")


def _kernel(index_type="int64_t", guard="i < n", body="y[i] = a * x[i];", before="", prefix="",
            launch=_LAUNCH):
    return _KERNEL.format(index_type=index_type, guard=guard, body=body, before=before, prefix=prefix,
                          launch=launch)


@pytest.mark.parametrize(("why", "kernel"), [
    ("its index i is a 32-bit int: i += the grid's thread count could wrap", _kernel(index_type="int")),
    ("its bounds check tests more than i against the bound", _kernel(guard="i < n && a > 0.0f")),
    ("the body writes s, declared outside it: it would carry over to the next element", _kernel(
        before="  float s = 0.0f;\n", body="s += x[i]; y[i] = s;")),
    ("the body names threadIdx: a thread no longer handles one element", _kernel(
        body="y[i] = a * x[i] + (float)threadIdx.x;")),
    ("it uses __shared__ memory, a barrier or warp intrinsics", _kernel(
        before="  __shared__ float t[256];\n", body="t[threadIdx.x] = x[i]; __syncthreads(); y[i] = t[0];")),
    ("the body takes the address of i", _kernel(body="const int64_t* p = &i; y[*p] = a;")),
    ("the body has a break, return or goto", _kernel(body="if (x[i] < 0.0f) return; y[i] = a * x[i];")),
    ("no launch of it in the file: its grid cannot be capped", _kernel(launch="(void)n;")),
    ("a launch of it is not a statement of its own", _kernel(
        launch="return (scale<<<1, 256, 0, (cudaStream_t)stream>>>((const float*)inputs[0], "
               "(float*)outputs[0], n, (float)params[0]), 0);")),
])
def test_the_insertion_says_why_a_kernel_is_left_alone(why, kernel):
    refused = insertion(kernel, "cuda", "grid_stride_loop")
    assert isinstance(refused, Refused) and why in refused.reason, refused


_STRIDED = """#include <cuda_runtime.h>
#include <stdint.h>

__global__ void scale(const float* x, float* y, int64_t n, float a) {{
{before}  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < {bound}; i += {stride}) {{
    {body}
  }}
}}

extern "C" int kl_launch(const void* const* inputs, void* const* outputs, const int64_t* axes,
                         const double* params, void* stream) {{
  const int64_t n = axes[0];
  scale<<<64, 256, 0, (cudaStream_t)stream>>>((const float*)inputs[0], (float*)outputs[0], {count},
                                              (float)params[0]);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}}
"""


def _strided(bound="n", stride="gridDim.x * blockDim.x", body="y[i] = a * x[i];", before="", count="n"):
    return _STRIDED.format(bound=bound, stride=stride, body=body, before=before, count=count)


@pytest.mark.parametrize("stride", ["gridDim.x * blockDim.x", "blockDim.x * gridDim.x",
                                    "(int64_t)gridDim.x * blockDim.x", "stride", "gridDim.x * 256"])
def test_the_common_spellings_of_the_stride_are_removed(stride):
    before = "  const int64_t stride = (int64_t)gridDim.x * blockDim.x;\n" if stride == "stride" else ""
    new = _removal(_strided(stride=stride, before=before)).new_source
    assert "  if (i < n) {\n" in new and "scale<<<(unsigned)((n + 256 - 1) / 256), 256," in new
    assert "stride" not in new and "gridDim" not in new  # the local that held it goes too


def test_the_held_out_expert_general_kernel_strides_by_its_block_constant():
    text = (HELDOUT / "scale_flat/kernels/expert/kernel.cu").read_text()
    vector, scalar = [h for h in detect(text, "cuda") if h.feature == "grid_stride_loop"]
    assert not vector.removable and "it does not start at" in vector.detail  # two per trip, from i
    assert scalar.removable, scalar.detail
    new = _removal(text).new_source
    assert ("  int64_t i = (int64_t)blockIdx.x * kThreads + threadIdx.x;\n"
            "  if (i < n) y[i] = fmaf(a, x[i], b);") in new
    assert "scale_scalar<<<(unsigned)((n + kThreads - 1) / kThreads), kThreads, 0, s>>>" in new


def test_the_bound_is_written_in_the_launch_arguments():
    new = _removal(_strided(bound="m", before="  const int64_t m = n / 2;\n", count="axes[0] * 2")).new_source
    assert "scale<<<(unsigned)((((axes[0] * 2) / 2) + 256 - 1) / 256), 256," in new


@pytest.mark.parametrize(("why", "kernel"), [
    ("the body writes s, declared outside it", _strided(before="  float s = 0.0f;\n", body="s += x[i];")),
    ("the body has a continue of the loop's own", _strided(body="if (x[i] < 0.0f) continue; y[i] = a;")),
    ("the body reads gridDim", _strided(body="y[i] = a * gridDim.x;")),
    ("the kernel reads gridDim at line 5", _strided(before="  if (blockIdx.x == gridDim.x - 1) y[0] = a;\n")),
    ("its stride gridDim.x * 128 is not gridDim.x * blockDim.x", _strided(stride="gridDim.x * 128")),
    ("its bound names x, not an integer parameter", _strided(bound="(int64_t)x[0]")),
    ("a launch's argument for n is not a plain expression", _strided(count="(int64_t)cudaGetLastError()")),
    ("its block declares another i", _strided(body="y[i] = a * x[i];\n  }\n  {\n    int64_t j = 0; (void)j;",
                                              before="  int64_t i = 0; (void)i;\n")),
    ("the kernel uses __shared__ memory", _strided(before="  __shared__ float t[32];\n",
                                                   body="t[0] = a; y[i] = t[0];")),
])
def test_a_loop_the_removal_cannot_prove_stays_with_the_reason(why, kernel):
    (loop,) = [h for h in detect(kernel, "cuda") if h.feature == "grid_stride_loop"]
    assert not loop.removable and why in loop.detail, loop.detail
    assert _removal(kernel) is None
