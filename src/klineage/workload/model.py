"""The workload and kernel models (DESIGN.md §3). Loaded and validated by ``loader``."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from klineage.workload import _expr
from klineage.workload.dtypes import dtype_info

__all__ = ["Cost", "KernelSpec", "Language", "TensorSpec", "Tolerance", "Workload"]

Language = Literal["c", "cpp", "cuda", "triton", "python", "python_cuda"]


class TensorSpec(BaseModel):
    """One input or output tensor of a workload."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(description="Argument name; the reference receives inputs by this name.")
    shape: tuple[str | int, ...] = Field(
        description="Dims: axis names, integers, or arithmetic over axis names such as 'N-2'."
    )
    dtype: str = Field(description="float16|bfloat16|float32|float64|int8|int32|int64|uint8|bool")
    init: str = Field(
        default="",
        description="normal | normal:MEAN:STD | uniform | uniform:LO:HI | randint:LO:HI | bernoulli; "
        "empty means the dtype's default (normal for floats).",
    )
    check_inits: tuple[str, ...] = Field(
        default=(),
        description="More distributions correctness is checked on (never timed), each an init "
        "with an optional shaping: 'INIT|sorted', '|constant_rows', '|duplicates'.",
    )
    order: Literal["fixed", "free"] = Field(
        default="fixed",
        description="Outputs: 'free' compares each row (the last dim) with the reference's as a "
        "multiset, in any order (a top-k's values, unsorted).",
    )
    indexes: str = Field(
        default="",
        description="Outputs: 'INPUT:VALUES' makes each row distinct positions in the same row of "
        "input INPUT at which INPUT equals output VALUES (a top-k's indices: ties may pick any); "
        "checked by that rule, never against the reference's own indices.",
    )

    def dims(self, axes: dict[str, int]) -> tuple[int, ...]:
        """Concrete dims for one set of axis values."""
        return tuple(d if isinstance(d, int) else int(_expr.evaluate(d, axes)) for d in self.shape)


class Tolerance(BaseModel):
    """Elementwise tolerance: |out - ref| <= atol + rtol * |ref|. Unset means the dtype default."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rtol: float | None = Field(default=None, ge=0)
    atol: float | None = Field(default=None, ge=0)


class Cost(BaseModel):
    """The fewest bytes one call must move and flops it must do, as expressions over axes."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    bytes: str | None = None
    flops: str | None = None

    def evaluate(self, axes: dict[str, int]) -> tuple[float | None, float | None]:
        """(bytes, flops) for one set of axis values; None where undeclared."""
        return (
            _expr.evaluate(self.bytes, axes) if self.bytes else None,
            _expr.evaluate(self.flops, axes) if self.flops else None,
        )


class KernelSpec(BaseModel):
    """One kernel variant: a source file plus its optional kernel.toml settings."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(description="Variant name (its folder name).")
    source: Path = Field(description="The kernel's main source file.")
    language: Language
    entry: str = Field(default="kl_launch", description="Exported launch function.")
    flags: tuple[str, ...] = Field(default=(), description="Extra compiler flags.")
    threads: int | None = Field(default=None, ge=1, description="CPU threads to time with.")
    allow_symbols: tuple[str, ...] = Field(
        default=(), description="Library symbols the static check should allow for this kernel."
    )

    @property
    def folder(self) -> Path:
        return self.source.parent

    def source_files(self) -> list[Path]:
        """Every file of the kernel folder: all of them feed the fingerprint."""
        return sorted(p for p in self.folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts)

    def source_hash(self) -> str:
        """The content hash of what is built: the file given (by name), every file of its folder
        (its includes among them: a build reads nothing else of the candidate's), the language,
        entry and flags. Two kernel files in one folder hash apart."""
        digest = hashlib.sha256(self.source.name.encode() + b"\0")
        for path in self.source_files():
            digest.update(path.relative_to(self.folder).as_posix().encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
        digest.update(repr((self.language, self.entry, self.flags)).encode())
        return digest.hexdigest()


class Workload(BaseModel):
    """A validated workload folder (workload.toml + reference.py + kernels/)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    root: Path
    name: str
    op: str
    description: str = ""
    tags: tuple[str, ...] = ()
    framework: Literal["numpy", "torch"] = "numpy"
    axes: dict[str, int] = Field(description="Benchmark sizes, in declared order.")
    quick: bool = Field(False, description="True when loaded at the workload's [quick_axes] sizes.")
    check_shapes: tuple[dict[str, int], ...] = ()
    params: dict[str, float] = Field(default_factory=dict)
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    tolerance: Tolerance = Tolerance()
    output_tolerance: dict[str, Tolerance] = Field(default_factory=dict)
    cost: Cost = Cost()

    @property
    def reference_path(self) -> Path:
        return self.root / "reference.py"

    def shapes(self) -> list[dict[str, int]]:
        """The benchmark sizes first, then every check shape."""
        return [dict(self.axes), *(dict(s) for s in self.check_shapes)]

    def tolerance_for(self, output: TensorSpec) -> tuple[float, float]:
        """(rtol, atol) for one output: per-output table, else workload table, else dtype."""
        info = dtype_info(output.dtype)
        specific = self.output_tolerance.get(output.name, Tolerance())
        rtol = next(v for v in (specific.rtol, self.tolerance.rtol, info.rtol) if v is not None)
        atol = next(v for v in (specific.atol, self.tolerance.atol, info.atol) if v is not None)
        return rtol, atol

    def kernel_variants(self) -> list[str]:
        folder = self.root / "kernels"
        return sorted(p.name for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []

    def fingerprint(self) -> str:
        digest = hashlib.sha256()
        for path in (self.root / "workload.toml", self.reference_path):
            digest.update(path.read_bytes())
        if self.quick:  # other sizes, other timings: never share a cache entry with [axes]
            digest.update(b"\0quick")
        return digest.hexdigest()[:16]
