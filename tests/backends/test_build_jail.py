"""A candidate's build is candidate code: its flags pass an allow-list, the compiler runs jailed
(it reads the toolchain and the kernel's folder, writes its output folder, reaches no network),
its log quotes only the candidate's files, and the build's identity is the bytes compiled."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from klineage.backends._build_log import candidate_log
from klineage.backends._flags import refused_flag
from klineage.gate import GateOptions, Limits, Verdict, run_gate
from klineage.jail import Jail, landlock_abi
from klineage.workload import load_kernel

FAST = GateOptions(profile=False, limits=Limits(stall_s=20, memory_bytes=1 << 30))
needs_landlock = pytest.mark.skipif(landlock_abi() == 0, reason="this kernel has no Landlock")

HONEST_GCC = ["-fopenmp", "-fopenmp-simd", "-O2", "-Ofast", "-funroll-loops", "-ffast-math",
              "-fno-math-errno", "-march=native", "-mtune=native", "-mavx2", "-mfma", "-mno-avx512f",
              "-DBLOCK=64", "-DUSE_FAST", "-UNDEBUG", "-std=gnu11", "-Wall", "-Wno-unused",
              "--param=max-unroll-times=8", "-fvect-cost-model=unlimited", "-g"]
HONEST_NVCC = ["--use_fast_math", "-arch=sm_90a", "-gencode=arch=compute_90a,code=sm_90a",
               "-Xcompiler", "-fopenmp", "-Xcompiler=-O3,-march=native", "-Xptxas", "-v,-O3",
               "-maxrregcount=64", "-lineinfo", "-DTILE=32", "--expt-relaxed-constexpr", "-O3"]
HOSTILE_GCC = [["-wrapper", "/bin/sh,-c,touch /tmp/x"], ["-fplugin=/tmp/x.so"], ["-specs=/tmp/x"],
               ["-B/tmp"], ["@/tmp/flags"], ["-Wl,-rpath,/tmp"], ["-Xlinker", "-rpath"],
               ["-I/etc"], ["-isystem", "/etc"], ["-include", "/etc/passwd"], ["-o", "/tmp/x"],
               ["-save-temps=obj"], ["-fdump-tree-all"], ["-DX=$(id)"], ["-DX=`id`"],
               ["-fprofile-generate=/tmp"], ["-L/tmp"], ["-lcrypto"], ["-x", "assembler"]]
HOSTILE_NVCC = [["-Xcompiler", "$(touch /tmp/x)"], ["-Xcompiler=-fPIC,`id`"], ["-ccbin", "/tmp/x"],
                ["--compiler-bindir=/tmp"], ["-Xlinker", "-rpath"], ["-I/etc"], ["--dryrun"],
                ["-Xptxas", "--output-file=/tmp/x"], ["-Xcompiler", "-wrapper"], ["-optf", "/tmp/x"],
                ["-Xcompiler", "-DX=1;id"]]


def test_the_flags_kernels_tune_with_are_allowed():
    assert refused_flag(HONEST_GCC, "gcc") is None
    assert refused_flag(HONEST_NVCC, "nvcc") is None


@pytest.mark.parametrize("flags", HOSTILE_GCC, ids=lambda f: f[0])
def test_flags_that_run_programs_or_reach_files_are_refused_by_name(flags):
    reason = refused_flag(flags, "gcc")
    assert reason is not None and "not allowed" in reason and flags[0] in reason


@pytest.mark.parametrize("flags", HOSTILE_NVCC, ids=lambda f: f[0] + "_" + f[-1][:8])
def test_nvcc_flags_that_reach_a_shell_or_files_are_refused(flags):
    reason = refused_flag(flags, "nvcc")
    assert reason is not None and "not allowed" in reason


def _kernel_folder(axpy_copy: Path, name: str, source: str, flags: list[str] | None = None) -> Path:
    folder = axpy_copy / "kernels" / name
    folder.mkdir()
    (folder / "kernel.c").write_text(source)
    toml = 'language = "c"\n' + (f"flags = {json.dumps(flags)}\n" if flags else "")
    (folder / "kernel.toml").write_text(toml)
    return folder


AXPY = (Path(__file__).parents[1] / "fixtures" / "axpy" / "kernels" / "plain" / "kernel.c").read_text()


def test_a_refused_flag_is_a_compile_error_and_runs_nothing(axpy_copy, axpy, tmp_path):
    marker = tmp_path / "wrapper-ran"
    folder = _kernel_folder(axpy_copy, "wrapped", AXPY, ["-wrapper", f"/bin/sh,-c,touch {marker}"])
    report = run_gate(axpy, load_kernel(axpy, folder), options=FAST)
    assert report.verdict is Verdict.COMPILE_ERROR, report.reason
    assert "'-wrapper' is not allowed" in report.reason
    assert not marker.exists()


@needs_landlock
def test_an_include_outside_the_kernel_folder_leaks_nothing(axpy_copy, axpy, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRETWORD one two\n")
    secret.chmod(0o644)
    folder = _kernel_folder(axpy_copy, "leaky", f'#include "{secret}"\n' + AXPY)
    report = run_gate(axpy, load_kernel(axpy, folder), options=FAST)
    assert report.verdict is Verdict.COMPILE_ERROR, report.reason
    assert "TOPSECRETWORD" not in json.dumps(report.model_dump(mode="json"))


@needs_landlock
def test_the_assembler_cannot_embed_a_file_outside_the_kernel_folder(axpy_copy, axpy, tmp_path):
    secret = tmp_path / "secret.bin"
    secret.write_text("TOPSECRETWORD")
    secret.chmod(0o644)
    embed = f'__asm__(".section .rodata\\n.incbin \\"{secret}\\"\\n.text\\n");\n'
    report = run_gate(axpy, load_kernel(axpy, _kernel_folder(axpy_copy, "embed", embed + AXPY)),
                      options=FAST)
    assert report.verdict is Verdict.COMPILE_ERROR, report.reason


def test_the_log_quotes_only_the_candidates_files(tmp_path):
    log = (f"In file included from {tmp_path}/src/kernel.c:2:\n"
           "/usr/share/dict/words:1:1: error: unknown type name 'SECRETLINE'\n"
           "    1 | SECRETLINE\n      | ^~~~~~~~~~\n"
           "/usr/lib/gcc/x86_64-linux-gnu/12/include/avx512fintrin.h:12598:1: error: inlining failed\n"
           "12598 | _mm512_SECRETLONG (__m512 __A)\n      | ^~~~~~~~~~~~~~~\n"
           f"{tmp_path}/src/kernel.c:5:3: error: expected ';' before 'return'\n"
           "    5 |   x = 1\n      |        ^\n"
           "/tmp/other.cu(3): error: identifier \"SECRETCUDA\" is undefined\n"
           "compilation terminated.")
    shown = candidate_log(log, tmp_path / "src")
    assert "SECRETLINE" not in shown and "SECRETCUDA" not in shown and "SECRETLONG" not in shown
    assert "In file included from kernel.c:2:" in shown
    assert "kernel.c:5:3: error: expected ';'" in shown and "x = 1" in shown
    assert "compilation terminated." in shown and str(tmp_path) not in shown


def test_two_kernel_files_in_one_folder_are_two_builds(axpy, tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "a.c").write_text(AXPY)
    (folder / "b.c").write_text(AXPY.replace("alpha * x[i]", "alpha * x[i] + 1.0f"))
    right = run_gate(axpy, load_kernel(axpy, folder / "a.c"), options=FAST)
    wrong = run_gate(axpy, load_kernel(axpy, folder / "b.c"), options=FAST)
    assert right.verdict is Verdict.ACCEPTED, right.reason
    assert wrong.verdict is Verdict.INCORRECT, wrong.reason
    assert right.fingerprint != wrong.fingerprint
    assert "cached" not in [s.detail for s in wrong.stages if s.name == "compile"]


def test_the_reference_is_run_from_its_source_not_a_bytecode_cache(axpy_copy):
    import importlib.util
    from importlib._bootstrap_external import _code_to_timestamp_pyc

    import numpy as np

    from klineage.workload import load_reference, load_workload

    # A cache that Python's import would take for reference.py (its mtime and size in the
    # header), holding a reference that answers zeros: what an escaped build once planted.
    source = axpy_copy / "reference.py"
    forged = compile("import numpy as np\ndef reference(x, z, alpha):\n    return {'y': 0 * x}\n",
                     str(source), "exec")
    cached = Path(importlib.util.cache_from_source(str(source)))
    cached.parent.mkdir(exist_ok=True)
    stat = source.stat()
    cached.write_bytes(_code_to_timestamp_pyc(forged, int(stat.st_mtime), stat.st_size))
    x, z = np.arange(1, 5, dtype=np.float32), np.ones(4, dtype=np.float32)
    got = load_reference(load_workload(axpy_copy))(x=x, z=z, alpha=1.5)["y"]
    assert np.allclose(got, 1.5 * x + z)


@needs_landlock
def test_the_jail_reads_only_its_view_writes_only_its_folder_and_reaches_no_network(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("private")
    outside.chmod(0o644)
    inside = tmp_path / "out"
    inside.mkdir()
    inside.chmod(0o777)
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)  # the kernel completes a connection into the backlog: no accept needed
    python_home = Path(sys.base_prefix)
    jail = Jail(read=(Path("/usr"), Path("/lib"), Path("/lib64"), Path("/etc/ld.so.cache"), python_home,
                      Path(sys.executable).resolve().parent),
                write=(inside,), become_nobody=False)
    probe = ("import socket, sys\n"
             "def tried(f):\n"
             "    try:\n        f(); return 'yes'\n"
             "    except OSError as e:\n        return 'no'\n"
             f"print(tried(lambda: open({str(outside)!r}).read()),"
             f" tried(lambda: open({str(tmp_path / 'new.txt')!r}, 'w')),"
             f" tried(lambda: open({str(inside / 'ok.txt')!r}, 'w')),"
             f" tried(lambda: socket.create_connection(('127.0.0.1', {server.getsockname()[1]}), 2)))\n")
    python = shutil.which("python3", path="/usr/bin") or sys.executable
    proc = subprocess.run([python, "-I", "-S", "-c", probe], capture_output=True, text=True,
                          preexec_fn=jail.preexec(), timeout=60)
    server.close()
    assert proc.stdout.split() == ["no", "no", "yes", "no"], proc.stdout + proc.stderr
