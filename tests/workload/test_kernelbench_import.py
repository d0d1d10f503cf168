"""`klineage import kernelbench`: our own KernelBench-format problems (tests/fixtures/kernelbench)
imported on the CPU, checked field by field, then gated with naive C kernels and wrong ones."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import FIXTURES
from klineage.cli import app
from klineage.gate import GateOptions, Limits, run_gate
from klineage.workload import load_kernel, load_workload
from klineage.workload.kernelbench import import_kernelbench

pytest.importorskip("torch")

PROBLEMS = FIXTURES / "kernelbench"
KERNELS = FIXTURES / "kernelbench_kernels"


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    out = tmp_path_factory.mktemp("kb")
    outcomes = import_kernelbench([PROBLEMS], out)
    return out, {o.name: o for o in outcomes}


@pytest.fixture
def correctness() -> GateOptions:
    return GateOptions(profile=False, limits=Limits(stall_s=30, memory_bytes=2 << 30))


def test_every_problem_but_the_broken_one_is_imported(imported):
    _, outcomes = imported
    assert sorted(outcomes) == ["1_relu", "2_row_softmax", "3_linear", "4_rmsnorm", "9_broken_forward"]
    assert [n for n, o in outcomes.items() if not o.ok] == ["9_broken_forward"]
    error = outcomes["9_broken_forward"].error
    assert "ValueError" in error and "broken on purpose" in error


def test_relu_axes_are_the_constants_in_file_order(imported):
    out, _ = imported
    workload = load_workload(out / "1_relu")
    assert workload.framework == "torch"
    assert workload.axes == {"rows": 64, "cols": 1000}
    assert [(t.name, t.shape, t.dtype, t.init) for t in workload.inputs] == [
        ("x", ("rows", "cols"), "float32", "normal")]
    assert [(t.name, t.shape) for t in workload.outputs] == [("out", ("rows", "cols"))]
    assert workload.params == {}
    assert workload.cost.bytes == "4*rows*cols + 4*rows*cols" and workload.cost.flops is None
    assert (out / "1_relu" / "1_relu.py").read_bytes() == (PROBLEMS / "1_relu.py").read_bytes()


def test_linear_weights_follow_the_axes_with_the_default_init_range(imported):
    out, outcomes = imported
    workload = load_workload(out / "3_linear")
    assert list(workload.axes) == ["tokens", "in_features", "out_features"]
    assert outcomes["3_linear"].params == {}  # both init inputs follow axes
    shapes = {t.name: t.shape for t in workload.inputs}
    assert shapes == {"x": ("tokens", "in_features"), "fc_weight": ("out_features", "in_features"),
                      "fc_bias": ("out_features",)}
    assert workload.outputs[0].shape == ("tokens", "out_features")
    # nn.Linear draws U(-1/sqrt(256), 1/sqrt(256)) = +-0.0625
    kind, low, high = next(t.init for t in workload.inputs if t.name == "fc_weight").split(":")
    assert kind == "uniform" and -0.07 < float(low) <= -0.0625 and 0.0625 <= float(high) < 0.07


def test_rmsnorm_eps_is_a_param_and_the_ones_weight_is_widened(imported):
    out, _ = imported
    workload = load_workload(out / "4_rmsnorm")
    assert workload.axes == {"batch_size": 16, "features": 2048}
    assert workload.params == {"eps": 1e-5}
    weight = workload.inputs[1]
    assert (weight.name, weight.shape, weight.init) == ("weight", ("features",), "uniform:0.5:1.5")
    assert workload.tolerance_for(workload.outputs[0]) == (1e-4, 1e-4)


@pytest.mark.parametrize("name", ["1_relu", "2_row_softmax", "3_linear", "4_rmsnorm"])
def test_check_shapes_are_smaller_odd_and_include_ones(imported, name):
    out, _ = imported
    workload = load_workload(out / name)
    shapes = workload.check_shapes
    assert len(shapes) >= 3
    assert all(all(shape[a] <= workload.axes[a] for a in workload.axes) for shape in shapes)
    assert any(all(v % 2 == 1 for v in shape.values()) for shape in shapes)
    assert any(1 in shape.values() for shape in shapes)
    assert load_workload(out / name, quick=True).quick


def _gate(workload_dir: Path, kernel: str, options: GateOptions):
    workload = load_workload(workload_dir)
    return run_gate(workload, load_kernel(workload, KERNELS / kernel), options=options)


def test_naive_c_kernels_pass_the_gate_on_imported_workloads(imported, correctness):
    out, _ = imported
    for workload, kernel in (("3_linear", "linear_naive"), ("4_rmsnorm", "rmsnorm_naive")):
        report = _gate(out / workload, kernel, correctness)
        assert report.verdict.value == "accepted", f"{workload}/{kernel}: {report.reason}"


def test_lower_precision_and_wrong_kernels_fail(imported, correctness):
    out, _ = imported
    bf16 = _gate(out / "3_linear", "linear_bf16", correctness)
    assert bf16.verdict.value == "incorrect", bf16.reason
    no_weight = _gate(out / "4_rmsnorm", "rmsnorm_no_weight", correctness)
    assert no_weight.verdict.value == "incorrect", no_weight.reason


BROKEN = {
    "syntax.py": "class Model(:\n    pass\n",
    "no_model.py": "import torch\ndef get_inputs():\n    return [torch.randn(4)]\n"
                   "def get_init_inputs():\n    return []\n",
    "tensor_init.py": (
        "import torch\nimport torch.nn as nn\nn = 8\n"
        "class Model(nn.Module):\n    def __init__(self, table):\n        super().__init__()\n"
        "        self.table = table\n    def forward(self, x):\n        return x * self.table\n"
        "def get_inputs():\n    return [torch.randn(n)]\n"
        "def get_init_inputs():\n    return [torch.randn(n)]\n"),
    "not_tensor.py": (
        "import torch\nimport torch.nn as nn\nn = 8\n"
        "class Model(nn.Module):\n    def forward(self, x):\n        return x.sum().item()\n"
        "def get_inputs():\n    return [torch.randn(n)]\n"
        "def get_init_inputs():\n    return []\n"),
    "dropout.py": (
        "import torch\nimport torch.nn as nn\nn = 64\n"
        "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.drop = nn.Dropout(0.5)\n    def forward(self, x):\n        return self.drop(x)\n"
        "def get_inputs():\n    return [torch.randn(n)]\n"
        "def get_init_inputs():\n    return []\n"),
}


def test_broken_problems_are_one_line_each_and_the_cli_goes_on(tmp_path):
    folder = tmp_path / "problems"
    folder.mkdir()
    for name, text in BROKEN.items():
        (folder / name).write_text(text)
    shutil.copy(PROBLEMS / "1_relu.py", folder)
    result = CliRunner().invoke(app, ["import", "kernelbench", str(folder), "--out",
                                      str(tmp_path / "out"), "--json"])
    assert result.exit_code == 1, result.output
    errors = {Path(o["problem"]).name: o["error"] for o in json.loads(result.output)}
    assert errors["1_relu.py"] is None
    assert "syntax error at line 1" in errors["syntax.py"]
    assert "no class Model" in errors["no_model.py"]
    assert "init input 0 (table) is <Tensor>" in errors["tensor_init.py"]
    assert "not a tensor" in errors["not_tensor.py"]
    assert "different outputs on the same inputs" in errors["dropout.py"]
    assert all("\n" not in e for e in errors.values() if e)


def test_an_existing_workload_is_kept_unless_forced(tmp_path):
    problem = PROBLEMS / "1_relu.py"
    first = import_kernelbench([problem], tmp_path)[0]
    assert first.ok
    again = import_kernelbench([problem], tmp_path)[0]
    assert not again.ok and "--force" in again.error
    assert import_kernelbench([problem], tmp_path, force=True)[0].ok


CONV = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride, bias=False)

    def forward(self, x):
        return self.conv(x)


batch_size = 4
in_channels = 3
out_channels = 8
kernel_size = 3
height = 32
width = 32
stride = 2


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride]
"""


def test_a_strided_convolution_keeps_its_stride_fixed_and_its_window_arithmetic(tmp_path):
    problem = tmp_path / "conv.py"
    problem.write_text(CONV)
    outcome = import_kernelbench([problem], tmp_path / "out")[0]
    assert outcome.ok, outcome.error
    workload = load_workload(outcome.workload)
    # equal file values (in_channels = kernel_size = 3, height = width = 32) stay separate axes
    assert list(workload.axes) == ["batch_size", "in_channels", "out_channels", "kernel_size",
                                   "height", "width"]
    assert workload.params == {"stride": 2.0}
    assert workload.inputs[1].shape == ("out_channels", "in_channels", "kernel_size", "kernel_size")
    assert workload.outputs[0].shape == ("batch_size", "out_channels", "(height-kernel_size+2)//2",
                                         "(width-kernel_size+2)//2")
    assert any("stride=2" in note for note in outcome.notes)


EMBEDDING = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, rows, width):
        super().__init__()
        self.table = nn.Embedding(rows, width)

    def forward(self, index):
        return self.table(index)


batch = 4
rows = 100
width = 32


def get_inputs():
    return [torch.randint(0, rows, (batch,))]


def get_init_inputs():
    return [rows, width]
"""


def test_check_shapes_the_declared_inits_cannot_run_are_dropped_and_said(tmp_path):
    problem = tmp_path / "embedding.py"
    problem.write_text(EMBEDDING)
    outcome = import_kernelbench([problem], tmp_path / "out")[0]
    assert outcome.ok, outcome.error
    workload = load_workload(outcome.workload)
    assert workload.inputs[0].init == "randint:0:100"  # pooled draws reach 0 and 99
    assert workload.inputs[1].init == "normal"  # nn.Embedding's N(0, 1)
    # indices drawn for 100 rows cannot index fewer: only the width may move
    assert workload.check_shapes == ({"batch": 4, "rows": 100, "width": 31},)
    readme = (Path(outcome.workload) / "README.md").read_text()
    assert "integer input 0 draws 0..4 here; the gate draws 0..99" in readme
    assert not any("no check shapes" in note for note in outcome.notes)


def test_the_cli_summary_names_each_problem_and_its_failure(tmp_path):
    folder = tmp_path / "problems"
    folder.mkdir()
    (folder / "syntax.py").write_text(BROKEN["syntax.py"])
    shutil.copy(PROBLEMS / "1_relu.py", folder)
    result = CliRunner(env={"COLUMNS": "200"}).invoke(
        app, ["import", "kernelbench", str(folder), "--out", str(tmp_path / "out")])
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()  # the progress bar goes to stderr
    assert "imported 1 of 2 problems" in lines[0]
    assert "2/2" in result.stderr
    assert any(line.startswith("│ 1_relu.py ") and "rows=64 cols=1000" in line for line in lines)
    assert lines[-1] == "syntax.py: failed — syntax error at line 1: invalid syntax"


POOLED_NORM = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, normalized_shape, window):
        super().__init__()
        self.norm = nn.LayerNorm(normalized_shape)
        self.window = window

    def forward(self, x):
        return torch.nn.functional.avg_pool2d(self.norm(x), self.window)


batch = 4
height = 16
width = 24
window = (2, 3)


def get_inputs():
    return [torch.randn(batch, height, width)]


def get_init_inputs():
    return [(height, width), window]
"""


def test_tuple_init_inputs_follow_axes_or_become_one_param_per_item(tmp_path):
    problem = tmp_path / "pooled_norm.py"
    problem.write_text(POOLED_NORM)
    outcome = import_kernelbench([problem], tmp_path / "out")[0]
    assert outcome.ok, outcome.error
    workload = load_workload(outcome.workload)
    assert workload.params == {"window_0": 2.0, "window_1": 3.0}  # (height, width) follows the axes
    assert [(t.name, t.shape, t.init) for t in workload.inputs[1:]] == [
        ("norm_weight", ("height", "width"), "uniform:0.5:1.5"),
        ("norm_bias", ("height", "width"), "uniform:-0.5:0.5")]
    assert workload.outputs[0].shape == ("batch", "height//2", "width//3")
