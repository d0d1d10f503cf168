"""One gate job on the trusted side: each kernel in its own sandboxed runner, the checks and
timing decided by a ``TrustedSession`` in this process."""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from klineage.backends.base import Backend
from klineage.gate._trusted import TrustedSession
from klineage.gate.sandbox import Arena, Candidate, CandidateFailed
from klineage.gate.stats import comparison_record
from klineage.workload.model import Workload

__all__ = ["run_sandboxed"]


def run_sandboxed(workload: Workload, backend: Backend, job: dict[str, Any],
                  builds: list[tuple[Any, str]], stall_s: float, memory_bytes: int | None,
                  progress: Callable[[str, str], None]) -> dict[str, Any]:
    """One gate job (``mode`` 'gate' or 'compare') with each kernel in its own runner; the
    result: outcome, reason, checks, and timing or comparison."""
    # The round trips are timed here, so nothing of ours may delay reading a reply: a
    # collection of a large heap, or another thread of this process holding the GIL for its
    # 5 ms switch interval (a loopback LLM server in the tests), once made an honest clock look
    # forged. Refcounting still frees; cycles wait until the job is done, as timeit does.
    collecting, interval = gc.isenabled(), sys.getswitchinterval()
    gc.disable()
    sys.setswitchinterval(1e-5)
    try:
        return _run_job(workload, backend, job, builds, stall_s, memory_bytes, progress)
    finally:
        sys.setswitchinterval(interval)
        if collecting:
            gc.enable()


def _run_job(workload: Workload, backend: Backend, job: dict[str, Any],
             builds: list[tuple[Any, str]], stall_s: float, memory_bytes: int | None,
             progress: Callable[[str, str], None]) -> dict[str, Any]:
    threads = job["threads"] or 1
    runner, env = backend.sandbox_runner(), backend.sandbox_env(threads)

    def start(artifact: Path, sha256: str, entry: str) -> Callable[[Arena, Arena], Candidate]:
        return lambda ins, outs: Candidate(runner, (artifact, sha256), entry, ins, outs, threads,
                                           memory_bytes, stall_s, env)

    device = backend.open_device(threads)
    session = TrustedSession(workload, device, job["seeds"], threads, progress, job["timing"],
                             start(*backend.calibration_kernel(), "kl_launch"))
    try:
        candidates = []
        for build, entry in builds:
            progress("sandbox", "starting the kernel's runner")
            candidates.append(session.load(start(build.artifact, build.artifact_sha256, entry)))
        if job["mode"] == "compare":
            pairs = session.paired_times(candidates[0], candidates[1], job["timing"])
            if isinstance(pairs[0], str):
                return {"outcome": pairs[0], "reason": pairs[1]}
            return {"outcome": "ok", "comparison": comparison_record(
                *pairs, seed=int(job["timing"]["seed"]))}
        failure = session.check_correctness(candidates[0]) if job["check"] else None
        if failure:
            return {"outcome": failure[0], "reason": failure[1], "checks": session.checks_done}
        result: dict[str, Any] = {"outcome": "ok", "checks": session.checks_done}
        if job["profile"]:
            outcome = session.profile(candidates[0], job["timing"])
            if isinstance(outcome, tuple):
                return {"outcome": outcome[0], "reason": outcome[1], "checks": session.checks_done}
            result["timing"] = outcome
        return result
    except CandidateFailed as exc:
        return {"outcome": exc.outcome, "reason": exc.reason, "checks": session.checks_done}
    finally:
        session.close()
