"""Backends: build and run kernels on one kind of device (see ``base`` for the seam)."""

from __future__ import annotations

from klineage.backends.base import Backend, BuildResult, Ceilings, Device
from klineage.errors import ConfigError

__all__ = ["BACKEND_NAMES", "Backend", "BuildResult", "Ceilings", "Device", "backend_for",
           "get_backend"]

BACKEND_NAMES = ("cpu", "cuda")
_FOR_LANGUAGE = {"c": "cpu", "cpp": "cpu", "cuda": "cuda"}


def get_backend(name: str) -> Backend:
    """A backend by name; imports lazily so a CPU-only install never loads GPU code."""
    if name == "cpu":
        from klineage.backends.cpu import CpuBackend

        return CpuBackend()
    if name == "cuda":
        from klineage.backends.cuda import CudaBackend

        return CudaBackend()
    raise ConfigError(f"unknown backend {name!r} (known: {', '.join(BACKEND_NAMES)})")


def backend_for(language: str) -> Backend:
    """The backend that builds a kernel language."""
    if language not in _FOR_LANGUAGE:
        raise ConfigError(f"no backend builds {language!r} kernels yet")
    return get_backend(_FOR_LANGUAGE[language])
