"""cache_blocking: the insertion tiles a nest whose inner loop strides memory where the
interchange's dependence check proves the tiled order safe (the tiled kernels pass the gate), says
why not everywhere else, and the removal gives the plain nest back, text for text."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from klineage.gate import Verdict, run_gate
from klineage.source import Refused, detect, insertion, removal_edits
from klineage.source.tunables import mined, neighbours
from klineage.workload import load_kernel, load_workload
from source._kernels import EXAMPLES, apply_flags, source_of, workload, write_kernel

STYLES = Path(__file__).parent / "styles"
TILED_TRANSPOSE = """    for (int64_t ib = 0; ib < M; ib += KL_TILE)
        for (int64_t jb = 0; jb < N; jb += KL_TILE)
            for (int64_t i = ib; i < (ib + KL_TILE < M ? ib + KL_TILE : M); i++) {
                for (int64_t j = jb; j < (jb + KL_TILE < N ? jb + KL_TILE : N); j++) {
                    y[j * M + i] = x[i * N + j];
                }
            }
    return 0;
"""


def _gate(tmp_path, quick, text: str, flags: tuple[str, ...]):
    """The gate's verdict on a transpose kernel: it builds, and it is correct at every check shape."""
    kernel = write_kernel(tmp_path / "tiled", workload("cpu", "transpose"), text, "c", flags)
    return run_gate(workload("cpu", "transpose"), kernel, options=replace(quick, profile=False))


def test_the_naive_transpose_is_tiled_and_passes_the_gate(tmp_path, quick):
    text, spec = source_of("cpu", "transpose", "naive")
    edit = insertion(text, "c", "cache_blocking")
    assert not isinstance(edit, Refused), edit
    assert "#include <stdint.h>\n#define KL_TILE 64\n" in edit.new_source
    assert TILED_TRANSPOSE in edit.new_source
    assert edit.params == {"tile": 64} and edit.sites[0].start_line == 12
    again = insertion(edit.new_source, "c", "cache_blocking")
    assert isinstance(again, Refused) and "already blocked" in again.reason
    report = _gate(tmp_path, quick, edit.new_source, spec.flags)
    assert report.verdict is Verdict.ACCEPTED, report.reason


def test_a_thread_pragma_on_the_outer_loop_ends_up_on_the_outer_block_loop(tmp_path, quick):
    text, spec = source_of("cpu", "transpose", "naive")
    threads = insertion(text, "c", "omp_parallel")
    edit = insertion(threads.new_source, "c", "cache_blocking")
    assert not isinstance(edit, Refused), edit
    assert "#pragma omp parallel for schedule(static)\n    for (int64_t ib = 0; ib < M;" in edit.new_source
    assert edit.new_source.count("#pragma") == 1
    report = _gate(tmp_path, quick, edit.new_source, apply_flags(spec.flags, threads))
    assert report.verdict is Verdict.ACCEPTED, report.reason


def test_threads_come_after_blocking_too_on_the_outer_block_loop(tmp_path, quick):
    # A method that drew cache_blocking before omp_parallel got no threads: the race check saw a
    # write indexed by i and j, not by the block counter ib, though i runs over ib's block alone.
    text, spec = source_of("cpu", "transpose", "naive")
    blocked = insertion(text, "c", "cache_blocking")
    threads = insertion(blocked.new_source, "c", "omp_parallel")
    assert threads.sites[0].text.startswith("for (int64_t ib = 0; ib < M; ib += KL_TILE)")
    report = _gate(tmp_path, quick, threads.new_source, apply_flags(spec.flags, threads))
    assert report.verdict is Verdict.ACCEPTED, report.reason
    # a write indexed by the inner block's counter alone is shared by every block row: a race
    racy = blocked.new_source.replace("y[j * M + i]", "y[j]")
    refused = insertion(racy, "c", "omp_parallel")
    assert isinstance(refused, Refused) and "the threads would race" in refused.reason


def test_the_held_out_column_order_stencil_is_tiled_and_passes_the_gate(tmp_path, quick):
    stencil = load_workload(EXAMPLES.parent / "heldout" / "cpu" / "stencil_colmajor", quick=True)
    naive = load_kernel(stencil, "naive")
    edit = insertion(naive.source.read_text(), "c", "cache_blocking")
    assert not isinstance(edit, Refused), edit
    assert "    for (int64_t jb = 0; jb < W; jb += KL_TILE)\n        for (int64_t ib = 0;" in edit.new_source
    kernel = write_kernel(tmp_path / "tiled", stencil, edit.new_source, "c", naive.flags)
    report = run_gate(stencil, kernel, options=replace(quick, profile=False))
    assert report.verdict is Verdict.ACCEPTED, report.reason


def test_the_tile_is_a_parameter_and_one_definition_serves_the_file():
    text, _ = source_of("cpu", "transpose", "naive")
    edit = insertion(text, "c", "cache_blocking", {"tile": 128})
    assert "#define KL_TILE 128\n" in edit.new_source and edit.params["tile"] == 128
    second = text.replace("    return 0;\n}", "    for (int64_t i = 0; i < M; i++)\n"
                          "        for (int64_t j = 0; j < N; j++)\n"
                          "            y[j * M + i] += x[i * N + j];\n    return 0;\n}")
    both = insertion(second, "c", "cache_blocking")
    assert len(both.sites) == 2 and both.new_source.count("#define KL_TILE") == 1
    assert isinstance(insertion(text, "c", "cache_blocking", {"tile": 0}), Refused)


HEAD = """#include <stdint.h>
static void f(const float* restrict x, float* restrict y, int64_t M, int64_t N) {
"""
TRANSPOSE = "y[j * M + i] = x[i * N + j];"


def _nest(body: str = TRANSPOSE, inner: str = "for (int64_t j = 0; j < N; j++)", above: str = "",
          between: str = "") -> str:
    return (HEAD + f"{above}    for (int64_t i = 0; i < M; i++) {{\n{between}        {inner} {{\n"
            f"            {body}\n        }}\n    }}\n}}\n")


@pytest.mark.parametrize(("text", "reason"), [
    (_nest(inner="for (int64_t j = 0; j < N; j += 2)"),
     "line 3: the loop over j steps by 'j += 2', not by 1: only unit-step loops are tiled"),
    (_nest(between="#pragma omp simd collapse(2)\n"),
     "'#pragma omp simd collapse(2)' sits on the inner loop"),
    (_nest(between="#pragma omp parallel for\n"), "'#pragma omp parallel for' sits on the inner loop"),
    (_nest(above="#pragma omp parallel for collapse(2)\n"),
     "only a plain 'omp parallel for' moves to the outer block loop"),
    (_nest(TRANSPOSE + " N = N + 0;"), "the bound N is written inside the nest"),
    (_nest(inner="for (int64_t j = 0; j < g(N); j++)"), "the bound 'g(N)' is not arithmetic on names"),
    (_nest("if (x[i * N + j] < 0) break; " + TRANSPOSE), "a break leaves the nest early"),
    (_nest("y[j * M + i] = y[j * M + i - 1] + x[i * N + j];"), "a carried dependence"),
    (_nest("y[i * N + j] = x[i * N + j];"), "nothing to gain: no access strides memory with the "
                                           "inner counter j"),
    (_nest(inner="for (int64_t j = 0; j < i; j++)"), "triangular"),
    (HEAD + "    for (int64_t i = 0; i < M; i++) {\n        y[i] = 0;\n"
     "        for (int64_t j = 0; j < N; j++) y[i] += x[j * M + i];\n    }\n}\n", "no perfect nest"),
])
def test_a_nest_it_cannot_tile_soundly_or_usefully_is_refused_with_its_reason(text, reason):
    result = insertion(text, "c", "cache_blocking")
    assert isinstance(result, Refused) and reason in result.reason, result


def test_the_control_nest_of_the_refusals_is_tiled():
    edit = insertion(_nest(), "c", "cache_blocking")
    assert not isinstance(edit, Refused), edit
    assert "for (int64_t j = jb; j < (jb + KL_TILE < N ? jb + KL_TILE : N); j++)" in edit.new_source


def test_a_simd_pragma_on_the_inner_loop_stays_on_it_within_each_tile(tmp_path, quick):
    # The kernel a bench run kept on transpose (threads, then omp simd) was refused tiling, 3x
    # faster on the naive nest: what omp simd asserts of all the inner loop's iterations holds for
    # a tile's.
    text, spec = source_of("cpu", "transpose", "naive")
    threads = insertion(text, "c", "omp_parallel")
    simd = insertion(threads.new_source, "c", "omp_simd")
    assert "#pragma omp simd" in simd.new_source
    edit = insertion(simd.new_source, "c", "cache_blocking")
    assert not isinstance(edit, Refused), edit
    assert "#pragma omp parallel for schedule(static)\n    for (int64_t ib = 0; ib < M;" in edit.new_source
    assert ("#pragma omp simd\n                for (int64_t j = jb; j < (jb + KL_TILE < N ? jb + KL_TILE"
            in edit.new_source), edit.new_source
    report = _gate(tmp_path, quick, edit.new_source, apply_flags(apply_flags(spec.flags, threads), simd))
    assert report.verdict is Verdict.ACCEPTED, report.reason


@pytest.mark.parametrize("pragma", ["#pragma omp simd", "#pragma GCC ivdep", "#pragma GCC unroll 4",
                                    "#pragma omp simd safelen(8)"])
def test_pragmas_about_the_inner_loops_own_iterations_are_kept_on_it(pragma):
    edit = insertion(_nest(between=pragma + "\n"), "c", "cache_blocking")
    assert not isinstance(edit, Refused), edit
    assert (f"{pragma}\n                for (int64_t j = jb; j < (jb + KL_TILE < N ? jb + KL_TILE : N); j++)"
            in edit.new_source), edit.new_source


def _corpus() -> list[tuple[str, str, str]]:
    """(label, language, text) of every CPU naive example and CPU style kernel."""
    folders = [(f"{p.parent.name}/naive", p.parent, p.parent / "kernels" / "naive")
               for p in sorted(EXAMPLES.glob("cpu/*/workload.toml"))]
    folders += [(f"{p.parent.parent.name}/{p.parent.name}", p.parent.parent, p.parent)
                for p in sorted(STYLES.glob("cpu/*/*/kernel.toml"))]
    kernels = []
    for label, example, folder in folders:
        spec = load_kernel(workload("cpu", example.name), folder)
        kernels.append((label, spec.language, spec.source.read_text()))
    return kernels


def test_removal_gives_back_every_kernel_it_tiled_text_for_text():
    tiled = []
    for label, language, text in _corpus():
        edit = insertion(text, language, "cache_blocking")
        if isinstance(edit, Refused):
            continue
        tiled.append(label)
        (removal,) = [e for e in removal_edits(edit.new_source, language) if e.feature == "cache_blocking"]
        assert removal.new_source == text, f"{label}\n{removal.diff}"
        assert removal.pass_name == "unblock_loop_nest" and removal.params == {"tile": 64}
    assert sorted(tiled) == ["sgemm/colmajor_c", "stencil2d/colmajor_c", "transpose/colmajor_c",
                             "transpose/naive", "transpose/rows_c"]


HAND_TILED = """#include <stdint.h>
#define MIN(a, b) ((a) < (b) ? (a) : (b))
static void f(const float* restrict x, float* restrict y, int64_t M, int64_t N) {
    const int64_t TB = 32;
    for (int64_t ib = 0; ib < M; ib += TB) {
        for (int64_t jb = 0; jb < N; jb += TB) {
            for (int64_t i = ib; i < MIN(ib + TB, M); ++i) {
                for (int64_t j = jb; j < (N < jb + TB ? N : jb + TB); ++j) {
                    y[j * M + i] = x[i * N + j];
                }
            }
        }
    }
}
"""
PLAIN = """#include <stdint.h>
#define MIN(a, b) ((a) < (b) ? (a) : (b))
static void f(const float* restrict x, float* restrict y, int64_t M, int64_t N) {
    for (int64_t i = 0; i < M; ++i) {
        for (int64_t j = 0; j < N; ++j) {
            y[j * M + i] = x[i * N + j];
        }
    }
}
"""


def test_a_hand_written_tiling_is_undone_and_its_tile_recorded():
    (removal,) = [e for e in removal_edits(HAND_TILED, "c") if e.feature == "cache_blocking"]
    assert removal.new_source == PLAIN and removal.params == {"tile": 32}


def test_a_tile_still_named_elsewhere_keeps_its_definition():
    shared = HAND_TILED.replace("    for (int64_t ib", "    float scratch[TB];\n    (void)scratch;\n"
                                "    for (int64_t ib")
    (removal,) = [e for e in removal_edits(shared, "c") if e.feature == "cache_blocking"]
    assert "const int64_t TB = 32;" in removal.new_source and "ib" not in removal.new_source


def test_blocking_the_remover_cannot_undo_is_reported_but_not_removable():
    commented = HAND_TILED.replace("jb += TB) {", "jb += TB) {  // one block row")
    assert [h.removable for h in detect(commented, "c") if h.feature == "cache_blocking"] == [False] * 3
    text, spec = source_of("cpu", "transpose", "expert")  # block loops that call a helper
    hits = [h for h in detect(text, "c") if h.feature == "cache_blocking"]
    assert hits and not any(h.removable for h in hits)
    assert "cache_blocking" not in {e.feature for e in removal_edits(text, "c", spec.flags)}


def test_the_expert_tile_is_mined_from_the_definition_a_block_loop_steps_by():
    assert mined("cache_blocking", ["#define TB 64", "for (int64_t ib = 0; ib < M; ib += TB)"]) == \
        {"tile": 64}
    assert mined("cache_blocking", ["#define TB 64", "for (int64_t ib = 0; ib < M; ib += 8)"]) == {}
    assert neighbours("cache_blocking", {"tile": 64}) == [{"tile": 32}, {"tile": 128}]
