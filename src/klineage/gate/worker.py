"""The gate's isolated worker: correctness checks and timing of built kernels.

Run as ``python -m klineage.gate.worker --stdin [MODULE ...]`` by ``gate.isolation``: it imports
the modules, then reads the path of its job from stdin (so a standby worker can pay its start-up
while the previous candidate runs). Never imported by the parent for running kernels. A
candidate that crashes, hangs or exhausts memory takes only this process down. It reports
through two files named in the job: ``progress`` (one JSON line per step, so the parent can tell
where a crash or hang happened) and ``result`` (written last).
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from klineage.backends import get_backend
from klineage.errors import KlineageError
from klineage.gate import _checks
from klineage.gate.stats import comparison_record

__all__ = ["main"]


class _Progress:
    def __init__(self, path: str):
        self._file = open(path, "a", buffering=1)  # noqa: SIM115 - lives as long as the worker

    def __call__(self, stage: str, detail: str) -> None:
        self._file.write(json.dumps({"t": time.time(), "stage": stage, "detail": detail}) + "\n")
        self._file.flush()


def main(argv: list[str]) -> int:
    for module in argv[2:]:
        importlib.import_module(module)
    job_path = sys.stdin.readline().strip()
    if not job_path:  # the parent went away before handing over a job
        return 0
    job = json.loads(Path(job_path).read_text())
    progress = _Progress(job["progress"])
    progress("worker", "started")
    try:
        result = _run(job, progress)
    except KlineageError as exc:
        result = {"error": {"type": type(exc).__name__, "message": str(exc)}}
    except MemoryError:
        result = {"outcome": "crashed",
                  "reason": "ran out of memory (the worker's memory limit was reached)"}
    tmp = Path(job["result"] + ".tmp")
    tmp.write_text(json.dumps(result))
    os.replace(tmp, job["result"])
    return 0


def _run(job: dict[str, Any], progress: _Progress) -> dict[str, Any]:
    backend = get_backend(job["backend"])
    device = backend.open_device(job.get("threads"))
    progress("worker", "device ready")
    session = _checks.Session(job, device, progress)
    kernels = [session.load(k["artifact"], k["entry"]) for k in job["kernels"]]
    if job["mode"] == "compare":
        return _compare(session, kernels[0], kernels[1], job["timing"])
    failure = session.check_correctness(kernels[0]) if job.get("check", True) else None
    if failure:
        return {"outcome": failure[0], "reason": failure[1], "checks": session.checks_done}
    result: dict[str, Any] = {"outcome": "ok", "checks": session.checks_done}
    if job.get("profile", True):
        outcome = session.profile(kernels[0], job["timing"])
        if isinstance(outcome, tuple):
            return {"outcome": outcome[0], "reason": outcome[1], "checks": session.checks_done}
        result["timing"] = outcome
    return result


def _compare(session: _checks.Session, a: Any, b: Any, timing: dict[str, Any]) -> dict[str, Any]:
    pairs = session.paired_times(a, b, timing)
    if isinstance(pairs, tuple) and isinstance(pairs[0], str):
        return {"outcome": pairs[0], "reason": pairs[1]}
    return {"outcome": "ok", "comparison": comparison_record(*pairs, seed=int(timing.get("seed", 0)))}


if __name__ == "__main__":
    sys.exit(main(sys.argv))
