"""Compiled-output evidence: does the built object still show a feature? (DESIGN.md §5)

The backward walk removes a feature from the source; the compiler can put the mechanism back
(gcc auto-vectorizes, nvcc widens loads). These checks read the artifact so a "removed" feature
that is still in the binary is caught. Only features with a reliable signature are reported;
the rest are absent from the result on purpose.

CPU (gcc -O3 -march=native, objdump and nm):
  omp_parallel     imports GOMP_parallel* (an outlined parallel region)
  streaming_store  a non-temporal store instruction (movnt*)
  prefetch         a prefetch* instruction (gcc -O3 does not insert them on its own)
No reliable signature: simd_intrinsics (the auto-vectorizer emits zmm/ymm code too: the naive
rmsnorm has zmm instructions), omp_simd, unroll, restrict, cache_blocking, packing,
loop_interchange.

CUDA (SASS from cuobjdump; ELF attributes from cuobjdump -elf):
  vectorized_access       LDG/STG .128 (or .256) accesses
  warp_shuffle_reduction  SHFL.*
  tensor_core_mma         HMMA / HGMMA (and the integer/fp8 forms)
  tma                     UTMALDG / UTMASTG / UBLKCP / UTMAPF
  cp_async_pipeline       LDGSTS or SYNCS.* (mbarrier): note that TMA needs mbarriers too, so this
                          is not independent of tma
  launch_bounds           EIATTR_MAX_THREADS on some kernel
No reliable signature: read_only_cache (ptxas emits LDG.E.CONSTANT for const __restrict__ loads
without __ldg), fast_math_intrinsics (expf and 1/sqrtf also compile to MUFU.EX2 / MUFU.RSQ),
shared_memory_tiling (block reductions use LDS/STS too), unroll_pragma, restrict,
grid_stride_loop, register_blocking, smem_padding_or_swizzle.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from klineage import settings
from klineage.errors import ToolchainError

__all__ = ["CPU_SIGNATURES", "CUDA_SIGNATURES", "compiled_evidence"]

CPU_SIGNATURES = {
    "streaming_store": r"\bv?movnt\w*",
    "prefetch": r"\bprefetch\w*",
}
CUDA_SIGNATURES = {
    "vectorized_access": r"\b[LS][DT]G\.E(\.\w+)*\.(128|256)\b",
    "warp_shuffle_reduction": r"\bSHFL\.",
    "tensor_core_mma": r"\b(HMMA|HGMMA|IMMA|IGMMA|QGMMA|UTCHMMA|UTCQMMA|UTCMMA)\b",
    "tma": r"\b(UTMALDG|UTMASTG|UBLKCP|UTMAPF|UTMAREDG)\b",
    "cp_async_pipeline": r"\b(LDGSTS|SYNCS\.\w+)",
}


def compiled_evidence(artifact: Path, language: str) -> dict[str, bool]:
    """feature -> whether the built object shows it, for the features with a reliable signature;
    nothing for an artifact that is not machine code (the null backend's model)."""
    with open(artifact, "rb") as handle:
        if handle.read(4) != b"\x7fELF":
            return {}
    if language == "cuda":
        return _cuda_evidence(Path(artifact))
    return _cpu_evidence(Path(artifact))


def _cpu_evidence(artifact: Path) -> dict[str, bool]:
    code = _run(["objdump", "-d", "--no-show-raw-insn", str(artifact)])
    imports = _run(["nm", "-D", "--undefined-only", str(artifact)])
    evidence = {name: bool(re.search(pattern, code)) for name, pattern in CPU_SIGNATURES.items()}
    evidence["omp_parallel"] = bool(re.search(r"\bGOMP_parallel", imports))
    return evidence


def _cuda_evidence(artifact: Path) -> dict[str, bool]:
    from klineage.backends.cuda import sass

    code = sass(artifact)
    evidence = {name: bool(re.search(pattern, code)) for name, pattern in CUDA_SIGNATURES.items()}
    evidence["launch_bounds"] = "EIATTR_MAX_THREADS" in _elf_attributes(artifact)
    return evidence


def _elf_attributes(artifact: Path) -> str:
    tool = settings.cuobjdump()
    if tool is None:
        raise ToolchainError("cuobjdump not found (pip install nvidia-cuda-cuobjdump)")
    return _run([tool, "-elf", str(artifact)])


def _run(command: list[str]) -> str:
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ToolchainError(f"{command[0]} failed on {command[-1]}: {exc}") from exc
    if proc.returncode != 0:
        raise ToolchainError(f"{command[0]} failed on {command[-1]}: {proc.stderr.strip()[:300]}")
    return proc.stdout
