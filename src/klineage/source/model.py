"""The source model's records: where a feature lives, and a proposed rewrite (DESIGN.md §5)."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["CATEGORIES", "Edit", "FeatureHit", "FeatureInfo", "Site", "unified_diff"]

CATEGORIES = ("parallelism", "memory", "compute", "pipeline", "layout", "tuning")
"""Removal order of the backward walk runs from the end of this tuple to its start: tuning and
instruction-level features go before memory-level ones, parallelism last."""


@dataclass(frozen=True)
class Site:
    """A span of one source file (1-based lines, 0-based byte offsets, end exclusive)."""

    start_line: int
    end_line: int
    start_byte: int
    end_byte: int
    text: str
    """The source text of the span (the anchor a person reads)."""
    scope: str = ""
    """The enclosing function's name, '' at file scope."""


@dataclass(frozen=True)
class FeatureHit:
    """One place where a feature is present."""

    feature: str
    site: Site
    detail: str = ""
    removable: bool = True
    """The feature's removal pass handles this site (False: e.g. a manually unrolled loop, a
    swizzle entangled with descriptors, intrinsics outside an ISA guard)."""


@dataclass(frozen=True)
class FeatureInfo:
    """A catalogue entry."""

    name: str
    category: str
    languages: tuple[str, ...]
    description: str
    removable: bool
    """A deterministic removal pass exists (the rules brain can propose its removal)."""
    insertable: bool
    """A mechanical insertion pass exists (the rules brain can re-derive or materialize it)."""
    compiled_signature: str = ""
    """What the compiled output shows while the feature is present ('' when nothing reliable)."""


@dataclass(frozen=True)
class Edit:
    """A whole-file rewrite that removes or inserts one feature, with its readable diff."""

    feature: str
    direction: Literal["remove", "insert"]
    pass_name: str
    old_source: str
    new_source: str
    sites: tuple[Site, ...]
    params: dict[str, Any] = field(default_factory=dict)
    """Tunables the pass used (e.g. unroll factor), recorded in skill carriers."""
    flags_removed: tuple[str, ...] = ()
    """Compiler flags the edit drops from kernel.toml (e.g. -fopenmp with the last omp pragma)."""
    flags_added: tuple[str, ...] = ()

    @property
    def diff(self) -> str:
        return unified_diff(self.old_source, self.new_source)


def unified_diff(old: str, new: str, name: str = "kernel") -> str:
    """A unified diff between two versions of a file."""
    return "".join(difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                        fromfile=f"a/{name}", tofile=f"b/{name}"))
