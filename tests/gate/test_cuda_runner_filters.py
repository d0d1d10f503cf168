"""The CUDA runners' seccomp filters, checked on a machine without a GPU: ``_runner.c`` built
with ``KL_CUDA`` (and ``KL_PYTHON``, the CUDA ModelNew runner) against a stub CUDA runtime of
ours whose calls do nothing, loading probe kernels that make one system call while they load
or in their first call. The GPU tests run the real runtime; this is what CI can check of the
deny-list, including calls that get around a deny-list (io_uring) or are newer than the C
library's headers."""

from __future__ import annotations

import itertools
import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import pytest

RUNNER = Path(__file__).parents[2] / "src" / "klineage" / "gate" / "_runner.c"

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None or os.uname().machine != "x86_64",
                                reason="builds the runner with gcc; the probes' call numbers are x86-64's")

STUB_HEADER = """
typedef int cudaError_t;
enum { cudaSuccess = 0, cudaIpcMemLazyEnablePeerAccess = 1, cudaStreamNonBlocking = 1,
       cudaDeviceScheduleSpin = 1, cudaMemPoolAttrReleaseThreshold = 4 };
typedef void* cudaStream_t;
typedef void* cudaEvent_t;
typedef void* cudaMemPool_t;
typedef struct { char reserved[64]; } cudaIpcMemHandle_t;
const char* cudaGetErrorString(cudaError_t);
cudaError_t cudaIpcOpenMemHandle(void**, cudaIpcMemHandle_t, unsigned);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t*, unsigned);
cudaError_t cudaEventCreate(cudaEvent_t*);
cudaError_t cudaMalloc(void**, unsigned long);
cudaError_t cudaFree(void*);
cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t*, int);
cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t, int, void*);
cudaError_t cudaMallocAsync(void**, unsigned long, cudaStream_t);
cudaError_t cudaFreeAsync(void*, cudaStream_t);
cudaError_t cudaStreamSynchronize(cudaStream_t);
cudaError_t cudaSetDeviceFlags(unsigned);
cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaEventElapsedTime(float*, cudaEvent_t, cudaEvent_t);
"""

# CUPTI as the runner uses it: records never arrive, so a call's activity span is zero and the
# events' reading (zero too) stands.
STUB_CUPTI_HEADER = """
#include <stddef.h>
#include <stdint.h>
#define CUPTIAPI
#define CUPTI_API_VERSION 130001
typedef int CUptiResult;
enum { CUPTI_SUCCESS = 0, CUPTI_ACTIVITY_FLAG_FLUSH_FORCED = 1 };
typedef enum { CUPTI_ACTIVITY_KIND_MEMCPY = 1, CUPTI_ACTIVITY_KIND_MEMSET = 2,
               CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL = 10 } CUpti_ActivityKind;
typedef enum { CUPTI_CB_DOMAIN_RESOURCE = 2 } CUpti_CallbackDomain;
typedef uint32_t CUpti_CallbackId;
enum { CUPTI_CBID_RESOURCE_CONTEXT_CREATED = 1 };
typedef void* CUpti_SubscriberHandle;
typedef void* CUcontext;
typedef void (*CUpti_CallbackFunc)(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*);
typedef struct { CUpti_ActivityKind kind; } CUpti_Activity;
typedef struct { CUpti_ActivityKind kind; uint64_t start, end; } CUpti_ActivityKernel10;
typedef struct { CUpti_ActivityKind kind; uint64_t start, end; } CUpti_ActivityMemcpy6;
typedef struct { CUpti_ActivityKind kind; uint64_t start, end; } CUpti_ActivityMemset4;
typedef void (*CUpti_BuffersCallbackRequestFunc)(uint8_t**, size_t*, size_t*);
typedef void (*CUpti_BuffersCallbackCompleteFunc)(CUcontext, uint32_t, uint8_t*, size_t, size_t);
CUptiResult cuptiGetResultString(CUptiResult, const char**);
CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc,
                                           CUpti_BuffersCallbackCompleteFunc);
CUptiResult cuptiActivityEnable(CUpti_ActivityKind);
CUptiResult cuptiSubscribe(CUpti_SubscriberHandle*, CUpti_CallbackFunc, void*);
CUptiResult cuptiEnableCallback(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain, CUpti_CallbackId);
CUptiResult cuptiGetTimestamp(uint64_t*);
CUptiResult cuptiActivityFlushAll(uint32_t);
CUptiResult cuptiActivityGetNextRecord(uint8_t*, size_t, CUpti_Activity**);
CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext, uint32_t, size_t*);
"""

STUB_RUNTIME = """
#include "cupti.h"
/* A probe kernel plays the GPU: kl_stub_activity queues one kernel record (times relative to the
 * call's start on CUPTI's clock, 0 for a timestamp never written), delivered at the next flush;
 * kl_stub_context reports a context made. */
static CUpti_BuffersCallbackRequestFunc give;
static CUpti_BuffersCallbackCompleteFunc take;
static CUpti_CallbackFunc on_resource;
static const uint64_t now = 1000000000;
static CUpti_ActivityKernel10 queued;
void kl_stub_activity(long long start, long long end) {
    queued.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    queued.start = start ? now + start : 0;
    queued.end = end ? now + end : 0;
}
void kl_stub_context(void) {
    on_resource(0, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED, 0);
}
CUptiResult cuptiGetResultString(CUptiResult r, const char** s) { *s = "stub"; return 0; }
CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc a,
                                           CUpti_BuffersCallbackCompleteFunc b) {
    give = a;
    take = b;
    return 0;
}
CUptiResult cuptiActivityEnable(CUpti_ActivityKind k) { return 0; }
CUptiResult cuptiSubscribe(CUpti_SubscriberHandle* h, CUpti_CallbackFunc f, void* d) {
    on_resource = f;
    return 0;
}
CUptiResult cuptiEnableCallback(uint32_t e, CUpti_SubscriberHandle h, CUpti_CallbackDomain d,
                                CUpti_CallbackId i) { return 0; }
CUptiResult cuptiGetTimestamp(uint64_t* t) { *t = now; return 0; }
CUptiResult cuptiActivityFlushAll(uint32_t f) {
    if (!queued.kind) return 0;
    uint8_t* buffer; size_t size, most;
    give(&buffer, &size, &most);
    *(CUpti_ActivityKernel10*)buffer = queued;
    queued.kind = 0;
    take(0, 0, buffer, size, sizeof queued);
    return 0;
}
CUptiResult cuptiActivityGetNextRecord(uint8_t* b, size_t valid, CUpti_Activity** r) {
    if (*r || valid < sizeof(CUpti_ActivityKernel10)) return 1;
    *r = (CUpti_Activity*)b;
    return 0;
}
CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext c, uint32_t s, size_t* n) { *n = 0; return 0; }
#include "cuda_runtime_api.h"
static char arena[1 << 16], scratch[1 << 20];
const char* cudaGetErrorString(cudaError_t e) { return "stub"; }
cudaError_t cudaIpcOpenMemHandle(void** p, cudaIpcMemHandle_t h, unsigned f) { *p = arena; return 0; }
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned f) { *s = 0; return 0; }
cudaError_t cudaEventCreate(cudaEvent_t* e) { *e = 0; return 0; }
cudaError_t cudaMalloc(void** p, unsigned long n) { *p = scratch; return 0; }
cudaError_t cudaFree(void* p) { return 0; }
cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t* p, int d) { *p = 0; return 0; }
cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t p, int a, void* v) { return 0; }
cudaError_t cudaMallocAsync(void** p, unsigned long n, cudaStream_t s) { *p = scratch; return 0; }
cudaError_t cudaFreeAsync(void* p, cudaStream_t s) { return 0; }
cudaError_t cudaStreamSynchronize(cudaStream_t s) { return 0; }
cudaError_t cudaSetDeviceFlags(unsigned f) { return 0; }
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) { return 0; }
cudaError_t cudaDeviceSynchronize(void) { return 0; }
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b) { *ms = 0; return 0; }
"""

PROBE = """
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

static void probe(const char* when) {
    errno = 0;
    long result = syscall(CALL);
    dprintf(2, "%s: %ld errno %d\\n", when, result, errno);
}

__attribute__((constructor)) static void loading(void) {
#ifdef WHILE_LOADING
    probe("loading");
#endif
}

int kl_launch(const void* const* in, void* const* out, const int64_t* axes, const double* params,
              void* stream) {
#ifndef WHILE_LOADING
    probe("call");
#endif
    return 0;
}
"""

ACTIVITY_PROBE = """
#include <stdint.h>
void kl_stub_activity(long long start, long long end);
void kl_stub_context(void);
int kl_launch(const void* const* in, void* const* out, const int64_t* axes, const double* params,
              void* stream) {
    GPU;
    return 0;
}
"""

_PROBES = itertools.count()
UNLINK = "SYS_unlink, \"/nonexistent/kl-probe\""
SIGSYS_AT = "S 31 "


@pytest.fixture(scope="module")
def folder():
    # Not pytest's folders: only their owner may enter them, and as root the runner is nobody.
    with tempfile.TemporaryDirectory() as name:
        path = Path(name)
        path.chmod(0o755)
        (path / "cuda_runtime_api.h").write_text(STUB_HEADER)
        (path / "cupti.h").write_text(STUB_CUPTI_HEADER)
        (path / "stub.c").write_text(STUB_RUNTIME)
        (path / "probe.c").write_text(PROBE)
        (path / "activity.c").write_text(ACTIVITY_PROBE)
        _gcc("-shared", "-fPIC", f"-I{path}", str(path / "stub.c"), "-o", str(path / "libcudart.so"))
        for name, flags in (("runner_cuda", ["-DKL_CUDA"]),
                            ("runner_cuda_python", ["-DKL_CUDA", "-DKL_PYTHON"])):
            _gcc("-O2", *flags, f"-I{path}", str(RUNNER), "-o", str(path / name), f"-L{path}", "-lcudart",
                 f"-Wl,-rpath,{path}", "-pthread", "-ldl")
        yield path


def _gcc(*args: str) -> None:
    subprocess.run(["gcc", *args], check=True, capture_output=True, text=True)


def _continue_once_stopped(process: subprocess.Popen) -> None:
    """Wait until the runner has stopped itself after a reply (or ended), and let it go on."""
    _, status = os.waitpid(process.pid, os.WUNTRACED)
    if os.WIFSTOPPED(status):
        os.kill(process.pid, signal.SIGCONT)
    else:
        process.returncode = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def _run(folder: Path, runner: str, call: str, while_loading: bool) -> tuple[str, str, str]:
    """(the runner's first reply, its reply to one call or '', its log) for a probe making
    ``call`` (syscall()'s arguments) while it loads or in its first call."""
    probe = folder / f"probe-{next(_PROBES)}.so"
    _gcc("-shared", "-fPIC", f"-DCALL={call}", *(["-DWHILE_LOADING"] if while_loading else []),
         str(folder / "probe.c"), "-o", str(probe))
    return _run_probe(folder, runner, probe)


def _run_probe(folder: Path, runner: str, probe: Path) -> tuple[str, str, str]:
    command_r, command_w = os.pipe()
    reply_r, reply_w = os.pipe()
    handle = "00" * 64 + ":0"
    with open(folder / "log", "wb+") as log:
        process = subprocess.Popen(
            [str(folder / runner), str(probe), "kl_launch", "16", "16", str(command_r), str(reply_w),
             handle, handle], stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            pass_fds=(command_r, reply_w), cwd=folder, env={"PATH": "/usr/bin:/bin"})
        os.close(command_r)
        os.close(reply_w)
        with os.fdopen(reply_r, "rb") as replies:
            first = replies.readline().decode().strip()
            second = ""
            if first.startswith("READY"):
                os.write(command_w, b"C 0 0 0 0\nQ\n")
                _continue_once_stopped(process)  # the runner stops itself after each reply
                second = replies.readline().decode().strip()
                _continue_once_stopped(process)
        os.close(command_w)
        process.wait(timeout=30)
        log.seek(0)
        return first, second, log.read().decode(errors="replace")


@pytest.mark.parametrize("runner", ["runner_cuda", "runner_cuda_python"])
@pytest.mark.parametrize(("what", "call"), [
    ("io_uring, which would do opens and unlinks outside the filter", "425, 4, 0"),
    ("fchmodat2, newer than some headers", "452, -100, \"/nonexistent/kl-probe\", 0777, 0"),
    ("setxattrat, newer than some headers", "463, -100, \"/nonexistent/kl-probe\", 0, 0, 0"),
    ("a signal queued to another process", "SYS_rt_sigqueueinfo, getppid(), 0, 0"),
    ("a link", "SYS_symlink, \"/etc/passwd\", \"/tmp/kl-probe-link\""),
])
def test_the_cuda_filters_trap_ways_around_them(folder, runner, what, call):
    first, second, log = _run(folder, runner, call, while_loading=False)
    assert first.startswith("READY") and second.startswith(SIGSYS_AT), (what, first, second, log)


def test_while_loading_the_plain_cuda_runner_traps_a_file_change(folder):
    first, _, log = _run(folder, "runner_cuda", UNLINK, while_loading=True)
    assert first.startswith(SIGSYS_AT) and first.split()[3] == "87", (first, log)  # unlink


def test_the_cuda_modelnew_runner_refuses_file_changes_while_loading_and_traps_them_after(folder):
    # NVML's init, under torch's first CUDA call, remakes /dev/char links as any user: refused,
    # not trapped, while the kernel loads; a call that tries it is stopped.
    first, second, log = _run(folder, "runner_cuda_python", UNLINK, while_loading=True)
    assert first.startswith("READY") and "loading: -1 errno 13" in log, (first, log)
    assert second.startswith("R 0"), second
    _, second, log = _run(folder, "runner_cuda_python", UNLINK, while_loading=False)
    assert second.startswith(SIGSYS_AT) and second.split()[3] == "87", (second, log)


def test_scheduling_changes_are_refused_not_trapped(folder):
    # Aimed at another runner (nobody too) it would slow what that one times; its own, which
    # the kernel would allow, is enough to see the refusal.
    first, second, log = _run(folder, "runner_cuda", "SYS_setpriority, 0, 0, 19", while_loading=True)
    assert first.startswith("READY") and second.startswith("R 0"), (first, log)
    assert "loading: -1 errno 1" in log, log


def test_an_honest_probe_runs(folder):
    first, second, log = _run(folder, "runner_cuda", "SYS_getpid", while_loading=False)
    assert first.startswith("READY") and second.startswith("R 0") and "call: " in log, (first, second, log)


@pytest.mark.parametrize(("gpu", "reply"), [
    ("kl_stub_activity(1000, 51000)", "R 0 50000"),  # first activity to last, not the events' 0
    ("kl_stub_activity(-5000, 20000)", "R 0 20000"),  # running before the call: from its start
    ("kl_stub_activity(-9000, -1000)", "R 0 0"),  # ended before the call: not the call's
    ("kl_stub_activity(1000, 0)", "X unfinished"),  # never finished: cannot be timed
    ("kl_stub_context()", "X context"),
])
def test_a_cuda_call_lasts_from_its_first_gpu_activity_to_its_last(folder, gpu, reply):
    probe = folder / f"activity-{next(_PROBES)}.so"
    _gcc("-shared", "-fPIC", f"-DGPU={gpu}", str(folder / "activity.c"), "-o", str(probe))
    first, second, log = _run_probe(folder, "runner_cuda", probe)
    assert first.startswith("READY") and second == reply, (first, second, log)
