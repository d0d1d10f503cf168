"""Kernel languages: the one table of what each is called on disk, how prompts and cards fence it,
and which backend builds it. Adding a language (or a backend for one) is a row here."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["LANGUAGES", "KernelLanguage", "language_of_file"]


@dataclass(frozen=True)
class KernelLanguage:
    name: str
    file_name: str
    """What a materialized kernel's source is called (``kernel.c``, ...)."""
    suffixes: tuple[str, ...]
    fence: str
    """The Markdown code-fence tag in prompts and skill cards."""
    backend: str
    """The backend that builds it (``backends/<backend>.py``)."""
    traced: bool = False
    """Its kernels call torch ops, and the gate's dispatch trace judges which (``gate/_optrace``)."""


LANGUAGES: dict[str, KernelLanguage] = {lang.name: lang for lang in (
    KernelLanguage("c", "kernel.c", (".c",), "c", "cpu"),
    KernelLanguage("cpp", "kernel.cpp", (".cpp",), "cpp", "cpu"),
    KernelLanguage("cuda", "kernel.cu", (".cu",), "cuda", "cuda"),
    KernelLanguage("triton", "kernel.py", (".py",), "python", "triton"),
    # KernelBench's ModelNew: chosen by kernel.toml (language = "python"), as Triton shares kernel.py;
    # "python_cuda" when its load_inline has cuda_sources (the backend is chosen by language)
    KernelLanguage("python", "kernel.py", (".py",), "python", "modelnew", traced=True),
    KernelLanguage("python_cuda", "kernel.py", (".py",), "python", "modelnew_cuda", traced=True),
)}


def language_of_file(name: str) -> KernelLanguage | None:
    """The language of a kernel source file, by its canonical name first, then its suffix."""
    for lang in LANGUAGES.values():
        if name == lang.file_name:
            return lang
    return next((lang for lang in LANGUAGES.values() if any(name.endswith(s) for s in lang.suffixes)),
                None)
