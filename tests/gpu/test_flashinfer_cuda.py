"""A FlashInfer-Bench dataset of ours imported and its CUDA Solution gated on a GPU: the reference
runs in torch on the device, the Solution behind its generated kl_launch, and the report goes
back as a Trace record. Skipped without a GPU; run on the device with ``pytest -m gpu``."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from conftest import REPO
from klineage.cli import app
from klineage.workload.flashinfer import import_flashinfer_bench
from klineage.workload.flashinfer._format import Trace

pytestmark = pytest.mark.gpu
pytest.importorskip("torch")

DATASET = REPO / "tests" / "fixtures" / "flashinfer_bench"


def test_the_cuda_solution_is_gated_on_the_gpu_and_traced(tmp_path):
    out = tmp_path / "workloads"
    outcomes = {o.definition: o for o in import_flashinfer_bench(DATASET, out)}
    assert outcomes["rmsnorm_h48"].ok, outcomes["rmsnorm_h48"].error
    folder = out / "rmsnorm_h48"
    runner = CliRunner(env={"COLUMNS": "200"})
    gated = runner.invoke(app, ["gate", str(folder), "rmsnorm_cuda_rows", "--json"])
    report = json.loads(gated.output)
    assert gated.exit_code == 0 and report["verdict"] == "accepted", gated.output
    assert report["platform"].startswith("nvidia-sm")
    saved = tmp_path / "report.json"
    saved.write_text(gated.output)
    traces = tmp_path / "traces.jsonl"
    exported = runner.invoke(app, ["export", "flashinfer-trace", str(folder), str(saved),
                                   "--out", str(traces)])
    assert exported.exit_code == 0, exported.output
    (record,) = [Trace.model_validate_json(line) for line in traces.read_text().splitlines()]
    assert (record.solution, record.evaluation.status.value) == ("rmsnorm_cuda_rows", "PASSED")
    assert record.evaluation.performance is not None
    assert record.evaluation.correctness.max_absolute_error < 1e-4
