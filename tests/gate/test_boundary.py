"""The red team's boundary cases (issue 30): the build, the loading window, the reply pipe and
neighbours, catalogued in tests/gate/hostile/CATALOGUE.toml (classes 13-16). Written from the
threat model and the tests, not the gate's code.

test_hostile.py gives each catalogue kernel its verdict; this file asserts what a verdict cannot
show, with the attacks armed: the files some hostile flags point at are planted under /tmp first
(a gcc plugin, a specs file, a fake 'as' and 'gcc', a response file, a library, the secret), then:
- no command a flag smuggles in ever runs: no /tmp/klineage-redteam-marker-* file appears, the
  planted --keep-dir stays empty and the build cache holds no .i/.s of ours, whatever the verdict;
- the secret, and the API keys in the gate's environment, never appear in the reason or anywhere
  in the report's JSON (build log included);
- run_gate never raises for any of these kernels: a candidate's failure is a verdict;
- a refused flag is named in the reason;
- a neighbour pair (a baseline that slows itself when it detects its candidate) does not buy a
  'faster': run_gate(candidate, against=baseline) is 'slower' or 'unmeasurable' (a 'faster' by
  less than 5% is let through as noise).
The CUDA kernels run under `pytest -m gpu` (the H200); their builds also run here where nvcc is.
"""

from __future__ import annotations

import glob
import shutil
import subprocess
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest

from conftest import FIXTURES
from klineage.backends import backend_for
from klineage.errors import KlineageError
from klineage.gate import GateOptions, Limits, run_gate
from klineage.workload import load_kernel, load_workload

from .test_hostile import (  # noqa: F401 (the fixture puts probe API keys in our environment)
    CATALOGUE,
    OPTIONS,
    _credentials_in_our_environment,
    _expected,
    _folder,
)

SECRET_FILE = Path("/tmp/klineage-redteam-secret.txt")
SECRET = "KLINEAGE_REDTEAM_SECRET 7d41c9e2 = held-out rows of a private workload\n"
# Pieces of the secret (gcc quotes '7d41c9e2' as the suffix "d41c9e2") and of the probe API keys.
LEAKS = ("d41c9e2", "KLINEAGE_REDTEAM_SECRET", "held-out rows", "red-team-probe", "red_team_probe")
MARKERS = "/tmp/klineage-redteam-marker-"
BIN = Path("/tmp/klineage-redteam-bin")
LIB = Path("/tmp/klineage-redteam-lib")
KEEP = Path("/tmp/klineage-redteam-keep")
PLANTED = [SECRET_FILE, BIN, LIB, KEEP, Path("/tmp/klineage-redteam-plugin.so"),
           Path("/tmp/klineage-redteam.specs"), Path("/tmp/klineage-redteam.rsp")]

BOUNDARY = sorted(n for n, entry in CATALOGUE.items() if entry.get("class") in (13, 14, 15))
CPU_CASES = [n for n in BOUNDARY if CATALOGUE[n]["backend"] == "cpu"]
CUDA_CASES = [n for n in BOUNDARY if CATALOGUE[n]["backend"] == "cuda"]
PAIRS = sorted(n for n, entry in CATALOGUE.items() if entry["backend"] == "pair")
GPU_OPTIONS = GateOptions(trials=3, target_trial_s=0.02, max_sets=3, compare_s=1.0, min_pairs=12,
                          limits=Limits(stall_s=60, memory_bytes=None))

# The gcc plugin (-fplugin=, -Xlinker -plugin): its constructor runs when cc1 or ld dlopens it.
PLUGIN_C = """
#include <fcntl.h>
#include <unistd.h>
__attribute__((constructor)) static void planted(void) {
    close(open("@MARKERS@plugin", O_CREAT | O_WRONLY, 0644));
}
int plugin_is_GPL_compatible;
int plugin_init(void *info, void *version) { (void)info; (void)version; return 0; }
""".replace("@MARKERS@", MARKERS)

# The library of build_flag_link_library: linked in by -L/-l/-rpath, never scanned; its constructor
# runs in the runner while the kernel loads, and quotes the secret as a dying runner's last line.
LIBRARY_C = """
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
int klineage_redteam_linked;
__attribute__((constructor)) static void planted(void) {
    close(open("@MARKERS@library", O_CREAT | O_WRONLY, 0644));
    char text[256];
    int fd = open("@SECRET@", O_RDONLY);
    if (fd < 0) return;
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    if (n <= 0) return;
    text[n] = 0;
    for (ssize_t i = 0; i < n; i++) if (text[i] == '\\n') text[i] = ' ';
    fprintf(stderr, "RuntimeError: %s\\n", text);
    fflush(stderr);
    _exit(3);
}
""".replace("@MARKERS@", MARKERS).replace("@SECRET@", str(SECRET_FILE))


def _script(path: Path, marker: str, then: str) -> None:
    path.write_text(f'#!/bin/sh\n: > {MARKERS}{marker}\nexec {then} "$@"\n')
    path.chmod(0o755)


def _compile_shared(source: str, target: Path, tmp: Path) -> None:
    c_file = tmp / (target.stem + ".c")
    c_file.write_text(source)
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(target), str(c_file)], check=True)


def _remove_planted() -> None:
    for path in PLANTED:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """What the armed hostile flags point at, and the secret; all removed afterwards."""
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("gcc is needed to plant the red team's files")
    tmp = tmp_path_factory.mktemp("planted")
    _remove_planted()
    SECRET_FILE.write_text(SECRET)
    SECRET_FILE.chmod(0o644)  # world-readable, like the held-out workloads it stands for
    BIN.mkdir()
    LIB.mkdir()
    KEEP.mkdir()
    _compile_shared(PLUGIN_C, Path("/tmp/klineage-redteam-plugin.so"), tmp)
    _compile_shared(LIBRARY_C, LIB / "libklineage_redteam.so", tmp)
    collect2 = subprocess.run([gcc, "-print-prog-name=collect2"], capture_output=True, text=True,
                              check=True).stdout.strip()
    _script(BIN / "as", "as", "as")                 # -B: gcc runs <dir>/as
    _script(BIN / "gcc", "gcc", gcc)                # nvcc -ccbin / --compiler-bindir
    _script(BIN / "g++", "gxx", shutil.which("g++") or gcc)  # ... which links with g++ there
    _script(BIN / "ld-wrap", "specs", collect2)     # *linker: of the specs file
    Path("/tmp/klineage-redteam.specs").write_text(f"*linker:\n{BIN / 'ld-wrap'}\n\n")
    Path("/tmp/klineage-redteam.rsp").write_text(
        f"-wrapper '/bin/sh,-c,: > {MARKERS}rsp; exec \"$0\" \"$@\"'\n")
    yield
    _remove_planted()


@pytest.fixture(scope="module")
def _module_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("boundary-cache")


@pytest.fixture(autouse=True)
def build_cache(_isolated_cache, _module_cache, monkeypatch) -> Path:
    """This module's own build cache: test_hostile builds the same kernels unarmed, and a build it
    cached would skip the compiler here, and with it the side effect looked for."""
    monkeypatch.setenv("KLINEAGE_CACHE_DIR", str(_module_cache))
    return _module_cache


def _compiler_files(cache: Path) -> list[Path]:
    return [p for p in cache.rglob("*") if p.suffix in {".i", ".ii", ".s"}]


def _clear_traces(cache: Path) -> None:
    """Removes what an earlier kernel left, so that it is not blamed on the next one."""
    for path in [Path(p) for p in glob.glob(MARKERS + "*")] + _compiler_files(cache):
        path.unlink()
    for path in KEEP.iterdir():
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()


def _traces(cache: Path) -> list[str]:
    """Whatever a smuggled command or output flag left behind."""
    found = glob.glob(MARKERS + "*") + [str(p) for p in KEEP.iterdir()]
    return found + [str(p) for p in _compiler_files(cache)]


def _options(flag: str) -> str:
    """The option part of a flag, as a reason would name it: '-Wl,-Map' of '-Wl,-Map=/tmp/x'."""
    return flag.split("=", 1)[0]


def _gate(workload, name: str, options: GateOptions):
    """run_gate on one catalogue kernel; an exception is a test failure, never a pass."""
    try:
        return run_gate(workload, load_kernel(workload, _folder(name)), options=options)
    except Exception as exc:  # any exception at all is the finding
        pytest.fail(f"run_gate raised {exc!r} for {name}: a candidate's failure must be a verdict")


def _check(name: str, report, cache: Path) -> None:
    entry = CATALOGUE[name]
    text = report.model_dump_json()
    assert report.verdict.value in _expected(name), f"{entry['why']}\n{report.reason}"
    assert entry.get("reason_contains", "") in report.reason, report.reason
    assert not _traces(cache), f"{name}: a smuggled command or output flag left {_traces(cache)}"
    leaked = [s for s in LEAKS if s in report.reason or s in text]
    assert not leaked, f"{name}: the report quotes {leaked}: {report.reason}"
    if entry.get("reason_contains") == "not allowed":
        flags = tomllib.loads((_folder(name) / "kernel.toml").read_text())["flags"]
        assert any(_options(f) in report.reason for f in flags), f"no refused flag named: {report.reason}"


@pytest.mark.parametrize("name", CPU_CASES)
def test_a_boundary_kernel_gets_its_verdict_and_leaves_nothing(name, axpy, planted, build_cache):
    _clear_traces(build_cache)
    report = _gate(axpy, name, OPTIONS)
    _check(name, report, build_cache)


@pytest.mark.parametrize("name", CUDA_CASES)
def test_a_cuda_build_flag_runs_nothing_even_without_a_gpu(name, planted, tmp_path, monkeypatch):
    # The build is candidate code whoever asks for it (the gate, a brain's FLAGS line, a bench):
    # building alone must not run what a flag smuggles in. A refusal may come as a verdict of the
    # build or as one of klineage's errors; a command that ran is the failure. A cache of its own,
    # so that the GPU test below still builds each kernel.
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed")
    cache = tmp_path / "cache"
    monkeypatch.setenv("KLINEAGE_CACHE_DIR", str(cache))
    workload = load_workload(FIXTURES / "axpy_cuda")
    _clear_traces(cache)
    try:
        kernel = load_kernel(workload, _folder(name))
        backend_for(kernel.language).build(kernel)
    except KlineageError:
        pass
    assert not _traces(cache), f"{name}: the build ran {_traces(cache)}"


@pytest.mark.gpu
@pytest.mark.parametrize("name", CUDA_CASES)
def test_a_cuda_boundary_kernel_gets_its_verdict_and_leaves_nothing(name, planted, build_cache):
    workload = load_workload(FIXTURES / "axpy_cuda")
    _clear_traces(build_cache)
    report = _gate(workload, name, GPU_OPTIONS)
    _check(name, report, build_cache)


def _pair(workload, name: str, options: GateOptions):
    folder = _folder(name)
    try:
        return run_gate(workload, load_kernel(workload, folder / "candidate"), options=options,
                        against=load_kernel(workload, folder / "baseline"))
    except Exception as exc:
        pytest.fail(f"run_gate raised {exc!r} for the pair {name}")


# The pairs' sides do the same work, and the baseline halves its speed once it detects its candidate
# (the whole run: 0.59; from part-way through: 0.85-0.91 were seen). A 'faster' within 5% of even is
# the timing's noise, not what the neighbour buys: before issue 31's load checks, identical code was
# judged faster at 0.98 (CI 0.97-0.99) on a loaded 2-core VM.
NOISE_RATIO = 0.95
PAIR_OPTIONS = replace(OPTIONS, compare_s=1.5, min_pairs=30)
"""More pairs than the catalogue's quick options: with 12 a 'faster' below 0.95 for identical code
came up about once in five runs here, and the interval narrows with the pairs."""


def _check_pair(name: str, report) -> None:
    comparison = report.comparison
    if comparison is not None and comparison.decision == "faster" and comparison.ratio >= NOISE_RATIO:
        return
    assert report.verdict.value in _expected(name), f"{CATALOGUE[name]['why']}\n{report.reason}"
    assert comparison is None or comparison.decision != "faster", report.reason


@pytest.mark.parametrize("name", [n for n in PAIRS if CATALOGUE[n]["pair_backend"] == "cpu"])
def test_a_neighbour_cannot_buy_a_faster_verdict(name, axpy):
    _check_pair(name, _pair(axpy, name, PAIR_OPTIONS))


@pytest.mark.gpu
@pytest.mark.parametrize("name", [n for n in PAIRS if CATALOGUE[n]["pair_backend"] == "cuda"])
def test_a_gpu_neighbour_cannot_buy_a_faster_verdict(name):
    _check_pair(name, _pair(load_workload(FIXTURES / "axpy_cuda"), name, GPU_OPTIONS))


def test_every_pair_folder_holds_a_baseline_and_a_candidate():
    for name in PAIRS:
        for side in ("baseline", "candidate"):
            assert any((_folder(name) / side).glob("kernel.c*")), f"{name}/{side}"
