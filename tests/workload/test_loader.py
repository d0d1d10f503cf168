"""Every workload mistake is one WorkloadError naming the file and the field."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from klineage.errors import WorkloadError
from klineage.gate import run_gate
from klineage.workload import load_kernel, load_workload


def _edit(folder: Path, old: str, new: str, name: str = "workload.toml") -> None:
    path = folder / name
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_fixture_loads(axpy):
    assert axpy.name == "axpy"
    assert list(axpy.axes) == ["N"]
    assert [s["N"] for s in axpy.shapes()] == [1000003, 37, 1]
    assert axpy.tolerance_for(axpy.outputs[0]) == (1e-4, 1e-5)


def test_quick_axes_replace_the_benchmark_sizes_only_when_asked(axpy_copy):
    _edit(axpy_copy, "[axes]\nN = 1000003\n", "[axes]\nN = 1000003\n\n[quick_axes]\nN = 4099\n")
    full, quick = load_workload(axpy_copy), load_workload(axpy_copy, quick=True)
    assert (full.axes, full.quick) == ({"N": 1000003}, False)
    assert (quick.axes, quick.quick) == ({"N": 4099}, True)
    assert quick.check_shapes == full.check_shapes
    assert quick.fingerprint() != full.fingerprint()  # caches never mix the two sizes


def test_the_gate_worker_checks_and_times_at_the_quick_sizes(axpy_copy, quick):
    _edit(axpy_copy, "[axes]\nN = 1000003\n", "[axes]\nN = 1000003\n\n[quick_axes]\nN = 4099\n")
    workload = load_workload(axpy_copy, quick=True)
    seen = []
    report = run_gate(workload, load_kernel(workload, "plain"), options=quick,
                      on_progress=lambda stage, detail: seen.append(detail))
    assert report.accepted, report.reason
    assert any("N=4099" in line for line in seen)
    assert not any("N=1000003" in line for line in seen)
    assert report.timing.footprint_bytes <= 3 * 4 * 4099 * report.timing.input_sets


def test_quick_without_quick_axes_keeps_the_benchmark_sizes(axpy):
    quick = load_workload(axpy.root, quick=True)
    assert quick.axes == axpy.axes and not quick.quick


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('dtype = "float32"', 'dtype = "float33"', r"inputs\.x\.dtype: unknown dtype 'float33'"),
        ('shape = ["N"]', 'shape = ["K"]', r"inputs\.x\.shape: 'K' is not a declared axis"),
        ("[[check_shapes]]\nN = 37", "[[check_shapes]]\nM = 37",
         r"check_shapes\[0\]\.M: not a declared axis"),
        ('name = "axpy"', 'name = "axpy"\ncolour = "red"', r"colour: unknown key"),
        ('op = "axpy"\n', "", r"op: missing \(required\)"),
        ("alpha = 1.5", 'alpha = "big"', r"params\.alpha: must be a number"),
        ('bytes = "12 * N"', 'bytes = "12 * Q"', r"cost\.bytes: unknown name 'Q'"),
        ("N = 1000003", "N = 0", r"axes\.N: must be a positive integer"),
        ("[axes]\nN = 1000003\n", "[axes]\nN = 1000003\n[quick_axes]\nM = 3\n",
         r"quick_axes\.M: not a declared axis"),
        ('name = "axpy"', 'name = "axpy', r"not valid TOML"),
        ('[inputs.z]\nshape = ["N"]\ndtype = "float32"',
         '[inputs.z]\nshape = ["N"]\ndtype = "float32"\ninit = "randint:0:1"',
         r"inputs\.z\.init: .*all zeros"),
        ('[inputs.z]\nshape = ["N"]\ndtype = "float32"',
         '[inputs.z]\nshape = ["N"]\ndtype = "float32"\ncheck_inits = ["normal:9:1", "normal|shuffled"]',
         r"inputs\.z\.check_inits\[1\]: unknown shaping 'shuffled'"),
        ('[inputs.z]\nshape = ["N"]\ndtype = "float32"',
         '[inputs.z]\nshape = ["N"]\ndtype = "float32"\ninit = "normal|sorted"',
         r"inputs\.z\.init: .*for check_inits only"),
    ],
)
def test_bad_workload_toml(axpy_copy, old, new, message):
    _edit(axpy_copy, old, new)
    with pytest.raises(WorkloadError) as info:
        load_workload(axpy_copy)
    text = str(info.value)
    assert "workload.toml" in text
    assert re.search(message, text), text
    assert "\n" not in text


def test_missing_files(tmp_path, axpy_copy):
    with pytest.raises(WorkloadError, match="workload folder not found"):
        load_workload(tmp_path / "nothing")
    (axpy_copy / "reference.py").unlink()
    with pytest.raises(WorkloadError, match=r"reference\.py: file not found"):
        load_workload(axpy_copy)


def test_missing_kernel_names_variants(axpy):
    with pytest.raises(WorkloadError, match=r"kernel 'fast' not found .*variants: expert, plain, slow"):
        load_kernel(axpy, "fast")


def test_kernel_folder_without_source(axpy_copy):
    (axpy_copy / "kernels" / "empty").mkdir()
    workload = load_workload(axpy_copy)
    with pytest.raises(WorkloadError, match=r"expected exactly one of kernel\.c"):
        load_kernel(workload, "empty")


def test_bad_kernel_toml(axpy_copy):
    (axpy_copy / "kernels" / "plain" / "kernel.toml").write_text('flags = "-O2"\n')
    workload = load_workload(axpy_copy)
    with pytest.raises(WorkloadError, match=r"kernel\.toml: flags: must be a list of strings"):
        load_kernel(workload, "plain")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("def reference(x, z, alpha):\n    return {'w': x}\n", r"returned outputs \['w'\]"),
        ("def reference(x, z, alpha):\n    return {'y': x[:-1]}\n", r"output 'y' has shape"),
        ("def reference(x, z, alpha):\n    raise ValueError('boom')\n", r"reference raised ValueError: boom"),
        ("def other(x):\n    return {}\n", r"no function named 'reference'"),
        ("import not_a_module\n", r"import failed: ModuleNotFoundError"),
    ],
)
def test_bad_reference_is_a_workload_error(axpy_copy, quick, body, message):
    (axpy_copy / "reference.py").write_text(body)
    workload = load_workload(axpy_copy)
    with pytest.raises(WorkloadError, match=message):
        run_gate(workload, load_kernel(workload, "plain"), options=quick)
