"""Rich renderings of gate results and doctor facts for the CLI."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rich.markup import escape
from rich.table import Table

from klineage.gate.report import GateReport, Verdict
from klineage.report._format import lineage_span, share, speedup

__all__ = ["doctor_table", "gate_summary_table", "stage_table", "verdict_style"]

_STYLE = {Verdict.ACCEPTED: "green", Verdict.SLOWER: "yellow", Verdict.UNMEASURABLE: "yellow"}


def verdict_style(verdict: Verdict) -> str:
    return _STYLE.get(verdict, "red")


def _ms(seconds: float | None) -> str:
    return f"{seconds * 1e3:.3f}" if seconds is not None else "-"


def _num(value: float | None, fmt: str = ".1f") -> str:
    return format(value, fmt) if value is not None else "-"


def gate_summary_table(reports: Iterable[GateReport], title: str = "") -> Table:
    """One row per gated kernel (reasons are printed below it: they are long)."""
    table = Table(title=title or None, show_lines=False)
    for column, justify in (("kernel", "left"), ("verdict", "left"), ("median ms", "right"),
                            ("spread", "right"), ("GB/s", "right"), ("GFLOP/s", "right"),
                            ("% of bound", "right"), ("gate s", "right")):
        table.add_column(column, justify=justify, overflow="fold")
    for r in reports:
        timing, sol = r.timing, r.sol
        table.add_row(
            r.kernel,
            f"[{verdict_style(r.verdict)}]{r.verdict.value}[/]",
            _ms(timing.median_s if timing else None),
            f"{timing.spread * 100:.1f}%" if timing else "-",
            _num(sol.achieved_gbps if sol else None),
            _num(sol.achieved_gflops if sol else None),
            share(sol.fraction if sol else None) + (f" ({sol.limiter})" if sol and sol.limiter else ""),
            f"{r.gate_seconds:.1f}",
        )
    return table


def stage_table(report: GateReport) -> Table:
    """One row per gate stage of a single report."""
    build = f", build {report.fingerprint[:12]}" if report.fingerprint else ""
    table = Table(title=f"{report.workload} / {report.kernel} on {report.platform}"
                        f" ({report.threads} threads{build})")
    table.add_column("stage")
    table.add_column("ok")
    table.add_column("s", justify="right")
    table.add_column("detail", overflow="fold")
    for stage in report.stages:
        mark = "[green]yes[/]" if stage.ok else "[red]no[/]"
        table.add_row(stage.name, mark, f"{stage.seconds:.2f}", escape(stage.detail))
    return table


def doctor_table(facts: dict[str, Any]) -> Table:
    table = Table(title="klineage doctor", show_header=False)
    table.add_column("what", style="bold")
    table.add_column("value", overflow="fold")
    for key, value in facts.items():
        if isinstance(value, dict):
            value = ", ".join(f"{k}={v}" for k, v in value.items())
        table.add_row(escape(key), escape(str(value)))  # "[cuda]" is text, not markup
    return table


def features_table(report: dict[str, Any]) -> Table:
    """One row per detected feature site."""
    table = Table(title=f"features of {report['kernel']} ({report['language']})")
    for column in ("feature", "category", "line", "scope", "site", "compiled"):
        table.add_column(column, overflow="fold")
    for hit in report["features"]:
        compiled = hit.get("compiled")
        table.add_row(hit["feature"], hit["category"], str(hit["line"]), hit["scope"],
                      escape(hit["text"][:60]), "-" if compiled is None else ("yes" if compiled else "no"))
    return table


def mine_table(summary: dict[str, Any]) -> Table:
    """The outcome of one mine run."""
    table = Table(title=f"mine {summary['workload']}", show_header=False)
    table.add_column("what", style="bold")
    table.add_column("value", overflow="fold")
    rows = [
        ("steps accepted / rejected", f"{summary['steps_accepted']} / {summary['steps_rejected']}"),
        ("features removed (in order)", ", ".join(summary["features_removed"]) or "-"),
        ("stopped because", summary["stop_reason"]),
        ("naive reached", "yes" if summary["naive_reached"] else
         f"no (left: {', '.join(summary['remaining_features'])})"),
        (f"{lineage_span(summary['naive_reached'])} speedup (paired, end to end)",
         speedup(summary["lineage_speedup"])),
        ("cards lifted / admitted", f"{summary['cards_lifted']} / {summary['cards_admitted']}"),
        ("run", summary["run"]),
        ("library", summary["library"] or "-"),
    ]
    spent = summary.get("spent")
    if spent:
        rows.append(("spent", f"{spent['calls']} brain calls, {spent['input_tokens']}+"
                              f"{spent['output_tokens']} tokens, ${spent['usd']:.4f}, "
                              f"{spent['gate_runs']} gate runs, {spent['wall_s']:.0f}s"))
    if summary.get("budget_reached"):
        rows.append(("budget", summary["budget_reached"]))
    for card in summary["cards"]:
        effect = speedup(card["effect"])
        rows.append((f"card {card['id'][:10]}", f"{card['name']} ({card['feature']}, {effect}, "
                                                 f"{'admitted' if card['admitted'] else 'not admitted'})"))
    rows += [("note", escape(note)) for note in summary["notes"]]
    for key, value in rows:
        table.add_row(key, escape(str(value)))
    return table


def demo_table(result: Any) -> Table:
    """One row per demo stage: what it did and what the gate measured.

    The optimize stage's speedup is its run's final paired comparison; a bench row's is judged
    side by side in the bench. The same kernel gets two numbers (2.63x and 2.36x in one demo),
    so each says which it is, and a bench row whose best kernel is the one the optimize stage kept
    says so."""
    table = Table(title="klineage demo (CPU, rules brain, quick sizes)")
    for column in ("stage", "workload", "result"):
        table.add_column(column)
    for mined in result.mined:
        span = f"{speedup(mined['lineage_speedup'])} {lineage_span(mined['naive_reached'])}"
        table.add_row("mine", mined["workload"],
                      f"{mined['steps_accepted']} steps accepted / {mined['steps_rejected']} refused, "
                      f"{span}; {mined['cards_lifted']} cards, {mined['cards_admitted']} admitted")
    best = result.optimized.get("best_speedup")
    kept = f"{speedup(best)} over the start (its run's final paired comparison)" if best else \
        "no faster kernel kept"
    table.add_row("optimize", f"{result.target}/naive",
                  f"{kept} ({escape(result.optimized.get('stop_reason', ''))})")
    kernels = result.benched.get("best_states", {})
    optimized = _best_state(result.optimized.get("run"))
    for row in result.benched.get("summary", []):
        method = row["method"]
        twin = next((m for m, state in kernels.items() if m != method and state
                     and state == kernels.get(method)), None)
        table.add_row(f"bench: {method}", result.target,
                      f"{speedup(row['geomean_speedup_vs_start'])} vs start, "
                      f"{speedup(row.get('geomean_speedup_vs_expert'))} vs expert (judged side by side)"
                      + (f", failures: {len(row['failures'])}" if row.get("failures") else "")
                      + (f"; the same kernel as {twin}" if twin else "")
                      + ("; the kernel the optimize stage kept" if optimized and kernels.get(method)
                         == optimized else ""))
    return table


def _best_state(run: str | None) -> str | None:
    """The best kernel's fingerprint in an optimize run's record, where it can be read."""
    record = Path(run) / "optimize.json" if run else None
    if record is None or not record.is_file():
        return None
    try:
        return json.loads(record.read_text()).get("best_state")
    except (OSError, ValueError):
        return None
