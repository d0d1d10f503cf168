"""Pieces every ``klineage import`` shares: running a helper module in a fresh interpreter with a
timeout, the tolerance table of imported workloads, the bytes of a call, and swapping a staged
folder into place."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

import klineage
from klineage.workload.dtypes import dtype_info

__all__ = ["TOLERANCES", "bytes_expression", "install", "run_module", "staging_folder"]

TOLERANCES = {"float64": (1e-9, 1e-9), "float32": (1e-4, 1e-4), "float16": (5e-3, 5e-3),
              "bfloat16": (2e-2, 2e-2)}
"""(rtol, atol) per output dtype. The reference runs in the problem's dtype; a kernel computing
in the next lower precision (fp16 or bf16 for an fp32 problem) misses these by 5x or more."""


def run_module(module: str, target: Path, timeout_s: float, memory_bytes: int | None = None) -> dict:
    """Run ``python -m MODULE TARGET RESULT`` in a fresh interpreter (its address space capped at
    ``memory_bytes`` where given) and return its JSON result; {"error": ...} when it times out or
    dies without writing one."""
    with tempfile.TemporaryDirectory(prefix="klineage-import-") as scratch:
        result = Path(scratch) / "result.json"
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [str(Path(klineage.__file__).parent.parent), os.environ.get("PYTHONPATH", "")]))
        command = [sys.executable, "-m", module, str(target.resolve()), str(result)]
        try:
            finished = subprocess.run(command, cwd=scratch, env=env, capture_output=True, text=True,
                                      timeout=timeout_s, stdin=subprocess.DEVNULL,
                                      preexec_fn=None if memory_bytes is None else
                                      lambda: _cap_memory(memory_bytes))
        except subprocess.TimeoutExpired:
            return {"error": f"timed out after {timeout_s:g} s (--timeout to allow longer)"}
        if not result.is_file():
            tail = (finished.stderr.strip().splitlines() or [f"exit status {finished.returncode}"])[-1]
            name = module.rsplit(".", 1)[-1].strip("_").removeprefix("import_")
            return {"error": f"the {name} process died: {tail}"}
        return json.loads(result.read_text())


def _cap_memory(limit: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def bytes_expression(tensors: Iterable[tuple[list, str]]) -> str:
    """``[cost] bytes``: every (shape, dtype) once at its dtype's size, as arithmetic over axes."""
    terms = []
    for shape, dtype in tensors:
        dims = [str(d) if isinstance(d, int) or d.isidentifier() else f"({d})" for d in shape]
        terms.append("*".join([str(dtype_info(dtype).numpy.itemsize), *dims]))
    return " + ".join(terms)


def staging_folder(folder: Path) -> Path:
    """A fresh path beside ``folder`` to write into; ``install`` moves it into place."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent)) / folder.name


def install(staging: Path, folder: Path) -> None:
    """Replace ``folder`` with the staged one (the only moment a written workload appears)."""
    if folder.exists():
        shutil.rmtree(folder)
    staging.rename(folder)
    staging.parent.rmdir()
