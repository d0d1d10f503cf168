"""Shared pieces of the benchmark scripts: running the gate over examples, tables, headers."""

from __future__ import annotations

import itertools
import os
import platform
import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from klineage.gate import ClockCheck, Comparison, GateOptions, GateReport, compare_kernels, run_gate
from klineage.workload import load_kernel, load_workload

REPO = Path(__file__).resolve().parent.parent


@dataclass
class Row:
    workload: str
    naive: GateReport
    expert: GateReport
    repeat: Comparison
    """The expert against itself: the spread of measuring one kernel twice, paired."""


def gate_examples(folder: Path, options: GateOptions, only: list[str] | None = None,
                  say=print, on_row=None) -> list[Row]:
    rows = []
    for path in sorted(p for p in folder.iterdir() if (p / "workload.toml").is_file()):
        if only and path.name not in only:
            continue
        workload = load_workload(path)
        naive, expert = load_kernel(workload, "naive"), load_kernel(workload, "expert")
        say(f"gating {workload.name} ...")
        naive_report = run_gate(workload, naive, options=options)
        expert_report = run_gate(workload, expert, options=options, against=naive)
        repeat = compare_kernels(workload, expert, expert, options=options)
        rows.append(Row(workload.name, naive_report, expert_report, repeat))
        if on_row:  # partial results survive a run cut short
            on_row(rows[-1])
    return rows


def header(title: str, device: str) -> str:
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    # A copy of the tree on another machine may carry a stale .git: the caller can name the commit.
    commit = os.environ.get("KLINEAGE_BENCH_COMMIT") or subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO
    ).stdout.strip() or "unknown"
    return (f"# {title}\n\n- date: {when}\n- machine: {device}\n- host: {platform.node()} "
            f"({platform.machine()})\n- klineage commit: {commit}\n")


def markdown_table(columns: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def fmt_ms(report: GateReport) -> str:
    return f"{report.timing.median_s * 1e3:.3f}" if report.timing else report.verdict.value


def fmt_rate(report: GateReport) -> str:
    sol = report.sol
    if not sol:
        return "-"
    if sol.limiter == "compute" and sol.achieved_gflops:
        return f"{sol.achieved_gflops:,.0f} GFLOP/s"
    return f"{sol.achieved_gbps:,.1f} GB/s" if sol.achieved_gbps else "-"


def fmt_bound(report: GateReport) -> str:
    sol = report.sol
    return f"{sol.fraction * 100:.0f}% ({sol.limiter})" if sol and sol.fraction else "-"


def fmt_speedup(report: GateReport) -> str:
    c = report.comparison
    if c is None:
        return "-"
    return f"{1 / c.ratio:.2f}x [{1 / c.ci_high:.2f}–{1 / c.ci_low:.2f}]"


def fmt_repeat(c: Comparison) -> str:
    clock = "" if c.baseline_clock is None or c.baseline_clock.raised_share == 0 else ", trusted clock"
    return f"{abs(c.ratio - 1) * 100:.1f}% (CI ±{(c.ci_high - c.ci_low) / 2 * 100:.1f}%{clock})"


def fmt_clock(clock: ClockCheck | None) -> str:
    """How far the runner's clock read short of ours, against the calibration kernel's."""
    if clock is None:
        return "-"
    return (f"gap {clock.gap_s * 1e6:.1f} us vs calibration {clock.calibration_gap_s * 1e6:.1f} us "
            f"(allowance {clock.allowance_s * 1e6:.1f} us): "
            + ("own clock believed" if clock.believed else "timed by the trusted clock"))


def write_result(name: str, text: str) -> Path:
    """A new file under benchmarks/results/: a second result of the day gets -2, -3, ..., so
    no run overwrites a table already kept (a smoke run once replaced a committed one)."""
    day = datetime.now(UTC).strftime("%Y-%m-%d")
    path = REPO / "benchmarks" / "results" / f"{name}-{day}.md"
    for count in itertools.count(2):
        if not path.exists():
            break
        path = path.with_name(f"{name}-{day}-{count}.md")
    path.write_text(text)
    return path
