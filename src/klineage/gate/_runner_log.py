"""Reading a dead or trapped runner's log: the line that says most about a death, and where a
trapped system call came from. Hints for the kernel's author only: the kernel can write the log
too, so nothing here decides a verdict."""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["SYSCALL_NAMES_X86_64", "telling_line", "trap_site"]

SYSCALL_NAMES_X86_64 = {
    0: "read", 1: "write", 2: "open", 7: "poll", 9: "mmap", 10: "mprotect", 13: "rt_sigaction",
    16: "ioctl", 20: "writev", 21: "access", 28: "madvise", 41: "socket", 42: "connect",
    49: "bind", 56: "clone", 57: "fork", 58: "vfork", 59: "execve", 62: "kill", 72: "fcntl",
    79: "getcwd", 82: "rename",
    83: "mkdir", 87: "unlink", 101: "ptrace", 157: "prctl", 200: "tkill", 203: "sched_setaffinity",
    221: "fadvise64", 234: "tgkill", 237: "mbind", 257: "openat", 291: "epoll_create1",
    302: "prlimit64",
    310: "process_vm_readv", 311: "process_vm_writev", 317: "seccomp", 319: "memfd_create",
    322: "execveat", 435: "clone3", 437: "openat2",
}


_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit)\b.*:")


def telling_line(log: str) -> str:
    """The log line that says most about a death: a Python exception's own line where there is
    one (torch follows a CUDA error with three lines of advice), else the last line."""
    lines = [line for line in log.splitlines() if line.strip()]
    named = [line for line in lines if _EXCEPTION_LINE.match(line)]
    return (named or lines or [""])[-1]


_TRAP_STACK = "KL_TRAP_STACK"  # _runner.c's line before a trapped call's frames
_FRAME = re.compile(r"^(?P<file>[^\s()\[]+)(?:\((?P<symbol>[^)+]*)(?:\+0x[0-9a-f]+)?\))?\s*\[0x[0-9a-f]+\]$")


_UNPRINTED = re.compile(r"[^\w.+\-() <]")


def trap_site(log: str, libraries: int = 4) -> str:
    """Where a trapped call came from, from its stack (the runner wrote it to the log): the
    innermost libraries, each with the function it was entered by where it exports one, less
    the runner's handler and libc's wrappers. A hint for the kernel's author only: the kernel
    can write the log too."""
    _, marker, stack = log.rpartition(_TRAP_STACK)
    if not marker:
        return ""
    runs: list[tuple[str, str]] = []  # (library, the outermost named function in it)
    for line in stack.splitlines():
        found = _FRAME.match(line.strip())
        if not found:
            continue
        library = Path(found["file"]).name
        if library.startswith(("kl_runner", "libc.so")):
            continue
        if not runs or runs[-1][0] != library:
            runs.append((library, ""))
        if found["symbol"]:
            runs[-1] = (library, found["symbol"])
    site = " <- ".join(f"{lib}({name})" if name else lib for lib, name in runs[:libraries])
    return _UNPRINTED.sub("?", site)[:240]
