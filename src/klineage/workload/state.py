"""A kernel version as data: what the walk, the brains and the optimizer pass around."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from pathlib import Path

from klineage.workload.languages import LANGUAGES
from klineage.workload.loader import load_kernel
from klineage.workload.model import KernelSpec, Workload

__all__ = ["KernelState"]



@dataclass(frozen=True)
class KernelState:
    """One kernel's source and build settings; its fingerprint names it everywhere."""

    source: str
    language: str
    flags: tuple[str, ...] = ()
    entry: str = "kl_launch"
    threads: int | None = None

    @classmethod
    def from_spec(cls, spec: KernelSpec) -> KernelState:
        return cls(source=spec.source.read_text(), language=spec.language, flags=spec.flags,
                   entry=spec.entry, threads=spec.threads)

    @classmethod
    def load(cls, folder: Path, workload: Workload) -> KernelState:
        """A state written by ``materialize`` (resume reads them back)."""
        return cls.from_spec(load_kernel(workload, folder))

    @property
    def fingerprint(self) -> str:
        text = "\0".join([self.language, self.entry, *self.flags, self.source])
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    @property
    def file_name(self) -> str:
        return LANGUAGES[self.language].file_name

    def with_source(self, source: str, flags_removed: tuple[str, ...] = (),
                    flags_added: tuple[str, ...] = ()) -> KernelState:
        flags = tuple(f for f in self.flags if f not in flags_removed)
        flags += tuple(f for f in flags_added if f not in flags)
        return replace(self, source=source, flags=flags)

    def materialize(self, folder: Path, workload: Workload) -> KernelSpec:
        """Write the state as a kernel folder (kernel file + kernel.toml) and load it."""
        folder.mkdir(parents=True, exist_ok=True)
        (folder / self.file_name).write_text(self.source)
        lines = [f'language = "{self.language}"', f'entry = "{self.entry}"',
                 "flags = [" + ", ".join(f'"{f}"' for f in self.flags) + "]"]
        if self.threads:
            lines.append(f"threads = {self.threads}")
        (folder / "kernel.toml").write_text("\n".join(lines) + "\n")
        return load_kernel(workload, folder)
