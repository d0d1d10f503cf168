"""Static checks: what a kernel may import, call and contain, before anything runs.

The built object's imported dynamic symbols must be on an **allow-list** (what kernels
legitimately need: libc memory, string, math and time, threads, OpenMP, the C++ runtime, and
what the backend adds, e.g. the CUDA runtime); a few families that the allow-list's patterns
cover but kernels may not use are **denied** on top (file streams, the backend's own
additions). The machine code may not contain system-call instructions. The source scan names
the offending line for calls of denied names the file does not define itself (a helper called
``exec_tile`` is the kernel's own business). None of this is the sandbox: the runner's seccomp
filter stops what slips through; these checks give the clear reason early.
``kernel.toml``'s ``allow_symbols`` adds names to the allow-list where a workload needs them.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from functools import cache
from pathlib import Path

from klineage.gate._static_python import forbidden_in_python

__all__ = ["ALLOWED", "DENIED", "FRAMEWORK", "forbidden_in_code", "forbidden_in_source", "forbidden_symbols"]

ALLOWED: tuple[str, ...] = (
    # memory and strings
    "memcpy", "memmove", "memset", "memcmp", "memchr", "strlen", "strnlen", "strcmp", "strncmp",
    "strcpy", "strncpy", "strcat", "strncat", "strchr", "strrchr", "strstr",
    # fortified builds (-D_FORTIFY_SOURCE) call these for the above, by name: __dprintf_chk (a
    # write to any descriptor, the reply pipe among them) and the reading ones are not here
    "__memcpy_chk", "__memmove_chk", "__mempcpy_chk", "__memset_chk", "__strcpy_chk",
    "__stpcpy_chk", "__strncpy_chk", "__stpncpy_chk", "__strcat_chk", "__strncat_chk",
    "__sprintf_chk", "__snprintf_chk", "__vsprintf_chk", "__vsnprintf_chk", "__printf_chk",
    "__fprintf_chk", "__vprintf_chk", "__vfprintf_chk", "__explicit_bzero_chk", "__longjmp_chk",
    "malloc", "calloc", "realloc", "free", "aligned_alloc", "posix_memalign", "memalign",
    "qsort", "bsearch", "abs", "labs", "llabs", "div", "ldiv", "rand_r", "strtod", "strtof",
    "strtol", "strtoll", "strtoul", "strtoull", "atoi", "atol", "atof",
    # printing to the log (stdout and stderr are the runner's log file)
    "printf", "puts", "putchar", "fprintf", "fputs", "fputc", "fflush", "snprintf", "sprintf",
    "vsnprintf", "vfprintf", "vprintf", "stdout", "stderr", "fwrite", "perror",
    # math
    "sqrt*", "cbrt*", "exp*", "log*", "pow*", "sin*", "cos*", "tan*", "asin*", "acos*",
    "atan*", "erf*", "tgamma*", "lgamma*", "fabs*", "floor*", "ceil*", "round*", "lround*",
    "llround*", "trunc*", "rint*", "lrint*", "llrint*", "nearbyint*", "fma*", "fmax*", "fmin*",
    "fmod*", "remainder*", "copysign*", "hypot*", "ldexp*", "frexp*", "modf*", "scalbn*",
    "ilogb*", "nan", "nanf", "__fpclassify*", "__isnan*", "__isinf*", "__finite*", "__*_finite",
    # time
    "clock_gettime", "clock", "time", "gettimeofday", "nanosleep", "sched_yield",
    # threads (the sandbox keeps them on the declared cores and inside the call), C11's among them
    "pthread_*", "sched_getaffinity", "sched_getcpu", "get_nprocs", "get_nprocs_conf", "sysconf",
    "omp_*", "GOMP_*", "__kmpc_*", "thrd_*", "mtx_*", "cnd_*", "tss_*", "call_once",
    "__sched_cpucount", "__sched_cpualloc", "__sched_cpufree",
    # what the running filter allows (gate/_runner.c common_rules), so honest code that asks is
    # not refused here: randomness, memory advice and mappings (no executable ones: the filter
    # traps PROT_EXEC, and the inputs are mapped from a read-only descriptor), identity, limits
    "getrandom", "getentropy", "madvise", "posix_madvise", "mmap", "mmap64", "munmap", "mremap",
    "mprotect", "getpid", "gettid", "getppid", "getuid", "geteuid", "getgid", "getegid", "uname",
    "sysinfo", "getrusage", "times", "clock_getres", "clock_nanosleep", "sched_getparam",
    "sched_getscheduler", "getrlimit", "getrlimit64", "get_phys_pages", "get_avphys_pages",
    # non-local jumps stay within the process
    "setjmp", "_setjmp", "__sigsetjmp", "sigsetjmp", "longjmp", "_longjmp", "siglongjmp",
    # the C and C++ runtimes and toolchain boilerplate
    "abort", "__assert_fail", "__stack_chk_fail", "__errno_location", "__tls_get_addr",
    "__cxa_*", "__gxx_personality_v0", "_Unwind_*", "__gmon_start__", "_ITM_*",
    "__libc_single_threaded", "operator new*", "operator delete*", "std::*", "typeinfo for *",
    "vtable for *", "__dynamic_cast", "__once_proxy",
)

FRAMEWORK = "a vendor library or framework for the op itself"
"""The denial a ModelNew extension's source is exempt from: torch's API is its to use (the op
trace judges its ops)."""

DENIED: dict[str, tuple[str, ...]] = {
    "file or network I/O": (
        "fopen*", "freopen*", "fdopen", "fclose", "open", "open64", "openat*", "__open*", "creat*", "fread",
        "__read*_chk", "__pread*_chk", "__fread*", "__recv*",
        "fscanf", "read", "write", "pread*", "pwrite*", "unlink*", "remove", "rename*", "mkdir*",
        "socket", "connect", "bind", "listen", "accept*", "send*", "recv*", "getaddrinfo",
        "gethostbyname", "std::*fstream*", "std::*filebuf*", "std::filesystem::*",
    ),
    "processes, signals, dynamic loading or the environment": (
        "system", "popen", "fork", "vfork", "execl*", "execv*", "execve*", "fexecve",
        "posix_spawn*", "dlopen", "dlsym", "dlvsym", "dl_iterate_phdr", "syscall", "ptrace",
        "kill", "signal", "sigaction", "raise", "getenv", "secure_getenv", "setenv", "putenv",
        "clone*", "prctl", "process_vm_*", "std::system*", "__dprintf_chk", "__vdprintf_chk",
        "dprintf", "vdprintf",
    ),
    FRAMEWORK: (
        "cblas_*", "*gemm_", "*gemv_", "cublas*", "cudnn*", "mkl_*", "openblas_*", "at::*",
        "torch::*", "c10::*",
    ),
    "the Python interpreter (which holds the reference)": ("Py*", "_Py*"),
}

_DENY_INCLUDES = {
    "not allowed in kernels": ("Python.h", "cblas.h", "cublas*", "cudnn*", "dlfcn.h", "sys/socket.h",
                               "netinet/*"),
    FRAMEWORK: ("torch/*", "ATen/*"),  # a ModelNew's extension ignores this reason: torch is its API
}


def _denial(name: str, extra: dict[str, tuple[str, ...]]) -> str | None:
    for why, patterns in (*DENIED.items(), *extra.items()):
        if any(fnmatch.fnmatchcase(name, p) for p in patterns):
            return why
    return None


def forbidden_symbols(
    symbols: Iterable[str],
    allowed: Iterable[str] = (),
    extra_denied: dict[str, tuple[str, ...]] | None = None,
    extra_allowed: Iterable[str] = (),
) -> list[str]:
    """Lines for each imported symbol the kernel may not use: denied ones, and any that no
    allow-list pattern covers. ``allowed`` (exact names, from kernel.toml) wins over both."""
    named = set(allowed)
    patterns = (*ALLOWED, *extra_allowed)
    found, unknown = [], []
    for symbol in sorted(symbols):
        base = symbol.split("(")[0] if not symbol.startswith("operator") else symbol
        if base in named or symbol in named:
            continue
        why = _denial(base, extra_denied or {})
        if why:
            found.append(f"imports {symbol!r} ({why})")
        elif not any(fnmatch.fnmatchcase(base, p) for p in patterns):
            unknown.append(f"imports {symbol!r}, which is not on the allow-list of what kernels "
                           f"may call (a kernel.toml 'allow_symbols' entry can add it)")
    return found + unknown  # the denied ones first: their reason says more


def forbidden_in_source(
    source: Path, allowed: Iterable[str] = (), extra: dict[str, tuple[str, ...]] | None = None
) -> list[str]:
    """Lines for each call of a denied function the file does not define, and each denied
    include, in a C/C++/CUDA source file; for a Python kernel, ``forbidden_in_python``'s."""
    if source.suffix == ".py":
        return forbidden_in_python(source, allowed, extra)
    return forbidden_in_code(source.read_bytes(), source.name, allowed, extra)


def forbidden_in_code(
    text: bytes, label: str, allowed: Iterable[str] = (), extra: dict[str, tuple[str, ...]] | None = None,
    ignore: tuple[str, ...] = (),
) -> list[str]:
    """``forbidden_in_source``'s lines for C/C++/CUDA text, each starting '<label>:<line>:';
    denials whose reason is in ``ignore`` are left out."""
    text = text.replace(b"__align__(", b"alignas(")  # a tree-sitter-cuda gap
    tree = _parser().parse(text)
    allowed = set(allowed) | _defined_functions(tree.root_node)
    found = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        line = node.start_point[0] + 1
        if node.type == "call_expression":
            callee = node.child_by_field_name("function")
            name = callee.text.decode(errors="replace") if callee is not None else ""
            base = name.split("<")[0]
            why = None if base in allowed else _denial(base, extra or {})
            if why and why not in ignore:
                found.append(f"{label}:{line}: calls {name}() ({why})")
        elif node.type == "preproc_include":
            path = node.child_by_field_name("path")
            target = path.text.decode(errors="replace").strip("<>\"") if path is not None else ""
            why = next((why for why, patterns in _DENY_INCLUDES.items()
                        if any(fnmatch.fnmatchcase(target, p) for p in patterns)), None)
            if why and why not in ignore and target not in allowed:
                found.append(f"{label}:{line}: includes <{target}> ({why})")
    return sorted(found, key=lambda s: int(s.split(":")[1]))


def _defined_functions(root) -> set[str]:  # root: tree_sitter.Node
    names = set()
    stack = [root]
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        if node.type != "function_definition":
            continue
        declarator = node.child_by_field_name("declarator")
        while declarator is not None and declarator.type != "function_declarator":
            declarator = declarator.child_by_field_name("declarator")
        inner = declarator.child_by_field_name("declarator") if declarator is not None else None
        if inner is not None:
            names.add(inner.text.decode(errors="replace"))
    return names


@cache
def _parser():  # -> tree_sitter.Parser
    import tree_sitter
    import tree_sitter_cuda

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_cuda.language()))
