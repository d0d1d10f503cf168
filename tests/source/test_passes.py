"""Removal and insertion passes: exact rewrites on small sources, order policy, and on every bundled
expert: each removal removes its feature and the result is still a correct kernel (CPU: the gate;
CUDA: nvcc, see test_cuda_builds.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from klineage.gate import Verdict, run_gate
from klineage.source import (
    DEPENDS_ON,
    Refused,
    detect,
    insertion,
    insertion_edits,
    present,
    removal_edits,
    removal_order,
)
from klineage.source.passes import REMOVAL_ORDER
from source._kernels import (
    CPU_WORKLOADS,
    apply_flags,
    backward_walk,
    source_of,
    workload,
    write_kernel,
)


def _only(edits, feature):
    (edit,) = [e for e in edits if e.feature == feature]
    return edit


def test_restrict_and_pragmas_are_dropped_exactly():
    text = ("void f(float* restrict y, const float* restrict x, int n) {\n"
            "#pragma omp parallel for schedule(static)\n"
            "    for (int i = 0; i < n; i++) y[i] = x[i];\n}\n")
    edits = removal_edits(text, "c", ("-fopenmp",))
    assert _only(edits, "restrict").new_source.startswith("void f(float* y, const float* x, int n)")
    threads = _only(edits, "omp_parallel")
    assert "#pragma" not in threads.new_source and threads.flags_removed == ("-fopenmp",)
    assert threads.sites[0].start_line == 2 and threads.diff.count("\n-#pragma") == 1


def test_isa_block_becomes_its_general_branch():
    text = ("int f(void) {\n#if defined(__AVX512F__)\n  return _mm512_foo();\n#elif defined(__AVX2__)\n"
            "  return _mm256_foo();\n#else\n  return 0;\n#endif\n}\n")
    edit = _only(removal_edits(text, "c"), "simd_intrinsics")
    assert edit.new_source == "int f(void) {\n  return 0;\n}\n"


def test_cuda_intrinsics_become_plain_forms():
    text = ("__device__ float f(const float* __restrict__ p, float g, float s) {\n"
            "  return __fdividef(g, 1.0f + __expf(-g)) * rsqrtf(s + 1.0f) + __ldg(&p[3]) + __ldg(p);\n}\n")
    edits = removal_edits(text, "cuda")
    math = _only(edits, "fast_math_intrinsics").new_source
    assert "return (g / (1.0f + expf(-g))) * (1.0f / sqrtf(s + 1.0f))" in math
    assert "p[3] + *p;" in _only(edits, "read_only_cache").new_source


def test_launch_bounds_go_with_setmaxnreg():
    text = ("__global__ void __launch_bounds__(384, 1) k(float* y) {\n"
            "  asm volatile(\"setmaxnreg.inc.sync.aligned.u32 232;\\n\");\n  y[0] = 1.0f;\n}\n")
    edit = _only(removal_edits(text, "cuda"), "launch_bounds")
    assert edit.new_source == "__global__ void k(float* y) {\n  y[0] = 1.0f;\n}\n"


def test_removal_order_puts_dependents_first():
    assert removal_order(["omp_parallel", "restrict", "simd_intrinsics"]) == \
        ["restrict", "simd_intrinsics", "omp_parallel"]
    order = removal_order(REMOVAL_ORDER)
    for feature, needs in DEPENDS_ON.items():
        assert all(order.index(feature) < order.index(n) for n in needs)


def test_a_prerequisite_is_not_proposed_while_its_dependent_is_present(monkeypatch):
    import klineage.source.passes as passes

    monkeypatch.setitem(passes.DEPENDS_ON, "unroll", ("restrict",))
    text = "void f(float* restrict y) {\n#pragma GCC unroll 4\n  for (int i = 0; i < 4; i++) y[i] = 0;\n}\n"
    assert [e.feature for e in removal_edits(text, "c")] == ["unroll"]


@pytest.mark.parametrize("kind,name", [("cpu", n) for n in CPU_WORKLOADS] +
                         [("cuda", "gemm_bf16"), ("cuda", "softmax"), ("cuda", "row_sum")])
def test_each_removal_removes_its_feature_and_is_deterministic(kind, name):
    text, spec = source_of(kind, name, "expert")
    edits = removal_edits(text, spec.language, spec.flags)
    assert edits and [e.feature for e in edits] == removal_order(e.feature for e in edits)
    for edit in edits:
        left = [h for h in detect(edit.new_source, spec.language) if h.feature == edit.feature]
        assert not any(h.removable for h in left), edit.feature
        assert edit.sites and edit.diff
    assert [e.new_source for e in removal_edits(text, spec.language, spec.flags)] == \
        [e.new_source for e in edits]


@pytest.mark.parametrize("name", CPU_WORKLOADS)
def test_every_cpu_expert_removal_passes_the_gate(name, quick, tmp_path):
    text, spec = source_of("cpu", name, "expert")
    options = replace(quick, profile=False)
    for edit in removal_edits(text, "c", spec.flags):
        kernel = write_kernel(tmp_path / edit.feature, workload("cpu", name), edit.new_source, "c",
                              apply_flags(spec.flags, edit))
        report = run_gate(workload("cpu", name), kernel, options=options)
        assert report.verdict is Verdict.ACCEPTED, f"{edit.feature}: {report.reason}\n{edit.diff}"


# The backward walk of each CPU expert: the features removed, in order, and what stays and why.
WALKS = {
    "rmsnorm": (["streaming_store", "restrict", "simd_intrinsics", "omp_simd", "omp_parallel"], set()),
    "sgemm": (["unroll", "restrict", "simd_intrinsics", "omp_simd", "omp_parallel"],
              {"cache_blocking", "packing"}),  # loop-nest restructuring: an LLM's rewrite
    "softmax": (["streaming_store", "prefetch", "restrict", "simd_intrinsics", "omp_simd",
                 "omp_parallel"], set()),
    "stencil2d": (["unroll", "restrict", "simd_intrinsics", "omp_simd", "omp_parallel"], set()),
    "transpose": (["unroll", "restrict", "simd_intrinsics", "omp_parallel"], {"cache_blocking"}),
}


@pytest.mark.parametrize("name", CPU_WORKLOADS)
def test_backward_walk_of_cpu_expert_reaches_a_fixed_point(name, quick, tmp_path):
    from klineage.backends.cpu import CpuBackend

    text, spec = source_of("cpu", name, "expert")
    steps = backward_walk(text, "c", spec.flags)
    removed, remaining = WALKS[name]
    assert [edit.feature for edit, _, _ in steps] == removed
    final_text, final_flags = steps[-1][1], steps[-1][2]
    assert present(final_text, "c") == remaining and removal_edits(final_text, "c", final_flags) == []
    assert final_flags == ()  # -fopenmp left with the last OpenMP pragma
    for i, (edit, step_text, step_flags) in enumerate(steps):
        kernel = write_kernel(tmp_path / f"step{i}", workload("cpu", name), step_text, "c", step_flags)
        assert CpuBackend().build(kernel).ok, edit.diff
    report = run_gate(workload("cpu", name), kernel, options=replace(quick, profile=False))
    assert report.verdict is Verdict.ACCEPTED, report.reason


# ---------------------------------------------------------------------------- insertions


def test_insertions_on_a_naive_cpu_kernel():
    text, _ = source_of("cpu", "rmsnorm", "naive")
    (threads,) = insertion_edits(text, "c", "omp_parallel")
    assert threads.flags_added == ("-fopenmp",) and threads.sites[0].start_line == 15
    assert "omp_parallel" in present(threads.new_source, "c")
    (simd,) = insertion_edits(text, "c", "omp_simd")
    assert "#pragma omp simd reduction(+ : ss)" in simd.new_source
    (unroll,) = insertion_edits(text, "c", "unroll", {"factor": 2})
    assert "#pragma GCC unroll 2" in unroll.new_source and unroll.params["factor"] == 2
    assert insertion_edits(text, "c", "packing") == []  # every read walks memory at unit stride


def test_insertions_on_a_naive_cuda_kernel():
    text, _ = source_of("cuda", "add_rmsnorm", "naive")
    (bounds,) = insertion_edits(text, "cuda", "launch_bounds")
    assert "__global__ void __launch_bounds__(128) add_rmsnorm_naive(" in bounds.new_source
    (fast,) = insertion_edits(text, "cuda", "fast_math_intrinsics")
    assert "rsqrtf(ss / (float)N + eps)" in fast.new_source
    (restrict,) = insertion_edits(text, "cuda", "restrict")
    (ldg,) = insertion_edits(restrict.new_source, "cuda", "read_only_cache")
    assert "__ldg(&x[row * N + j])" in ldg.new_source and "__ldg(&res_out" not in ldg.new_source


@pytest.mark.parametrize("name", CPU_WORKLOADS)
def test_mechanical_insertions_keep_naive_cpu_kernels_correct(name, quick, tmp_path):
    text, spec = source_of("cpu", name, "naive")
    flags = spec.flags
    for feature in ("restrict", "omp_parallel", "omp_simd", "unroll"):
        for edit in insertion_edits(text, "c", feature, {"flags": flags}):
            text, flags = edit.new_source, apply_flags(flags, edit)
            assert feature in present(text, "c")
    kernel = write_kernel(tmp_path / "inserted", workload("cpu", name), text, "c", flags)
    report = run_gate(workload("cpu", name), kernel, options=replace(quick, profile=False))
    assert report.verdict is Verdict.ACCEPTED, report.reason


def test_unroll_removal_records_the_factor_that_worked():
    text, _ = source_of("cpu", "stencil2d", "expert")
    (unroll,) = [e for e in removal_edits(text, "c") if e.feature == "unroll"]
    assert unroll.params["factor"] == 2  # re-derivation and the skill carrier reuse it


def test_omp_simd_is_not_put_on_a_loop_that_already_carries_an_unroll_pragma():
    # GCC accepts neither order of '#pragma omp simd' and '#pragma GCC unroll' on one loop.
    text = ("float total(const float* a, int n) {\n  float s = 0.0f;\n#pragma GCC unroll 4\n"
            "  for (int i = 0; i < n; ++i) s += a[i];\n  return s;\n}\n")
    assert insertion_edits(text, "c", "omp_simd") == []


_SCALE_KERNEL = """#include <cuda_runtime.h>
#include <stdint.h>
__global__ void scale(const float* x, float* y, int64_t M, int64_t N) {{
  int64_t row = blockIdx.x;
  for (int64_t j = threadIdx.x; j < {bound}; j += 128) {body}
}}
extern "C" int kl_launch(const void* const* inputs, void* const* outputs, const int64_t* axes,
                         const double* params, void* stream) {{
  scale<<<(unsigned)axes[0], 128, 0, (cudaStream_t)stream>>>({args}, axes[0], axes[1]);
  return 0;
}}
"""


def _scale(bound="N", body="y[row * N + j] = 2.0f * x[row * N + j];",
           args="(const float*)inputs[0], (float*)outputs[0]"):
    return _SCALE_KERNEL.format(bound=bound, body=body, args=args)


def test_vectorized_access_insertion_guards_what_it_assumes():
    (edit,) = insertion_edits(_scale(), "cuda", "vectorized_access")
    text = edit.new_source
    assert "vectorized_access" in present(text, "cuda")
    # whole chunks: the bound and the row offset are multiples of 4 floats when N is
    assert "(axes[1]) % 4 == 0" in text
    # aligned chunks: both pointers the fast kernel moves 16 bytes through
    assert "((unsigned long long)((const float*)inputs[0]) & 15ull) == 0" in text
    assert "((unsigned long long)((float*)outputs[0]) & 15ull) == 0" in text
    assert "for (int64_t kl_j0 = (threadIdx.x) * 4; kl_j0 < N; kl_j0 += (128) * 4)" in text
    assert "*reinterpret_cast<uint4*>(y + row * N + kl_j0) = kl_y_0_raw;" in text
    assert edit.params["lanes"] == {"scale": 4}


@pytest.mark.parametrize(("case", "kernel"), [
    ("the bound need not be whole chunks", _scale(bound="N - 1")),
    ("the offset need not be whole chunks", _scale(body="y[row + j] = 2.0f * x[row + j];")),
    ("a conditional store would write lanes the loop skipped",
     _scale(body="{ if (x[row * N + j] > 0.0f) y[row * N + j] = 1.0f; }")),
    ("a read-modify-write", _scale(body="y[row * N + j] += x[row * N + j];")),
    ("the launch passes one buffer twice", _scale(args="(const float*)outputs[0], (float*)outputs[0]")),
    ("the counter is changed in the body", _scale(body="{ y[row * N + j] = 1.0f; j += 1; }")),
])
def test_vectorized_access_insertion_leaves_what_it_cannot_prove(case, kernel):
    assert insertion_edits(kernel, "cuda", "vectorized_access") == [], case


@pytest.mark.parametrize(("start", "stride", "why"), [
    ("1", "1", "runs from 1 by 1"),  # a max seeded with x[0]: the chunks would skip x[1..3]
    ("threadIdx.x", "2 * blockDim.x", "runs from threadIdx.x by 2 * blockDim.x"),
    ("threadIdx.x", "64", "runs from threadIdx.x by 64"),  # the block has 128 threads
])
def test_vectorized_access_refuses_a_loop_that_does_not_cover_its_range_once(start, stride, why):
    kernel = _scale().replace("j = threadIdx.x; j < N; j += 128", f"j = {start}; j < N; j += {stride}")
    refused = insertion(kernel, "cuda", "vectorized_access")
    assert isinstance(refused, Refused) and why in refused.reason, refused


def test_vectorized_access_insertion_keeps_unprovable_reads_scalar():
    (edit,) = insertion_edits(_scale(body="y[row * N + j] = x[row + j];"), "cuda", "vectorized_access")
    assert "x[row + j]" in edit.new_source and "(float*)outputs[0]) & 15ull" in edit.new_source
    assert "inputs[0]) & 15ull" not in edit.new_source  # x is not read through vectors


def test_vectorized_access_insertion_is_undone_by_the_fast_path_removal():
    text, _ = source_of("cuda", "add_rmsnorm", "expert")
    while "vectorized_access" in present(text, "cuda"):
        text = removal_edits(text, "cuda")[0].new_source
    (inserted,) = insertion_edits(text, "cuda", "vectorized_access")
    removal = [e for e in removal_edits(inserted.new_source, "cuda") if e.feature == "vectorized_access"]
    assert removal[0].new_source == text


def test_vectorized_access_insertion_sizes_a_persistent_grid_for_the_fast_kernel():
    # The launcher sizes its grid from the kernel's occupancy; sized for the general kernel, the
    # fast kernel's extra blocks ran as a second wave (measured 1.21x slower on the H200).
    text, _ = source_of("cuda", "silu_and_mul", "expert")
    while "vectorized_access" in present(text, "cuda"):
        text = removal_edits(text, "cuda")[0].new_source
    (inserted,) = insertion_edits(text, "cuda", "vectorized_access")
    new = inserted.new_source
    assert new.index("const bool kl_silu_and_mul_general_vec_ok") < new.index("cudaOccupancy")
    assert "(kl_silu_and_mul_general_vec_ok ? (const void*)silu_and_mul_general_vec : " in new
    removal = [e for e in removal_edits(new, "cuda") if e.feature == "vectorized_access"]
    assert "_vec" not in removal[0].new_source and "vectorized_access" not in present(
        removal[0].new_source, "cuda")


def test_omp_parallel_threads_the_row_loop_whatever_order_the_passes_come_in(tmp_path, quick):
    # With 'omp simd' on the inner loops first, the threading pass used to find no site: a
    # baseline that drew simd first never got threads (bench, 2026-12-01: rmsnorm 2.16x vs 3.66x).
    text, _ = source_of("cpu", "rmsnorm", "naive")
    (simd,) = insertion_edits(text, "c", "omp_simd")
    (both,) = insertion_edits(simd.new_source, "c", "omp_parallel", {"flags": list(simd.flags_added)})
    assert both.sites[0].text.startswith("for (int64_t i = 0; i < M; i++)")
    assert both.new_source.count("#pragma omp simd") == 2 and both.flags_added == ("-fopenmp",)
    assert insertion_edits(both.new_source, "c", "omp_parallel") == [], "threads once"
    kernel = write_kernel(tmp_path / "both", workload("cpu", "rmsnorm"), both.new_source, "c",
                          (*simd.flags_added, *both.flags_added))
    report = run_gate(workload("cpu", "rmsnorm"), kernel, options=quick)
    assert report.verdict == Verdict.ACCEPTED, report.reason


_FLAT_KERNEL = """#include <cuda_runtime.h>
#include <stdint.h>
__global__ void scale(const float* x, float* y, long long n, float a) {{
  {index}
  {body}
}}

extern "C" int kl_launch(const void* const* inputs, void* const* outputs, const int64_t* axes,
                         const double* params, void* stream) {{
  const long long n = axes[0];
  const long long grid = (n + 255) / 256;
  scale<<<(unsigned)grid, 256, 0, (cudaStream_t)stream>>>((const float*)inputs[0], (float*)outputs[0],
                                                          n, (float)params[0]);
  return 0;
}}
"""


def _flat(body="if (i < n) y[i] = a * x[i];",
          index="long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;"):
    return _FLAT_KERNEL.format(index=index, body=body)


@pytest.mark.parametrize("body", [
    "if (i < n) y[i] = a * x[i];",
    "if (i < n) {\n    const float v = x[i];\n    y[i] = a * v;\n  }",
    "if (i >= n) return;\n  y[i] = a * x[i];",
    # another coordinate declared between the index and its check (held-out bias_gelu_2d's
    # 'int col = ...; int row = ...; if (row < rows && col < cols)', refused before)
    "const int w = blockIdx.y;\n  if (w < 1 && i < n) y[i] = a * x[i];",
])
def test_vectorized_access_gives_a_flat_kernel_one_chunk_per_thread_and_a_smaller_grid(body):
    (edit,) = insertion_edits(_flat(body), "cuda", "vectorized_access")
    text = edit.new_source
    assert ("const long long kl_i0 = (long long)((long long)blockIdx.x * blockDim.x + threadIdx.x) * 4;"
            in text)
    assert "kl_i0 < n" in text or "kl_i0 >= n" in text  # the whole chunk is in bounds: n % 4 == 0
    assert "(n) % 4 == 0" in text and "((unsigned long long)((float*)outputs[0]) & 15ull) == 0" in text
    # a quarter of the threads: the grid divides by the lanes, rounding up
    assert "dim3 kl_grid((unsigned)grid);\n      kl_grid.x = (kl_grid.x + 3u) / 4u;" in text
    assert "scale_vec<<<kl_grid, 256, 0, (cudaStream_t)stream>>>" in text
    assert "*reinterpret_cast<uint4*>(y + kl_i0) = kl_y_" in text
    assert "else\n    scale<<<(unsigned)grid, 256" in text, "the general kernel keeps its grid"
    removal = [e for e in removal_edits(text, "cuda") if e.feature == "vectorized_access"]
    assert removal[0].new_source == _flat(body), "the fast-path removal undoes it"


@pytest.mark.parametrize(("why", "kernel"), [
    ("no local set to blockIdx.x * blockDim.x + threadIdx.x",
     _flat(index="long long i = blockIdx.x;")),
    ("is not i < BOUND", _flat(body="if (i <= n) y[i] = a * x[i];")),
    ("its bound n - 1 is not provably a multiple of 4", _flat(body="if (i < n - 1) y[i] = a * x[i];")),
    ("the offset of the store to y is not provably a multiple of 4",
     _flat(body="if (i < n) y[i + 1] = a * x[i];")),
    ("a kernel with a loop is judged by its loops: the loop at line 5: no access p[OFF + k]",
     _flat(body="if (i < n) { float s = 0.0f; for (int k = 0; k < 3; ++k) s += x[i]; y[i] = s; }")),
    ("statements follow the bounds-checked block", _flat(body="if (i < n) y[i] = a * x[i];\n  y[0] = 0;")),
    ("the first statement after i that is not a declaration without it is not its bounds check",
     _flat(body="const long long j = i / 2;\n  if (j < n) y[j] = a * x[j];")),
    ("the store to y is conditional", _flat(body="if (i < n) { if (x[i] > 0) y[i] = 1.0f; }")),
])
def test_vectorized_access_says_why_a_flat_kernel_is_left_alone(why, kernel):
    refused = insertion(kernel, "cuda", "vectorized_access")
    assert isinstance(refused, Refused) and why.split(": ", 1)[-1] in refused.reason, refused


@pytest.mark.parametrize(("body", "clause"), [
    ("if (x[j] > m) m = x[j];", " reduction(max : m)"),
    ("if (m < x[j]) { m = x[j]; }", " reduction(max : m)"),
    ("if (x[j] <= m) m = x[j];", " reduction(min : m)"),
    ("if (x[j] > m) m = x[j]; else m = 0.0f;", None),  # the else writes m another way
    ("if (x[j] > m) { m = x[j]; k = j; }", None),  # an argmax: k is no reduction
    ("if (x[j] > k) m = x[j];", None),  # the test is not about m
    ("m += x[j];", " reduction(+ : m)"),
    ("m += x[j] * m;", None),  # reads m outside its own update: no reduction
    ("y[j] = m; m += x[j];", None),  # a running value (held-out gemv's row pointer)
])
def test_omp_simd_reads_an_if_guarded_max_as_a_max_reduction(body, clause):
    # softmax's naive max loop ('if (v > m) m = v;') was refused as "writes m": no method got
    # its max pass vectorized, the loop most row reductions start with.
    text = ("float f(const float* x, float* y, int n) {\n  float m = x[0]; int k = 0;\n"
            f"  for (int j = 1; j < n; j++) {{ {body} }}\n  return m + k;\n}}\n")
    edits = insertion_edits(text, "c", "omp_simd")
    if clause is None:
        assert edits == []
    else:
        assert f"#pragma omp simd{clause}\n" in edits[0].new_source


def test_a_removal_records_only_tunables_for_the_carrier():
    # The vectorized fast path takes its register tile along (also_removes); that list rode into
    # the card's rewrite params and every tune: key of the H200 bench.
    from klineage.source.tunables import tunables_of

    text, _ = source_of("cuda", "row_sum", "expert")
    (edit,) = [e for e in removal_edits(text, "cuda") if e.feature == "vectorized_access"]
    assert edit.params["also_removes"] == ["register_blocking"]
    assert tunables_of(edit.feature, edit.params) == {"vector_bytes": 16}


def _softmax_with_threads_only():
    """The softmax expert with every removable feature but its threads removed, and its flags."""
    text, spec = source_of("cpu", "softmax", "expert")
    flags = spec.flags
    while True:
        edits = [e for e in removal_edits(text, "c", flags) if e.feature != "omp_parallel"]
        if not edits:
            return text, flags
        text, flags = edits[0].new_source, apply_flags(flags, edits[0])


def test_omp_parallel_makes_the_block_around_a_scratch_row_the_parallel_region(tmp_path, quick):
    # softmax's row loop passes a scratch row malloc'd before it: threading the loop alone would
    # share it (refused), so its re-derivation never reproduced and softmax gave no threads card.
    threaded, flags = _softmax_with_threads_only()
    (removal,) = [e for e in removal_edits(threaded, "c", flags) if e.feature == "omp_parallel"]
    again = insertion(removal.new_source, "c", "omp_parallel", {"flags": apply_flags(flags, removal)})
    assert again.new_source == threaded, "the expert's region, for and atomic write, exactly"
    assert again.params["pragma"] == "omp parallel + omp for schedule(static)"
    kernel = write_kernel(tmp_path / "region", workload("cpu", "softmax"), again.new_source, "c",
                          apply_flags(apply_flags(flags, removal), again))
    report = run_gate(workload("cpu", "softmax"), kernel, options=replace(quick, profile=False))
    assert report.verdict is Verdict.ACCEPTED, report.reason


@pytest.mark.parametrize("extra", [
    "memset(y, 0, 4);",  # every thread would clear the shared output
    "err += 1;",  # a read-modify-write of a flag from outside: a race
    "for (int k = 0; k < 2; k++) err = 0;",  # another loop would run once per thread
])
def test_omp_parallel_refuses_a_region_that_would_share_work(extra):
    text = ("#include <stdlib.h>\n#include <string.h>\n#include <stdint.h>\n"
            "static void row(const float* x, float* e, float* y, int64_t n) {\n"
            "  for (int64_t t = 0; t < n; t++) { e[t] = x[t]; y[t] = e[t]; }\n}\n"
            "int kl_launch(const void* const* inputs, void* const* outputs, const int64_t* axes,\n"
            "              const double* params, void* stream) {\n"
            "  const float* x = (const float*)inputs[0];\n  float* y = (float*)outputs[0];\n"
            "  const int64_t M = axes[0], N = axes[1];\n  int err = 0;\n  {\n"
            "    float* e = (float*)malloc((size_t)N * sizeof(float));\n"
            f"    {extra}\n"
            "    for (int64_t i = 0; i < M; i++) row(x + i * N, e, y + i * N, N);\n"
            "    free(e);\n  }\n  return err;\n}\n")
    assert isinstance(insertion(text, "c", "omp_parallel"), Refused)
    plain = text.replace(f"    {extra}\n", "    if (!e) err = 1;\n")
    assert not isinstance(insertion(plain, "c", "omp_parallel"), Refused), "the same block, threadable"


def test_omp_parallel_refuses_a_region_whose_loop_carries_a_scalar_of_the_block():
    # 'prev' would restart at 0 in every thread's first row: each thread's chunk would be wrong.
    text = ("#include <stdint.h>\n"
            "int kl_launch(const void* const* inputs, void* const* outputs, const int64_t* axes,\n"
            "              const double* params, void* stream) {\n"
            "  const float* x = (const float*)inputs[0];\n  float* y = (float*)outputs[0];\n"
            "  const int64_t M = axes[0];\n  {\n    float prev = 0.0f;\n"
            "    for (int64_t i = 0; i < M; i++) { y[i] = x[i] + prev; prev = x[i]; }\n  }\n"
            "  return 0;\n}\n")
    refused = insertion(text, "c", "omp_parallel")
    assert isinstance(refused, Refused) and "writes prev" in refused.reason
