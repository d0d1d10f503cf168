"""The loop_interchange insertion: it swaps a column-order nest that its dependence check proves
safe, the swapped kernel passes the gate, and every nest it cannot prove is left alone."""

from __future__ import annotations

import pytest

from conftest import REPO
from klineage.gate import run_gate
from klineage.source import insertion_edits
from klineage.workload import load_kernel, load_workload
from source._kernels import write_kernel

STENCIL = REPO / "examples" / "heldout" / "cpu" / "stencil_colmajor"

HEAD = """#include <stdint.h>
#define AT(g, i, j) (g)[(i) * W + (j)]
int kl_launch(const void* const* inputs, void* const* outputs,
              const int64_t* axes, const double* params, void* stream)
{
    const float* x = (const float*)inputs[0];
    float* y = (float*)outputs[0];
    const int64_t H = axes[0], W = axes[1];
"""


def _nest(body: str, inner: str = "for (int64_t i = 0; i < H; i++)") -> str:
    return (HEAD + f"    for (int64_t j = 0; j < W; j++) {{\n        {inner} {{\n{body}\n"
            "        }\n    }\n    return 0;\n}\n")


def test_the_column_order_stencil_is_interchanged_and_passes_the_gate(tmp_path, quick):
    workload = load_workload(STENCIL, quick=True)
    naive = load_kernel(workload, "naive")
    (edit,) = insertion_edits(naive.source.read_text(), "c", "loop_interchange")
    assert "for (int64_t i = 0; i < H; i++) {\n        for (int64_t j = 0; j < W; j++) {" in edit.new_source
    assert edit.new_source.count("\n") == naive.source.read_text().count("\n"), "only the headers move"
    assert insertion_edits(edit.new_source, "c", "loop_interchange") == [], "no swap back"
    kernel = write_kernel(tmp_path / "swapped", workload, edit.new_source, "c", ())
    report = run_gate(workload, kernel, options=quick)
    assert report.accepted, report.reason


@pytest.mark.parametrize(("why", "body", "inner"), [
    ("a carried dependence: reads the element the previous row wrote",
     "AT(y, i, j) = (i > 0 ? AT(y, i - 1, j) : 0.0f) + AT(x, i, j);", None),
    ("triangular: the inner range depends on the outer counter",
     "AT(y, i, j) = AT(x, i, j);", "for (int64_t i = 0; i < j; i++)"),
    ("a scalar from outside the nest is written", "last = AT(x, i, j);", None),
    ("two iterations may write one element", "y[i + j] = AT(x, i, j);", None),
    ("an unknown call may have effects", "AT(y, i, j) = helper(AT(x, i, j));", None),
    ("a break leaves the nest early", "if (AT(x, i, j) < 0) break; AT(y, i, j) = 1.0f;", None),
    ("already row order: nothing to gain", "AT(y, j, i) = AT(x, j, i);", None),
])
def test_a_nest_it_cannot_prove_is_left_alone(why, body, inner):
    text = _nest(body, inner) if inner else _nest(body)
    text = text.replace("    const int64_t H", "    float last = 0.0f; (void)last;\n    const int64_t H")
    assert insertion_edits(text, "c", "loop_interchange") == [], why


def test_a_safe_nest_of_the_same_shape_is_swapped():
    # the control for the refusals above: the same nest, each iteration its own element
    (edit,) = insertion_edits(_nest("AT(y, i, j) = 2.0f * AT(x, i, j);"), "c", "loop_interchange")
    assert edit.sites[0].start_line == 9


def test_a_helper_whose_pointers_may_alias_is_left_alone():
    helper = """#include <stdint.h>
static void scale(const float* x, float* y, int64_t H, int64_t W) {
    for (int64_t j = 0; j < W; j++)
        for (int64_t i = 0; i < H; i++)
            y[i * W + j] = 2.0f * x[i * W + j];
}
"""
    assert insertion_edits(helper, "c", "loop_interchange") == [], "y may be x shifted"
    restricted = helper.replace("float* y", "float* restrict y")
    (edit,) = insertion_edits(restricted, "c", "loop_interchange")
    assert "for (int64_t i = 0; i < H; i++)\n        for (int64_t j = 0; j < W; j++)" in edit.new_source
