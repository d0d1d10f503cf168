"""Which compiler flags a candidate may give (kernel.toml ``flags``, a brain's FLAGS line, a
ModelNew's ``extra_cflags``): an allow-list, because flags are candidate code too.

gcc's ``-wrapper`` runs any program, ``-fplugin`` loads one, ``-specs`` rewrites the driver,
``@file`` reads more flags from a file, ``-Wl,`` reaches the linker; nvcc pastes ``-Xcompiler``
values into shell command lines, so ``$(...)`` in one ran during a build that still succeeded
(held-out review, 2026-12-03). What a kernel legitimately tunes is optimisation, code generation
(``-f``/``-m`` families from a list), macros, the language standard and the target; anything else
is refused with the flag named. Include and library paths are the toolchain's and the kernel's
own folder's only (the build's jail lets the compiler read nothing else either).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Sequence

__all__ = ["ALLOWED_FLAGS_HELP", "refused_flag"]

_VALUE = re.compile(r"[A-Za-z0-9_.,:+\-]*")
"""Characters a flag's value may hold: no space, quote, $, `, ;, |, &, <, >, (, ), /, \\, = or *
(nvcc hands some values to a shell; a path has no business in a flag)."""
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_F_NAMES = (
    "openmp", "openmp-simd", "unroll-loops", "unroll-all-loops", "fast-math", "tree-*", "vect-cost-model",
    "simd-cost-model", "strict-aliasing", "inline", "inline-functions", "inline-small-functions",
    "inline-limit", "omit-frame-pointer", "prefetch-loop-arrays", "peel-loops", "math-errno",
    "finite-math-only", "associative-math", "reciprocal-math", "signed-zeros", "trapping-math",
    "rounding-math", "fp-contract", "excess-precision", "pic", "PIC", "pie", "PIE", "align-*",
    "ipa-*", "gcse*", "loop-*", "sched-*", "schedule-insns*", "rename-registers", "split-loops",
    "version-loops-for-strides", "predictive-commoning", "ivopts", "builtin", "exceptions", "rtti",
    "permissive", "cx-limited-range", "single-precision-constant", "optimize-sibling-calls",
    "expensive-optimizations", "move-loop-invariants", "unswitch-loops", "split-paths",
    "semantic-interposition", "common", "strict-overflow", "wrapv", "stack-protector*",
    "max-errors", "diagnostics-color", "var-tracking*", "cf-protection", "stack-clash-protection",
    "plt", "ira-*", "lra-*", "web", "peephole*", "reorder-*", "modulo-sched*",
    "variable-expansion-in-unroller",
)
_M_NAMES = (
    "arch", "tune", "cpu", "fpu", "sse*", "ssse3", "avx*", "fma", "fma4", "f16c", "bmi", "bmi2",
    "popcnt", "lzcnt", "prefer-vector-width", "prefer-avx128", "fpmath", "amx-*", "vaes",
    "vpclmulqdq", "pclmul", "aes", "movbe", "adx", "sha", "no-*", "red-zone", "align-data",
    "branch-cost", "sve-vector-bits", "outline-atomics",
)
_GCC_PLAIN = {"-g", "-g0", "-g1", "-g2", "-g3", "-w", "-pthread", "-pedantic", "-Wall", "-Wextra",
              "-Werror", "-ansi", "-lm", "-lpthread", "-lgomp", "-latomic", "-lstdc++", "-O", "-O0",
              "-O1", "-O2", "-O3", "-Os", "-Ofast", "-Og", "-Oz"}
_NVCC_PLAIN = {"-O0", "-O1", "-O2", "-O3", "--use_fast_math", "-use_fast_math", "-lineinfo",
               "--expt-relaxed-constexpr", "-expt-relaxed-constexpr", "--expt-extended-lambda",
               "-expt-extended-lambda", "--extended-lambda", "--extra-device-vectorization",
               "-extra-device-vectorization", "-restrict", "--restrict", "-g", "-G", "-w",
               "--resource-usage", "-res-usage", "--keep-device-functions"}
_NVCC_VALUED = ("-arch", "--gpu-architecture", "-code", "--gpu-code", "-gencode", "--generate-code",
                "-maxrregcount", "--maxrregcount", "-ftz", "--ftz", "-prec-div", "--prec-div",
                "-prec-sqrt", "--prec-sqrt", "-fmad", "--fmad", "-std", "--std", "-rdc",
                "--relocatable-device-code", "--default-stream", "-default-stream", "-Xptxas",
                "--ptxas-options", "-t", "--threads", "--split-compile", "-split-compile")
_PTXAS_VALUES = ("-v", "--verbose", "-O0", "-O1", "-O2", "-O3", "--warn-on-spills", "-warn-spills",
                 "--warn-on-local-memory-usage", "-warn-lmem-usage", "-dlcm=*", "-dscm=*",
                 "--def-load-cache=*", "--def-store-cache=*", "--allow-expensive-optimizations=*",
                 "-maxrregcount=*", "--maxrregcount=*")

ALLOWED_FLAGS_HELP = ("optimisation levels (-O2, -O3, -Ofast), -f/-m code-generation flags from a list "
                      "(-fopenmp, -funroll-loops, -ffast-math, -march=native, -mavx2, -mfma, ...), "
                      "-DNAME[=value], -UNAME, -std=..., warnings (-W...), -g; nvcc: --use_fast_math, "
                      "-arch/-gencode, -maxrregcount, -Xptxas values from a list, -Xcompiler with "
                      "allowed host flags. Never paths, -I, -L, -Wl,/-Xlinker, -wrapper, -fplugin, "
                      "-specs, -B or @files")


def refused_flag(flags: Sequence[str], compiler: str) -> str | None:
    """Why the first refused flag is refused ('flag ... is not allowed: ...'), or None.
    ``compiler``: 'gcc' (gcc, g++, clang) or 'nvcc'."""
    check = _nvcc_flags if compiler == "nvcc" else _gcc_flags
    problem = check(list(flags))
    return None if problem is None else (
        f"flag {problem[0]!r} is not allowed ({problem[1]}); kernels may give "
        f"{ALLOWED_FLAGS_HELP}")


def _gcc_flags(flags: list[str]) -> tuple[str, str] | None:
    for flag in flags:
        why = _gcc_flag(flag)
        if why:
            return flag, why
    return None


def _gcc_flag(flag: str) -> str | None:
    if flag in _GCC_PLAIN:
        return None
    for prefix, names in (("-fno-", _F_NAMES), ("-f", _F_NAMES), ("-m", _M_NAMES)):
        if flag.startswith(prefix):
            name, _, value = flag[len(prefix):].partition("=")
            if not _listed(name, names):
                return f"not on the list of {prefix[:2]} flags kernels may give"
            return None if _VALUE.fullmatch(value) else "its value holds characters a flag may not"
    if flag.startswith(("-D", "-U")):
        name, _, value = flag[2:].partition("=")
        if not _IDENTIFIER.fullmatch(name) or (flag.startswith("-U") and value):
            return "a macro must be an identifier"
        return None if _VALUE.fullmatch(value) else "its value holds characters a flag may not"
    if flag.startswith("-std="):
        return None if re.fullmatch(r"[a-z0-9+]+", flag[5:]) else "not a language standard"
    if re.fullmatch(r"-W(?!l,|a,|p,)(no-)?[a-z0-9][a-z0-9=\-]*", flag):
        return None
    if flag.startswith("--param="):
        return None if re.fullmatch(r"[a-z0-9\-]+=[0-9]+", flag[8:]) else "not a numeric --param"
    return "it can run programs, read or write files, or change what is built"


def _nvcc_flags(flags: list[str]) -> tuple[str, str] | None:
    words = iter(flags)
    for flag in words:
        name, equals, value = flag.partition("=")
        if flag in _NVCC_PLAIN or (_gcc_flag(flag) is None and flag.startswith(("-D", "-U"))):
            continue
        if flag.startswith("-O") and flag in _GCC_PLAIN:
            continue
        if name in ("-Xcompiler", "--compiler-options"):
            given = value if equals else next(words, "")
            problem = _host_values(given)
            if problem:
                return f"{flag} {given}" if not equals else flag, problem
            continue
        if name in _NVCC_VALUED:
            given = value if equals else next(words, "")
            if not _VALUE.fullmatch(given.replace("=", ",")) or not given:
                return flag, "its value holds characters a flag may not"
            if name in ("-Xptxas", "--ptxas-options") and not all(
                    _listed(v, _PTXAS_VALUES) for v in given.split(",")):
                return f"{flag} {given}", "not on the list of ptxas options kernels may give"
            continue
        return flag, "it can run programs, read or write files, or change what is built"
    return None


def _host_values(given: str) -> str | None:
    """-Xcompiler's value: a comma-separated list of host flags, each an allowed gcc flag."""
    if not given:
        return "-Xcompiler needs a value"
    for part in given.split(","):
        why = _gcc_flag(part)
        if why:
            return f"host flag {part!r}: {why}"
    return None


def _listed(name: str, patterns: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)
