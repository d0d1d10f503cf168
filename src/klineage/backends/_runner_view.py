"""What a sandboxed runner may read besides its own folder (its kernel, its copy of the runner,
the workload files it was given): the runner's ``Jail`` (``klineage.jail``).

While a kernel loads, its constructors run under a filter that allows read-only opens (the
dynamic loader needs them), and a raw system call reaches them however the static check looks:
a constructor read world-readable files of the machine (held-out workloads) and quoted them in
its verdict (held-out review, 2026-12-03). So the runner's view is the libraries it loads, its
own process's entries under /proc, and the CPU topology (honest code sizes thread pools from
it), plus, for an embedded interpreter, its standard library and the packages torch needs, and
for CUDA, the driver's device files and what it reads of /proc and /sys. Nothing of the user's.
"""

from __future__ import annotations

import sys
import sysconfig
from functools import cache
from pathlib import Path

__all__ = ["CUDA_WRITES", "cuda_runner_view", "host_runner_view"]

_LIBRARIES = ("/lib", "/lib32", "/lib64", "/usr/lib", "/usr/lib32", "/usr/lib64", "/usr/local/lib",
              "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d")
_HOST = ("/proc/self", "/sys/devices/system/cpu", "/sys/devices/system/node", "/proc/cpuinfo",
         "/proc/meminfo", "/proc/stat")
# The CUDA driver: its settings and the GPU's state under /proc and /sys, the toolkit's runtime.
_CUDA = ("/proc/driver", "/proc/sys", "/proc/devices", "/proc/modules", "/sys", "/usr/share/nvidia",
         "/etc/nvidia", "/usr/local/nvidia", "/usr/local/cuda")
CUDA_WRITES = (Path("/proc"),)
"""The CUDA driver writes its own process's settings under /proc when it starts (on the H200 it
failed at cudaSetDeviceFlags with /proc read-only to it). The runner is nobody, who may write
only its own /proc entries there, and that happens before candidate code runs: the filters then
refuse every opening for writing (gate/_runner.c)."""
_CUDA_DEVICES = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-caps",
                 "/dev/nvidia-modeset", "/dev/null", "/dev/zero", "/dev/urandom")


def host_runner_view(python: bool) -> tuple[tuple[Path, ...], tuple[Path, ...]]:
    """(read, devices) for a CPU runner; ``python``: it embeds the interpreter (a ModelNew)."""
    reads = [Path(p) for p in (*_LIBRARIES, *_HOST)] + list(_loader_folders())
    if not python:
        return tuple(reads), (Path("/dev/null"),)
    # torch seeds its generators from /dev/urandom while it loads
    return (*reads, *_python_reads()), (Path("/dev/null"), Path("/dev/urandom"))


def cuda_runner_view(python: bool, toolkit: Path | None) -> tuple[tuple[Path, ...], tuple[Path, ...]]:
    """(read, devices) for a CUDA runner: the host's view, the driver's, the toolkit's runtime."""
    reads, _ = host_runner_view(python)
    devices = [Path(p) for p in _CUDA_DEVICES] + sorted(Path("/dev").glob("nvidia[0-9]*"))
    extra = [Path(p) for p in _CUDA] + ([toolkit] if toolkit else [])
    return (*reads, *extra), tuple(devices)


@cache
def _loader_folders() -> tuple[Path, ...]:
    """The folders the dynamic loader is configured to search (/etc/ld.so.conf and what it
    includes): a GPU machine's driver and toolkit libraries live there (/usr/local/nvidia/lib64,
    /usr/local/cuda/lib64), outside the system's own library folders."""
    folders: list[Path] = []
    for conf in [Path("/etc/ld.so.conf"), *sorted(Path("/etc/ld.so.conf.d").glob("*.conf"))]:
        try:
            lines = conf.read_text().splitlines()
        except OSError:
            continue
        folders += [Path(line.strip()) for line in lines if line.strip().startswith("/")]
    return tuple(dict.fromkeys(folders))


@cache
def _python_reads() -> tuple[Path, ...]:
    """The interpreter's standard library and shared library, and the site-packages folders that
    hold torch and numpy (not the working folder, nor whatever else is on the trusted side's
    path: tests, the user's project)."""
    paths = sysconfig.get_paths()
    reads = {Path(paths["stdlib"]), Path(paths["platstdlib"]),
             Path(sysconfig.get_config_var("LIBDIR") or sys.base_prefix)}
    for name in ("torch", "numpy"):
        module = sys.modules.get(name) or _import(name)
        if module is not None and getattr(module, "__file__", None):
            reads.add(Path(module.__file__).resolve().parent.parent)
    return tuple(sorted(reads))


def _import(name: str):
    try:
        return __import__(name)
    except ImportError:
        return None
