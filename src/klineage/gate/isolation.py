"""Running the worker in its own process, with a stall timer, a total time limit and a memory
cap, and turning every way it can die into data."""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

__all__ = ["Limits", "WorkerOutcome", "run_worker"]

_POLL_S = 0.05


@dataclass(frozen=True)
class Limits:
    """How long and how much a candidate may take before it becomes a verdict."""

    stall_s: float = 60.0
    """No progress line for this long is a hang (each kernel call reports before it starts)."""
    total_s: float = 1800.0
    memory_bytes: int | None = 8 << 30
    """Address-space cap of the worker where the backend allows one (CPU), else None."""


@dataclass
class WorkerOutcome:
    """What came back: a result dict, or how the worker died."""

    status: str
    """'result', 'timeout' or 'died'."""
    result: dict[str, Any] = field(default_factory=dict)
    reason: str = ""
    last_step: str = ""
    log_tail: str = ""


def run_worker(
    job: dict[str, Any],
    env: dict[str, str],
    limits: Limits,
    on_progress: Callable[[str, str], None] | None = None,
    standby_imports: tuple[str, ...] = (),
) -> WorkerOutcome:
    """Run one job in a fresh ``python -m klineage.gate.worker`` process group.

    With ``standby_imports`` the job goes to a process started earlier that has already imported
    them (or a new one), and the next such process starts right away: every job still gets a
    process no kernel has run in, without waiting for the imports.
    """
    worker = _STANDBY.take(env, limits, standby_imports) if standby_imports else None
    worker = worker or _Worker.start(env, limits, standby_imports)
    if standby_imports:
        _STANDBY.refill(env, limits, standby_imports)
    try:
        return worker.run(job, limits, on_progress)
    finally:
        worker.discard()


class _Worker:
    """One worker process, waiting on stdin for the path of its job."""

    def __init__(self, folder: Path, process: subprocess.Popen, log: Any):
        self.folder, self.process, self._log = folder, process, log

    @classmethod
    def start(cls, env: dict[str, str], limits: Limits, imports: tuple[str, ...]) -> _Worker:
        folder = Path(tempfile.mkdtemp(prefix="klineage-worker-"))
        log = open(folder / "worker.log", "wb")  # noqa: SIM115 - closed by discard()
        process = subprocess.Popen(
            [sys.executable, "-m", "klineage.gate.worker", "--stdin", *imports],
            stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT,
            env={**os.environ, **env}, start_new_session=True,
            preexec_fn=_limit_memory(limits.memory_bytes),
        )
        return cls(folder, process, log)

    def alive(self) -> bool:
        return self.process.poll() is None

    def run(self, job: dict[str, Any], limits: Limits,
            on_progress: Callable[[str, str], None] | None) -> WorkerOutcome:
        folder = self.folder
        job = {**job, "progress": str(folder / "progress.jsonl"), "result": str(folder / "result.json")}
        (folder / "job.json").write_text(json.dumps(job))
        Path(job["progress"]).touch()
        with contextlib.suppress(BrokenPipeError):
            self.process.stdin.write(f"{folder / 'job.json'}\n".encode())
            self.process.stdin.close()
        status, last, peak = _watch(self.process, Path(job["progress"]), limits, on_progress)
        self._log.flush()
        log_tail = (folder / "worker.log").read_bytes()[-2000:].decode(errors="replace").strip()
        result_path = Path(job["result"])
        if status == "exited" and result_path.is_file():
            return WorkerOutcome("result", json.loads(result_path.read_text()), last_step=last,
                                 log_tail=log_tail)
        if status == "timeout":
            return WorkerOutcome("timeout", reason=_timeout_reason(limits, last), last_step=last,
                                 log_tail=log_tail)
        return WorkerOutcome("died", reason=_death_reason(self.process.returncode, limits, log_tail,
                                                          peak),
                             last_step=last, log_tail=log_tail)

    def discard(self) -> None:
        if self.alive():
            _kill_group(self.process)
        self._log.close()
        shutil.rmtree(self.folder, ignore_errors=True)


class _StandbyPool:
    """At most one waiting worker per (environment, limits, imports)."""

    def __init__(self) -> None:
        self._waiting: dict[tuple, _Worker] = {}
        atexit.register(self.close)

    @staticmethod
    def _key(env: dict[str, str], limits: Limits, imports: tuple[str, ...]) -> tuple:
        return tuple(sorted(env.items())), limits.memory_bytes, imports

    def take(self, env: dict[str, str], limits: Limits, imports: tuple[str, ...]) -> _Worker | None:
        worker = self._waiting.pop(self._key(env, limits, imports), None)
        if worker is not None and not worker.alive():
            worker.discard()
            return None
        return worker

    def refill(self, env: dict[str, str], limits: Limits, imports: tuple[str, ...]) -> None:
        key = self._key(env, limits, imports)
        if key not in self._waiting:
            self._waiting[key] = _Worker.start(env, limits, imports)

    def close(self) -> None:
        while self._waiting:
            self._waiting.popitem()[1].discard()


_STANDBY = _StandbyPool()


def _limit_memory(limit: int | None) -> Callable[[], None] | None:
    if limit is None:
        return None

    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return apply


def _watch(process: subprocess.Popen, progress: Path, limits: Limits,
           on_progress: Callable[[str, str], None] | None) -> tuple[str, str, int]:
    """Wait for the worker, relaying progress; returns (status, last step, peak RSS bytes)."""
    started = last_change = time.monotonic()
    seen, last, peak = 0, "", 0
    watched = psutil.Process(process.pid)
    while True:
        with contextlib.suppress(psutil.Error):
            peak = max(peak, watched.memory_info().rss)
        try:
            process.wait(timeout=_POLL_S)
            status = "exited"
        except subprocess.TimeoutExpired:
            status = ""
        lines = progress.read_text().splitlines()
        for line in lines[seen:]:
            try:
                step = json.loads(line)
            except json.JSONDecodeError:
                break  # a half-written line: read it whole next time
            seen += 1
            last = f"{step['stage']}: {step['detail']}"
            last_change = time.monotonic()
            if on_progress:
                on_progress(step["stage"], step["detail"])
        if status:
            return ("exited" if process.returncode == 0 else "died"), last, peak
        now = time.monotonic()
        if now - last_change > limits.stall_s or now - started > limits.total_s:
            _kill_group(process)
            return "timeout", last, peak


def _kill_group(process: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def _timeout_reason(limits: Limits, last: str) -> str:
    where = f" during '{last}'" if last else ""
    return (f"no progress for {limits.stall_s:g} s{where} (a hang, or a call slower than the "
            f"stall limit; raise it with --timeout)")


def _death_reason(returncode: int | None, limits: Limits, log_tail: str, peak: int) -> str:
    if returncode is not None and returncode < 0:
        name = signal.Signals(-returncode).name
        reason = f"the worker was killed by {name}"
    else:
        reason = f"the worker exited with status {returncode} without a result"
    lowered = log_tail.lower()
    near_limit = limits.memory_bytes and peak >= 0.7 * limits.memory_bytes
    if limits.memory_bytes and (near_limit or "memoryerror" in lowered
                                or "cannot allocate" in lowered or "bad_alloc" in lowered):
        reason += (f" after using {peak / 2**30:.2f} GiB: out of memory (the worker's limit is "
                   f"{limits.memory_bytes / 2**30:.2f} GiB)")
    last_line = log_tail.splitlines()[-1] if log_tail else ""
    return f"{reason}; last output: {last_line[:200]}" if last_line else reason
