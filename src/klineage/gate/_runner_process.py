"""The runner's process as the trusted side sets it up: its private copies of what it runs, its
cores, its limits and jail, and this process guarded from it."""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import resource
import shutil
from functools import cache
from pathlib import Path

from klineage.backends.base import RunnerSpec
from klineage.errors import WorkerError
from klineage.jail import Jail

__all__ = ["confine", "copy_workload_files", "cpu_clock_of", "guard_this_process", "precise_sleeps",
           "private_copy"]


def private_copy(artifact: Path, sha256: str, folder: Path) -> Path:
    """Copy a build artifact where no candidate can write and check it is what was built."""
    target = folder / artifact.name
    shutil.copyfile(artifact, target)
    digest = hashlib.sha256(target.read_bytes()).hexdigest()
    if digest != sha256:
        raise WorkerError(f"the build cache entry {artifact} was changed after it was built "
                          f"(sha256 {digest[:12]}, built as {sha256[:12]}); remove it and retry")
    target.chmod(0o444)
    return target


def copy_workload_files(files: tuple[Path, ...], folder: Path) -> None:
    """The backend's ``sandbox_files``, read-only, where the runner (as nobody) can read them."""
    if not files:
        return
    folder.mkdir()
    folder.chmod(0o755)  # not the umask's
    for path in files:
        target = folder / path.name
        shutil.copyfile(path, target)
        target.chmod(0o444)


def precise_sleeps() -> None:
    """This thread's sleeps end when asked, not up to 50 us later (Linux's default timer slack):
    the wait for a runner's stop sleeps in 10 us steps, and the slack made a 2-thread kernel's
    calls read 100 us longer than our 1-thread calibration kernel's, which stops before we look."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(29, 1, 0, 0, 0)  # PR_SET_TIMERSLACK, 1 ns


@cache
def guard_this_process() -> None:
    """A runner may share this process's user (without root it cannot drop to another; the
    Python runner keeps root's uid, without capabilities), so keep this process's memory (seeds,
    inputs to come) away from it: a non-dumpable process cannot be ptraced or have its
    /proc/PID/mem read by a process of the same user that lacks CAP_SYS_PTRACE."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(4, 0, 0, 0, 0) != 0:  # PR_SET_DUMPABLE, 0
        raise WorkerError(f"cannot make the gate's process non-dumpable: errno {ctypes.get_errno()}")


def cpu_clock_of(pid: int) -> int:
    # Linux's clock id for the CPU time of a whole process (CPUCLOCK_SCHED of thread group pid).
    return ((~pid) << 3) | 2


def confine(runner: RunnerSpec, folder: Path, cores: set[int], memory_cap: int | None):
    """The runner's process before it executes: its cores, its limits (1 MiB of file: the log),
    and, where its backend gives a view (``RunnerSpec.reads``), a jail that lets it read only
    that view and its own folder. It changes its user itself (gate/_runner.c)."""
    def pin() -> None:
        os.sched_setaffinity(0, cores)

    jail = Jail(read=(folder, *(runner.reads or ())), write=runner.writes, devices=runner.devices,
                become_nobody=False, private_network=False, memory_bytes=memory_cap,
                file_bytes=1 << 20, extra=pin)
    if runner.reads is not None:
        return jail.preexec()

    def unjailed() -> None:  # klineage's own model runner (the null backend)
        pin()
        if memory_cap is not None:
            resource.setrlimit(resource.RLIMIT_AS, (memory_cap, memory_cap))
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    return unjailed
