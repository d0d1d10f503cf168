"""An imported workload, tried as the gate will use it, before the import counts (shared by
``klineage import kernelbench`` and ``klineage import flashinfer-bench``).

    python -m klineage.workload._import_verify WORKLOAD RESULT.json

Runs in its own process (the generated reference runs the imported benchmark's code). With klineage's own
loader, input generator and reference runner: the reference at the quick sizes and at every
check shape on inputs drawn from the declared inits (an index input whose range follows an axis,
or a log of values the init made negative, shows here), then the gate's refusal of degenerate
workloads on the check shapes that ran.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from klineage.errors import KlineageError
from klineage.workload import check_not_degenerate, generate_inputs, load_reference, load_workload
from klineage.workload.model import Workload
from klineage.workload.reference import host_float64, run_reference


def verify(root: Path) -> dict[str, Any]:
    workload = load_workload(root, quick=True)
    reference = load_reference(workload)
    problem = _problem_at(workload, reference, workload.axes)
    if problem:
        return {"error": f"the reference fails at the quick sizes: {problem}"}
    failed = {}
    for index, axes in enumerate(workload.check_shapes):
        problem = _problem_at(workload, reference, axes)
        if problem:
            failed[index] = problem
    kept = tuple(s for i, s in enumerate(workload.check_shapes) if i not in failed)
    try:
        check_not_degenerate(workload.model_copy(update={"check_shapes": kept}), reference)
    except KlineageError as exc:
        return {"error": f"the gate would refuse it: {_one_line(exc)}"}
    return {"failed": failed}


def _problem_at(workload: Workload, reference: Any, axes: dict[str, int]) -> str | None:
    try:
        outputs = run_reference(workload, reference, generate_inputs(workload, axes, seed=7), axes)
    except KlineageError as exc:  # the staging folder's path says nothing: keep the reason
        return _one_line(exc).removeprefix(f"{workload.reference_path}: ")
    for name, value in outputs.items():
        array = host_float64(value)
        if array.dtype.kind == "f" and not np.isfinite(array).all():
            return f"output {name!r} has NaN or Inf on inputs drawn from the declared inits"
    return None


def _one_line(exc: Exception) -> str:
    return str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__


def main(argv: list[str]) -> int:
    root, result = Path(argv[1]), Path(argv[2])
    try:
        payload = verify(root)
    except Exception as exc:  # the generated reference or the imported code failed in a way not foreseen
        payload = {"error": f"the written workload does not run: {type(exc).__name__}: {_one_line(exc)}"}
    result.write_text(json.dumps(payload))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
