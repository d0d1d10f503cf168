"""packing: the insertion copies a strided, read-only, re-read input into a buffer in the inner
loop's order (the packed kernels pass the gate, their packed branch included), says why not
everywhere else, and the removal gives the nest back byte for byte; hand-written packings of the
same kind are undone, BLIS-style micro-panel packing stays and says why."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from klineage.gate import Verdict, run_gate
from klineage.source import Refused, detect, insertion, removal_edits
from klineage.source.parse import parse, walk
from klineage.workload import load_kernel, load_workload
from source._kernels import EXAMPLES, apply_flags, source_of, workload

STYLES = Path(__file__).parent / "styles"
HELD_OUT = EXAMPLES.parent / "heldout" / "cpu"
PACKED_NAIVE = """    float* kl_B_packed = (float*)kl_pack_alloc(N, K, sizeof(float));
    if (kl_B_packed != NULL) {
        for (int64_t j = 0; j < N; j++)
            for (int64_t k = 0; k < K; k++)
                kl_B_packed[j * K + k] = B[k * N + j];
        for (int64_t i = 0; i < M; i++) {
            for (int64_t j = 0; j < N; j++) {
                float sum = 0.0f;
                for (int64_t k = 0; k < K; k++) {
                    sum += A[i * K + k] * kl_B_packed[j * K + k];
                }
                C[i * N + j] = sum;
            }
        }
        free(kl_B_packed);
    } else {
        for (int64_t i = 0; i < M; i++) {
"""


def _gate(tmp_path, quick, load_from, text: str, language: str, flags: tuple[str, ...] = ()):
    """The gate's verdict: built with gcc / g++, and equal to the reference on every check shape
    (sgemm's include 1x1x1, 3x17x5, 37x45x29 and 131x67x530)."""
    folder = tmp_path / "packed"
    folder.mkdir(exist_ok=True)
    (folder / ("kernel.cpp" if language == "cpp" else "kernel.c")).write_text(text)
    quoted = ", ".join(f'"{f}"' for f in flags)
    (folder / "kernel.toml").write_text(f'language = "{language}"\nflags = [{quoted}]\n')
    return run_gate(load_from, load_kernel(load_from, folder), options=replace(quick, profile=False))


def _without_fallback(text: str, language: str) -> str:
    """The packed kernel with its unpacked branch replaced by abort(): the gate then passes only
    if the packed branch ran on every shape."""
    parsed = parse(text, language)
    statement = next(n for n in walk(parsed.root) if n.type == "if_statement" and b"_packed !=" in n.text)
    body = statement.child_by_field_name("alternative").named_children[0]
    return text[:body.start_byte] + "{ abort(); }" + text[body.end_byte:]


def _accepted(tmp_path, quick, load_from, text: str, language: str, flags: tuple[str, ...] = ()):
    for version in (text, _without_fallback(text, language)):
        report = _gate(tmp_path, quick, load_from, version, language, flags)
        assert report.verdict is Verdict.ACCEPTED, f"{report.reason}\n{version}"


# ---------------------------------------------------------------------------- insertion


def test_the_naive_sgemm_packs_b_transposed_and_passes_the_gate(tmp_path, quick):
    text, spec = source_of("cpu", "sgemm", "naive")
    edit = insertion(text, "c", "packing")
    assert not isinstance(edit, Refused), edit
    assert PACKED_NAIVE in edit.new_source
    assert "#include <stdint.h>\n#include <stdlib.h> /* for kl_pack_alloc */\n" in edit.new_source
    assert "static void* kl_pack_alloc(int64_t n, int64_t m, size_t size)" in edit.new_source
    assert edit.sites[0].start_line == 14 and edit.params == {}
    _accepted(tmp_path, quick, workload("cpu", "sgemm"), edit.new_source, "c", spec.flags)


@pytest.mark.parametrize(("folder", "read", "packed"), [
    (STYLES / "cpu" / "sgemm" / "cpp", "kl_b_packed[j * k + p] = b(p, j);",
     "sum += a(i, p) * kl_b_packed[j * k + p];"),  # a view struct's operator()
    (HELD_OUT / "matmul_ikj" / "kernels" / "naive", "kl_B_packed[j * K + k] = b(k, j);",
     "acc += a(i, k) * kl_B_packed[j * K + k];"),  # a lambda reading B through an inline helper
])
def test_a_cpp_accessor_is_packed_through_its_own_call(folder, read, packed, tmp_path, quick):
    load_from = load_workload(folder.parents[1] if folder.parent.name == "kernels" else
                              EXAMPLES / "cpu" / "sgemm", quick=True)
    spec = load_kernel(load_from, folder)
    edit = insertion(spec.source.read_text(), "cpp", "packing")
    assert not isinstance(edit, Refused), edit
    assert read in edit.new_source and packed in edit.new_source
    assert "static_cast<float*>(kl_pack_alloc(" in edit.new_source and "std::free(kl_" in edit.new_source
    _accepted(tmp_path, quick, load_from, edit.new_source, "cpp")


def _macro_sgemm() -> str:
    text, _ = source_of("cpu", "sgemm", "naive")
    return (text.replace("#include <stdint.h>\n", "#include <stdint.h>\n#define AT(p, r, c, ld) "
                         "((p)[(r) * (ld) + (c)])\n")
            .replace("A[i * K + k] * B[k * N + j]", "AT(A, i, k, K) * AT(B, k, j, N)"))


def test_a_function_like_macro_read_is_packed_through_the_macro(tmp_path, quick):
    edit = insertion(_macro_sgemm(), "c", "packing")
    assert not isinstance(edit, Refused), edit
    assert "kl_B_packed[j * K + k] = AT(B, k, j, N);" in edit.new_source
    assert "sum += AT(A, i, k, K) * kl_B_packed[j * K + k];" in edit.new_source
    _accepted(tmp_path, quick, workload("cpu", "sgemm"), edit.new_source, "c")


def test_a_pointer_walk_is_packed_by_restarting_and_stepping_its_pointer(tmp_path, quick):
    spec = load_kernel(workload("cpu", "sgemm"), STYLES / "cpu" / "sgemm" / "pointer_c")
    edit = insertion(spec.source.read_text(), "c", "packing")
    assert not isinstance(edit, Refused), edit
    new = edit.new_source
    assert "kl_B_packed[j * K + kl_t] = B[j + kl_t * N];" in new
    assert "const float* b = kl_B_packed + j * K;" in new and "b += 1;" in new
    assert "const float* b = B + j;" in new and "b += N;" in new  # the fallback walks B
    _accepted(tmp_path, quick, workload("cpu", "sgemm"), new, "c")


@pytest.mark.parametrize(("change", "reason"), [
    (("*c = sum;", "*c = sum + 0.0f * *b;"), "b is used at line 27 other than by *b in the loop"),
    (("sum += *a * *b;", "sum += *a * *b + b[0];"), "b is used at line 23 other than by *b"),
    (("sum += *a * *b;", "sum += *a * b[0];"), "b[0] reads through b, which the nest moves: not followed"),
    (("                b += N;\n", "                if (sum > 0.0f) b += N;\n"),
     "is not a statement of the loop"),
    (("    a++;\n                    b += N;", "    b += N;\n                    a++;"), "never"),
])
def test_a_walk_the_pass_cannot_restart_soundly_is_refused(change, reason):
    spec = load_kernel(workload("cpu", "sgemm"), STYLES / "cpu" / "sgemm" / "pointer_c")
    text = spec.source.read_text().replace(*change)
    result = insertion(text, "c", "packing")
    if reason == "never":  # the step after another statement is still the last use of b: fine
        assert not isinstance(result, Refused), result
    else:
        assert text != spec.source.read_text() and isinstance(result, Refused), result
        assert reason in result.reason, result.reason


def test_the_copy_is_threaded_when_the_nest_is(tmp_path, quick):
    text, spec = source_of("cpu", "sgemm", "naive")
    threads = insertion(text, "c", "omp_parallel")
    edit = insertion(threads.new_source, "c", "packing")
    assert "    if (kl_B_packed != NULL) {\n        #pragma omp parallel for schedule(static)\n" \
           "        for (int64_t j = 0; j < N; j++)\n" in edit.new_source
    assert edit.new_source.count("#pragma omp parallel for") == 3  # the copy, the packed nest, the fallback
    unthreaded = insertion(text, "c", "packing")
    assert "#pragma" not in unthreaded.new_source
    _accepted(tmp_path, quick, workload("cpu", "sgemm"), edit.new_source, "c",
              apply_flags(spec.flags, threads))


HELPER = """#include <stdint.h>

static void matmul(const float* A, const float* B, float* C, int M, int N, int K)
{
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            float sum = A[i * K] * B[j];
            for (int k = 1; k < K; k++)
                sum += A[i * K + k] * B[k * N + j];
            C[i * N + j] = sum;
        }
}

int kl_launch(const void* const* inputs, void* const* outputs,
              const int64_t* axes, const double* params, void* stream)
{
    const float* A = (const float*)inputs[0];
    const float* B = (const float*)inputs[1];
    float* C = (float*)outputs[0];
    (void)params; (void)stream;
    matmul(A, B, C, (int)axes[0], (int)axes[1], (int)axes[2]);
    return 0;
}
"""


def test_a_helper_with_int_counters_and_a_loop_from_one_is_packed_soundly(tmp_path, quick):
    # B is a plain parameter: every call passes a kl_launch input buffer. The k loop starts at 1,
    # so the buffer is N x (K - 1) and empty when K = 1 (the gate's 1x1x1 shape): the nest then
    # runs unpacked. The counters are int: the row offset is widened before it is scaled.
    edit = insertion(HELPER, "c", "packing")
    assert not isinstance(edit, Refused), edit
    assert "float* kl_B_packed = (float*)kl_pack_alloc(N, K - 1, sizeof(float));" in edit.new_source
    assert "kl_B_packed[(size_t)j * (K - 1) + (k - 1)] = B[k * N + j];" in edit.new_source
    assert "float sum = A[i * K] * B[j];" in edit.new_source  # not in the inner loop: left alone
    report = _gate(tmp_path, quick, workload("cpu", "sgemm"), edit.new_source, "c")
    assert report.verdict is Verdict.ACCEPTED, report.reason


# ---------------------------------------------------------------------------- refusals

HEAD = """#include <stdint.h>
static void f(const float* restrict A, const float* restrict B, float* restrict C,
              int64_t M, int64_t N, int64_t K) {
"""
READ = "sum += A[i * K + k] * B[k * N + j];"


def _nest(body: str = READ, inner: str = "for (int64_t k = 0; k < K; k++)", head: str = HEAD,
          above: str = "", after: str = "") -> str:
    return (head + f"{above}    for (int64_t i = 0; i < M; i++) {{\n"
            "        for (int64_t j = 0; j < N; j++) {\n            float sum = 0.0f;\n"
            f"            {inner} {{\n                {body}\n            }}\n"
            f"            C[i * N + j] = sum;\n        }}\n    }}\n{after}}}\n")


WRITABLE = HEAD.replace("const float* restrict B", "float* restrict B")


@pytest.mark.parametrize(("text", "reason"), [
    (_nest(head=WRITABLE, after="    B[0] = 0.0f;\n"),
     "line 4: B is written at line 13; packing needs a read-only operand"),
    (_nest(head=HEAD.replace("const float* restrict B", "const float* B")),
     "line 4: B may alias an output: it is neither a kl_launch input buffer nor a const restrict pointer"),
    (_nest("sum += A[i * K + k] * B[j * K + k];"),
     "line 4: nothing to pack: every read of A and B in the nest walks memory at unit stride with k"),
    (HEAD + "    for (int64_t j = 0; j < N; j++)\n        for (int64_t k = 0; k < K; k++)\n"
     "            C[j * K + k] = B[k * N + j];\n}\n",
     "line 4: nothing to gain: the nest reads each element of B once"),
    (_nest("if (k > 0) " + READ), "the read at line 8 is conditional (under the if at line 8)"),
    (_nest(READ + " if (sum > 1e30f) break;"), "a break at line 8 leaves the loop early"),
    (_nest(inner="for (int64_t k = 0; k < j; k++)"),
     "triangular: the range of k ('j') names the counter j"),
    (_nest("sum += B[k * N + j + i];"), "names the counters i and j besides k: packing lays out two"),
    (_nest("sum += B[k * N];"), "B[k * N] names no counter besides k: packing lays out two counters"),
    (_nest("sum += B[(k * N + j) % 7];"), "B[(k * N + j) % 7]: its index '(k * N + j) % 7' is not affine"),
    (_nest("int64_t r = k; sum += B[r * N + j];"), "B[r * N + j] names r, set inside the nest"),
    (_nest(inner="int64_t L = K; for (int64_t k = 0; k < L; k++)"),
     "the bound 'L' of k is set inside the nest"),
    (_nest(inner="for (int64_t k = 0; k < g(K); k++)"),
     "the bound 'g(K)' of k is not arithmetic on names (the allocation and the copy evaluate it again)"),
    (_nest("sum += B[k * N + j] * B[k * N + j + 1];"), "B is read at 2 different elements in the nest"),
    (HEAD + "#pragma omp parallel\n    {\n" + _nest().removeprefix(HEAD).removesuffix("}\n") + "    }\n}\n",
     "the nest sits in the block of '#pragma omp parallel': every thread would pack its own copy"),
    (_nest(above="    if (M > 0)\n").replace("    for (int64_t i", "        for (int64_t i", 1),
     "the nest is the body of an if statement, not a statement of a block"),
    (HEAD + "    C[0] = 0.0f;\n}\n", "no loop nest: no for loop that holds another loop"),
    (_nest().replace("static void f", "static void kl_pack_alloc"), "kl_pack_alloc is already a name"),
])
def test_a_nest_it_cannot_pack_soundly_or_usefully_is_refused_with_its_reason(text, reason):
    result = insertion(text, "c", "packing")
    assert isinstance(result, Refused) and reason in result.reason, result


def test_an_accessor_declared_inside_the_nest_is_refused():
    # the copy runs before the nest: it could not call a lambda the nest declares
    text = _nest("sum += A[i * K + k] * b(k);").replace(
        "            float sum = 0.0f;\n", "            float sum = 0.0f;\n"
        "            auto b = [&](int64_t r) { return B[r * N + j]; };\n")
    result = insertion(text, "cpp", "packing")
    assert isinstance(result, Refused), result
    assert "b(k) names b, declared inside the nest: the copy before the nest could not" in result.reason


def test_the_control_nest_of_the_refusals_is_packed():
    edit = insertion(_nest(), "c", "packing")
    assert not isinstance(edit, Refused), edit
    assert "kl_B_packed[j * K + k] = B[k * N + j];" in edit.new_source


def test_cuda_and_a_packed_nest_are_refused():
    assert "CUDA" in insertion("__global__ void k(float* y) { y[0] = 0; }\n", "cuda", "packing").reason
    packed = insertion(_nest(), "c", "packing").new_source
    again = insertion(packed, "c", "packing")
    assert isinstance(again, Refused) and "already packed" in again.reason


# ---------------------------------------------------------------------------- removal


def _corpus() -> list[tuple[str, str, str]]:
    """(label, language, text) of every CPU naive example, CPU style and held-out CPU naive."""
    folders = [(f"{p.parent.name}/naive", EXAMPLES / "cpu" / p.parent.name, p.parent / "kernels" / "naive")
               for p in sorted(EXAMPLES.glob("cpu/*/workload.toml"))]
    folders += [(f"{p.parent.parent.name}/{p.parent.name}", EXAMPLES / "cpu" / p.parent.parent.name, p.parent)
                for p in sorted(STYLES.glob("cpu/*/*/kernel.toml"))]
    folders += [(f"heldout/{p.parent.name}", p.parent, p.parent / "kernels" / "naive")
                for p in sorted(HELD_OUT.glob("*/workload.toml"))]
    kernels = []
    for label, example, folder in folders:
        spec = load_kernel(load_workload(example, quick=True), folder)
        kernels.append((label, spec.language, spec.source.read_text()))
    return kernels


def test_removal_gives_back_every_kernel_it_packed_byte_for_byte():
    packed = []
    extra = [("helper", "c", HELPER), ("control", "c", _nest()), ("macro", "c", _macro_sgemm())]
    for label, language, text in [*_corpus(), *extra]:
        edit = insertion(text, language, "packing")
        if isinstance(edit, Refused):
            continue
        packed.append(label)
        assert [h.removable for h in detect(edit.new_source, language) if h.feature == "packing"] == [True]
        (removal,) = [e for e in removal_edits(edit.new_source, language) if e.feature == "packing"]
        assert removal.new_source == text, f"{label}\n{removal.diff}"
        assert removal.pass_name == "unpack_operand" and removal.params == {}
    assert sorted(packed) == ["control", "heldout/matmul_ikj", "helper", "macro", "sgemm/colmajor_c",
                              "sgemm/cpp", "sgemm/naive", "sgemm/pointer_c"]


HAND_PACKED = """#include <stdint.h>
#include <stdlib.h>

int kl_launch(const void* const* inputs, void* const* outputs,
              const int64_t* axes, const double* params, void* stream)
{
    const float* A = (const float*)inputs[0];
    const float* B = (const float*)inputs[1];
    float* C = (float*)outputs[0];
    int64_t M = axes[0], N = axes[1], K = axes[2];
    (void)params; (void)stream;

    /* Bt: B transposed, so that k walks it at unit stride */
    float* Bt = (float*)malloc((size_t)N * (size_t)K * sizeof(float));
    if (!Bt) return 1;
    for (int64_t c = 0; c < N; c++)
        for (int64_t r = 0; r < K; r++)
            Bt[c * K + r] = B[r * N + c];
    for (int64_t i = 0; i < M; i++) {
        for (int64_t j = 0; j < N; j++) {
            float sum = 0.0f;
            for (int64_t k = 0; k < K; k++) {
                sum += A[i * K + k] * Bt[j * K + k];
            }
            C[i * N + j] = sum;
        }
    }
    free(Bt);
    return 0;
}
"""
UNPACKED = """#include <stdint.h>
#include <stdlib.h>

int kl_launch(const void* const* inputs, void* const* outputs,
              const int64_t* axes, const double* params, void* stream)
{
    const float* A = (const float*)inputs[0];
    const float* B = (const float*)inputs[1];
    float* C = (float*)outputs[0];
    int64_t M = axes[0], N = axes[1], K = axes[2];
    (void)params; (void)stream;

    for (int64_t i = 0; i < M; i++) {
        for (int64_t j = 0; j < N; j++) {
            float sum = 0.0f;
            for (int64_t k = 0; k < K; k++) {
                sum += A[i * K + k] * B[k * N + j];
            }
            C[i * N + j] = sum;
        }
    }
    return 0;
}
"""


def test_a_hand_written_packing_is_undone_and_both_kernels_pass_the_gate(tmp_path, quick):
    (hit,) = [h for h in detect(HAND_PACKED, "c") if h.feature == "packing"]
    assert hit.removable and hit.site.start_line == 14
    (removal,) = [e for e in removal_edits(HAND_PACKED, "c") if e.feature == "packing"]
    assert removal.new_source == UNPACKED, removal.diff
    for text in (HAND_PACKED, removal.new_source):
        report = _gate(tmp_path, quick, workload("cpu", "sgemm"), text, "c")
        assert report.verdict is Verdict.ACCEPTED, report.reason


def test_vector_and_new_buffers_are_undone_too():
    text = (UNPACKED.replace("#include <stdlib.h>\n", "#include <vector>\n")
            .replace("    for (int64_t i = 0; i < M; i++) {\n",
                     "    std::vector<float> bt(N * K);\n    for (int64_t j = 0; j < N; ++j) {\n"
                     "        for (int64_t k = 0; k < K; ++k) {\n            bt[j * K + k] = B[k * N + j];\n"
                     "        }\n    }\n    float* at = new float[M * K];\n"
                     "    for (int64_t i = 0; i < M; ++i)\n        for (int64_t k = 0; k < K; ++k)\n"
                     "            at[i * K + k] = A[i * K + k];\n    for (int64_t i = 0; i < M; i++) {\n", 1)
            .replace("A[i * K + k] * B[k * N + j]", "at[i * K + k] * bt[j * K + k]")
            .replace("    return 0;", "    delete[] at;\n    return 0;"))
    (removal,) = [e for e in removal_edits(text, "cpp") if e.feature == "packing"]
    expected = UNPACKED.replace("#include <stdlib.h>\n", "#include <vector>\n")
    assert removal.new_source == expected, removal.diff


@pytest.mark.parametrize(("change", "why"), [
    (("Bt[c * K + r] = B[r * N + c];", "Bt[c * K + r] = r < K ? B[r * N + c] : 0.0f;"),
     "its copy stores 'r < K ? B[r * N + c] : 0.0f' into Bt, not an element of an array"),
    (("* Bt[j * K + k];", "* Bt[j * K + k] + Bt[0];"),
     "is not an element by counters over the copy's ranges"),
    (("    free(Bt);\n", ""), "Bt is not freed in the block that allocates it"),
    (("    free(Bt);\n", "    free(Bt);\n    N = 0;\n"), "never"),  # after the free: no matter
    (("    for (int64_t i = 0; i < M; i++) {\n", "    N = N + 0;\n    for (int64_t i = 0; i < M; i++) {\n"),
     "N changes between the copy and the reads of Bt"),
    (("float* C = (float*)outputs[0];", "float* C = (float*)outputs[0];\n    float* W = (float*)inputs[1];"),
     "inputs[1] is also cast to a writable pointer at line 10"),  # a writable alias of B
    (("float* C = (float*)outputs[0];", "float* C = (float*)outputs[0];\n    float* W = (float*)B;"),
     "B is cast at line 10"),
])
def test_a_hand_written_packing_the_rule_cannot_undo_stays_and_says_why(change, why):
    text = HAND_PACKED.replace(*change)
    assert text != HAND_PACKED
    (hit,) = [h for h in detect(text, "c") if h.feature == "packing"]
    if why == "never":
        assert hit.removable, hit.detail
        return
    assert not hit.removable and why in hit.detail, hit.detail
    assert "packing" not in {e.feature for e in removal_edits(text, "c")}


def test_blis_style_micro_panel_packing_stays_with_its_reason():
    text, spec = source_of("cpu", "sgemm", "expert")
    hits = [h for h in detect(text, "c") if h.feature == "packing"]
    assert [h.detail.split(" (")[0] for h in hits] == ["packing routine pack_a",
                                                         "packing routine pack_b_panel"]
    assert all(not h.removable and "zero-pads micro-panels" in h.detail for h in hits)
    assert "packing" not in {e.feature for e in removal_edits(text, "c", spec.flags)}
