"""``klineage import flashinfer-bench`` on a small dataset of ours in FlashInfer-Bench's format
(tests/fixtures/flashinfer_bench), the gate on what it imports, and the traces written back."""

from __future__ import annotations

import json
import shutil

import pytest
from typer.testing import CliRunner

from conftest import REPO
from klineage.cli import app
from klineage.workload import load_workload
from klineage.workload.flashinfer import import_flashinfer_bench
from klineage.workload.flashinfer._format import Trace

pytest.importorskip("torch")

DATASET = REPO / "tests" / "fixtures" / "flashinfer_bench"
RUNNER = CliRunner(env={"COLUMNS": "200"})


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    out = tmp_path_factory.mktemp("fib") / "workloads"
    outcomes = {o.definition: o for o in import_flashinfer_bench(DATASET, out)}
    return out, outcomes


def _workloads(definition: str) -> list[dict]:
    path = DATASET / "workloads" / "rmsnorm" / f"{definition}.jsonl"
    return [json.loads(line)["workload"] for line in path.read_text().splitlines()]


def test_every_workload_is_a_check_shape_and_the_first_is_timed(imported):
    out, outcomes = imported
    rmsnorm = outcomes["rmsnorm_h48"]
    assert rmsnorm.ok, rmsnorm.error
    workload = load_workload(out / "rmsnorm_h48")
    given = _workloads("rmsnorm_h48")
    assert [dict(s) for s in workload.check_shapes] == [{**w["axes"], "hidden": 48} for w in given]
    assert workload.axes == {"batch": given[0]["axes"]["batch"], "hidden": 48}
    assert rmsnorm.timed == given[0]["uuid"]
    assert workload.params == {"eps": 1e-6}
    assert [t.name for t in workload.inputs] == ["x", "weight"]
    assert workload.framework == "torch"
    assert "timed" in (out / "rmsnorm_h48" / "README.md").read_text()


def test_solutions_become_kernels_or_say_why_not(imported):
    _, outcomes = imported
    rmsnorm = outcomes["rmsnorm_h48"]
    assert set(rmsnorm.kernels) == {"rmsnorm_c_rows", "rmsnorm_c_wrong", "rmsnorm_cuda_rows"}
    assert "Triton" in rmsnorm.not_runnable["rmsnorm_triton"]


def test_a_definition_klineage_cannot_hold_fails_with_its_reason(imported):
    out, outcomes = imported
    broken = outcomes["scale_fp8_h16"]
    assert not broken.ok and "float8_e4m3fn" in broken.error
    assert not (out / "scale_fp8_h16").exists()


def test_gate_accepts_the_c_solution_refuses_the_wrong_one_and_traces_parse(imported, tmp_path):
    out, _ = imported
    folder = out / "rmsnorm_h48"
    good = RUNNER.invoke(app, ["gate", str(folder), "rmsnorm_c_rows", "--backend", "cpu", "--json"])
    assert good.exit_code == 0, good.output
    assert json.loads(good.output)["verdict"] == "accepted"
    wrong = RUNNER.invoke(app, ["gate", str(folder), "rmsnorm_c_wrong", "--backend", "cpu", "--json"])
    assert wrong.exit_code == 1
    assert json.loads(wrong.output)["verdict"] == "incorrect"
    reports = []
    for name, result in (("good", good), ("wrong", wrong)):
        reports.append(tmp_path / f"{name}.json")
        reports[-1].write_text(result.output)
    traces = tmp_path / "traces.jsonl"
    exported = RUNNER.invoke(app, ["export", "flashinfer-trace", str(folder), *map(str, reports),
                                   "--out", str(traces)])
    assert exported.exit_code == 0, exported.output
    records = [Trace.model_validate_json(line) for line in traces.read_text().splitlines()]
    timed = _workloads("rmsnorm_h48")[0]
    assert [(r.solution, r.evaluation.status.value) for r in records] == [
        ("rmsnorm_c_rows", "PASSED"), ("rmsnorm_c_wrong", "INCORRECT_NUMERICAL")]
    for record in records:
        assert record.definition == "rmsnorm_h48"
        assert record.workload.model_dump(mode="json") == timed
    passed, failed = records
    assert passed.evaluation.correctness.max_absolute_error < 1e-4
    assert passed.evaluation.performance is not None and failed.evaluation.performance is None
    assert failed.evaluation.correctness.max_absolute_error > 1e-3
    assert set(json.loads(traces.read_text().splitlines()[0])) == {
        "definition", "solution", "workload", "evaluation"}


def test_the_cli_reports_each_failure_on_one_line_and_exits_1(tmp_path):
    result = RUNNER.invoke(app, ["import", "flashinfer-bench", str(DATASET), "--out", str(tmp_path)])
    assert result.exit_code == 1
    assert "imported 1 of 2 definitions" in result.output
    failures = [line for line in result.output.splitlines() if "failed" in line]
    assert len(failures) == 1 and failures[0].startswith("scale_fp8_h16: failed")
    again = RUNNER.invoke(app, ["import", "flashinfer-bench", str(DATASET), "--out", str(tmp_path),
                                "--json"])
    names = {o["definition"]: o["error"] for o in json.loads(again.output)}
    assert "exists" in names["rmsnorm_h48"]  # kept without --force


def test_a_workload_whose_inputs_are_recorded_tensors_refuses_its_definition(tmp_path):
    dataset = tmp_path / "dataset"
    shutil.copytree(DATASET, dataset)
    path = dataset / "workloads" / "rmsnorm" / "rmsnorm_h48.jsonl"
    lines = path.read_text().splitlines()
    record = json.loads(lines[1])
    record["workload"]["inputs"]["x"] = {"type": "safetensors", "path": "x.safetensors", "tensor_key": "x"}
    path.write_text("\n".join([lines[0], json.dumps(record), *lines[2:]]) + "\n")
    outcomes = {o.definition: o for o in import_flashinfer_bench(dataset, tmp_path / "out")}
    error = outcomes["rmsnorm_h48"].error
    assert record["workload"]["uuid"] in error and "safetensors" in error


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (no GPU needed)")
def test_the_cuda_solution_builds_behind_its_generated_kl_launch(imported, monkeypatch):
    from klineage.backends.cuda import CudaBackend
    from klineage.workload import load_kernel

    monkeypatch.setenv("KLINEAGE_CUDA_ARCH", "sm_90a")
    out, outcomes = imported
    assert outcomes["rmsnorm_h48"].kernels["rmsnorm_cuda_rows"] == "rmsnorm_cuda_rows"
    kernel = load_kernel(load_workload(out / "rmsnorm_h48"), "rmsnorm_cuda_rows")
    assert kernel.language == "cuda"
    result = CudaBackend().build(kernel)
    assert result.ok, result.log
