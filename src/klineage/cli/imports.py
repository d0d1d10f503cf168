"""``klineage import``: other benchmarks' problem files as klineage workloads (registered by the
root app).

    klineage import kernelbench level1/ my_problem.py --out workloads/kernelbench
    klineage import flashinfer-bench flashinfer-trace/ --out workloads/flashinfer
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from klineage.cli._common import JsonOpt, console, err_console, new_app, parse_memory, user_errors

__all__ = ["export_app", "import_app"]

import_app = new_app("import", "Turn other benchmarks' problem files into klineage workloads.")


@import_app.command("kernelbench")
def kernelbench_command(
    paths: Annotated[list[Path], typer.Argument(
        help="KernelBench problem files (class Model, get_inputs, get_init_inputs), or folders of them.")],
    out: Annotated[Path, typer.Option(help="Folder to write one workload folder per problem into.")],
    timeout: Annotated[float, typer.Option(
        min=1, help="Seconds one problem's survey (it runs the problem's code) may take.")] = 300.0,
    memory: Annotated[str, typer.Option(
        help="Address-space cap of each problem's process (a size that does not fit fails there).")]
        = "8G",
    force: Annotated[bool, typer.Option("--force", help="Replace workload folders that exist.")]
        = False,
    as_json: JsonOpt = False,
) -> None:
    """Import KernelBench problems as workloads `klineage gate` can run (docs/workloads.md)."""
    from klineage.workload.kernelbench import import_kernelbench

    columns = (TextColumn("importing"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
               TimeElapsedColumn(), TextColumn("{task.description}"))
    with user_errors(), Progress(*columns, console=err_console, disable=as_json) as progress:
        task = progress.add_task("", total=None)

        def show(problem: Path, done: int, total: int) -> None:
            progress.update(task, completed=done, total=total, description=escape(problem.name))

        outcomes = import_kernelbench(paths, out, timeout_s=timeout, memory_bytes=parse_memory(memory),
                                      force=force, on_problem=show)
        progress.update(task, completed=len(outcomes), description="")
    if as_json:
        print(json.dumps([o.model_dump(mode="json") for o in outcomes], indent=2))
    else:
        _render(outcomes)
    if any(not o.ok for o in outcomes):
        raise typer.Exit(1)


def _render(outcomes: list) -> None:
    table = Table(title=f"imported {sum(o.ok for o in outcomes)} of {len(outcomes)} problems")
    for column in ("problem", "workload", "axes", "params", "weights", "check shapes"):
        table.add_column(column)
    for o in outcomes:
        if not o.ok:
            continue
        table.add_row(Path(o.problem).name, o.workload,
                      " ".join(f"{k}={v}" for k, v in o.axes.items()),
                      " ".join(f"{k}={v:g}" for k, v in o.params.items()) or "-",
                      " ".join(o.weights) or "-", str(o.check_shapes))
    if any(o.ok for o in outcomes):
        console.print(table)
    for o in outcomes:
        for note in o.notes:
            console.print(f"{Path(o.problem).name}: {escape(note)}", highlight=False, soft_wrap=True)
    for o in outcomes:
        if not o.ok:
            console.print(Text.assemble((f"{Path(o.problem).name}: ", "bold"), ("failed", "red"),
                                        f" — {o.error}"), highlight=False, soft_wrap=True)


@import_app.command("flashinfer-bench")
def flashinfer_bench_command(
    dataset: Annotated[Path, typer.Argument(
        help="A FlashInfer-Bench dataset folder (definitions/, workloads/, solutions/).")],
    out: Annotated[Path, typer.Option(help="Folder to write one workload folder per definition into.")],
    timeout: Annotated[float, typer.Option(
        min=1, help="Seconds one definition's check (it runs the reference code) may take.")] = 300.0,
    force: Annotated[bool, typer.Option("--force", help="Replace workload folders that exist.")]
        = False,
    as_json: JsonOpt = False,
) -> None:
    """Import a FlashInfer-Bench dataset's definitions and solutions as workloads and kernels
    (docs/workloads.md)."""
    from klineage.workload.flashinfer import import_flashinfer_bench

    with user_errors(), console.status("", spinner="dots") as status:
        def show(definition: str) -> None:
            if not as_json:
                status.update(f"importing {escape(definition)} (runs its reference)")

        outcomes = import_flashinfer_bench(dataset, out, timeout_s=timeout, force=force,
                                           on_definition=show)
    if as_json:
        print(json.dumps([o.model_dump(mode="json") for o in outcomes], indent=2))
    else:
        _render_flashinfer(outcomes)
    if any(not o.ok for o in outcomes):
        raise typer.Exit(1)


def _render_flashinfer(outcomes: list) -> None:
    imported = [o for o in outcomes if o.ok]
    table = Table(title=f"imported {len(imported)} of {len(outcomes)} definitions")
    for column in ("definition", "workload", "axes (timed)", "checked", "kernels", "not runnable"):
        table.add_column(column)
    for o in imported:
        table.add_row(o.definition, o.workload, " ".join(f"{k}={v}" for k, v in o.axes.items()),
                      str(o.check_shapes), " ".join(o.kernels) or "-", " ".join(o.not_runnable) or "-")
    if imported:
        console.print(table)
    for o in imported:
        console.print(f"{o.definition}: timed at workload {o.timed} (the first); all {o.check_shapes} "
                      f"workloads checked", highlight=False, soft_wrap=True)
        for solution, why in o.not_runnable.items():
            console.print(f"{o.definition}: solution {solution} not runnable — {escape(why)}",
                          highlight=False, soft_wrap=True)
    for o in outcomes:
        if not o.ok:
            console.print(Text.assemble((f"{o.definition}: ", "bold"), ("failed", "red"),
                                        f" — {o.error}"), highlight=False, soft_wrap=True)


export_app = new_app("export", "Write klineage results in other benchmarks' formats.")


@export_app.command("flashinfer-trace")
def flashinfer_trace_command(
    workload: Annotated[Path, typer.Argument(
        help="A workload folder `klineage import flashinfer-bench` wrote.")],
    reports: Annotated[list[Path], typer.Argument(
        help="Gate reports on it, as `klineage gate --json` prints them (one report or a list).")],
    out: Annotated[Path, typer.Option(help="The Trace JSONL file to write (one record a report).")],
    append: Annotated[bool, typer.Option("--append", help="Add to OUT instead of replacing it.")]
        = False,
    as_json: JsonOpt = False,
) -> None:
    """Write gate reports as FlashInfer-Bench Trace records (docs/workloads.md)."""
    from klineage.workload.flashinfer.trace import traces_for

    with user_errors(), console.status("timing the reference", spinner="dots"):
        traces = traces_for(workload, reports)
    lines = "".join(t.model_dump_json() + "\n" for t in traces)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("a" if append else "w") as handle:
        handle.write(lines)
    if as_json:
        print(json.dumps([t.model_dump(mode="json") for t in traces], indent=2))
        return
    for t in traces:
        e = t.evaluation
        speed = f", {e.performance.latency_ms:.4g} ms, {e.performance.speedup_factor:.3g}x the reference" \
            if e.performance else ""
        console.print(f"{t.solution} on {t.workload.uuid}: {e.status.value}{speed}", highlight=False)
    console.print(f"{len(traces)} trace record(s) {'added to' if append else 'in'} {out}")
