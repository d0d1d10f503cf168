"""Gate feedback for a brain's next attempt: what failed, trimmed to what helps.

Compiler errors keep their first lines (the first error is the one that matters), mismatch
statistics and verdict reasons are kept whole up to a limit, timings and speed of light are one
line each. Nothing here holds a seed that was secret or a path outside the run.
"""

from __future__ import annotations

from klineage.gate import GateReport

__all__ = ["report_feedback", "trim", "trim_lines"]


def trim(text: str, limit: int = 600) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 15].rstrip() + " … (trimmed)"


def trim_lines(text: str, lines: int = 12, width: int = 240) -> str:
    """The first ``lines`` lines, each cut at ``width``, and how many more there were."""
    rows = [row[:width] for row in text.strip().splitlines()]
    if len(rows) > lines:
        rows = [*rows[:lines], f"... ({len(rows) - lines} more lines)"]
    return "\n".join(rows)


def report_feedback(report: GateReport, limit_lines: int = 25) -> str:
    """A few lines a brain can act on: verdict, first compiler errors, mismatch, timing, SOL."""
    lines = [f"verdict: {report.verdict.value}: {trim(report.reason)}"]
    compile_stage = report.stage("compile")
    if compile_stage is not None and not compile_stage.ok and compile_stage.detail:
        errors = [ln for ln in compile_stage.detail.splitlines() if ln.strip()]
        lines.append("compiler output (first lines):")
        lines.extend(f"    {ln[:200]}" for ln in errors[:limit_lines])
    correctness = report.stage("correctness")
    if correctness is not None and not correctness.ok and correctness.detail:
        lines.append(f"correctness: {trim(correctness.detail)}")
    if report.timing is not None:
        lines.append(f"timing: median {report.timing.median_s * 1e3:.4g} ms "
                     f"(spread {report.timing.spread:.1%})")
    if report.sol is not None and report.sol.fraction is not None:
        lines.append(f"speed of light: {report.sol.fraction:.1%} of the {report.sol.limiter} bound")
    return "\n".join(lines)
