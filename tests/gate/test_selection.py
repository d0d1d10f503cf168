"""Outputs whose order is free and indices checked by rule (a top-k): a correct selection in any
order and with ties broken either way passes; indices that repeat a position or point at other
elements, and values that are not the top k, do not, whatever the other output says."""

from __future__ import annotations

import shutil
from dataclasses import replace

import pytest

from conftest import FIXTURES
from klineage.errors import WorkloadError
from klineage.gate import Verdict, run_gate
from klineage.workload import load_kernel, load_workload

NAIVE = (FIXTURES / "topk" / "kernels" / "naive" / "kernel.c").read_text()

# The naive kernel writes picks in order (value down, position up); each variant changes what
# lands in the outputs once the picks are made.
VARIANTS = {
    # the picks in reverse order, and ties broken towards the later position: still a top k
    "reversed_other_ties": ("return v < pv || (v == pv && i > pi);", "return v < pv || (v == pv && i < pi);",
                            "return v > bv || (v == bv && i < bi);", "return v > bv || (v == bv && i > bi);",
                            "values[r * k + j] = bv;", "values[r * k + (k - 1 - j)] = bv;",
                            "indices[r * k + j] = bi;", "indices[r * k + (k - 1 - j)] = bi;"),
    # the right values, every index the first pick's
    "repeats_a_position": ("indices[r * k + j] = bi;", "indices[r * k + j] = j ? indices[r * k] : bi;"),
    # the right values, positions 0..k-1
    "points_elsewhere": ("indices[r * k + j] = bi;", "indices[r * k + j] = j;"),
    # the last pick replaced by the row's first element, its index with it
    "not_the_top_k": ("values[r * k + j] = bv;", "values[r * k + j] = j == k - 1 ? row[0] : bv;",
                      "indices[r * k + j] = bi;", "indices[r * k + j] = j == k - 1 ? 0 : bi;"),
}


def _variant(tmp_path, name):
    source = NAIVE
    edits = VARIANTS[name]
    for old, new in zip(edits[::2], edits[1::2], strict=True):
        assert old in source, old
        source = source.replace(old, new)
    folder = tmp_path / name
    folder.mkdir()
    (folder / "kernel.c").write_text(source)
    return folder


@pytest.mark.parametrize(("name", "verdict", "reason"), [
    ("reversed_other_ties", Verdict.ACCEPTED, ""),
    ("repeats_a_position", Verdict.INCORRECT, "name one position twice"),
    ("points_elsewhere", Verdict.INCORRECT, "point at an element of 'x' other than the 'values'"),
    ("not_the_top_k", Verdict.INCORRECT, "output 'values'"),
])
def test_a_selection_is_judged_as_a_set_with_its_indices_by_rule(tmp_path, quick, name, verdict, reason):
    workload = load_workload(FIXTURES / "topk")
    report = run_gate(workload, load_kernel(workload, _variant(tmp_path, name)),
                      options=replace(quick, profile=False))
    assert report.verdict is verdict, report.reason
    assert reason in report.reason


@pytest.mark.parametrize(("old", "new", "message"), [
    ('indexes = "x:values"', 'indexes = "y:values"', "'y' is not an input"),
    ('indexes = "x:values"', 'indexes = "x:indices"', "'indices' is not another output of values"),
    ('dtype = "int64"', 'dtype = "float32"', "indices are integers, not float32"),
    ('order = "free"', 'order = "any"', "must be 'fixed' or 'free'"),
])
def test_a_selection_declared_wrong_is_one_error(tmp_path, old, new, message):
    folder = tmp_path / "topk"
    shutil.copytree(FIXTURES / "topk", folder)
    toml = folder / "workload.toml"
    toml.write_text(toml.read_text().replace(old, new))
    with pytest.raises(WorkloadError, match=message):
        load_workload(folder)
