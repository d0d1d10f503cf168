"""A bench's results in KernelBench's terms, written beside bench.json as kernelbench.json.

One record per (problem, method, repeat): whether the method's best kernel compiled and was
correct (a run that failed counts as neither), its runtime, and its speedup over the eager
reference where the workload's reference is a torch program (imported KernelBench problems and
FlashInfer-Bench definitions). The eager time is the wall clock of one reference call (median of
five after a warm-up, synchronized on a GPU), measured in this process after the grid; a numpy
reference in float64 is no eager baseline and gets none. klineage does not run torch.compile,
so that speedup is always absent (None), never estimated.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from klineage.errors import KlineageError
from klineage.workload import Workload, load_kernel, load_workload
from klineage.workload.reference import reference_ms

__all__ = ["kernelbench_results"]


def kernelbench_results(results: list[dict[str, Any]], folders: list[Path], quick: bool,
                        start: str) -> dict[str, Any]:
    eager = {}
    for folder in folders:
        workload = load_workload(folder, quick=quick)
        eager[workload.name] = _eager_ms(workload, start)
    records = []
    for row in results:
        eager_ms = eager.get(row["workload"])
        ok = row["status"] == "ok"
        runtime = row.get("best_ms") if ok else None
        records.append({
            "problem": row["workload"], "method": row["method"], "repeat": row["repeat"],
            "compiled": ok, "correctness": ok, "runtime_ms": runtime,
            "start_runtime_ms": row.get("start_ms"), "ref_runtime_ms": eager_ms,
            "speedup_over_eager": eager_ms / runtime if eager_ms and runtime else None,
            "speedup_over_torch_compile": None,
            "speedup_over_start": row["speedup_vs_start"] if ok else None,
            "reason": row["reason"]})
    return {"format": "klineage kernelbench-style results, schema 1",
            "eager": "median wall clock of a torch reference call after a warm-up (None: no torch reference)",
            "torch_compile": "not measured", "results": records}


def _eager_ms(workload: Workload, start: str) -> float | None:
    if workload.framework != "torch":
        return None
    try:
        device = "cuda" if load_kernel(workload, start).language == "cuda" else "cpu"
        return reference_ms(workload, device)
    except (KlineageError, ImportError, RuntimeError):  # no torch or no device here: not measured
        return None
