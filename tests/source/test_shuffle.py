"""warp_shuffle_reduction: butterflies to a shared-memory warp exchange and back, and the full-warp
proof each rewrite rests on (nvcc and SASS: test_cuda_builds.py; the gate: tests/gpu)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from klineage.source import Refused, detect, insertion, present, removal_edits

REPO = Path(__file__).resolve().parents[2]
EXPERTS = sorted([*(REPO / "examples" / "workloads" / "cuda").glob("*/kernels/expert/kernel.cu"),
                  *(REPO / "examples" / "heldout" / "cuda").glob("*/kernels/expert/kernel.cu")])
WITH_SHUFFLES = [p for p in EXPERTS if "__shfl" in p.read_text()]
STYLES = sorted((Path(__file__).parent / "styles" / "cuda").glob("*/row_per_warp/kernel.cu"))


def _removal(text: str):
    edits = [e for e in removal_edits(text, "cuda") if e.feature == "warp_shuffle_reduction"]
    return edits[0] if edits else None


def _hits(text: str):
    return [h for h in detect(text, "cuda") if h.feature == "warp_shuffle_reduction"]


def test_every_expert_with_shuffles_is_covered():
    # dot_f64acc (double lanes) came in a batch written after the pass by someone who had not read it
    assert len(WITH_SHUFFLES) == 7


@pytest.mark.parametrize("path", WITH_SHUFFLES, ids=lambda p: p.parts[-4])
def test_an_expert_loses_every_shuffle_and_the_insertion_gives_it_back(path):
    text = path.read_text()
    assert all(h.removable for h in _hits(text)), [h.detail for h in _hits(text)]
    edit = _removal(text)
    assert edit.pass_name == "shuffle_to_shared_exchange"
    removed = edit.new_source
    assert not re.search(r"__shfl\w*\(", removed) and "warp_shuffle_reduction" not in present(removed, "cuda")
    assert removed.count("__syncwarp();") == 2 * len(re.findall(r"__shfl\w*\(", text))
    assert re.search(r"__shared__ (float|double) kl_exchange\[1024\];", removed)
    inserted = insertion(removed, "cuda", "warp_shuffle_reduction")
    assert not isinstance(inserted, Refused), inserted
    assert inserted.new_source == text


_KERNEL = """#include <cuda_runtime.h>
{prefix}
__device__ float warp_sum(float v) {{
  for (int o = 16; o > 0; o >>= 1) {step}
  return v;
}}

__global__ void reduce(const float* x, float* y, int n) {{
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
{before}  float s = x[blockIdx.x * blockDim.x + threadIdx.x];
  {call}
  if (lane == 0) y[blockIdx.x * (blockDim.x / 32) + warp] = s;
}}
"""


def _kernel(step="v += __shfl_xor_sync(0xffffffffu, v, o);", call="s = warp_sum(s);", before="",
            prefix=""):
    return _KERNEL.format(step=step, call=call, before=before, prefix=prefix)


def test_the_exchange_reads_the_lane_the_shuffle_reads():
    xor = _removal(_kernel()).new_source
    assert ("  __shared__ float kl_exchange[1024];  // warp exchanges: a slot per thread\n"
            "  const unsigned kl_tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);\n"
            "  for (int o = 16; o > 0; o >>= 1) {\n"
            "    kl_exchange[kl_tid] = v;\n"
            "    __syncwarp();\n"
            "    v += kl_exchange[((kl_tid & 31u) ^ o) < 32u ? (kl_tid ^ o) : kl_tid];\n"
            "    __syncwarp();\n"
            "  }\n") in xor
    down = _removal(_kernel(step="v = fmaxf(v, __shfl_down_sync(0xFFFFFFFF, v, o, 32));")).new_source
    assert "    v = fmaxf(v, kl_exchange[(kl_tid & 31u) + o < 32u ? kl_tid + o : kl_tid]);\n" in down
    back = insertion(down, "cuda", "warp_shuffle_reduction").new_source
    assert "for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_down_sync(0xffffffffu, v, o));" in back
    assert "kl_exchange" not in back and "kl_tid" not in back


@pytest.mark.parametrize("call", [
    "if (warp == 0) s = warp_sum(s);",          # the warp index: uniform in a block of whole warps
    "if (blockIdx.x < (unsigned)n) s = warp_sum(s);",
    "for (int k = 0; k < n; ++k) s = warp_sum(s);",
    "if ((blockIdx.x * blockDim.x + threadIdx.x) / 32 < (unsigned)n) s = warp_sum(s);",
])
def test_a_warp_uniform_condition_keeps_the_warp_whole(call):
    assert all(h.removable for h in _hits(_kernel(call=call)))


@pytest.mark.parametrize(("why", "kernel"), [
    ("its mask is not 0xffffffff", _kernel(step="v += __shfl_xor_sync(0x0000ffffu, v, o);")),
    ("width 16: a sub-warp shuffle", _kernel(step="v += __shfl_xor_sync(0xffffffffu, v, o, 16);")),
    ("its value v * 2.0f is not a local or parameter", _kernel(
        step="v += __shfl_xor_sync(0xffffffffu, v * 2.0f, o);")),
    ("only xor, down and index shuffles", _kernel(step="v += __shfl_up_sync(0xffffffffu, v, o);")),
    ("its statement holds another shuffle", _kernel(
        step="v = fmaxf(__shfl_xor_sync(0xffffffffu, v, o), __shfl_down_sync(0xffffffffu, v, o));")),
    ("its function shuffles values of more than one type", _kernel(
        step="{\n    int k = (int)v;\n    v += __shfl_xor_sync(0xffffffffu, v, o);\n"
             "    k += __shfl_xor_sync(0xffffffffu, k, o);\n  }")),
    ("not in an expression statement of its own block", _kernel(
        step="v += 1.0f;\n  return 2.0f * __shfl_sync(0xffffffffu, v, 0);")),
    ("not in an expression statement of its own block", _kernel(
        step="v += o > 8 ? __shfl_xor_sync(0xffffffffu, v, o) : 0.0f;")),
    ("where reduce calls warp_sum: line 11: (lane < 16) may differ between lanes", _kernel(
        call="if (lane < 16) s = warp_sum(s);")),
    ("where reduce calls warp_sum: line 11: ((threadIdx.x + 5) / 32 == 0) may differ", _kernel(
        call="if ((threadIdx.x + 5) / 32 == 0) s = warp_sum(s);")),
    ("where reduce calls warp_sum: line 11: (x[threadIdx.x] / 32 > 0.0f) may differ", _kernel(
        call="if (x[threadIdx.x] / 32 > 0.0f) s = warp_sum(s);")),
    ("where reduce calls warp_sum: line 12: (acc.x > 0.0f) may differ", _kernel(
        call="float2 acc = make_float2(s, s);\n  if (acc.x > 0.0f) s = warp_sum(s);")),
    ("where reduce calls warp_sum: line 13: (k > 0) may differ", _kernel(
        call="int k;\n  atomicExch(&k, (int)threadIdx.x);\n  if (k > 0) s = warp_sum(s);")),
    ("where reduce calls warp_sum: line 11: inside a ?:, && or ||", _kernel(
        call="s = lane < 16 ? warp_sum(s) : s;")),
    ("line 10: an exit some lanes may take keeps them from it", _kernel(
        before="  if (threadIdx.x >= n) return;\n")),
    ("line 13: an exit some lanes may take keeps them from it", _kernel(
        call="for (int k = 0; k < n; ++k) {\n    s = warp_sum(s);\n    if (s > x[lane]) break;\n  }")),
    ("line 11: (atomicAdd(y, 1.0f) > 0.0f) may differ between lanes", _kernel(
        call="if (atomicAdd(y, 1.0f) > 0.0f) s = warp_sum(s);")),
    ("the helper's parameter is not known to be uniform", None),
])
def test_a_shuffle_not_proved_full_warp_stays_with_the_reason(why, kernel):
    if kernel is None:  # a condition on a helper's own parameter: per lane as far as the helper knows
        kernel = _kernel(prefix="__device__ float maybe(float s, int k) {\n  if (k > 0) s = warp_sum(s);\n"
                                "  return s;\n}\n", call="s = maybe(s, n);")
        why = "where maybe calls warp_sum: line 3: (k > 0) may differ between lanes"
    hits = _hits(kernel)
    assert hits and not any(h.removable for h in hits), [h.detail for h in hits]
    assert any(why in h.detail for h in hits), [h.detail for h in hits]
    assert _removal(kernel) is None


@pytest.mark.parametrize("path", STYLES, ids=lambda p: p.parts[-3])
def test_a_style_loses_its_butterfly_and_its_broadcast_and_gets_them_back(path):
    text = path.read_text()
    removed = _removal(text).new_source
    assert not re.search(r"__shfl\w*\(", removed) and "warp_shuffle_reduction" not in present(removed, "cuda")
    assert ("    const float kl_value = kl_exchange[(kl_tid & ~31u) | ((unsigned)0 & 31u)];\n"
            "    __syncwarp();\n"
            "    return kl_value;\n"
            "  }\n") in removed
    assert insertion(removed, "cuda", "warp_shuffle_reduction").new_source == text


def test_the_insertion_says_what_it_looks_for():
    refused = insertion(_kernel(), "cuda", "warp_shuffle_reduction")
    assert isinstance(refused, Refused) and "no shared-memory warp exchange" in refused.reason
