"""One gate job on the trusted side: each kernel in its own sandboxed runner, the checks and
timing decided by a ``TrustedSession`` in this process. ``GateJob`` is what the gate asks for,
``JobResult`` what it gets back."""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from klineage.backends.base import Backend
from klineage.gate._layout import TimingPlan
from klineage.gate._phases import compare, profile
from klineage.gate._trusted import TrustedSession
from klineage.gate.report import ClockCheck, TimingStats
from klineage.gate.sandbox import Arena, Candidate, CandidateFailed
from klineage.gate.stats import beside_and_alone, comparison_record
from klineage.workload.model import Workload

__all__ = ["GateJob", "JobResult", "TimingPlan", "run_sandboxed"]


class GateJob(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    mode: Literal["gate", "compare"]
    """gate: one kernel's correctness (``check``) and timing (``profile``); compare: two
    kernels' paired timing."""
    threads: int | None
    seeds: list[int]
    """Fixed seeds, then the run's secret one (last)."""
    check: bool = True
    profile: bool = True
    timing: TimingPlan


class PairedTimes(BaseModel):
    """What a compare job measured (``gate.Comparison`` less the kernels' names)."""

    model_config = ConfigDict(extra="forbid")
    ratio: float
    ci_low: float
    ci_high: float
    pairs: int
    decision: str
    baseline_median_s: float
    candidate_median_s: float
    baseline_solo_s: float | None = None
    """The baseline's median alone (before the candidate's runner started), on the clock its
    pairs were timed by."""
    baseline_spread: float
    candidate_spread: float
    baseline_clock: ClockCheck
    candidate_clock: ClockCheck
    other_cores: float | None


class JobResult(BaseModel):
    model_config = ConfigDict(extra="forbid")
    outcome: Literal["ok", "incorrect", "crashed", "rejected_cheat", "timeout"]
    reason: str = ""
    checks: int = 0
    """Calls whose outputs were compared with the reference."""
    max_errors: dict[str, float] = Field(default_factory=dict)
    """Largest absolute and relative float output errors over those calls."""
    timing: TimingStats | None = None
    comparison: PairedTimes | None = None


def run_sandboxed(workload: Workload, backend: Backend, job: GateJob,
                  builds: list[tuple[Any, str]], stall_s: float, memory_bytes: int | None,
                  progress: Callable[[str, str], None]) -> JobResult:
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


def _run_job(workload: Workload, backend: Backend, job: GateJob,
             builds: list[tuple[Any, str]], stall_s: float, memory_bytes: int | None,
             progress: Callable[[str, str], None]) -> JobResult:
    threads = job.threads or 1
    runner, env = backend.sandbox_runner(), backend.sandbox_env(threads, workload)
    files = backend.sandbox_files(workload)

    def start(artifact: Path, sha256: str, entry: str,
              wait: bool = True) -> Callable[[Arena, Arena], Candidate]:
        return lambda ins, outs: Candidate(runner, (artifact, sha256), entry, ins, outs, threads,
                                           memory_bytes, stall_s, env, files, wait)

    device = backend.open_device(threads)
    session = TrustedSession(workload, device, job.seeds, threads, progress, job.timing,
                             start(*backend.calibration_kernel(), "kl_launch", wait=False))
    try:
        makers = [start(build.artifact, build.artifact_sha256, entry) for build, entry in builds]
        progress("sandbox", "starting the kernel's runner")
        first = session.load(makers[0])
        if (job.profile or job.mode == "compare") and not job.timing.modeled:
            session.start_calibration()  # it loads while the kernel is checked
        if job.mode == "compare":  # the candidate's runner starts once its baseline ran alone
            return _compared(compare(session, first, makers[1], job.timing), job.timing.seed)
        failure = session.check_correctness(first) if job.check else None
        if failure:
            return _checked(session, outcome=failure[0], reason=failure[1])
        if not job.profile:
            return _checked(session, outcome="ok")
        outcome = profile(session, first, job.timing)
        if isinstance(outcome, tuple):
            return _checked(session, outcome=outcome[0], reason=outcome[1])
        return _checked(session, outcome="ok", timing=TimingStats(**outcome))
    except CandidateFailed as exc:
        return _checked(session, outcome=exc.outcome, reason=exc.reason)
    finally:
        session.close()


def _compared(paired: Any, seed: int) -> JobResult:
    """A compare job's result from ``TrustedSession.compare``'s; the reason says why the
    comparison could not decide when its baseline ran slower beside the candidate than alone."""
    if isinstance(paired[0], str):
        return JobResult(outcome=paired[0], reason=paired[1])
    (times_a, times_b), (clock_a, clock_b), other_cores, alone = paired
    record = comparison_record(times_a, times_b, seed=seed, alone=alone)
    return JobResult(outcome="ok", reason=beside_and_alone(times_a, alone) or "",
                     comparison=PairedTimes(**record, baseline_clock=clock_a,
                                            candidate_clock=clock_b, other_cores=other_cores))


def _checked(session: TrustedSession, **result: Any) -> JobResult:
    """A result with the session's checked-call count and largest errors."""
    return JobResult(checks=session.checks_done, max_errors=dict(session.max_errors), **result)
