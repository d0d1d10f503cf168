"""The report's plots, drawn with matplotlib's Agg canvas into PNG files (no display needed).

Figures are built with ``matplotlib.figure.Figure`` rather than pyplot, so nothing global (the
backend, the current figure) is touched and a report can be written from any thread.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from matplotlib.figure import Figure

from klineage.bench.records import BenchRecord
from klineage.optimize.records import CurvePoint, OptimizeRecord
from klineage.report._mine import MineView

__all__ = ["bench_plot", "lineage_plot", "mean_curve", "optimize_plot"]

_DPI = 110
_BAR = "#4c72b0"
_EXPERT = "#c44e52"


def lineage_plot(view: MineView, path: Path) -> Path | None:
    """Median ms per state along the chain, naive → expert, and the running product of the
    paired step speedups; None when nothing was timed."""
    timed = [(state.label, state.ms) for state in view.states if state.ms is not None]
    speedups = [step.transition.speedup for step in view.steps]
    paired = bool(speedups) and None not in speedups
    if not timed and not paired:
        return None
    panels = int(bool(timed)) + int(paired)
    width = max(4.5, 1.1 * len(view.states) + 1.5)
    fig = Figure(figsize=(width * panels, 3.6), dpi=_DPI, layout="constrained")
    axes = iter(fig.subplots(1, panels, squeeze=False).flatten())
    if timed:
        _state_bars(next(axes), timed)
    if paired:
        _paired_line(next(axes), [view.states[0].label, *(s.label for s in view.states[1:])],
                     [s for s in speedups if s is not None])
    fig.suptitle(f"{view.lineage.workload}: the lineage, naive → expert", fontsize=10)
    fig.savefig(path)
    return path


def _state_bars(ax, timed: list[tuple[str, float]]) -> None:
    labels, values = zip(*timed, strict=True)
    colours = [_EXPERT if label == "expert" else _BAR for label in labels]
    bars = ax.bar(range(len(values)), values, color=colours)
    ax.bar_label(bars, labels=[f"{v:.3g}" for v in values], fontsize=8, padding=2)
    ax.set_xticks(range(len(values)), labels, rotation=20, ha="right", fontsize=8)
    ax.set_ylabel("median ms (lower is faster)")
    ax.set_title("time per state (each from its own timed comparison)", fontsize=9)
    ax.margins(y=0.15)


def _paired_line(ax, labels: list[str], speedups: list[float]) -> None:
    running = [1.0]
    for speedup in speedups:
        running.append(running[-1] * speedup)
    ax.plot(range(len(running)), running, marker="o", color=_BAR)
    for x, y in enumerate(running):
        ax.annotate(f"{y:.2f}x", (x, y), textcoords="offset points", xytext=(0, 6), ha="center",
                    fontsize=8)
    ax.axhline(1.0, color="grey", linewidth=0.8, linestyle=":")
    ax.set_xticks(range(len(running)), labels[:len(running)], rotation=20, ha="right", fontsize=8)
    ax.set_ylabel("speedup over naive (x)")
    ax.set_title("product of the paired step speedups", fontsize=9)
    ax.margins(y=0.15)


def optimize_plot(record: OptimizeRecord, path: Path) -> Path | None:
    """Best-so-far speedup against gate runs spent; None without a curve."""
    if not record.curve:
        return None
    xs, ys = _steps(record.curve, until=_budget_runs(record.budget))
    fig = Figure(figsize=(5.5, 3.4), dpi=_DPI, layout="constrained")
    ax = fig.add_subplot()
    ax.plot(xs, ys, drawstyle="steps-post", marker="o", markersize=3, label=record.method or "best")
    ax.axhline(1.0, color="grey", linewidth=0.8, linestyle=":")
    ax.set_xlabel("gate runs")
    ax.set_ylabel("best speedup vs start (x)")
    ax.set_title(f"{record.workload}: best so far", fontsize=10)
    fig.savefig(path)
    return path


def bench_plot(record: BenchRecord, path: Path) -> Path | None:
    """One panel per workload, one line per method: mean best-so-far speedup over repeats."""
    workloads = [w for w in record.workloads()
                 if any(r.curve for r in record.results if r.workload == w)]
    if not workloads:
        return None
    columns = min(3, len(workloads))
    rows = math.ceil(len(workloads) / columns)
    fig = Figure(figsize=(4.2 * columns, 3.3 * rows + 0.4), dpi=_DPI, layout="constrained")
    axes = fig.subplots(rows, columns, squeeze=False).flatten()
    for ax, workload in zip(axes, workloads, strict=False):
        _bench_panel(ax, record, workload)
    for ax in axes[len(workloads):]:
        ax.set_visible(False)
    fig.suptitle(f"{record.suite or 'bench'}: best-so-far speedup vs gate runs "
                 f"(mean over repeats)", fontsize=10)
    fig.savefig(path)
    return path


def _bench_panel(ax, record: BenchRecord, workload: str) -> None:
    results = [r for r in record.results if r.workload == workload]
    # Every line runs to the same end, so a method's last level is visible, not just its last jump.
    end = max([_budget_runs(record.budget), *(p.gate_runs for r in results for p in r.curve)])
    for method in record.method_names():
        curves = [r.curve for r in results if r.method == method]
        if not curves:
            continue
        xs, ys = mean_curve(curves, until=end)
        ax.plot(xs, ys, drawstyle="steps-post", label=method)
    experts = [r.start_ms / r.expert_ms for r in results if r.start_ms and r.expert_ms]
    if experts:
        ax.axhline(sum(experts) / len(experts), color=_EXPERT, linestyle="--", linewidth=1,
                   label="expert")
    ax.axhline(1.0, color="grey", linewidth=0.8, linestyle=":")
    ax.set_title(workload, fontsize=9)
    ax.set_xlabel("gate runs")
    ax.set_ylabel("speedup vs start (x)")
    ax.legend(fontsize=7)


def mean_curve(curves: Sequence[Sequence[CurvePoint]],
               until: int = 0) -> tuple[list[int], list[float]]:
    """The mean of best-so-far step curves, on the union of their gate-run counts (and ``until``).

    Each curve holds its value until its next point; before its first point it is 1.0 (the start
    kernel), after its last it keeps its last value (a repeat that stopped early, or failed, keeps
    what it had). Gate runs start at 0.
    """
    grid = sorted({0, until, *(p.gate_runs for curve in curves for p in curve)})
    means = [sum(_value_at(curve, g) for curve in curves) / len(curves) for g in grid]
    return grid, means


def _value_at(curve: Sequence[CurvePoint], gate_runs: int) -> float:
    value = 1.0
    for point in sorted(curve, key=lambda p: p.gate_runs):
        if point.gate_runs > gate_runs:
            break
        value = point.best_speedup
    return value


def _steps(curve: Sequence[CurvePoint], until: int) -> tuple[list[int], list[float]]:
    points = sorted(curve, key=lambda p: p.gate_runs)
    xs, ys = [p.gate_runs for p in points], [p.best_speedup for p in points]
    if xs[0] > 0:
        xs, ys = [0, *xs], [1.0, *ys]
    if until > xs[-1]:
        xs, ys = [*xs, until], [*ys, ys[-1]]
    return xs, ys


def _budget_runs(budget: object) -> int:
    """The gate-run limit of a budget record, or 0 when it sets none."""
    value = budget.get("gate_runs") if isinstance(budget, dict) else None
    return int(value) if isinstance(value, int | float) else 0
