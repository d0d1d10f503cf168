"""What a brain is told about the kernel it improves: the gate's result on it and the attempts made
on it so far, each trimmed to the lines that say what to fix.

Built from the run's candidate events alone, so a resumed run tells the brain exactly what an
uninterrupted one would have.
"""

from __future__ import annotations

from dataclasses import dataclass

from klineage.gate import GateReport
from klineage.lineage._feedback import trim_lines

__all__ = ["Attempt", "History"]

REASON_LINES = 14
"""A compile log or mismatch report beyond this many lines is cut: the first errors say enough."""
DIFF_LINES = 80
EARLIER_KEPT = 6
"""Attempts on earlier versions of the kernel, kept as one line each."""


@dataclass(frozen=True)
class Attempt:
    what: str
    """How it was made: 'card <id> (feature)', 'cards together', 'improve', 'retry of ...'."""
    verdict: str
    reason: str
    """For a gated failure, the gate's feedback (``lineage._feedback.report_feedback``: verdict,
    first compiler errors, mismatch); else the loop's reason line."""
    ratio: float | None = None
    """Paired time(attempt) / time(current kernel), when it was compared."""
    diff: str = ""

    def line(self) -> str:
        if self.ratio is not None:
            change = (f"{(self.ratio - 1) * 100:.0f}% slower than" if self.ratio > 1
                      else f"{(1 - self.ratio) * 100:.0f}% faster than")
            return f"{self.what}: {self.verdict}: correct, {change} the current kernel ({self.reason})"
        detail = trim_lines(self.reason, REASON_LINES)
        return (f"{self.what}: {detail}" if detail.startswith("verdict:")
                else f"{self.what}: {self.verdict}: {detail}")


class History:
    """The attempts on the current best kernel, and a line for each on the kernels before it."""

    def __init__(self) -> None:
        self.current: list[Attempt] = []
        self.earlier: list[str] = []

    def add(self, attempt: Attempt) -> None:
        self.current.append(attempt)

    def kept(self, attempt: Attempt) -> None:
        """``attempt`` became the new best: what was tried on the old one becomes history."""
        self.earlier += [a.line().splitlines()[0] for a in self.current]
        self.earlier.append(f"{attempt.what}: kept ({attempt.reason})")
        self.earlier = self.earlier[-EARLIER_KEPT:]
        self.current = []

    def text(self, report: GateReport | None, speedup: float, start_s: float | None) -> str:
        """``speedup``: the paired chain over the start kernel, whose time is ``start_s``."""
        parts = [_standing(report, speedup, start_s)]
        if self.earlier:
            parts.append("Earlier versions of this kernel (oldest first):\n"
                         + "\n".join(f"- {line}" for line in self.earlier))
        if self.current:
            parts.append("Attempts on this version so far (oldest first):\n"
                         + "\n".join(f"{i}. {a.line()}" for i, a in enumerate(self.current, 1)))
            last = self.current[-1]
            if last.diff and last.verdict != "accepted":
                parts.append("Your last attempt, as a diff against the kernel above:\n```diff\n"
                             + trim_lines(last.diff, DIFF_LINES, 400) + "\n```")
        return "\n\n".join(parts)


def _standing(report: GateReport | None, speedup: float, start_s: float | None) -> str:
    """The kernel's time as the paired comparisons give it (the start's time over the chain of
    paired ratios): its own profile, timed in another gate run, can read slower than a kernel it
    was measured faster than side by side, and a model told both is told a contradiction."""
    if start_s is None:
        return "The current kernel passed the gate."
    seconds = start_s / speedup
    line = (f"The current kernel passed the gate: about {seconds * 1e3:.3f} ms, {speedup:.2f}x faster "
            f"than the start kernel (paired comparisons)")
    sol = report.sol if report is not None else None
    if sol is not None and sol.bound_s:
        line += f", {sol.bound_s / seconds:.0%} of speed of light (limited by {sol.limiter or 'memory'})"
    return line + "."
