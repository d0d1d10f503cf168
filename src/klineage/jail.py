"""Confinement for the processes that run what a candidate controls: the compiler that builds it
(its sources and flags reach gcc and nvcc) and the runner that loads it (``gate/_runner.c``).

The file system is confined by **Landlock** (Linux 5.13 and later), which a process applies to
itself and to everything it starts, without privileges: only the folders and files given stay
readable (and executable), only the output folder writable; TCP is refused (ABI 4 and later), and
signals and abstract unix sockets cannot reach a process outside the jail (ABI 6 and later); a
Landlock domain cannot ptrace processes outside it either. Chosen over bubblewrap (a package the
user must install as root, and setuid on some distributions) and over mount namespaces of our own
(they need root or user namespaces, which some hosts disable): it is part of the kernel every
supported machine runs, and the same rule set serves the build and the runner.
Around it: a private network namespace where one can be made (root, or a user namespace), the
user ``nobody`` where the process starts as root and ``nobody`` can read everything it needs (else
root in a user namespace of its own, with no capability outside it), no new privileges, a new
session, resource limits, and an environment given whole by the caller.

Where the kernel has no Landlock the rest still applies, and ``Jail.describe`` says so: a build
report and ``klineage doctor`` name what held.
"""

from __future__ import annotations

import ctypes
import os
import platform
import resource
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

__all__ = ["NOBODY", "Jail", "landlock_abi", "readable_by_others"]

NOBODY = 65534
_SYS = {"x86_64": {"create": 444, "add": 445, "restrict": 446},
        "aarch64": {"create": 444, "add": 445, "restrict": 446}}.get(platform.machine())
_CREATE_VERSION = 1
_RULE_PATH_BENEATH = 1
# Access rights on files and folders (linux/landlock.h), and the ABI that introduced each group.
_EXECUTE, _WRITE_FILE, _READ_FILE, _READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_MAKE_ALL = sum(1 << bit for bit in range(4, 13))  # remove, make char/dir/reg/sock/fifo/block/sym
_REFER, _TRUNCATE, _IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
_NET_TCP = (1 << 0) | (1 << 1)  # bind, connect
_SCOPE_ALL = (1 << 0) | (1 << 1)  # abstract unix sockets, signals
_FILE_ONLY = _EXECUTE | _WRITE_FILE | _READ_FILE | _TRUNCATE | _IOCTL_DEV
_CLONE_NEWUSER, _CLONE_NEWNET = 0x10000000, 0x40000000
_PR_SET_NO_NEW_PRIVS = 38


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


@cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


@cache
def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 where it has none (or it is disabled)."""
    if _SYS is None:
        return 0
    version = _libc().syscall(_SYS["create"], None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_VERSION))
    return max(0, int(version))


def _handled_fs(abi: int) -> int:
    rights = _EXECUTE | _WRITE_FILE | _READ_FILE | _READ_DIR | _MAKE_ALL
    if abi >= 2:
        rights |= _REFER
    if abi >= 3:
        rights |= _TRUNCATE
    if abi >= 5:
        rights |= _IOCTL_DEV
    return rights


def readable_by_others(path: Path) -> bool:
    """Whether ``nobody`` can reach ``path`` (every folder above it searchable by others) and read
    it (a folder: list and search it; a file: read it)."""
    try:
        resolved = path.resolve()
        for folder in reversed(resolved.parents):
            if not os.stat(folder).st_mode & stat.S_IXOTH:
                return False
        mode = os.stat(resolved).st_mode
    except OSError:
        return False
    wanted = stat.S_IROTH | (stat.S_IXOTH if stat.S_ISDIR(mode) else 0)
    return mode & wanted == wanted


@dataclass(frozen=True)
class Jail:
    """What a confined process may touch. Paths that do not exist are left out."""

    read: tuple[Path, ...]
    """Readable and executable, with everything beneath (folders) or alone (files)."""
    write: tuple[Path, ...] = ()
    """Readable and writable with everything beneath: files may be made and removed there."""
    devices: tuple[Path, ...] = ()
    """Device files (or folders of them) read, written and controlled (ioctl): /dev/null, a GPU."""
    become_nobody: bool = True
    """As root: run as nobody (where nobody can read ``read``; else root in a user namespace).
    False: the process changes its user itself (the runner)."""
    private_network: bool = True
    """A network namespace of its own (the runner needs none: its filters refuse sockets)."""
    memory_bytes: int | None = None
    cpu_seconds: int | None = None
    file_bytes: int | None = None
    extra: Callable[[], None] | None = field(default=None, compare=False)
    """Run last in the child, before it is confined (CPU affinity, say)."""

    def uses_nobody(self) -> bool:
        """Whether a root caller's child becomes nobody."""
        return (os.geteuid() == 0 and self.become_nobody
                and all(readable_by_others(Path(p)) for p in self._existing(self.read)))

    def describe(self) -> str:
        """One line: what confines the process on this machine."""
        parts = []
        abi = landlock_abi()
        parts.append(f"Landlock ABI {abi}" if abi else "no Landlock on this kernel (files not confined)")
        if os.geteuid() == 0 and self.become_nobody:
            parts.append("as nobody" if self.uses_nobody() else "as root in a user namespace")
        if self.private_network:
            parts.append("no network")
        return ", ".join(parts)

    def preexec(self) -> Callable[[], None]:
        """A ``preexec_fn`` for ``subprocess.Popen``: confines the child before it executes."""
        read, write = self._existing(self.read), self._existing(self.write)
        devices = self._existing(self.devices)
        nobody = self.uses_nobody()
        abi = landlock_abi()

        def apply() -> None:
            if self.extra is not None:
                self.extra()
            _limits(self.memory_bytes, self.cpu_seconds, self.file_bytes)
            _leave_network_and_root(self.private_network, nobody)
            if _libc().prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
                raise OSError(ctypes.get_errno(), "no_new_privs")
            if abi:
                _landlock(abi, read, write, devices)

        return apply

    @staticmethod
    def _existing(paths: tuple[Path, ...]) -> tuple[str, ...]:
        return tuple(dict.fromkeys(str(p) for p in paths if os.path.lexists(p)))


def _limits(memory: int | None, cpu: int | None, file_bytes: int | None) -> None:
    for kind, value in ((resource.RLIMIT_AS, memory), (resource.RLIMIT_CPU, cpu),
                        (resource.RLIMIT_FSIZE, file_bytes)):
        if value is not None:
            resource.setrlimit(kind, (value, value))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _leave_network_and_root(network: bool, become_nobody: bool) -> None:
    """A network namespace of its own (no interface but a loopback that is down), and nobody's
    uid. As root the namespace is made before the uid changes; otherwise inside a user namespace,
    which also leaves root no capability outside it. Where neither can be made, Landlock's TCP
    rule still holds."""
    libc = _libc()
    if become_nobody:
        if network:
            libc.unshare(_CLONE_NEWNET)
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)
    elif network:
        libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNET)


def _landlock(abi: int, read: tuple[str, ...], write: tuple[str, ...], devices: tuple[str, ...]) -> None:
    libc, numbers = _libc(), _SYS
    handled = _handled_fs(abi)
    attr = _RulesetAttr(handled, _NET_TCP if abi >= 4 else 0, _SCOPE_ALL if abi >= 6 else 0)
    size = 8 if abi < 4 else 16 if abi < 6 else 24
    ruleset = libc.syscall(numbers["create"], ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset")
    reading = _EXECUTE | _READ_FILE | _READ_DIR
    granted = ((read, reading), (write, handled & ~_IOCTL_DEV),
               (devices, _READ_FILE | _WRITE_FILE | _READ_DIR | (_IOCTL_DEV if abi >= 5 else 0)))
    try:
        for paths, rights in granted:
            for path in paths:
                _allow(ruleset, path, rights & handled, numbers["add"])
        if libc.syscall(numbers["restrict"], ruleset, ctypes.c_uint32(0)) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self")
    finally:
        os.close(ruleset)


def _allow(ruleset: int, path: str, rights: int, add: int) -> None:
    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    try:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            rights &= _FILE_ONLY
        rule = _PathBeneath(rights, fd)
        if _libc().syscall(add, ruleset, ctypes.c_int(_RULE_PATH_BENEATH), ctypes.byref(rule),
                           ctypes.c_uint32(0)) != 0:
            raise OSError(ctypes.get_errno(), f"landlock_add_rule {path}")
    finally:
        os.close(fd)
