"""A backend that compiles nothing: for testing the pipeline, not kernels.

A "build" is a JSON artifact holding a modeled time: ``BASE_S`` divided by ``SPEEDUP`` for every
optimization feature the source detector finds, so removing a feature makes a kernel slower
and inserting one makes it faster, deterministically. The runner (``_null_runner.py``, Python)
computes the workload's reference into the outputs and takes the modeled time. So the walk,
lift, admission, optimize, bench and the report run end to end without gcc, and in seconds.

It proves nothing about a kernel: every kernel is "correct" (the reference computes it) and its
time is a model. Choose it explicitly (``GateOptions(backend="null")``); no language maps to it.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import threading
from pathlib import Path
from typing import ClassVar

from klineage import settings
from klineage.backends.base import BuildResult, Ceilings, RunnerSpec
from klineage.backends.cpu import CpuDevice
from klineage.workload.model import KernelSpec, Workload

__all__ = ["NullBackend"]

BASE_S = 0.002
"""A kernel with no detected feature reads this long (its round trip also holds computing the
reference). The reading is exact, so a short one orders kernels as surely as a long one."""
SPEEDUP = 1.5
"""Each detected feature makes the modeled kernel this much faster."""


class NullBackend:
    """Builds nothing; its kernels' times are a model of their detected features."""

    name = "null"
    modeled = True
    base_flags = ()
    denied_symbols: ClassVar[dict[str, tuple[str, ...]]] = {}
    allowed_symbols: ClassVar[tuple[str, ...]] = ()

    def unavailable_reason(self) -> str | None:
        return None

    def platform(self) -> str:
        return "null"

    def toolchain(self) -> dict[str, str]:
        return {"null": f"modeled: {BASE_S} s / {SPEEDUP}^features"}

    def build(self, kernel: KernelSpec) -> BuildResult:
        from klineage.source import present  # source imports backends: import it when building

        features = sorted(present(kernel.source.read_text(), kernel.language))
        seconds = BASE_S / SPEEDUP ** len(features)
        artifact, sha = _artifact({"seconds": seconds, "features": features})
        return BuildResult(ok=True, artifact=artifact, log="", command=("null",),
                           fingerprint=sha, artifact_sha256=sha)

    def imported_symbols(self, artifact: Path) -> set[str]:
        return set()

    def system_call_sites(self, artifact: Path) -> list[str]:
        return []

    def ceilings(self, threads: int | None, remeasure: bool = False) -> Ceilings:
        # Far above any modeled rate: the speed-of-light check never fires on a model.
        return Ceilings(platform="null", bandwidth_gbps=1e9, compute_gflops=1e12, cache_bytes=0,
                        threads=threads, details={"null": "modeled, not measured"})

    def default_threads(self, kernel: KernelSpec) -> int | None:
        return 1

    def sandbox_env(self, threads: int | None, workload: Workload) -> dict[str, str]:
        return {"KLINEAGE_NULL_WORKLOAD": str(workload.root), "PATH": "/usr/bin:/bin",
                "LC_ALL": "C", "PYTHONPATH": str(Path(__file__).resolve().parents[2])}

    def sandbox_files(self, workload: Workload) -> tuple[Path, ...]:
        return ()

    def sandbox_runner(self) -> RunnerSpec:
        source = (Path(__file__).parent / "_null_runner.py").read_text()
        path, sha = _artifact_text(f"#!{sys.executable}\n{source}", "runner.py")
        return RunnerSpec(path, sha)

    def calibration_kernel(self) -> tuple[Path, str]:
        return _artifact({"spin": True})

    def address_space_limit_ok(self) -> bool:
        return False  # a Python interpreter with numpy reserves more than a kernel would

    def device_key(self) -> str:
        return "null"

    def open_device(self, threads: int | None) -> CpuDevice:
        return CpuDevice()


def _artifact(content: dict) -> tuple[Path, str]:
    return _artifact_text(json.dumps(content, sort_keys=True), "artifact.json")


def _artifact_text(text: str, name: str) -> tuple[Path, str]:
    """Content-addressed under the build cache: the name is the hash, so an entry never changes."""
    sha = hashlib.sha256(text.encode()).hexdigest()
    path = settings.cache_dir() / "build" / "null" / sha[:2] / sha / name
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        # Builds run side by side (an executor's prebuild): each writer has its own scratch name.
        scratch = path.with_name(f".{name}.{os.getpid()}.{threading.get_ident()}.tmp")
        scratch.write_text(text)
        scratch.replace(path)
    return path, sha


BACKEND = NullBackend
