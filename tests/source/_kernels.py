"""Helpers for the source tests: the bundled expert kernels, and writing edited kernels out."""

from __future__ import annotations

from pathlib import Path

from klineage.source import Edit, removal_edits, removal_order
from klineage.workload import KernelSpec, Workload, load_kernel, load_workload

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "workloads"
CPU_WORKLOADS = sorted(p.name for p in (EXAMPLES / "cpu").iterdir() if (p / "workload.toml").is_file())
CUDA_WORKLOADS = sorted(p.name for p in (EXAMPLES / "cuda").iterdir() if (p / "workload.toml").is_file())


def workload(kind: str, name: str) -> Workload:
    """At the quick sizes where the workload has them: every check shape is still checked, and a
    correctness check at the full benchmark size took 8x as long (benchmarks/ gate full sizes)."""
    return load_workload(EXAMPLES / kind / name, quick=True)


def source_of(kind: str, name: str, variant: str) -> tuple[str, KernelSpec]:
    spec = load_kernel(workload(kind, name), variant)
    return spec.source.read_text(), spec


def write_kernel(folder: Path, load_from: Workload, text: str, language: str,
                 flags: tuple[str, ...]) -> KernelSpec:
    """A kernel folder holding ``text`` and a kernel.toml with ``flags``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / ("kernel.cu" if language == "cuda" else "kernel.c")).write_text(text)
    quoted = ", ".join(f'"{f}"' for f in flags)
    (folder / "kernel.toml").write_text(f'language = "{language}"\nflags = [{quoted}]\n')
    return load_kernel(load_from, folder)


def apply_flags(flags: tuple[str, ...], edit: Edit) -> tuple[str, ...]:
    kept = tuple(f for f in flags if f not in edit.flags_removed)
    return kept + tuple(f for f in edit.flags_added if f not in kept)


def backward_walk(text: str, language: str, flags: tuple[str, ...], max_steps: int = 30):
    """Remove one feature at a time (first in removal order), re-detecting after each step.
    Returns [(edit, text, flags)] per step."""
    steps = []
    for _ in range(max_steps):
        edits = removal_edits(text, language, flags)
        if not edits:
            return steps
        order = removal_order(e.feature for e in edits)
        edit = next(e for e in edits if e.feature == order[0])
        text, flags = edit.new_source, apply_flags(flags, edit)
        steps.append((edit, text, flags))
    raise AssertionError(f"no fixed point after {max_steps} steps")
