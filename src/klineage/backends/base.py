"""The Backend seam: what the gate needs from a compiler + device, and nothing more.

A backend has two halves. ``Backend`` builds kernels (and the sandbox's own runner and
calibration kernel), lists what a built artifact imports, and reports the platform and its
measured ceilings. ``Device`` is the trusted side's memory on the device: the arenas a sandboxed
runner shares, poisoning, copying and comparing. Kernels run only in the runner
(``gate/_runner.c``). ``gate/`` only ever talks to these two protocols.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from klineage.workload.model import KernelSpec, TensorSpec, Workload

__all__ = ["Backend", "BuildResult", "Ceilings", "Device", "RunnerSpec"]


@dataclass(frozen=True)
class BuildResult:
    """The outcome of compiling one kernel (a failed compile is a result, not an error)."""

    ok: bool
    artifact: Path | None
    log: str
    command: tuple[str, ...]
    fingerprint: str
    """Hash of sources + flags + toolchain + target: the build-cache key."""
    cached: bool = False
    seconds: float = 0.0
    resources: dict[str, Any] = field(default_factory=dict)
    """Compiler resource report (CUDA: registers, spills, shared memory, stack)."""
    artifact_sha256: str = ""
    """The artifact's hash when it was built: what is loaded is checked against it."""
    confinement: str = ""
    """What confined the compiler (``klineage.jail``): a candidate's build runs jailed."""

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["artifact"] = str(self.artifact) if self.artifact else None
        return data


SANDBOX_WORKLOAD = "workload"
CAUGHT_IN_PROCESS_RC = 86
"""A call's return code by which klineage's own code in the candidate's process (the ModelNew
shim) says it caught the kernel: the trusted side makes it ``rejected_cheat``, quoting the
process's last line. A kernel returning it itself only accuses itself."""
"""The folder, in the runner's working directory, that holds its copies of ``sandbox_files``."""


@dataclass(frozen=True)
class RunnerSpec:
    """A built sandbox runner (``gate/_runner.c`` for one backend) and what it may touch."""

    path: Path
    sha256: str
    reads: tuple[Path, ...] | None = None
    """What the runner may read besides its own folder (``_runner_view``); None: it is not
    jailed (the null backend's runner is klineage's own model, no candidate code)."""
    devices: tuple[Path, ...] = ()
    """Device files the runner may open for reading, writing and control (a GPU's)."""
    writes: tuple[Path, ...] = ()
    """Where the runner may write (the CUDA driver sets up its process under /proc at its
    first call, before any candidate code runs; from then on its filters refuse every opening
    for writing)."""


@dataclass(frozen=True)
class Ceilings:
    """Measured limits of one platform at one thread count; the speed-of-light denominators."""

    platform: str
    bandwidth_gbps: float
    """Copy bandwidth, bytes read + written per second, on a working set past the caches."""
    compute_gflops: float
    """Peak measured arithmetic rate (CPU: fp32 FMA; GPU: bf16 tensor-core matmul)."""
    cache_bytes: int
    """Last-level cache size: a working set under 2x this may beat the DRAM bandwidth honestly."""
    threads: int | None = None
    measured_at: str = ""
    details: dict[str, Any] = field(default_factory=dict)


class Device(Protocol):
    """The trusted side's operations on one device's memory: the arenas a sandboxed runner
    shares, and the buffers the checks use. Never loads candidate code. Buffers are opaque.

    "Native" arrays are what comparisons run on, on the device itself (numpy on the CPU, torch
    tensors on a GPU): floats as float64, integers as they are, bools as raw bytes.
    """

    torch_device: str
    """Where torch-framework references run ('cpu' or 'cuda')."""
    inputs_protected: bool
    """True: the runner maps the input arena read-only. False: inputs are compared with a copy
    after every call."""
    async_streams: bool
    """True where a kernel can queue work on streams its own clock does not time (a GPU): a
    clock far short of the trusted one is then a cheat, not a scheduling delay."""
    helper_threads: int
    """Host threads the device's own runtime may keep busy in the runner beside the kernel's
    declared ones (the CUDA driver's): part of the CPU a call may use."""

    def arena(self, nbytes: int, name: str) -> Any:
        """Shared memory for a runner (``_arenas.HostArena`` or ``CudaArena``)."""

    def random(self, spec: TensorSpec, dims: tuple[int, ...], seed: int, index: int) -> Any:
        """A new buffer of seeded inputs (same seed, index and dims: same values)."""

    def generator(self, rng: np.random.Generator) -> Any:
        """A generator of random values on this device, seeded from ``rng`` (made once per session:
        a timed call should cost few operations of ours)."""

    def draw(self, spec: TensorSpec, dims: tuple[int, ...], generator: Any) -> Any:
        """Fresh values of an input's distribution, from a ``generator``."""

    def put(self, view: Any, values: Any) -> None:
        """Write values (a buffer, or a host array) into a view of an arena."""

    def clone(self, view: Any) -> Any:
        """A private copy of a buffer."""

    def copy_into(self, sink: Any, view: Any) -> None:
        """Copy a buffer into another of the same shape and dtype."""

    def download(self, buffer: Any) -> np.ndarray:
        """A host copy of a buffer."""

    def empty(self, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        """A new, uninitialised buffer."""

    def fill(self, buffer: Any, value: float | int, bytewise: bool = False) -> None:
        """Poison a buffer (``bytewise``: every byte set to ``value``)."""

    def pick_blocks(self, count: int, share: int, generator: Any) -> Any:
        """Indices (on the device) of one of ``count`` blocks at a random place in each window of
        ``share``: distinct, so the inputs of a call can be rebuilt from its draw, and drawn in
        O(picked) from a ``generator`` that never leaves the trusted process."""

    def words_differ(self, a: Any, b: Any) -> Any:
        """How many words of two same-sized buffers differ bitwise (a word: the widest of 8, 4, 2
        or 1 bytes that divides the size, ``_arenas.word_bytes``), as a count: a device scalar not
        yet read back (GPU) or an int; ``counts`` reads several at once."""

    def bytes_not(self, buffer: Any, byte: int) -> Any:
        """How many bytes of a buffer are not ``byte``, as a count like ``elements_differ``'s."""

    def counts(self, pending: list[Any]) -> list[int]:
        """The values of counts, read back together (one synchronisation)."""

    def reference_input(self, buffer: Any, framework: str) -> Any:
        """A copy of an input as the reference takes it (numpy on the host, or a torch tensor)."""

    def native(self, value: Any, dtype: str) -> Any:
        """A buffer or a reference output as a native array for comparison."""

    def synchronize(self) -> None:
        """Wait for all of this process's work on the device."""

    def flush_cache(self) -> None:
        """Evict the caches the runner's next call would find warm (where this side can)."""


class Backend(Protocol):
    """Parent-side operations: build, inspect, describe the platform."""

    name: str
    modeled: bool
    """Times come from a model, not a device (the null backend): the gate times such kernels
    with the least effort, as there is no noise to average."""
    base_flags: tuple[str, ...]
    """What every build gets before the kernel's own flags (brains are told, so they do not
    repeat or fight them)."""
    denied_symbols: dict[str, tuple[str, ...]]
    """Backend-specific additions to the static deny-list: {why: (glob patterns)}."""
    allowed_symbols: tuple[str, ...]
    """Backend-specific additions to the static allow-list of imports (glob patterns)."""

    def unavailable_reason(self) -> str | None:
        """None when usable here, else one line saying why not."""

    def platform(self) -> str:
        """e.g. 'cpu-x86_64-avx512' or 'nvidia-sm90-cuda13.0'."""

    def toolchain(self) -> dict[str, str]:
        """Compiler versions etc.; part of every fingerprint."""

    def build(self, kernel: KernelSpec) -> BuildResult:
        """Compile (or fetch from the build cache)."""

    def imported_symbols(self, artifact: Path) -> set[str]:
        """Undefined dynamic symbols of a built artifact, for the static check."""

    def system_call_sites(self, artifact: Path) -> list[str]:
        """One line per system-call instruction in the artifact's host code, for the static check."""

    def ceilings(self, threads: int | None, remeasure: bool = False) -> Ceilings:
        """Measured once per machine and cached."""

    def default_threads(self, kernel: KernelSpec) -> int | None:
        """The thread count a kernel is timed with when none is asked for."""

    def sandbox_env(self, threads: int | None, workload: Workload) -> dict[str, str]:
        """The whole environment of a sandboxed runner for one workload's job (nothing of ours
        is inherited)."""

    def sandbox_files(self, workload: Workload) -> tuple[Path, ...]:
        """Workload files the runner reads itself (a ModelNew's reference builds its model),
        copied read-only into the runner's folder, ``workload/``: the runner may not be able to
        read the workload where it is (it runs as nobody). None for a native kernel."""

    def sandbox_runner(self) -> RunnerSpec:
        """The runner built for this backend (our code, hash-checked before each start)."""

    def calibration_kernel(self) -> tuple[Path, str]:
        """Our spin kernel, (artifact, sha256): how far an honest kernel's clock reads short."""

    def address_space_limit_ok(self) -> bool:
        """Whether RLIMIT_AS can cap the runner (not with CUDA, which reserves huge ranges)."""

    def device_key(self) -> str:
        """Names the physical device: timed runs on one key never overlap."""

    def open_device(self, threads: int | None) -> Device:
        """The trusted side's memory on this device."""
