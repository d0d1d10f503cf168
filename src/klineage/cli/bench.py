"""``klineage bench``: methods × workloads × repeats (registered by the root app)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from klineage.cli._brains import BrainOpt, ConfigOpt, RecordOpt, ReplayOpt, brain_settings
from klineage.cli._common import (
    BackendOpt,
    ExecutorOpt,
    JsonOpt,
    NoWaitOpt,
    PatienceOpt,
    QuickOpt,
    RunsOpt,
    ThreadsOpt,
    console,
    executing,
    run_gate_options,
    user_errors,
)
from klineage.cli.memory import MemoryOpt
from klineage.errors import ConfigError
from klineage.report._format import share, speedup

__all__ = ["bench_command", "bench_tables"]


def bench_command(
    suite: Annotated[Path | None, typer.Argument(
        help="A folder of workload folders, or one workload (not with --resume).")] = None,
    library: Annotated[Path | None, typer.Option(
        help="Skill library (klineage and klineage-nowhen use it).")] = None,
    methods: Annotated[str, typer.Option(
        help="Comma-separated, of klineage, klineage-nowhen, none, memory (needs --memory), "
             "rules-table, expert-source. Default: klineage, none, rules-table, expert-source.",
        show_default=False)] = "klineage,none,rules-table,expert-source",
    memory: MemoryOpt = None,
    budget: Annotated[str | None, typer.Option(
        help="Per run, e.g. gate_runs=6 or gate_runs=6,wall=5m. Default: gate_runs=6, or on "
             "--resume the bench's own.", show_default=False)] = None,
    repeats: Annotated[int, typer.Option(min=1, help="Runs per method and workload.")] = 1,
    brain: BrainOpt = None,
    config: ConfigOpt = None,
    record: RecordOpt = None,
    replay: ReplayOpt = None,
    start: Annotated[str, typer.Option(help="The start kernel variant.")] = "naive",
    seed: Annotated[int | None, typer.Option(help="Base seed (default: a fresh one).")] = None,
    runs: RunsOpt = Path("runs"),
    threads: ThreadsOpt = None,
    backend: BackendOpt = None,
    quick: QuickOpt = False,
    patience: PatienceOpt = None,
    resume: Annotated[Path | None, typer.Option(
        help="Continue this stopped bench (its suite, methods, repeats, seed and library).")] = None,
    executor: ExecutorOpt = "local",
    no_wait: NoWaitOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Compare methods on the same workloads, gate and budget; print geomeans and failures."""
    from klineage.bench import bench, resume_bench
    from klineage.optimize import OptimizeOptions
    from klineage.skills.library import Library

    with user_errors(as_json):
        if (suite is None) == (resume is None):
            raise ConfigError("bench: give a SUITE, or --resume RUN to continue a stopped bench")
        lib = Library.open(library) if library is not None else None
        with console.status("", spinner="dots") as status, executing(executor, wait=not no_wait):
            gate = run_gate_options(threads, backend, patience)
            settings = brain_settings(brain, budget if budget or resume else "gate_runs=6", config,
                                      record, replay, resume)
            options = OptimizeOptions(**settings, gate=gate, memory=memory)
            say = None if as_json else (lambda line: status.update(escape(line)))
            if resume is not None:
                result = resume_bench(resume, lib, options, say=say)
            else:
                assert suite is not None
                result = bench(suite, lib, [m.strip() for m in methods.split(",") if m.strip()],
                               options, repeats=repeats, runs_root=runs, start=start, seed=seed,
                               quick=quick, say=say)
    if as_json:
        print(json.dumps(result.record, indent=2))
        return
    for table in bench_tables(result.record):
        console.print(table)
    console.print(f"bench.json: {result.run.path / 'bench.json'}")


def bench_tables(record: dict[str, Any]) -> list[Table]:
    """The per-run table and the per-method summary, each number written as the report writes
    it: "vs start" is the row's judged side-by-side speedup (``BenchRow.speedup_vs_start``)."""
    runs = Table(title=f"bench {record['suite']} (budget {record['budget']}, {record['machine']})")
    for column in ("workload", "method", "rep", "status", "vs start", "vs expert", "SOL",
                   "correct/failed", "to 90% (gate runs)", "best kernel"):
        runs.add_column(column, overflow="fold")
    for r in record["results"]:
        to90 = r["budget_to_90pct"]["gate_runs"] if r["budget_to_90pct"] else "-"
        status = "ok" if r["status"] == "ok" else "[red]failed[/]"
        runs.add_row(r["workload"], r["method"], str(r["repeat"]), status, speedup(r["speedup_vs_start"]),
                     speedup(r["speedup_vs_expert"]), share(r["sol_fraction"]),
                     f"{r['correct_candidates']}/{r['failed_candidates']}", str(to90),
                     (r.get("best_state") or "-")[:10])
    summary = Table(title=f"summary (a failed run counts as the start kernel, {speedup(1.0)})")
    for column in ("method", "geomean vs start", "geomean vs expert", "mean SOL", "failures"):
        summary.add_column(column, overflow="fold")
    for s in record["summary"]:
        failures = "; ".join(f"{f['workload']}#{f['repeat']}: {f['reason']}" for f in s["failures"])
        summary.add_row(s["method"], speedup(s["geomean_speedup_vs_start"]),
                        speedup(s["geomean_speedup_vs_expert"]), share(s["mean_sol_fraction"]),
                        escape(failures) or "-")
    return [runs, summary]
