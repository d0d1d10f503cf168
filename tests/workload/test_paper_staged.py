"""The paper's staged GPU workloads (examples/paper/) on a machine without a GPU: each loads, its
reference runs on the CPU at every check shape and is not degenerate, and a top-k reference's
own indices pass the rule the gate checks candidates' by."""

from __future__ import annotations

import pytest

from conftest import REPO
from klineage.gate._compare import selection_mismatch
from klineage.workload import load_workload
from klineage.workload.inputs import generate_inputs
from klineage.workload.loader import load_reference
from klineage.workload.reference import check_not_degenerate, run_reference

pytest.importorskip("torch")
STAGED = sorted(p for p in (REPO / "examples" / "paper").glob("*") if (p / "workload.toml").is_file())


@pytest.mark.parametrize("folder", STAGED, ids=lambda p: p.name)
def test_a_staged_workloads_reference_runs_and_can_tell_right_from_wrong(folder):
    workload = load_workload(folder)
    reference = load_reference(workload)
    check_not_degenerate(workload, reference)
    for axes in workload.check_shapes:
        inputs = generate_inputs(workload, dict(axes), seed=7)
        outputs = run_reference(workload, reference, inputs, dict(axes))
        for spec in workload.outputs:
            if spec.indexes:
                source, _, values = spec.indexes.partition(":")
                assert selection_mismatch(spec.name, outputs[spec.name], outputs[values],
                                          inputs[source], values, source) is None

