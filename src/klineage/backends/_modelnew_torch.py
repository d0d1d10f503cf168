"""The interpreter and torch a ModelNew build compiles against: the runner embeds this Python,
and an extension is compiled with torch's headers and flags as ``load_inline`` would."""

from __future__ import annotations

import sys
import sysconfig
from functools import cache
from pathlib import Path

from klineage.errors import ToolchainError

__all__ = ["embedded_python", "torch_compile_flags", "torch_paths"]


@cache
def embedded_python() -> dict:
    """This interpreter, which the runner embeds: its headers, shared library and module path
    (the trusted side's own, without the working directory)."""
    libdir = Path(sysconfig.get_config_var("LIBDIR") or sys.base_prefix)
    # its configured names first; a distribution may ship the shared library beside a static build
    names = [sysconfig.get_config_var(k) or "" for k in ("INSTSONAME", "LDLIBRARY")]
    found = [libdir / n for n in names if ".so" in n]
    found += sorted(libdir.glob(f"libpython{sysconfig.get_config_var('LDVERSION')}.so*"))
    library = next((p for p in found if p.is_file()), None)
    if library is None:
        raise ToolchainError(f"ModelNew kernels embed Python, and {sys.executable} has no shared "
                             f"libpython in {libdir} (a Python built with --enable-shared has one)")
    return {"include": sysconfig.get_paths()["include"], "libdir": str(libdir), "library": str(library),
            "home": sys.base_prefix, "version": sys.version,
            "path": [p for p in sys.path if p and Path(p).exists()]}


@cache
def torch_paths(device_type: str) -> tuple[list[str], list[str], bool]:
    """torch's include and library paths for an extension on this device (CUDA: the toolkit's
    too), and its C++ ABI."""
    import torch
    from torch.utils import cpp_extension

    return (cpp_extension.include_paths(device_type), cpp_extension.library_paths(device_type),
            bool(torch._C._GLIBCXX_USE_CXX11_ABI))


def torch_compile_flags(name: str, device_type: str) -> list[str]:
    """The flags load_inline gives both of an extension's compilers (g++ and nvcc)."""
    includes, _, abi = torch_paths(device_type)
    return [*(arg for path in (*includes, embedded_python()["include"]) for arg in ("-isystem", path)),
            f"-DTORCH_EXTENSION_NAME={name}", "-DTORCH_API_INCLUDE_EXTENSION_H",
            f"-D_GLIBCXX_USE_CXX11_ABI={int(abi)}"]
