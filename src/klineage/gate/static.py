"""Static checks: what a kernel may not call, looked for in its source and in its binary.

The source scan (tree-sitter) names the offending line; the symbol scan of the built object is
what cannot be dodged with a macro. Both use the same deny-list; a kernel.toml may allow
symbols by name (``allow_symbols``) where a workload has a real need.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from functools import cache
from pathlib import Path

__all__ = ["DENIED", "forbidden_in_source", "forbidden_symbols"]

DENIED: dict[str, tuple[str, ...]] = {
    "file or network I/O": (
        "fopen", "fopen64", "freopen", "fdopen", "open", "open64", "openat", "creat", "fread",
        "fwrite", "fprintf", "fscanf", "read", "write", "pread", "pwrite", "unlink", "remove",
        "rename", "mkdir", "socket", "connect", "bind", "listen", "accept", "send", "sendto",
        "recv", "recvfrom", "getaddrinfo", "gethostbyname",
    ),
    "processes, threads or dynamic loading outside the timed call": (
        "system", "popen", "fork", "vfork", "exec*", "posix_spawn*", "dlopen", "dlsym",
        "syscall", "ptrace", "kill", "signal", "sigaction", "pthread_create", "std::thread*",
        "getenv", "setenv", "clone",
    ),
    "a vendor library or framework for the op itself": (
        "cblas_*", "*gemm_", "*gemv_", "cublas*", "cudnn*", "mkl_*", "openblas_*", "at::*",
        "torch::*", "c10::*",
    ),
    "the Python interpreter (which holds the reference)": ("Py*", "_Py*"),
}

_DENY_INCLUDES = ("Python.h", "cblas.h", "cublas*", "cudnn*", "dlfcn.h", "sys/socket.h",
                  "netinet/*", "torch/*", "ATen/*")


def _denial(name: str, allowed: Iterable[str], extra: dict[str, tuple[str, ...]]) -> str | None:
    if name in allowed:
        return None
    for why, patterns in (*DENIED.items(), *extra.items()):
        if any(fnmatch.fnmatchcase(name, p) for p in patterns):
            return why
    return None


def forbidden_symbols(
    symbols: Iterable[str], allowed: Iterable[str] = (), extra: dict[str, tuple[str, ...]] | None = None
) -> list[str]:
    """Lines for each imported symbol the kernel may not use."""
    allowed = set(allowed)
    found = []
    for symbol in sorted(symbols):
        base = symbol.split("(")[0]
        why = _denial(base, allowed, extra or {})
        if why:
            found.append(f"imports {symbol!r} ({why})")
    return found


def forbidden_in_source(
    source: Path, allowed: Iterable[str] = (), extra: dict[str, tuple[str, ...]] | None = None
) -> list[str]:
    """Lines for each forbidden call or include in a C/C++/CUDA source file."""
    text = source.read_bytes().replace(b"__align__(", b"alignas(")  # a tree-sitter-cuda gap
    tree = _parser().parse(text)
    allowed = set(allowed)
    found = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        line = node.start_point[0] + 1
        if node.type == "call_expression":
            callee = node.child_by_field_name("function")
            name = callee.text.decode(errors="replace") if callee is not None else ""
            why = _denial(name.split("<")[0], allowed, extra or {})
            if why:
                found.append(f"{source.name}:{line}: calls {name}() ({why})")
        elif node.type == "preproc_include":
            path = node.child_by_field_name("path")
            target = path.text.decode(errors="replace").strip("<>\"") if path is not None else ""
            if any(fnmatch.fnmatchcase(target, p) for p in _DENY_INCLUDES) and target not in allowed:
                found.append(f"{source.name}:{line}: includes <{target}> (not allowed in kernels)")
    return sorted(found, key=lambda s: int(s.split(":")[1]))


@cache
def _parser():  # -> tree_sitter.Parser
    import tree_sitter
    import tree_sitter_cuda

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_cuda.language()))
