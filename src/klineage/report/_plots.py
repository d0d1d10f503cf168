"""The report's plots, drawn with matplotlib's Agg canvas into PNG files (no display needed).

Figures are built with ``matplotlib.figure.Figure`` rather than pyplot, so nothing global (the
backend, the current figure) is touched and a report can be written from any thread.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from pathlib import Path

from matplotlib.figure import Figure

from klineage.bench.records import BenchRecord
from klineage.optimize.records import CurvePoint, OptimizeRecord
from klineage.report._format import lineage_span, ms, speedup
from klineage.report._mine import MineView

__all__ = ["bench_figure", "bench_plot", "lineage_figure", "lineage_plot", "mean_curve", "optimize_figure",
           "optimize_plot"]

_DPI = 110
_BAR = "#4c72b0"
_EXPERT = "#c44e52"


def lineage_plot(view: MineView, path: Path) -> Path | None:
    """``lineage_figure`` saved to ``path``; None when nothing was timed."""
    return _save(lineage_figure(view), path)


def lineage_figure(view: MineView) -> Figure | None:
    """Left, each state's median ms as the step that added it timed it (the chain's numbers);
    right, each step's paired speedup (the step tables' numbers). None when nothing was timed.

    No running product of the step speedups is drawn: it is not the naive → expert speedup (the
    steps were timed in different minutes, and on 2 shared cores their product came out 8.1x
    beside an end-to-end comparison of 5.1x), and a reader would take one for the other."""
    timed = [(state.label, state.ms) for state in view.states if state.ms is not None]
    steps = [(f"+ {step.transition.feature}", step.transition.speedup) for step in view.steps
             if step.transition.speedup is not None]
    if not timed and not steps:
        return None
    panels = int(bool(timed)) + int(bool(steps))
    width = max(4.5, 1.1 * len(view.states) + 1.5)
    fig = Figure(figsize=(width * panels, 3.8), dpi=_DPI, layout="constrained")
    axes = iter(fig.subplots(1, panels, squeeze=False).flatten())
    if timed:
        _state_bars(next(axes), timed)
    if steps:
        _step_bars(next(axes), steps)
    fig.suptitle(_fit(f"{view.lineage.workload}: the lineage, "
                      f"{lineage_span(view.lineage.naive_reached)}", width * panels), fontsize=10)
    return fig


def _state_bars(ax, timed: list[tuple[str, float]]) -> None:
    labels, values = zip(*timed, strict=True)
    colours = [_EXPERT if label == "expert" else _BAR for label in labels]
    bars = ax.bar(range(len(values)), values, color=colours)
    ax.bar_label(bars, labels=[ms(v) for v in values], fontsize=7, padding=2)
    ax.set_xticks(range(len(values)), labels, rotation=20, ha="right", fontsize=8)
    ax.set_ylabel("median ms (lower is faster)")
    ax.set_title("time per state, in the step that added it", fontsize=9)
    ax.margins(y=0.15)


def _step_bars(ax, steps: list[tuple[str, float]]) -> None:
    labels, values = zip(*steps, strict=True)
    bars = ax.bar(range(len(values)), values, color=_BAR)
    ax.bar_label(bars, labels=[speedup(v) for v in values], fontsize=8, padding=2)
    ax.axhline(1.0, color="grey", linewidth=0.8, linestyle=":")
    ax.set_xticks(range(len(values)), labels, rotation=20, ha="right", fontsize=8)
    ax.set_ylabel("paired speedup of the step (x)")
    ax.set_title("each step's paired speedup", fontsize=9)
    ax.margins(y=0.15)


def _save(fig: Figure | None, path: Path) -> Path | None:
    if fig is None:
        return None
    fig.savefig(path)
    return path


def _fit(title: str, width_in: float, fontsize: float = 10) -> str:
    """The title wrapped to the figure's width (about 0.55 of the font size per character), so
    matplotlib never draws it past the PNG's edges."""
    chars = max(20, int(width_in * 72 / (0.6 * fontsize)))
    return "\n".join(textwrap.wrap(title, chars, break_long_words=True))


def optimize_plot(record: OptimizeRecord, path: Path) -> Path | None:
    """``optimize_figure`` saved to ``path``; None without a curve."""
    return _save(optimize_figure(record), path)


def optimize_figure(record: OptimizeRecord) -> Figure | None:
    """Best-so-far speedup against gate runs spent; None without a curve.

    The curve is the product of the kept steps' paired ratios, each timed when its step ran; the
    record's ``best_speedup`` is one paired comparison of the best kernel against the start at the
    end of the run. They differ (2.20x and 2.00x for one softmax run), so the curve's last level
    and the final number are labelled apart, and the final number is the one drawn as a value."""
    if not record.curve:
        return None
    xs, ys = _steps(record.curve, until=_budget_runs(record.budget))
    fig = Figure(figsize=(5.5, 3.4), dpi=_DPI, layout="constrained")
    ax = fig.add_subplot()
    ax.plot(xs, ys, drawstyle="steps-post", marker="o", markersize=3,
            label=f"{record.method or 'best'}: product of the kept steps' ratios")
    if record.best_speedup is not None:
        ax.plot([xs[-1]], [record.best_speedup], marker="*", markersize=11, color=_EXPERT,
                linestyle="none", label=f"final paired comparison: {speedup(record.best_speedup)}")
    ax.axhline(1.0, color="grey", linewidth=0.8, linestyle=":")
    ax.set_xlabel("gate runs")
    ax.set_ylabel("best speedup vs start (x)")
    ax.set_title(_fit(f"{record.workload}: best so far", 5.5), fontsize=10)
    ax.legend(fontsize=7)
    return fig


def bench_plot(record: BenchRecord, path: Path) -> Path | None:
    """``bench_figure`` saved to ``path``; None when no run has a curve."""
    return _save(bench_figure(record), path)


def bench_figure(record: BenchRecord) -> Figure | None:
    """One panel per workload, one line per method: mean best-so-far speedup over repeats, and a
    marker at its end for the geometric mean of the rows' judged ``speedup_vs_start`` (the number
    the tables show; the curves chain each run's own step comparisons)."""
    workloads = [w for w in record.workloads()
                 if any(r.curve for r in record.results if r.workload == w)]
    if not workloads:
        return None
    columns = min(3, len(workloads))
    rows = math.ceil(len(workloads) / columns)
    width = 4.6 * columns
    fig = Figure(figsize=(width, 3.5 * rows + 0.5), dpi=_DPI, layout="constrained")
    axes = fig.subplots(rows, columns, squeeze=False).flatten()
    for ax, workload in zip(axes, workloads, strict=False):
        _bench_panel(ax, record, workload)
    for ax in axes[len(workloads):]:
        ax.set_visible(False)
    suite = Path(record.suite).name if record.suite else "bench"
    fig.suptitle(_fit(f"{suite}: best-so-far speedup vs gate runs (mean over repeats)", width),
                 fontsize=10)
    return fig


def _bench_panel(ax, record: BenchRecord, workload: str) -> None:
    results = [r for r in record.results if r.workload == workload]
    # Every line runs to the same end, so a method's last level is visible, not just its last jump.
    end = max([_budget_runs(record.budget), *(p.gate_runs for r in results for p in r.curve)])
    for method in record.method_names():
        rows = [r for r in results if r.method == method]
        if not rows:
            continue
        xs, ys = mean_curve([r.curve for r in rows], until=end)
        [line] = ax.plot(xs, ys, drawstyle="steps-post", label=method)
        judged = [r.speedup_vs_start for r in rows if r.speedup_vs_start]
        if judged:
            value = math.exp(sum(math.log(v) for v in judged) / len(judged))
            ax.plot([xs[-1]], [value], marker="*", markersize=9, color=line.get_color(),
                    linestyle="none", label=f"{method}, judged: {speedup(value)}")
    experts = [r.start_ms / r.expert_ms for r in results if r.start_ms and r.expert_ms]
    if experts:
        ax.axhline(sum(experts) / len(experts), color=_EXPERT, linestyle="--", linewidth=1,
                   label="expert")
    ax.axhline(1.0, color="grey", linewidth=0.8, linestyle=":")
    ax.set_title(_fit(workload, 4.6, 9), fontsize=9)
    ax.set_xlabel("gate runs")
    ax.set_ylabel("speedup vs start (x)")
    ax.legend(fontsize=6)


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
