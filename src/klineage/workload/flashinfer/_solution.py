"""A FlashInfer-Bench Solution as a klineage kernel variant, when klineage can run it.

Supported: ``spec.language`` C, C++ or CUDA, no ``build_commands``, and an entry function
(``FILE::FUNCTION``) whose parameters are named after the Definition, as FlashInfer-Bench's
named-argument rule asks: a pointer per tensor input and output, a number per scalar input, and
optionally any axis (an integer) and ``stream`` (CUDA's stream, or ``void*``). The kernel's
``kernel.<ext>`` is the entry file followed by a generated ``kl_launch`` that calls the entry
with each argument by name; the other source files sit beside it at their paths relative to the
entry file, so its ``#include "..."`` lines find them (one translation unit: a second ``.c``
the entry file does not include is not compiled). An entry named ``kl_launch`` is used as is.
Everything else is recorded as not runnable, with the reason: Triton and Python solutions (the
Triton backend comes later), torch-tensor entry points, build commands.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path, PurePosixPath

from klineage.workload.flashinfer._format import Solution
from klineage.workload.flashinfer._plan import Plan, workload_name

__all__ = ["NotRunnable", "kernel_files"]

_LANGUAGES = {"c": ("c", "kernel.c"), "cpp": ("cpp", "kernel.cpp"), "c++": ("cpp", "kernel.cpp"),
              "cuda": ("cuda", "kernel.cu")}
_KL_LAUNCH = ("const void* const* inputs, void* const* outputs, const int64_t* axes, "
              "const double* params, void* stream")


class NotRunnable(Exception):
    """klineage cannot run this Solution (yet); the message says why, in one line."""


def kernel_files(solution: Solution, plan: Plan, kernels: Path) -> str:
    """Write ``kernels/<variant>/``; the variant name. Raises ``NotRunnable``."""
    language = solution.spec.language.strip().lower()
    if language not in _LANGUAGES:
        later = " (the Triton backend comes later)" if language in ("triton", "python") else ""
        raise NotRunnable(f"language {solution.spec.language}: klineage runs C, C++ and CUDA "
                          f"kernels{later}")
    if solution.spec.build_commands:
        raise NotRunnable("has build_commands; klineage builds kernels itself")
    file, _, function = solution.spec.entry_point.rpartition("::")
    sources = {PurePosixPath(posixpath.normpath(s.path)): s.content for s in solution.sources}
    entry = PurePosixPath(posixpath.normpath(file))
    if entry not in sources or not function:
        raise NotRunnable(f"entry_point {solution.spec.entry_point!r} names no source file's function")
    kind, main = _LANGUAGES[language]
    text = sources.pop(entry)
    launch = "" if function == "kl_launch" else _launcher(function, text, plan, kind)
    folder = kernels / workload_name(solution.name)
    placed = {}
    for path, content in sources.items():
        relative = PurePosixPath(posixpath.relpath(path, entry.parent))
        if relative.parts[0] == ".." or str(relative) in (main, "kernel.toml"):
            raise NotRunnable(f"source {path} cannot sit beside the entry file {entry}")
        placed[relative] = content
    folder.mkdir(parents=True)
    for relative, content in placed.items():
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / relative).write_text(content)
    (folder / main).write_text(f"/* {entry} of FlashInfer-Bench solution {solution.name} "
                               f"(by {solution.author}) */\n{text}\n{launch}")
    (folder / "kernel.toml").write_text(f'language = "{kind}"\nflags = []\n'
                                        f"# solution {solution.name!r} of {solution.definition!r}, "
                                        f"entry {solution.spec.entry_point}\n")
    return folder.name


def _parameters(function: str, text: str) -> tuple[str, list[tuple[str, str]]]:
    """(return type, [(parameter name, its declared type)]) of ``function``'s definition."""
    found = re.search(r"\b" + re.escape(function) + r"\s*\(([^)]*)\)\s*\{", text)
    if not found:
        raise NotRunnable(f"no definition of the entry function {function}() in its file")
    lines = [line for line in text[:found.start()].splitlines() if line.strip()]
    returns = lines[-1].replace('extern "C"', "").strip() if lines else "int"
    parameters = []
    for part in filter(None, (p.strip() for p in found.group(1).split(","))):
        if part == "void":
            continue
        name = re.search(r"(\w+)\s*(\[\s*\])?$", part)
        if not name:
            raise NotRunnable(f"cannot read the entry's parameter {part!r}")
        declared = part[:name.start(1)].strip() + (" *" if name.group(2) else "")
        parameters.append((name.group(1), declared))
    return returns, parameters


def _launcher(function: str, text: str, plan: Plan, kind: str) -> str:
    """``kl_launch`` calling ``function`` with each argument by name."""
    returns, parameters = _parameters(function, text)
    axes, inputs, outputs = list(plan.axes), list(plan.tensors_in), list(plan.outputs)
    params = list(plan.params)
    arguments = []
    for name, declared in parameters:
        if "Tensor" in declared:
            raise NotRunnable(f"the entry takes torch tensors ({declared} {name}); klineage kernels "
                              f"take raw pointers")
        if name in inputs or name in outputs:
            if "*" not in declared:
                raise NotRunnable(f"the entry's {name} is a {declared}, not a pointer")
            table, index = ("inputs", inputs.index(name)) if name in inputs else \
                ("outputs", outputs.index(name))
            arguments.append(f"({declared}){table}[{index}]")
        elif name in params:
            arguments.append(f"({declared})params[{params.index(name)}]")
        elif name in axes:
            arguments.append(f"({declared})axes[{axes.index(name)}]")
        elif name == "stream":
            arguments.append(f"({declared})stream")
        else:
            raise NotRunnable(f"the entry's parameter {name!r} is none of the definition's inputs, "
                              f"outputs or axes, nor stream")
    call = f"{function}({', '.join(arguments)})"
    linkage = 'extern "C" ' if kind in ("cpp", "cuda") else ""
    if re.search(r"\bvoid\b", returns) and "*" not in returns:
        ending = "return (int)cudaGetLastError();" if kind == "cuda" else "return 0;"
        body = f"    {call};\n    {ending}"
    else:
        body = f"    return (int){call};"
    unused = "    (void)inputs; (void)outputs; (void)axes; (void)params; (void)stream;\n"
    return (f"\n/* generated by klineage import flashinfer-bench: kl_launch calls {function}() by "
            f"argument name */\n#include <stdint.h>\n{linkage}int kl_launch({_KL_LAUNCH})\n{{\n"
            f"{unused}{body}\n}}\n")
