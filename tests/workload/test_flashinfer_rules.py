"""The FlashInfer-Bench import's rules one at a time: which Solutions become kernels, which
Workloads a Definition accepts, and what a Trace must hold for its status."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from klineage.workload.flashinfer._format import Definition, Evaluation, Solution, WorkloadRecord
from klineage.workload.flashinfer._plan import PlanError, plan
from klineage.workload.flashinfer._solution import NotRunnable, kernel_files

DEFINITION = Definition.model_validate({
    "name": "axpy_n", "op_type": "axpy",
    "axes": {"n": {"type": "var"}, "g": {"type": "const", "value": 2}},
    "inputs": {"x": {"shape": ["n"], "dtype": "float32"}, "alpha": {"shape": None, "dtype": "float32"}},
    "outputs": {"y": {"shape": ["n"], "dtype": "float32"}},
    "constraints": ["g == 2"],
    "reference": "def run(x, alpha):\n    return alpha * x\n"})


def _record(n: int, alpha: float = 2.0, x: dict | None = None) -> WorkloadRecord:
    return WorkloadRecord.model_validate({"definition": "axpy_n", "workload": {
        "uuid": f"w{n}", "axes": {"n": n},
        "inputs": {"x": x or {"type": "random"}, "alpha": {"type": "scalar", "value": alpha}}}})


def _solution(language: str, entry: str, content: str, path: str = "k.c") -> Solution:
    return Solution.model_validate({
        "name": "s", "definition": "axpy_n", "author": "us",
        "spec": {"language": language, "target_hardware": [], "entry_point": f"{path}::{entry}"},
        "sources": [{"path": path, "content": content}]})


def test_scalars_become_params_and_must_agree():
    layout = plan(DEFINITION, [_record(9), _record(3)])
    assert layout.axes == {"n": 9, "g": 2} and layout.quick_axes == {"n": 3, "g": 2}
    assert layout.params == {"alpha": (2.0, "float32")}
    with pytest.raises(PlanError, match=r"w3 gives alpha = 3\.0"):
        plan(DEFINITION, [_record(9), _record(3, alpha=3.0)])


def test_workloads_must_exist_and_give_random_tensors():
    with pytest.raises(PlanError, match="no workloads"):
        plan(DEFINITION, [])
    with pytest.raises(PlanError, match="w4: input 'x' comes from 'scalar'"):
        plan(DEFINITION, [_record(4, x={"type": "scalar", "value": 1.0})])


def test_the_entry_is_called_by_argument_name(tmp_path):
    code = "void axpy(float alpha, const float* x, float* y, long n) { for (long i = 0; i < n; i++) " \
           "y[i] = alpha * x[i]; }\n"
    name = kernel_files(_solution("C", "axpy", code), plan(DEFINITION, [_record(5)]), tmp_path)
    text = (tmp_path / name / "kernel.c").read_text()
    assert "axpy((float)params[0], (const float*)inputs[0], (float*)outputs[0], (long)axes[0]);" in text
    assert "return 0;" in text


@pytest.mark.parametrize(("language", "content", "why"), [
    ("Triton", "def run(x, alpha): pass", "Triton backend comes later"),
    ("CUDA", "void axpy(torch::Tensor x, torch::Tensor y) {}", "torch tensors"),
    ("C", "void axpy(const float* x, float* y, int count) {}", "'count' is none of"),
    ("C", "int other(void) { return 0; }", "no definition of the entry function axpy"),
])
def test_solutions_klineage_cannot_run_say_why(tmp_path, language, content, why):
    layout = plan(DEFINITION, [_record(5)])
    with pytest.raises(NotRunnable, match=why):
        kernel_files(_solution(language, "axpy", content), layout, tmp_path)


def test_an_evaluation_holds_exactly_what_its_status_requires():
    environment = {"hardware": "cpu", "libs": {}}
    with pytest.raises(ValidationError, match="performance must be set"):
        Evaluation.model_validate({"status": "PASSED", "log_file": "x", "environment": environment,
                                   "timestamp": "t", "performance": None,
                                   "correctness": {"max_relative_error": 0, "max_absolute_error": 0}})
    with pytest.raises(ValidationError, match="correctness must be null"):
        Evaluation.model_validate({"status": "COMPILE_ERROR", "log_file": "x", "environment": environment,
                                   "timestamp": "t", "performance": None,
                                   "correctness": {"max_relative_error": 0, "max_absolute_error": 0}})


def test_files_that_do_not_parse_are_each_one_failure(tmp_path):
    from klineage.workload.flashinfer import import_flashinfer_bench

    (tmp_path / "definitions").mkdir()
    (tmp_path / "definitions" / "half.json").write_text('{"name": "half", "op_type": "x"')
    (tmp_path / "definitions" / "no_axes.json").write_text('{"name": "no_axes", "op_type": "x", '
                                                          '"inputs": {}, "outputs": {}, "reference": ""}')
    (tmp_path / "workloads").mkdir()
    (tmp_path / "workloads" / "orphan.jsonl").write_text("not json\n")
    solutions = tmp_path / "solutions" / "us" / "x" / "half"
    solutions.mkdir(parents=True)
    (solutions / "s.json").write_text("{}")
    outcomes = import_flashinfer_bench(tmp_path, tmp_path / "out")
    assert all(not o.ok for o in outcomes) and len(outcomes) == 4
    errors = {(o.definition, o.error.split(":")[0]) for o in outcomes}
    assert errors == {("half", "does not parse"), ("no_axes", "does not parse"),
                      ("half", "solution file s.json does not parse"), ("orphan", "workloads do not parse")}
    assert "orphan.jsonl line 1" in next(o.error for o in outcomes if o.definition == "orphan")


def test_a_tuple_of_outputs_and_a_kl_launch_entry_gate_on_the_cpu(tmp_path):
    """Two outputs returned as a tuple map in the Definition's order; a Solution whose entry is
    kl_launch itself is used as written; a const axis the constraint ties to another is checked."""
    import json

    from klineage.gate import GateOptions, run_gate
    from klineage.workload import load_kernel, load_workload
    from klineage.workload.flashinfer import import_flashinfer_bench

    pytest.importorskip("torch")
    definition = {
        "name": "row_max_min_c8", "op_type": "reduce",
        "axes": {"rows": {"type": "var"}, "cols": {"type": "const", "value": 8},
                 "half": {"type": "const", "value": 4}},
        "constraints": ["cols == 2 * half"],
        "inputs": {"x": {"shape": ["rows", "cols"], "dtype": "float32"}},
        "outputs": {"hi": {"shape": ["rows"], "dtype": "float32"},
                    "lo": {"shape": ["rows"], "dtype": "float32"}},
        "reference": "import torch\n\ndef run(x):\n    return x.amax(dim=1), x.amin(dim=1)\n"}
    kernel = """#include <stdint.h>
int kl_launch(const void* const* inputs, void* const* outputs, const int64_t* axes,
              const double* params, void* stream)
{
    const float* x = (const float*)inputs[0];
    float* hi = (float*)outputs[0];
    float* lo = (float*)outputs[1];
    (void)params; (void)stream;
    for (int64_t i = 0; i < axes[0]; i++) {
        hi[i] = lo[i] = x[i * axes[1]];
        for (int64_t j = 1; j < axes[1]; j++) {
            float v = x[i * axes[1] + j];
            if (v > hi[i]) hi[i] = v;
            if (v < lo[i]) lo[i] = v;
        }
    }
    return 0;
}
"""
    for folder in ("definitions", "workloads", "solutions"):
        (tmp_path / folder).mkdir()
    (tmp_path / "definitions" / "d.json").write_text(json.dumps(definition))
    (tmp_path / "workloads" / "d.jsonl").write_text("\n".join(json.dumps(
        {"definition": "row_max_min_c8", "workload": {"uuid": f"u{n}", "axes": {"rows": n},
                                                      "inputs": {"x": {"type": "random"}}}})
        for n in (16, 3)) + "\n")
    (tmp_path / "solutions" / "s.json").write_text(json.dumps({
        "name": "max_min_c", "definition": "row_max_min_c8", "author": "us",
        "spec": {"language": "c", "target_hardware": ["CPU"], "entry_point": "k.c::kl_launch"},
        "sources": [{"path": "k.c", "content": kernel}]}))
    [outcome] = import_flashinfer_bench(tmp_path, tmp_path / "out")
    assert outcome.ok, outcome.error
    workload = load_workload(tmp_path / "out" / "row_max_min_c8")
    assert workload.axes == {"rows": 16, "cols": 8, "half": 4}
    report = run_gate(workload, load_kernel(workload, "max_min_c"),
                      options=GateOptions(profile=False, backend="cpu"))
    assert report.verdict.value == "accepted", report.reason
