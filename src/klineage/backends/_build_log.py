"""A candidate's build log as it may be shown: only what the compiler said about the candidate's
own files.

The log becomes a verdict's reason, a report's log tail and a brain's feedback. A diagnostic in
any other file quotes that file's lines (``#include`` of a readable file made its text the
compile error, held-out review 2026-12-03), so such a diagnostic, its quoted source lines and its
caret lines are replaced by one line saying a diagnostic was left out. Paths inside the build's
folder are shown relative to it (``kernel.c:3:1: error: ...``).
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["candidate_log", "missing_isa"]

_HEADER = re.compile(
    r"^(?P<prefix>In file included from |\s*from )?(?P<file>[^\s:()][^:()]*?)"
    r"(?::(?P<line>\d+)(?::\d+)?[:,]|\((?P<nvline>\d+)\):)(?P<rest>.*)$")
_QUOTE = re.compile(r"^\s*\d*\s*\|")  # gcc's quoted source and caret lines ("12598 | ...")
_LEFT_OUT = "(a diagnostic about a file outside the kernel's folder, not shown)"


def candidate_log(log: str, folder: Path) -> str:
    """``log`` with diagnostics about files outside ``folder`` left out and ``folder``'s own
    paths made relative."""
    root = str(folder.resolve()).rstrip("/") + "/"
    raw_root = str(folder).rstrip("/") + "/"
    shown: list[str] = []
    hiding = False
    for line in log.splitlines():
        line = line.replace(root, "").replace(raw_root, "")
        header = _HEADER.match(line)
        if header and _is_path(header["file"]):
            own = not header["file"].startswith("/") and ".." not in Path(header["file"]).parts
            hiding = not own
            if hiding:
                if not shown or shown[-1] != _LEFT_OUT:
                    shown.append(_LEFT_OUT)
                continue
        elif hiding and (_QUOTE.match(line) or line.startswith((" ", "\t"))):
            continue
        else:
            hiding = False
        shown.append(line)
    return "\n".join(shown)


def _is_path(text: str) -> bool:
    """A diagnostic's file, not a tool's name ('collect2: error', 'cc1: warning')."""
    return "/" in text or "." in Path(text).name


def missing_isa(log: str) -> str | None:
    """A line naming the instruction set a failed build needed and its target lacks, or None.

    An intrinsic of a set the target (-march=native: this CPU) lacks fails inside the set's
    header, "avx512fintrin.h: error: inlining failed ... target specific option mismatch"
    (gcc), or as "requires target feature 'avx512f'" (clang) or "needs isa option -mavx512f"
    (gcc builtins). Where the log keeps only the kernel's own files, gcc's "note: called from
    here" and the quoted call remain. Naming the set tells the author to guard the code; the
    header's error alone reads like a compiler bug.
    """
    isas = re.findall(r"(\w+?)intrin\.h:\d+(?::\d+)?: error: inlining failed", log)
    isas += re.findall(r"requires target feature '([\w.-]+)'", log)
    for options in re.findall(r"needs isa option ((?:-m[\w.-]+ ?)+)", log):
        isas += [option.removeprefix("-m") for option in options.split()]
    called = re.findall(r"note: called from here\n\s*\d+ \|([^\n]*)", log)
    intrinsics = sorted({name for line in called for name in re.findall(r"\b_mm\d*_\w+", line)})
    if not isas and any(name.startswith("_mm512_") for name in intrinsics):
        isas = ["avx512f"]  # every _mm512_ intrinsic needs AVX-512 Foundation at least
    if not isas and not intrinsics:
        return None
    needs = ", ".join(sorted(set(isas))) or "an instruction set extension"
    calls = f" (called: {', '.join(intrinsics[:4])})" if intrinsics else ""
    return (f"error: the kernel needs {needs}, which the build target lacks (kernels are built for "
            f"the gate's own CPU){calls}: guard that code (#if defined(__AVX512F__) and the like) "
            f"or choose it at run time")
