"""Every environment variable klineage reads is read here, and only here."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

__all__ = ["c_compiler", "cache_dir", "cuda_arch", "cuobjdump", "cxx_compiler", "nvcc", "nvdisasm"]
__all__ += ["anthropic_base_url", "anthropic_model", "api_key", "brain_name", "config_path",
            "openai_base_url", "openai_model", "spool_key"]


def cache_dir() -> Path:
    """Where builds and measured ceilings are cached (``KLINEAGE_CACHE_DIR``, else XDG cache)."""
    explicit = os.environ.get("KLINEAGE_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "klineage"


def c_compiler() -> str:
    """The C compiler (``CC``, else gcc, else clang)."""
    return os.environ.get("CC") or _first_on_path("gcc", "clang", "cc")


def cxx_compiler() -> str:
    """The C++ compiler (``CXX``, else g++, else clang++)."""
    return os.environ.get("CXX") or _first_on_path("g++", "clang++", "c++")


def nvcc() -> str:
    """The CUDA compiler (``NVCC``, else nvcc on PATH, else CUDA_HOME/bin/nvcc)."""
    if os.environ.get("NVCC"):
        return os.environ["NVCC"]
    found = shutil.which("nvcc")
    return found or str(Path(_cuda_home()) / "bin" / "nvcc")


def _cuda_home() -> str:
    return os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or "/usr/local/cuda"


def _first_on_path(*names: str) -> str:
    for name in names:
        if shutil.which(name):
            return name
    return names[0]


def cuda_arch() -> str | None:
    """Target for CUDA builds (``KLINEAGE_CUDA_ARCH``, e.g. ``sm_90a``); None: ask the device."""
    return os.environ.get("KLINEAGE_CUDA_ARCH") or None


def cuobjdump() -> str | None:
    """cuobjdump from ``CUOBJDUMP``, PATH, the nvidia-cuda-cuobjdump wheel or triton's copy."""
    return _cuda_tool("cuobjdump", "CUOBJDUMP")


def nvdisasm() -> str | None:
    """nvdisasm (which cuobjdump runs for SASS) from ``NVDISASM``, PATH or its wheel."""
    return _cuda_tool("nvdisasm", "NVDISASM")


def _cuda_tool(name: str, variable: str) -> str | None:
    if os.environ.get(variable):
        return os.environ[variable]
    found = shutil.which(name)
    if found:
        return found
    for package, relative in (("nvidia.cu13", f"bin/{name}"),
                              ("triton", f"backends/nvidia/bin/{name}")):
        try:
            module = __import__(package, fromlist=["__file__"])
        except ImportError:
            continue
        for root in getattr(module, "__path__", []):
            candidate = Path(root) / relative
            if candidate.is_file():
                return str(candidate)
    return None


def cupti() -> tuple[Path, Path] | None:
    """CUPTI's header folder and shared library (``CUPTI_HOME``, else beside nvcc's toolkit, else
    the nvidia-cuda-cupti wheel): the CUDA runner times every GPU activity with it."""
    roots = [Path(os.environ["CUPTI_HOME"])] if os.environ.get("CUPTI_HOME") else []
    for toolkit in dict.fromkeys([Path(nvcc()).resolve().parent.parent, Path(_cuda_home())]):
        roots += [toolkit, toolkit / "extras" / "CUPTI", *sorted(toolkit.glob("targets/*"))]
    for package in ("nvidia.cu13", "nvidia.cuda_cupti"):
        try:
            module = __import__(package, fromlist=["__file__"])
        except ImportError:
            continue
        roots += [Path(folder) for folder in getattr(module, "__path__", [])]
    for root in roots:
        if not (root / "include" / "cupti.h").is_file():
            continue
        for lib in ("lib64", "lib"):
            # the shortest name is the link name or the soname, never the versioned file
            found = sorted((root / lib).glob("libcupti.so*"), key=lambda f: len(f.name))
            if found:
                return root / "include", found[0].parent.resolve() / found[0].name
    return None


# --- brains (LLM APIs, agent CLIs) --------------------------------------------------------------

def config_path() -> Path | None:
    """An explicit ``klineage.toml`` (``KLINEAGE_CONFIG``); None: look in the current directory."""
    value = os.environ.get("KLINEAGE_CONFIG")
    return Path(value).expanduser() if value else None


def brain_name() -> str | None:
    """The brain to use when no ``--brain`` is given (``KLINEAGE_BRAIN``)."""
    return os.environ.get("KLINEAGE_BRAIN") or None


def openai_base_url() -> str | None:
    """An OpenAI-compatible server (``OPENAI_BASE_URL``: vLLM, SGLang, Ollama, llama.cpp, ...)."""
    return os.environ.get("OPENAI_BASE_URL") or None


def openai_model() -> str | None:
    return os.environ.get("KLINEAGE_OPENAI_MODEL") or None


def anthropic_base_url() -> str | None:
    return os.environ.get("ANTHROPIC_BASE_URL") or None


def anthropic_model() -> str | None:
    return os.environ.get("KLINEAGE_ANTHROPIC_MODEL") or None


def api_key(provider: str) -> str | None:
    """``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY``. Handed to the SDK only; never logged or stored."""
    variable = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}[provider]
    return os.environ.get(variable) or None


def spool_key() -> bytes | None:
    """The secret a spool's jobs and results are signed with (``KLINEAGE_SPOOL_KEY``), shared by
    the run and its workers and by no one else who can write the spool folder."""
    key = os.environ.get("KLINEAGE_SPOOL_KEY", "")
    return key.encode() if key else None
