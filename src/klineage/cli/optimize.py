"""``klineage optimize``: the forward loop from the command line (registered by the root app)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from klineage.cli._brains import BrainOpt, ConfigOpt, RecordOpt, ReplayOpt, brain_settings, budget_option
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
    workload_at,
)
from klineage.cli.memory import MemoryOpt
from klineage.errors import ConfigError
from klineage.optimize.loop import DEFAULT_BUDGET
from klineage.report._format import ms, ratio, share, speedup

__all__ = ["optimize_command", "retrieval_table"]




def optimize_command(
    workload: Annotated[Path, typer.Argument(help="Workload folder.")],
    start: Annotated[str, typer.Option(help="The kernel to start from.")] = "naive",
    library: Annotated[Path | None, typer.Option(help="Skill library (needed by --method klineage).")] = None,
    budget: budget_option(DEFAULT_BUDGET.describe()) = None,
    method: Annotated[str, typer.Option(
        help="klineage | klineage-nowhen | none | memory | rules-table | expert-source.")] = "klineage",
    memory: MemoryOpt = None,
    brain: BrainOpt = None,
    config: ConfigOpt = None,
    record: RecordOpt = None,
    replay: ReplayOpt = None,
    seed: Annotated[int, typer.Option(help="Seed of the baselines' random order.")] = 0,
    sol_target: Annotated[float, typer.Option(
        min=0, help="Stop once the best kernel reaches this share of speed of light.")] = 0.9,
    explain: Annotated[bool, typer.Option(
        help="Show why each skill was chosen or skipped, before the first candidate.")] = False,
    resume: Annotated[Path | None, typer.Option(help="Continue this interrupted run.")] = None,
    runs: RunsOpt = Path("runs"),
    threads: ThreadsOpt = None,
    backend: BackendOpt = None,
    quick: QuickOpt = False,
    patience: PatienceOpt = None,
    executor: ExecutorOpt = "local",
    no_wait: NoWaitOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Apply skills (or a baseline) under the gate within a budget; print the best kernel."""
    from klineage.optimize import METHODS, OptimizeOptions, optimize
    from klineage.skills.library import Library
    from klineage.workload import load_kernel

    with user_errors(as_json):
        if method not in METHODS:
            raise ConfigError(f"--method: unknown method {method!r} (one of {', '.join(METHODS)})")
        if method in ("klineage", "klineage-nowhen") and library is None and resume is None:
            raise ConfigError(f"--method {method} needs --library DIR (a mined skill library)")
        loaded = workload_at(workload, quick)
        lib = Library.open(library) if library is not None else None
        options = OptimizeOptions(**brain_settings(brain, budget, config, record, replay, resume),
                                  method=method, seed=seed, sol_target=sol_target, memory=memory,
                                  gate=run_gate_options(threads, backend, patience))
        with console.status("", spinner="dots") as status, executing(executor, wait=not no_wait):
            kernel = load_kernel(loaded, start) if resume is None else None  # the run has its own
            result = optimize(loaded, kernel, lib, options, runs_root=runs,
                              say=None if as_json else (lambda line: status.update(escape(line))),
                              resume=resume, explain=(lambda used, rows: console.print(
                                  retrieval_table(rows, used))) if explain and not as_json else None)
    record = result.record
    if as_json:
        print(json.dumps(record, indent=2))
    else:
        console.print(optimize_table(record, str(result.run.path)))
    if record["status"] != "ok":
        raise typer.Exit(1)


def retrieval_table(rows: list[dict[str, Any]], method: str = "klineage") -> Table | str:
    """Chosen cards with rank and score parts, then skipped cards with the reason."""
    if method not in ("klineage", "klineage-nowhen"):
        return f"retrieval is not used by --method {method}"
    table = Table(title="retrieval on the start kernel")
    for column in ("rank", "skill", "feature", "score"):
        table.add_column(column, overflow="fold", ratio=1)
    table.add_column("why", overflow="fold", ratio=4)
    for row in rows:
        rank = str(row["rank"]) if row["chosen"] else "[yellow]skip[/]"
        table.add_row(rank, escape(f"{row['id'][:8]} {row['name']}"), row["feature"],
                      f"{row['score']:.2f}" if row["chosen"] else "-", escape(row["reason"]))
    return table


def optimize_table(record: dict[str, Any], run: str) -> Table:
    """The candidates, and a caption with the record's numbers as the report prints them: the
    final paired speedup over the start, and the share of speed of light at the best kernel's
    own median (the time it was computed from)."""
    table = Table(title=f"optimize {record['workload']} ({record['method']}, {record['brain']} brain)")
    for column in ("step", "feature", "skill", "verdict", "ratio", "kept"):
        table.add_column(column, overflow="fold")
    for step in record["steps"]:
        table.add_row(str(step["step"]), step["feature"] or "-", (step["skill"] or "-")[:8],
                      step["verdict"], ratio(step["ratio"]), "[green]yes[/]" if step["kept"] else "no")
    best_ms = record.get("best_ms")
    table.caption = escape(
        f"best {record['best_state']}: {speedup(record['best_speedup'])} over {record['start']} "
        f"(final paired comparison), {share(record['sol_fraction'])} of speed of light"
        f"{f' at {ms(best_ms)}' if best_ms is not None else ''} ({record['sol_limiter'] or '-'}); "
        f"stopped: {record['stop_reason']}; "
        f"best kernel: {record['best_kernel']}; run: {run}")
    return table
