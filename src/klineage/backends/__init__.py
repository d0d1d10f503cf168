"""Backends: build and run kernels on one kind of device (see ``base`` for the seam).

A backend is one file, ``backends/<name>.py``, whose ``BACKEND`` is its class; the languages it
builds name it in ``workload.LANGUAGES`` (``null`` builds none: it is chosen by name, for
testing the pipeline). Modules are imported only when asked for, so a CPU-only install never
loads GPU code.
"""

from __future__ import annotations

import importlib
import pkgutil

from klineage.backends._flags import ALLOWED_FLAGS_HELP
from klineage.backends.base import Backend, BuildResult, Ceilings, Device
from klineage.errors import ConfigError
from klineage.workload import LANGUAGES

__all__ = ["ALLOWED_FLAGS_HELP", "BACKEND_NAMES", "Backend", "BuildResult", "Ceilings", "Device",
           "backend_for", "get_backend"]

BACKEND_NAMES = tuple(sorted(module.name for module in pkgutil.iter_modules(__path__)
                             if not module.name.startswith("_") and module.name != "base"))
"""The backends whose file is here (a language may name one not written yet: triton)."""


def get_backend(name: str) -> Backend:
    """A backend by name: ``backends/<name>.py``'s ``BACKEND``."""
    if name not in BACKEND_NAMES:
        raise ConfigError(f"unknown backend {name!r} (known: {', '.join(BACKEND_NAMES)})")
    return importlib.import_module(f"klineage.backends.{name}").BACKEND()


def backend_for(language: str) -> Backend:
    """The backend that builds a kernel language."""
    lang = LANGUAGES.get(language)
    if lang is None or lang.backend not in BACKEND_NAMES:
        raise ConfigError(f"no backend builds {language!r} kernels yet")
    return get_backend(lang.backend)
