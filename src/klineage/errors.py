"""klineage's own errors, as one tree.

    KlineageError                 every error klineage raises on purpose
    ├── WorkloadError             a workload folder, workload.toml, reference.py or kernel is wrong
    │   └── DegenerateWorkloadError   the reference cannot tell right from wrong answers
    ├── ConfigError               a command-line value or configuration entry is wrong
    ├── ToolchainError            a compiler or tool klineage needs is missing or broken
    ├── BackendUnavailableError   the backend cannot run here (no GPU, no torch, ...)
    ├── LibraryError              a skill library is missing or damaged, or a skill id is unknown
    ├── WorkerError               the gate broke in a way no candidate caused (a klineage bug)
    ├── BrainError                a brain (LLM API, agent CLI, cassette) cannot be used or reached
    ├── MachineLoadedError        timings stayed too noisy to decide (a loaded machine): the run stops
    ├── RunStopped                a run was stopped by Ctrl-C: it is kept, and can be resumed
    └── GateWaiting               gate results a spool has not answered yet (``--no-wait``): the
                                  run is kept, and resumes once a worker has drained the spool

A candidate kernel that fails (does not compile, is wrong, crashes, hangs, cheats) is *not* an
error: it is a verdict in a GateReport (see ``klineage.gate.report.Verdict``).
"""

from __future__ import annotations

__all__ = [
    "BackendUnavailableError",
    "BrainError",
    "ComparisonFailed",
    "ConfigError",
    "DegenerateWorkloadError",
    "GateWaiting",
    "KlineageError",
    "LibraryError",
    "MachineLoadedError",
    "RunStopped",
    "ToolchainError",
    "WorkerError",
    "WorkloadError",
]


class KlineageError(Exception):
    """Base of every error klineage raises on purpose; the CLI prints it as one red line."""


class WorkloadError(KlineageError):
    """A workload folder, its TOML, its reference or a kernel path is wrong."""


class DegenerateWorkloadError(WorkloadError):
    """The reference output is constant, ~zero, or ignores an input: no check could fail."""


class ConfigError(KlineageError):
    """A command-line value or configuration entry is wrong."""


class ToolchainError(KlineageError):
    """A compiler or tool that klineage needs is missing or broken."""


class BackendUnavailableError(KlineageError):
    """The backend cannot run on this machine."""


class LibraryError(KlineageError):
    """A skill library folder is missing or damaged, or no single skill matches an id."""


class WorkerError(KlineageError):
    """The gate failed in a way that no candidate kernel caused (a klineage bug)."""


class ComparisonFailed(KlineageError):
    """A kernel that passed the gate failed inside a paired comparison (crashed, timed out,
    wrote a wrong output among the kept calls): ``outcome`` is the verdict it earns."""

    def __init__(self, message: str, outcome: str, reason: str):
        super().__init__(message)
        self.outcome, self.reason = outcome, reason


class BrainError(KlineageError):
    """A brain cannot be used: server unreachable, key refused, model unknown, cassette miss.

    An unusable *answer* is not an error: it is a failed proposal (``Answer.failures``)."""


class MachineLoadedError(KlineageError):
    """A stage needed a time or a comparison and the gate found it unmeasurable, twice: the run
    stops (and can be resumed on a quiet machine) rather than record noise as a result."""


class RunStopped(KlineageError):
    """A run stopped before its end and was kept; the message says where and how to resume.
    ``interrupted``: stopped by Ctrl-C (the command exits 130, as an interrupted program does).
    A brain that cannot go on stops a run too, as a ``BrainError`` saying the same."""

    def __init__(self, message: str, interrupted: bool = False):
        super().__init__(message)
        self.interrupted = interrupted


class GateWaiting(KlineageError):
    """Gate jobs wait in a spool folder for a worker, and the command was told not to wait
    (``--no-wait``): a run stops where it is, kept, and its resume takes the results up.
    ``jobs``: how many wait; ``flags``: what a resume command needs to reach the same spool."""

    def __init__(self, message: str, jobs: int = 0, flags: str = ""):
        super().__init__(message)
        self.jobs, self.flags = jobs, flags
