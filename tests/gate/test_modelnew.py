"""ModelNew kernels (KernelBench's kernel.py with a load_inline C++ extension) through the whole
gate on the CPU: an honest one is accepted; each hostile one gets the verdict of the check that
stops it. The extension is compiled once (the hostile kernels share the honest one's sources;
``below_dispatcher`` alone has its own). For CUDA ModelNews, what needs no GPU: their parse, the
units and flags load_inline would compile, the static checks and the compile errors (the gate
itself: tests/gpu)."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest

from conftest import FIXTURES
from klineage import settings
from klineage.backends import backend_for, modelnew_cuda
from klineage.backends._modelnew_parse import extension_of
from klineage.backends.modelnew import BELOW_THE_DISPATCHER, TRACE_ENV, TRACED_CALLS, _main_cpp
from klineage.backends.modelnew_cuda import ModelNewCudaBackend, cuda_unit, nvcc_flags
from klineage.gate import GateOptions, Limits, run_gate
from klineage.gate._optrace import _computed_outside, parsed_report, runner_log, trace_blind_spots
from klineage.gate.static import forbidden_in_source
from klineage.workload import load_kernel, load_workload
from klineage.workload.kernelbench import import_kernelbench

pytest.importorskip("torch")

KERNELS = FIXTURES / "modelnew"
CUDA_KERNELS = FIXTURES / "modelnew_cuda"
LIMITS = Limits(stall_s=60, memory_bytes=4 << 30)


@pytest.fixture(scope="module")
def relu(tmp_path_factory):
    out = tmp_path_factory.mktemp("kb")
    [outcome] = import_kernelbench([FIXTURES / "kernelbench" / "1_relu.py"], out)
    assert outcome.ok, outcome.error  # once only "workload folder not found" said it failed
    return load_workload(out / "1_relu")


def gate(workload, name, profile=False):
    options = GateOptions(profile=profile, threads=1, trials=2, target_trial_s=0.005, warmup_s=0.01,
                          max_sets=2, limits=LIMITS)
    return run_gate(workload, load_kernel(workload, KERNELS / name), options=options)


def test_an_honest_modelnew_passes_the_whole_gate(relu):
    report = gate(relu, "honest_relu", profile=True)
    assert report.verdict in ("accepted", "unmeasurable"), report.reason  # a loaded 2-core machine
    stages = {s.name: s.ok for s in report.stages}
    assert stages["op_trace"] and stages["correctness"] and report.backend == "modelnew"


def test_a_forward_with_the_reference_op_is_caught_by_the_trace(relu):
    report = gate(relu, "torch_relu")
    assert report.verdict == "rejected_cheat"
    assert "op trace" in report.reason and "aten::relu" in report.reason


@pytest.mark.parametrize(("name", "words"), [
    ("imports_torch_c", "imports torch._C"),
    ("hidden_getattr", "getattr() with a name that is not a literal"),
    ("spawns_a_process", "(load_inline source 1):4: calls std::system()"),
])
def test_reaching_internals_or_the_os_is_caught_statically(relu, name, words):
    report = gate(relu, name)
    assert report.verdict == "rejected_cheat" and words in report.reason, report.reason
    assert [s.name for s in report.stages] == ["static"]


def test_computed_extension_sources_are_a_compile_error_that_says_why(relu):
    report = gate(relu, "computed_source")
    assert report.verdict == "compile_error"
    assert "must be string literals or module-level constants" in report.reason


@pytest.mark.parametrize(("name", "verdict", "words"), [
    ("writes_input", "incorrect", "input 'x' was modified"),
    ("cached_output", "incorrect", "seed"),
    ("low_precision", "incorrect", "out"),
    # the runner's jail has no /etc: the open itself is refused (before the jail, fadvise64 trapped)
    ("opens_a_file", "crashed", "Permission denied"),
    # it uses torch's relu where it believes it is not traced: it can no longer tell, so always
    ("detects_the_trace", "rejected_cheat", "outside the custom extension: aten::relu"),
    # the reference's own CPU kernel, behind macros the source scan cannot read: the symbols show it
    ("below_dispatcher", "rejected_cheat",
     f"imports 'at::cpu::relu(at::Tensor const&)' ({BELOW_THE_DISPATCHER})"),
])
def test_hostile_modelnews_get_the_verdict_of_the_check_that_stops_them(relu, name, verdict, words):
    report = gate(relu, name)
    assert report.verdict == verdict and words in report.reason, report.reason


def test_a_forward_sees_the_same_extension_in_the_traced_runner_as_in_any_other(relu):
    # detects_the_trace prints all it can read of its extension at its first call: the same
    # whether the runner is traced or not (it printed a wrapper's type and repr once).
    kernel = load_kernel(relu, KERNELS / "detects_the_trace")
    backend = backend_for(kernel.language)
    build = backend.build(kernel)
    logs = [runner_log(relu, backend, build, LIMITS, env) for env in ({TRACE_ENV: "t0ken:3"}, {})]
    seen = [[line for line in log.splitlines() if line.startswith("KL_SEEN")] for log in logs]
    assert len(seen[0]) == 1 and seen[0] == seen[1], seen
    assert "'module'" in seen[0][0] and "'builtin_function_or_method', 'relu'" in seen[0][0]


def test_a_trace_report_is_believed_only_whole_and_under_its_token():
    good = 'KL_TRACE t0k {"extension": ["aten::empty_like"], "forward": [["", "aten::view"]]}'
    assert parsed_report(f"noise\n{good}\n", "t0k") == {"extension": ["aten::empty_like"],
                                                         "forward": [["", "aten::view"]]}
    for log in ("", good.replace("t0k", "other"), f"{good}\n{good}", good[:-2], good.replace('""', "1"),
                'KL_TRACE t0k {"extension": "aten::relu", "forward": []}', "KL_TRACE t0k [1, 2]"):
        assert parsed_report(log, "t0k") is None, log


def test_composite_ops_outside_the_extension_are_judged_by_what_they_run():
    # torch's dispatch mode (which records the reference) sees what composite ops run; the
    # recorder sees the composite op first: expand_as is glue, linear is a matmul.
    assert _computed_outside([["", "aten::expand_as"], ["aten::expand_as", "aten::expand"],
                              ["", "aten::to.dtype"], ["aten::to.dtype", "aten::_to_copy"]]) == []
    linear = [["", "aten::linear"], ["aten::linear", "aten::t"], ["aten::linear", "aten::matmul"],
              ["aten::matmul", "aten::mm"]]
    assert _computed_outside(linear) == ["aten::mm"]
    assert _computed_outside([["", "aten::relu"], ["aten::relu", "aten::clamp_min"]]) == ["aten::relu"]
    assert _computed_outside([["", "aten::made_up.x"]]) == ["aten::made_up"]  # unknown: computes
    assert _computed_outside([["", "\u00e9::\u00fc"]]) == ["\u00e9::\u00fc"]  # the report is the candidate's


def test_static_entry_points_and_recorder_switches_are_caught_in_the_extension_source(tmp_path):
    lines = ["torch::Tensor a(torch::Tensor x) { return at::cpu::_softmax(x, 1, false); }",
             "torch::Tensor b(torch::Tensor x) { return at::native::relu(x); }",
             "torch::Tensor c(torch::Tensor x) { return at::_ops::relu::redispatch(x.key_set(), x); }",
             "void d(torch::Tensor o, torch::Tensor x) { at::compositeexplicitautograd::relu_out(o, x); }",
             "torch::Tensor e(torch::Tensor x) { at::RecordFunctionGuard off(false); return at::relu(x); }",
             "TORCH_LIBRARY_IMPL(aten, CPU, m) {}",
             # honest: at::cuda's helpers, ATen's header-only loops over the extension's own lambda
             "torch::Tensor f(torch::Tensor x) { auto s = at::cuda::getCurrentCUDAStream(); return x; }",
             "void g(at::TensorIterator& it) { at::native::cpu_kernel(it, [](float v) { return v; }); }"]
    text = "\n".join(lines)
    (tmp_path / "kernel.py").write_text(
        f'from torch.utils.cpp_extension import load_inline\n\nS = """\n{text}\n"""\n'
        f'ext = load_inline(name="x", cpp_sources=S, functions=["a"])\n')
    found = forbidden_in_source(tmp_path / "kernel.py")
    assert [line.split(":")[1] for line in found] == ["2", "3", "4", "5", "6", "7"], found
    assert all(BELOW_THE_DISPATCHER in line for line in found[:4]), found
    assert "uses at::cpu::_softmax" in found[0] and "uses RecordFunctionGuard" in found[4], found


def test_blind_spots_name_static_entries_and_definitions_of_what_our_code_calls(tmp_path):
    """On objects of our own making (no torch headers, so no 30 s compile): an entry point
    below the dispatcher imported, a function the shim calls defined, and a strong definition
    of a template instance the recorder holds weakly; an honest weak one stays ours."""
    units = {
        "ext.o": ("c++", "namespace at { class Tensor; namespace cpu { Tensor& relu_(Tensor& self); } }\n"
                         "at::Tensor& f(at::Tensor& x) { return at::cpu::relu_(x); }\n"
                         "extern \"C\" const char* PyUnicode_AsUTF8(void* o) { return (const char*)o; }\n"
                         "template <typename T> T twice(T x) { return x + x; }\n"
                         "template <> int twice<int>(int x) { return x; }\n"
                         "long g(long x) { return twice(x); }\n"),
        "kl_shim.o": ("c", "const char* PyUnicode_AsUTF8(void* o);\n"
                           "const char* name(void* o) { return PyUnicode_AsUTF8(o); }\n"),
        "kl_recorder.o": ("c++", "template <typename T> T twice(T x) { return x + x; }\n"
                                 "int h(int x) { return twice(x); }\nlong k(long x) { return twice(x); }\n"),
    }
    for name, (language, text) in units.items():
        (tmp_path / f"{name}.src").write_text(text)
        subprocess.run([settings.cxx_compiler(), "-x", language, "-O0", "-c", str(tmp_path / f"{name}.src"),
                        "-o", str(tmp_path / name)], check=True)
    assert trace_blind_spots(tmp_path / "kernel.so") == []  # not a ModelNew build
    (tmp_path / "modelnew_config.h").write_text("")
    found = trace_blind_spots(tmp_path / "kernel.so")
    assert found[0] == f"imports 'at::cpu::relu_(at::Tensor&)' ({BELOW_THE_DISPATCHER})", found
    assert [line.split("'")[1] for line in found[1:]] == ["PyUnicode_AsUTF8", "int twice<int>(int)"], found
    assert "which klineage's code in the runner (the op recorder or the shim) calls" in found[1]


def test_kernel_py_reaches_no_standard_module_and_no_frame(tmp_path):
    # with them a forward could read the stack (loading, which is traced, or the gate's calls)
    # or load any object (pickle); torch's ops named like a standard module stay usable
    (tmp_path / "kernel.py").write_text(
        "import math\nimport torch\n\n\ndef f(x):\n"
        "    torch.serialization.pickle.loads(b'')\n    torch.cuda.traceback.extract_stack()\n"
        "    g = (i for i in [1])\n    g.gi_frame.f_back\n    torch.profiler.profile()\n"
        "    torch.functional.operator.attrgetter('x')\n"
        "    return x.chunk(2), x.select(0, 0), x.trace(), torch.random.manual_seed(0), math.sqrt(2)\n")
    found = forbidden_in_source(tmp_path / "kernel.py")
    assert [line.split(":")[1] for line in found] == ["6", "7", "9", "9", "10", "10", "11"], found
    assert "touches .pickle" in found[0] and "touches .gi_frame (a frame" in found[3], found


def test_sneaky_ways_to_internals_are_caught_statically(tmp_path):
    (tmp_path / "kernel.py").write_text(
        "import torch\nimport torch.nn.functional as F\n\n"
        "C = F.torch._C\nLOADER = F.importlib\nHOOK = {'__torch_function__': 1}\n\n\n"
        "class T(torch.Tensor):\n    def __torch_function__(self):\n        return 1\n\n\n"
        "def ops():\n    return getattr(torch, 'ops')\n")
    found = forbidden_in_source(tmp_path / "kernel.py")
    assert [line.split(":")[1] for line in found] == ["4", "5", "6", "10", "15"], found


def _switching_relu(folder: Path, honest_calls: int) -> Path:
    """The honest ReLU ModelNew, but its forward uses torch.relu after ``honest_calls`` calls."""
    folder.mkdir()
    (folder / "kernel.toml").write_text('language = "python"\n')
    honest = (KERNELS / "honest_relu" / "kernel.py").read_text()
    (folder / "kernel.py").write_text(honest.replace(
        "        return relu_ext.relu(x)",
        "        self.calls = getattr(self, 'calls', 0) + 1\n"
        f"        return relu_ext.relu(x) if self.calls <= {honest_calls} else torch.relu(x)"))
    return folder


def test_a_forward_that_switches_to_torch_after_its_first_call_is_traced(relu, tmp_path):
    kernel = _switching_relu(tmp_path / "counting", honest_calls=1)
    report = run_gate(relu, load_kernel(relu, kernel), options=GateOptions(profile=False, limits=LIMITS))
    assert report.verdict == "rejected_cheat" and "aten::relu" in report.reason, report.reason


def test_a_forward_that_switches_to_torch_after_more_calls_than_the_trace_makes_is_refused(relu,
                                                                                         tmp_path):
    # The traced runner calls each size's forward 2 to 8 times while it loads (TRACED_CALLS): a
    # forward honest for 8 calls was judged on those, and its torch ops in the gate's calls went
    # unseen (only its outputs were verified). The recorder now stays on through every call.
    kernel = _switching_relu(tmp_path / "counting_late", honest_calls=TRACED_CALLS)
    report = gate(relu, kernel, profile=True)  # the timed calls: many more than any trace makes
    assert report.verdict == "rejected_cheat", report.reason
    assert "never ran while it was traced" in report.reason and "aten::relu" in report.reason, report.reason


def test_kernel_toml_chooses_python_among_the_languages_of_kernel_py(relu, tmp_path):
    assert load_kernel(relu, KERNELS / "honest_relu").language == "python"
    cuda = load_kernel(relu, CUDA_KERNELS / "honest_relu")
    assert cuda.language == "python_cuda" and backend_for(cuda.language).name == "modelnew_cuda"
    (tmp_path / "kernel.py").write_text((KERNELS / "honest_relu" / "kernel.py").read_text())
    assert load_kernel(relu, tmp_path).language == "triton"  # kernel.py's default


def test_cuda_sources_and_their_flags_are_read_from_the_tree():
    extension = extension_of(CUDA_KERNELS / "honest_relu" / "kernel.py")
    assert extension.name == "kl_test_relu_cuda" and extension.functions == ("relu",)
    assert extension.cpp_sources == ("torch::Tensor relu(torch::Tensor x);",)
    assert "__global__ void relu_kernel" in extension.cuda_sources[0]
    assert extension.extra_cuda_cflags == ("-O3",) and extension.extra_cflags == ()


def test_the_cuda_units_and_nvcc_flags_are_those_load_inline_gives(monkeypatch):
    # torch's own include flags need a CUDA toolkit; what is ours to compose is checked here
    monkeypatch.setattr(modelnew_cuda, "torch_compile_flags",
                        lambda name, device: [f"-DTORCH_EXTENSION_NAME={name}"])
    extension = extension_of(CUDA_KERNELS / "honest_relu" / "kernel.py")
    unit = cuda_unit(extension)
    assert unit.splitlines()[:3] == ["#include <torch/types.h>", "#include <cuda.h>",
                                     "#include <cuda_runtime.h>"]
    assert unit.endswith(extension.cuda_sources[0])
    assert _main_cpp(extension).startswith("#include <torch/extension.h>\ntorch::Tensor relu(torch::Tensor")
    assert 'm.def("relu", torch::wrap_pybind_function(relu), "relu");' in _main_cpp(extension)
    flags = nvcc_flags(extension, "sm_90a")
    assert flags.count("-O3") == 1 and flags[-1] == "-O3"  # given there: ours is left out
    assert {"-std=c++17", "--expt-relaxed-constexpr", "-D__CUDA_NO_HALF_OPERATORS__",
            "-gencode=arch=compute_90a,code=sm_90a", "-DTORCH_EXTENSION_NAME=kl_test_relu_cuda"} <= set(flags)
    own = nvcc_flags(replace(extension, extra_cuda_cflags=("-std=c++20", "-arch=sm_80")), "sm_90a")
    assert own[-2:] == ["-std=c++20", "-arch=sm_80"] and "-std=c++17" not in own
    assert not any(f.startswith("-gencode") for f in own)  # a target named: none of ours


def test_without_nvcc_a_cuda_modelnew_is_a_compile_error(relu, monkeypatch, tmp_path):
    monkeypatch.setenv("NVCC", str(tmp_path / "no-nvcc"))
    build = ModelNewCudaBackend().build(load_kernel(relu, CUDA_KERNELS / "honest_relu"))
    assert not build.ok and "no-nvcc" in build.log and build.log.startswith("error:")


def test_the_cpu_modelnew_sends_cuda_sources_to_the_cuda_backend(relu, tmp_path):
    (tmp_path / "kernel.py").write_text((CUDA_KERNELS / "honest_relu" / "kernel.py").read_text())
    (tmp_path / "kernel.toml").write_text('language = "python"\n')
    report = run_gate(relu, load_kernel(relu, tmp_path), options=GateOptions(profile=False, limits=LIMITS))
    assert report.verdict == "compile_error" and 'language = "python_cuda"' in report.reason, report.reason


def test_other_streams_are_caught_statically_in_kernel_py_and_in_cuda_sources(tmp_path):
    denied = ModelNewCudaBackend.denied_symbols
    (tmp_path / "kernel.py").write_text("import torch\n\nSIDE = torch.cuda.Stream()\n"
                                        "GRAPH = torch.cuda.CUDAGraph()\n")
    found = forbidden_in_source(tmp_path / "kernel.py", (), denied)
    assert [line.split(":")[1] for line in found] == ["3", "4"] and "another stream" in found[0], found
    hidden = (CUDA_KERNELS / "own_stream" / "kernel.py").read_text()
    (tmp_path / "kernel.py").write_text(hidden.replace("MAKE_STREAM(&aside)", "cudaStreamCreate(&aside)"))
    found = forbidden_in_source(tmp_path / "kernel.py", (), denied)
    assert len(found) == 1 and "calls cudaStreamCreate() (work on a stream other than" in found[0], found
    # spelled through a macro, it is the object's symbols that show it (tests/gpu)
    assert forbidden_in_source(CUDA_KERNELS / "own_stream" / "kernel.py", (), denied) == []


def test_an_extension_may_include_torchs_headers_and_a_c_kernel_may_not(tmp_path):
    # KernelBench solutions open their sources with torch/extension.h: the trace judges what they
    # call through it. A vendor library's header stays refused, and a plain kernel gets no torch.
    honest = (KERNELS / "honest_relu" / "kernel.py").read_text()
    (tmp_path / "kernel.py").write_text(honest.replace(
        'RELU_SOURCE = """\n', 'RELU_SOURCE = """\n#include <torch/extension.h>\n#include <ATen/ATen.h>\n'
                              '#include <cblas.h>\n'))
    found = forbidden_in_source(tmp_path / "kernel.py")
    assert len(found) == 1 and "includes <cblas.h>" in found[0], found
    (tmp_path / "kernel.c").write_text("#include <torch/extension.h>\nint kl_launch(void) { return 0; }\n")
    found = forbidden_in_source(tmp_path / "kernel.c")
    assert len(found) == 1 and "includes <torch/extension.h>" in found[0], found


def test_the_runner_reads_its_own_copy_of_the_workload(relu):
    # As nobody (the CUDA runner) it could not read a workload in a private folder; the copy is
    # what the host loads, on the CPU too, so this runs everywhere.
    backend = backend_for("python")
    files = {p.name for p in backend.sandbox_files(relu)}
    assert {"reference.py", "1_relu.py"} <= files
    spec = json.loads(backend.sandbox_env(1, relu)["KL_MODELNEW"])
    assert spec["reference"] == "workload/reference.py"


def test_the_workload_copy_is_readable_whatever_the_umask_and_keeps_out_links_leaving_it(relu, tmp_path):
    from klineage.gate._runner_process import copy_workload_files

    workload = tmp_path / "w"
    shutil.copytree(relu.root, workload)
    (tmp_path / "secret").write_text("key")
    (workload / "leak.py").symlink_to(tmp_path / "secret")
    (workload / "inside.py").symlink_to(workload / "reference.py")
    files = backend_for("python").sandbox_files(load_workload(workload))
    assert {p.name for p in files} == {"reference.py", "1_relu.py", "inside.py"}
    (tmp_path / "runner").mkdir()
    previous = os.umask(0o077)
    try:
        copy_workload_files(files, tmp_path / "runner" / "workload")
    finally:
        os.umask(previous)
    copied = tmp_path / "runner" / "workload"
    assert stat.S_IMODE(copied.stat().st_mode) == 0o755
    assert {stat.S_IMODE(p.stat().st_mode) for p in copied.iterdir()} == {0o444}


def test_a_root_gate_refuses_a_cuda_runner_nobody_could_start():
    # The CUDA ModelNew runner becomes nobody: an interpreter only root can read is named.
    # Outside pytest's folders, which only their owner may enter.
    with tempfile.TemporaryDirectory() as top:
        root = Path(top)
        folder = root / "python" / "lib"
        folder.mkdir(parents=True)
        library = folder / "libpython.so"
        library.write_bytes(b"")
        for path in (root, root / "python", folder):
            path.chmod(0o755)
        library.chmod(0o644)
        assert modelnew_cuda._first_unreadable_by_others([library]) is None
        (root / "python").chmod(0o750)
        assert modelnew_cuda._first_unreadable_by_others([library]) == \
            f"{root / 'python'} (others may not enter it)"
        (root / "python").chmod(0o755)
        library.chmod(0o640)
        assert modelnew_cuda._first_unreadable_by_others([library]) == f"{library} (others may not read it)"
        # a link that reads fine resolved, but is reached through a folder others may not enter
        library.chmod(0o644)
        private = root / "private"
        private.mkdir(mode=0o700)
        (private / "lib").symlink_to(folder)
        assert modelnew_cuda._first_unreadable_by_others([private / "lib" / "libpython.so"]) == \
            f"{private} (others may not enter it)"


def test_extra_flags_of_an_extension_pass_the_flag_allow_list(relu, tmp_path):
    # load_inline's extra_cflags and extra_cuda_cflags reach the compiler as a kernel.toml's flags do
    marker = tmp_path / "wrapper-ran"
    source = (KERNELS / "honest_relu" / "kernel.py").read_text().replace(
        'functions=["relu"]', f'functions=["relu"], extra_cflags=["-wrapper", "/bin/sh,-c,touch {marker}"]')
    assert "extra_cflags" in source
    folder = tmp_path / "flagged"
    folder.mkdir()
    (folder / "kernel.py").write_text(source)
    (folder / "kernel.toml").write_text((KERNELS / "honest_relu" / "kernel.toml").read_text())
    report = run_gate(relu, load_kernel(relu, folder), options=GateOptions(profile=False, limits=LIMITS))
    assert report.verdict == "compile_error" and "'-wrapper' is not allowed" in report.reason
    assert not marker.exists()
    cuda = extension_of_text('cuda_sources=["__global__ void k() {}"], '
                             'extra_cuda_cflags=["-ccbin", "/tmp/x"]')
    assert "'-ccbin' is not allowed" in ModelNewCudaBackend()._refused(cuda)


def extension_of_text(arguments: str):
    path = Path(tempfile.mkdtemp()) / "kernel.py"
    path.write_text("from torch.utils.cpp_extension import load_inline\n"
                    f"ext = load_inline(name='x', cpp_sources='int f();', functions=['f'], {arguments})\n")
    return extension_of(path)
